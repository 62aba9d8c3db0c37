import Testing
@testable import Codecs
import Pixels

/// Damaged files, made here from files our encoders wrote: cut short, a foreign marker in a
/// JPEG's scan (what `exif-samples/jpg/corrupted.jpg` holds: libjpeg says "Corrupt JPEG data:
/// premature end of data segment"), a chunk whose CRC does not match. By default each fails as
/// `corrupt-image` before a damaged row is handed on; under `damaged: warn` every row comes out,
/// grey where data is missing, and `damage` says what.
@Suite("damaged data")
struct DamageTests {
    static let warn = DecodeLimits(damaged: .warn)

    /// Every row a decoder hands out, and how many came before it threw (if it did).
    static func rows(_ decoder: any PhotoDecoder, channels: Int = 3,
                     limits: DecodeLimits) -> (image: Image?, handed: Int, error: PhotoError?) {
        var handed = 0
        do {
            let image = try Image(width: decoder.info.width, height: decoder.info.height, channels: channels) { rows in
                try decoder.decode(eighths: 8, channels: channels, limits: limits) { row in
                    precondition(handed < rows.height, "more rows than the picture has")
                    rows[handed].update(from: row, count: rows.rowBytes)
                    handed += 1
                }
            }
            return (handed == decoder.info.height ? image : nil, handed, nil)
        } catch {
            return (nil, handed, error as? PhotoError)
        }
    }

    /// True when every pixel of rows `range` is the grey libraries fill missing data with.
    static func grey(_ image: Image, rows range: Range<Int>) -> Bool {
        image.withUnsafeRows { rows in
            range.allSatisfy { y in (0..<image.width * 3).allSatisfy { abs(Int(rows[y][$0 / 3 * image.channels + $0 % 3]) - 128) <= 2 } }
        }
    }

    /// The largest channel difference over rows `range` of two same-sized images.
    static func difference(_ a: Image, _ b: Image, rows range: Range<Int>) -> Int {
        a.withUnsafeRows { ra in
            b.withUnsafeRows { rb in
                range.map { y in (0..<a.width * 3).map { abs(Int(ra[y][$0]) - Int(rb[y][$0])) }.max() ?? 0 }.max() ?? 0
            }
        }
    }

    // MARK: JPEG

    static func jpeg(progressive: Bool = false) throws -> [UInt8] {
        try encodeImage(gradient(width: 256, height: 192), options: EncodeOptions(format: .jpeg, quality: 92, progressive: progressive))
    }

    @Test("a truncated JPEG fails at the damage by default; under warn its bottom rows are grey and said")
    func truncatedJPEG() throws {
        let whole = try Self.jpeg()
        let cut = Array(whole.prefix(whole.count * 6 / 10))
        let failed = Self.rows(try JPEGDecoder(bytes: cut, limits: DecodeLimits()), limits: DecodeLimits())
        let error = try #require(failed.error)
        #expect(error.code == .corruptImage)
        #expect(error.message.hasPrefix("JPEG data ends early at byte \(cut.count): the bottom "), "\(error)")
        #expect(error.message.hasSuffix(" of 192 rows are missing (grey)"), "\(error)")
        #expect(failed.handed < 192 * 6 / 10, "no row of the grey part was handed on (\(failed.handed))")

        let decoder = try JPEGDecoder(bytes: cut, limits: Self.warn)
        let warned = Self.rows(decoder, limits: Self.warn)
        let image = try #require(warned.image, "\(warned.error.map(\.description) ?? "")")
        let damage = try #require(decoder.damage)
        let from = try #require(damage.fromRow)
        #expect(damage.effect == .missing)
        #expect(from > 16 && from < 192 - 16, "damage from row \(from)")
        #expect(damage.warning == "damaged: JPEG data ends early at byte \(cut.count): the bottom \(192 - from) of 192 rows are missing (grey)")
        let reference = try decodeAll(try JPEGDecoder(bytes: whole, limits: DecodeLimits()))
        #expect(Self.difference(image, reference, rows: 0..<(from - 16)) == 0, "the rows before the cut are the file's")
        // The MCU row the data ends in is partly there; from the next on (and past the chroma
        // upsampling's one row of overlap) all is grey.
        #expect(Self.grey(image, rows: (from + 16 + 1)..<192), "the rows after the cut are grey")
        // A whole file decoded after a damaged one by the same decoder has no damage.
        _ = Self.rows(decoder, limits: Self.warn)
        #expect(decoder.damage != nil)
    }

    @Test("a truncated progressive JPEG fails by default, decodes with its damage said under warn")
    func truncatedProgressiveJPEG() throws {
        let whole = try Self.jpeg(progressive: true)
        let cut = Array(whole.prefix(whole.count * 6 / 10))
        let failed = Self.rows(try JPEGDecoder(bytes: cut, limits: DecodeLimits()), limits: DecodeLimits())
        #expect(failed.error?.code == .corruptImage)
        #expect(failed.error?.message.hasPrefix("JPEG data ends early at byte \(cut.count): ") == true)
        #expect(failed.handed == 0, "a progressive file is read whole before the first row")
        let decoder = try JPEGDecoder(bytes: cut, limits: Self.warn)
        #expect(Self.rows(decoder, limits: Self.warn).image != nil)
        let damage = try #require(decoder.damage)
        #expect([.blurred, .missing].contains(damage.effect))
        #expect(damage.reason == "JPEG data ends early at byte \(cut.count)")
    }

    /// A baseline JPEG with a foreign marker in the middle of its scan data: what
    /// `exif-samples/jpg/corrupted.jpg` holds (libjpeg: "Corrupt JPEG data: premature end of
    /// data segment", then thousands of errors as it resynchronises). That file is 1.9 MB; this
    /// one is made here.
    static func corruptSegment() throws -> [UInt8] {
        let bytes = try jpeg()
        let (header, scans) = splitScans(bytes)
        let scan = try #require(scans.first)
        let middle = header.count + scan.count / 2
        return Array(bytes[..<middle]) + [0xFF, 0xE1] + Array(bytes[middle...])
    }

    @Test("a JPEG with a corrupt segment (corrupted.jpg's damage) fails by default, is said under warn")
    func corruptSegmentJPEG() throws {
        let bytes = try Self.corruptSegment()
        let failed = Self.rows(try JPEGDecoder(bytes: bytes, limits: DecodeLimits()), limits: DecodeLimits())
        let error = try #require(failed.error)
        #expect(error.code == .corruptImage)
        #expect(error.message.hasPrefix("Corrupt JPEG data: premature end of data segment: the bottom "), "\(error)")
        let decoder = try JPEGDecoder(bytes: bytes, limits: Self.warn)
        let warned = Self.rows(decoder, limits: Self.warn)
        #expect(warned.image != nil)
        let damage = try #require(decoder.damage)
        #expect(damage.reason == "Corrupt JPEG data: premature end of data segment")
        #expect(damage.count > 1, "libjpeg keeps complaining past the marker")
        #expect(damage.warning.hasPrefix("damaged: Corrupt JPEG data: premature end of data segment (and "))
        #expect(decoder.warnings.isEmpty, "damage is not repeated among the notes")
    }

    @Test("a turned 4:2:0 JPEG decoded as planes says its damage the same way")
    func truncatedPlanes() throws {
        let whole = try Self.jpeg()
        let cut = Array(whole.prefix(whole.count * 6 / 10))
        let decoder = try JPEGDecoder(bytes: cut, limits: DecodeLimits())
        #expect(decoder.planarChromaRows == 2)
        #expect(throws: PhotoError.self) { try decoder.decodePlanes(limits: DecodeLimits()) { _ in } }
        var bands = 0
        try decoder.decodePlanes(limits: Self.warn) { _ in bands += 1 }
        #expect(bands == 192 / 16)
        #expect(decoder.damage?.effect == .missing)
    }

    @Test("damage words name the side a person sees")
    func sides() {
        let bottom = Damage(reason: "JPEG data ends early at byte 40960", effect: .missing, fromRow: 2424, height: 2736)
        #expect(bottom.words == "JPEG data ends early at byte 40960: the bottom 312 of 2736 rows are missing (grey)")
        var turned = bottom
        turned.orientation = 6
        #expect(turned.words == "JPEG data ends early at byte 40960: the left 312 of 2736 columns are missing (grey)")
        turned.orientation = 3
        #expect(turned.words.contains("the top 312 of 2736 rows"))
        let many = Damage(reason: "Corrupt JPEG data: premature end of data segment", effect: .wrong, fromRow: 312,
                          height: 2736, count: 17_268)
        #expect(many.warning == "damaged: Corrupt JPEG data: premature end of data segment (and 17 267 more): "
                + "the bottom 2424 of 2736 rows may be wrong (grey blocks, shifted strips, wrong colours)")
        #expect(many.error.message == "Corrupt JPEG data: premature end of data segment: "
                + "the bottom 2424 of 2736 rows may be wrong (grey blocks, shifted strips, wrong colours)")
        #expect(Damage(reason: "x", effect: .missing, fromRow: 0, height: 10).leavesNothing)
        #expect(!Damage(reason: "x", effect: .wrong, fromRow: 0, height: 10).leavesNothing)
    }

    // MARK: PNG

    /// The PNG's chunks: offset of each, its type and data range.
    static func chunks(_ png: [UInt8]) -> [(at: Int, type: String, data: Range<Int>)] {
        var found: [(Int, String, Range<Int>)] = []
        var at = 8
        while at + 12 <= png.count {
            let length = Int(png[at]) << 24 | Int(png[at + 1]) << 16 | Int(png[at + 2]) << 8 | Int(png[at + 3])
            found.append((at, String(decoding: png[(at + 4)..<(at + 8)], as: UTF8.self), (at + 8)..<(at + 8 + length)))
            at += 12 + length
        }
        return found
    }

    /// Noise, so the compressed pixels span several of libpng's 1 KiB reads.
    static let pngImage: Image = {
        var seed: UInt32 = 1
        return Image(width: 97, height: 64, channels: 3) { rows in
            for y in 0..<64 {
                for x in 0..<(97 * 3) {
                    seed = seed &* 1_664_525 &+ 1_013_904_223
                    rows[y][x] = UInt8(truncatingIfNeeded: seed >> 24)
                }
            }
        }
    }()

    @Test("a PNG whose IDAT fails its CRC fails by default; under warn its pixels are used and the damage said")
    func badCRC() throws {
        var png = try encodeImage(Self.pngImage, options: EncodeOptions(format: .png))
        let idat = try #require(Self.chunks(png).first { $0.type == "IDAT" })
        png[idat.data.upperBound] ^= 0x5A  // the CRC, not the data
        let failed = Self.rows(try PNGDecoder(bytes: png, limits: DecodeLimits()), limits: DecodeLimits())
        #expect(failed.error == PhotoError(.corruptImage, "PNG: IDAT: CRC error: the pixels may be wrong"))
        let decoder = try PNGDecoder(bytes: png, limits: Self.warn)
        let image = try #require(Self.rows(decoder, limits: Self.warn).image)
        #expect(samePixels(image, Self.pngImage), "the data itself is whole")
        #expect(decoder.damage?.warning == "damaged: PNG: IDAT: CRC error: the pixels may be wrong")
    }

    @Test("a PNG whose colour chunk fails its CRC: left out, said; failed by default")
    func badAncillaryCRC() throws {
        let png = try encodeImage(Self.pngImage, options: EncodeOptions(format: .png))
        let ihdr = try #require(Self.chunks(png).first { $0.type == "IHDR" })
        let gama: [UInt8] = Array("gAMA".utf8) + bigEndian(45455)
        let damaged = Array(png[..<(ihdr.data.upperBound + 4)]) + bigEndian(4) + gama + bigEndian(crc32(gama) ^ 1)
            + Array(png[(ihdr.data.upperBound + 4)...])
        #expect(throws: PhotoError(.corruptImage, "PNG: gAMA: CRC error: that part of the file was left out")) {
            _ = try PNGDecoder(bytes: damaged, limits: DecodeLimits())
        }
        let decoder = try PNGDecoder(bytes: damaged, limits: Self.warn)
        #expect(samePixels(try #require(Self.rows(decoder, limits: Self.warn).image), Self.pngImage))
        #expect(decoder.damage?.effect == .leftOut)
    }

    @Test("a truncated PNG: the rows its data holds, then grey, under warn; fails by default", arguments: [false, true])
    func truncatedPNG(interlaced: Bool) throws {
        let image = Self.pngImage
        let png = interlaced
            ? try rawPNG(bytes(of: image), width: image.width, height: image.height, rowBytes: image.width * 3,
                         colorType: 2, bitDepth: 8, interlaced: true)
            : try encodeImage(image, options: EncodeOptions(format: .png))
        let cut = Array(png.prefix(png.count * 6 / 10))
        let failed = Self.rows(try PNGDecoder(bytes: cut, limits: DecodeLimits()), limits: DecodeLimits())
        #expect(failed.error?.code == .corruptImage)
        #expect(failed.error?.message.hasPrefix("PNG: data ends early at byte \(cut.count): ") == true, "\(failed.error!)")
        let decoder = try PNGDecoder(bytes: cut, limits: Self.warn)
        let decoded = try #require(Self.rows(decoder, limits: Self.warn).image)
        let damage = try #require(decoder.damage)
        #expect(damage.effect == .missing)
        if interlaced {
            #expect(damage.fromRow == nil)
            #expect(damage.words == "PNG: data ends early at byte \(cut.count): part of the picture is missing (grey)")
        } else {
            let from = try #require(damage.fromRow)
            #expect(from > 0 && from < 64)
            #expect(Self.difference(decoded, image, rows: 0..<from) == 0)
            #expect(Self.grey(decoded, rows: from..<64))
        }
    }

    // MARK: HEIF, WebP

    @Test("a truncated HEIC fails by default; under warn libheif decodes what is there and the damage is said")
    func truncatedHEIC() throws {
        let image = smoothImage(width: 128, height: 96, channels: 3)
        let heic = try HEIFEncoder.encode(image, options: EncodeOptions(format: .heic, quality: 90))
        let cut = Array(heic.prefix(heic.count * 7 / 10))
        let error = #expect(throws: PhotoError.self) { _ = try HEIFDecoder(bytes: cut, limits: DecodeLimits()) }
        #expect(error?.code == .corruptImage)
        #expect(error?.message.hasPrefix("HEIF data ends early at byte \(cut.count) of \(heic.count) (") == true, "\(error!)")
        #expect(error?.message.hasSuffix("% of the image data is missing): the pixels may be wrong") == true)
        let decoder = try HEIFDecoder(bytes: cut, limits: Self.warn)
        let decoded = try #require(Self.rows(decoder, limits: Self.warn).image)
        let damage = try #require(decoder.damage)
        let from = try #require(damage.fromRow, "where the picture stops is found")
        #expect(from > 0 && from < 96)
        #expect(damage.warning.hasPrefix("damaged: HEIF data ends early at byte \(cut.count) of \(heic.count) ("))
        #expect(damage.warning.hasSuffix("% of the image data is missing): the bottom \(96 - from) of 96 rows are missing (grey)"),
                "\(damage.warning)")
        #expect(Self.difference(decoded, image, rows: 0..<min(from, 16)) < 40, "the top of the photo is there")
        #expect(Self.grey(decoded, rows: from..<96), "past the cut: grey, not the decoder's guesswork")
        // Cut before any of the image data: nothing to finish, whatever the policy.
        let mdat = try #require((0..<(heic.count - 4)).first { heic[$0..<($0 + 4)].elementsEqual("mdat".utf8) })
        let bare = Array(heic.prefix(mdat + 4))
        let nothing = #expect(throws: PhotoError.self) { _ = try HEIFDecoder(bytes: bare, limits: Self.warn) }
        #expect(nothing?.code == .corruptImage)
    }

    /// The boxes two decodes of a cut HEIC disagree on, and the band each makes grey: (top,
    /// bottom, left, right) of a 128×96 picture → rows, columns, first line, lines, orientation.
    static let bands: [((Int, Int, Int, Int), ClosedRange<Int>, ClosedRange<Int>, Int?, Int, Int)] = [
        ((64, 95, 0, 127), 64...95, 0...127, 64, 96, 1),     // the bottom rows, whole
        ((64, 95, 0, 63), 64...95, 0...127, 64, 96, 1),      // one block of them alike in both decodes
        ((63, 95, 64, 127), 63...95, 0...127, 63, 96, 1),    // the deblocking row above, half
        ((0, 31, 0, 127), 0...31, 0...127, 64, 96, 3),       // turned upside down: the top rows
        ((0, 95, 100, 127), 0...95, 100...127, 100, 128, 8), // turned: the right columns
        ((10, 60, 0, 20), 0...95, 0...20, 107, 128, 6),      // turned: the left columns, partly
        ((0, 95, 0, 127), 0...95, 0...127, 0, 96, 1),        // all of it
        ((20, 40, 30, 50), 20...40, 30...50, nil, 96, 1),    // reaching no side: the box alone
    ]

    @Test("the band greyed past a HEIC's cut holds every pixel two decodes disagree on, along the side they reach",
          arguments: bands.indices)
    func heicBand(_ index: Int) {
        let (box, rows, columns, from, lines, orientation) = Self.bands[index]
        let band = HEIFDecoder.band(around: box, width: 128, height: 96)
        #expect(band.rows == rows)
        #expect(band.columns == columns)
        #expect(band.side.from == from)
        #expect(band.side.lines == lines)
        #expect(band.side.orientation == orientation)
    }

    @Test("a truncated WebP fails by default; under warn its top rows, then grey, and the damage said")
    func truncatedWebP() throws {
        let image = smoothImage(width: 128, height: 96, channels: 3)
        let webp = try encodeImage(image, options: EncodeOptions(format: .webp, quality: 90))
        let cut = Array(webp.prefix(webp.count * 6 / 10))
        let failed = Self.rows(try WebPDecoder(bytes: cut, limits: DecodeLimits()), limits: DecodeLimits())
        #expect(failed.error?.code == .corruptImage)
        #expect(failed.error?.message.hasPrefix("WebP data ends early at byte \(cut.count): the bottom ") == true,
                "\(failed.error.map(\.description) ?? "no error")")
        #expect(failed.handed == 0)
        let decoder = try WebPDecoder(bytes: cut, limits: Self.warn)
        let decoded = try #require(Self.rows(decoder, limits: Self.warn).image)
        let damage = try #require(decoder.damage)
        let from = try #require(damage.fromRow)
        #expect(from > 0 && from < 96)
        #expect(damage.warning == "damaged: WebP data ends early at byte \(cut.count): the bottom \(96 - from) of 96 rows are missing (grey)")
        #expect(Self.grey(decoded, rows: from..<96))
        #expect(Self.difference(decoded, image, rows: 0..<min(from, 8)) < 40)
    }
}
