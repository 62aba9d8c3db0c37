import Testing
@testable import Codecs
import Pixels

/// A test picture with structure in both directions: red grows left to right, green top
/// to bottom, blue is a coarse checkerboard.
func gradient(width: Int, height: Int) -> Image {
    Image(width: width, height: height, channels: 3) { rows in
        for y in 0..<height {
            let row = rows[y]
            for x in 0..<width {
                row[x * 3] = UInt8(x * 255 / max(width - 1, 1))
                row[x * 3 + 1] = UInt8(y * 255 / max(height - 1, 1))
                row[x * 3 + 2] = ((x / 16) + (y / 16)) % 2 == 0 ? 40 : 200
            }
        }
    }
}

/// Decodes every row into one buffer.
func decodeAll(_ decoder: JPEGDecoder, eighths: Int = 8, channels: Int = 3,
               limits: DecodeLimits = DecodeLimits()) throws -> Image {
    let size = decoder.scaledSize(eighths: eighths)
    var y = 0
    let out = try Image(width: size.width, height: size.height, channels: channels) { rows in
        try decoder.decode(eighths: eighths, channels: channels, limits: limits) { row in
            precondition(y < size.height, "more rows than scaledSize says")
            rows[y].update(from: row, count: rows.rowBytes)
            y += 1
        }
    }
    #expect(y == size.height)
    return out
}

/// The largest channel difference between two same-sized images.
func maxDifference(_ a: Image, _ b: Image) -> Int {
    var worst = 0
    a.withUnsafeRows { a in
        b.withUnsafeRows { b in
            for y in 0..<a.height {
                let ra = a[y], rb = b[y]
                for x in 0..<a.width {
                    for c in 0..<3 { worst = max(worst, abs(Int(ra[x * a.channels + c]) - Int(rb[x * b.channels + c]))) }
                }
            }
        }
    }
    return worst
}

/// The mean channel difference between two same-sized images.
func meanDifference(_ a: Image, _ b: Image) -> Double {
    var total = 0
    a.withUnsafeRows { a in
        b.withUnsafeRows { b in
            for y in 0..<a.height {
                let ra = a[y], rb = b[y]
                for x in 0..<a.width {
                    for c in 0..<3 { total += abs(Int(ra[x * a.channels + c]) - Int(rb[x * b.channels + c])) }
                }
            }
        }
    }
    return Double(total) / Double(a.width * a.height * 3)
}

/// The JPEG's segments up to the first SOS, and each scan (SOS header plus entropy data).
func splitScans(_ jpeg: [UInt8]) -> (header: [UInt8], scans: [[UInt8]]) {
    var i = 2
    while i + 4 <= jpeg.count, !(jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) {
        i += 2 + (Int(jpeg[i + 2]) << 8 | Int(jpeg[i + 3]))
    }
    let header = Array(jpeg[..<i])
    var scans: [[UInt8]] = []
    while i + 4 <= jpeg.count, jpeg[i] == 0xFF, jpeg[i + 1] == 0xDA {
        var j = i + 2 + (Int(jpeg[i + 2]) << 8 | Int(jpeg[i + 3]))
        while j + 1 < jpeg.count, !(jpeg[j] == 0xFF && jpeg[j + 1] != 0 && !(0xD0...0xD7).contains(jpeg[j + 1])) { j += 1 }
        scans.append(Array(jpeg[i..<j]))
        // Tables between scans (DHT) belong to the next scan.
        while j + 4 <= jpeg.count, jpeg[j] == 0xFF, jpeg[j + 1] != 0xDA, jpeg[j + 1] != 0xD9 {
            let end = j + 2 + (Int(jpeg[j + 2]) << 8 | Int(jpeg[j + 3]))
            scans[scans.count - 1] += jpeg[j..<min(end, jpeg.count)]
            j = end
        }
        i = j
    }
    return (header, scans)
}

@Suite("JPEG codec")
struct JPEGTests {
    @Test("encode then decode: size, pixels close, header facts")
    func roundTrip() throws {
        let image = gradient(width: 203, height: 117)
        let bytes = try encodeImage(image, options: EncodeOptions(format: .jpeg, quality: 95))
        #expect(sniff(bytes) == .image(.jpeg))
        let decoder = try JPEGDecoder(bytes: bytes, limits: DecodeLimits())
        #expect(decoder.info.format == .jpeg)
        #expect(decoder.info.width == 203 && decoder.info.height == 117)
        #expect(decoder.info.orientation == 1 && decoder.info.declaredOrientation == 1)
        #expect(decoder.info.hasAlpha == false)
        #expect(decoder.info.icc == nil && decoder.info.exif == nil)
        let decoded = try decodeAll(decoder)
        // 4:2:0 at quality 95: sharp checker edges cost some chroma, the rest is close.
        #expect(maxDifference(image, decoded) < 72)
        #expect(meanDifference(image, decoded) < 5)
        // Away from edges the colours are right.
        let p = decoded.pixel(100, 60)
        let q = image.pixel(100, 60)
        for c in 0..<3 { #expect(abs(Int(p[c]) - Int(q[c])) <= 6) }
        #expect(decoder.warnings.isEmpty)
    }

    @Test("a smooth picture comes back within a few levels")
    func smooth() throws {
        let image = Image(width: 96, height: 64, channels: 3) { rows in
            for y in 0..<64 {
                for x in 0..<96 {
                    rows[y][x * 3] = UInt8(60 + x)
                    rows[y][x * 3 + 1] = UInt8(200 - y)
                    rows[y][x * 3 + 2] = UInt8(100 + (x + y) / 4)
                }
            }
        }
        let bytes = try encodeImage(image, options: EncodeOptions(format: .jpeg, quality: 95))
        let decoded = try decodeAll(try JPEGDecoder(bytes: bytes, limits: DecodeLimits()))
        #expect(maxDifference(image, decoded) <= 6)
        #expect(meanDifference(image, decoded) < 1.5)
    }

    @Test("RGBA output has alpha 255 and the same colours")
    func rgba() throws {
        let image = gradient(width: 64, height: 40)
        let bytes = try encodeImage(image, options: EncodeOptions(format: .jpeg, quality: 90))
        let decoder = try JPEGDecoder(bytes: bytes, limits: DecodeLimits())
        let rgb = try decodeAll(decoder, channels: 3)
        let rgba = try decodeAll(decoder, channels: 4)
        #expect(maxDifference(rgb, rgba) == 0)
        for y in 0..<rgba.height { for x in 0..<rgba.width { #expect(rgba.pixel(x, y)[3] == 255) } }
    }

    @Test("scaled decodes give libjpeg's sizes", arguments: 1...8)
    func scaled(eighths: Int) throws {
        let image = gradient(width: 301, height: 157)
        let bytes = try encodeImage(image, options: EncodeOptions(format: .jpeg, quality: 85))
        let decoder = try JPEGDecoder(bytes: bytes, limits: DecodeLimits())
        let size = decoder.scaledSize(eighths: eighths)
        #expect(size.width == (301 * eighths + 7) / 8)
        #expect(size.height == (157 * eighths + 7) / 8)
        let out = try decodeAll(decoder, eighths: eighths)
        // The middle of the picture keeps its colour at any scale.
        let p = out.pixel(size.width / 2, size.height / 2)
        #expect(abs(Int(p[0]) - 127) < 24)
        #expect(abs(Int(p[1]) - 127) < 24)
    }

    @Test("progressive encode decodes the same picture")
    func progressive() throws {
        let image = gradient(width: 120, height: 90)
        let base = try encodeImage(image, options: EncodeOptions(format: .jpeg, quality: 90))
        let prog = try encodeImage(image, options: EncodeOptions(format: .jpeg, quality: 90, progressive: true))
        #expect(splitScans(prog).scans.count > 1)
        #expect(splitScans(base).scans.count == 1)
        let a = try decodeAll(try JPEGDecoder(bytes: base, limits: DecodeLimits()))
        let b = try decodeAll(try JPEGDecoder(bytes: prog, limits: DecodeLimits()))
        #expect(maxDifference(a, b) <= 2)
    }

    @Test("ICC profile and EXIF survive the round trip; orientation is read")
    func metadata() throws {
        // Large enough to need two APP2 chunks.
        let icc = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let exif = try #require(Exif.make(orientation: 6, dateTimeOriginal: "2026:11:29 15:04:05"))
        let bytes = try encodeImage(gradient(width: 32, height: 24),
                                           options: EncodeOptions(format: .jpeg, icc: icc, exif: exif))
        let decoder = try JPEGDecoder(bytes: bytes, limits: DecodeLimits())
        #expect(decoder.info.icc == icc)
        #expect(decoder.info.exif == exif)
        #expect(decoder.info.orientation == 6)
        #expect(decoder.info.declaredOrientation == 6)
        #expect(Exif.summary(decoder.info.exif ?? []).dateTimeOriginal == "2026:11:29 15:04:05")
    }

    @Test("a CMYK colour profile is not passed on with RGB pixels")
    func cmykProfile() throws {
        var icc = [UInt8](repeating: 0, count: 400)
        icc.replaceSubrange(16..<20, with: Array("CMYK".utf8))
        icc.replaceSubrange(36..<40, with: Array("acsp".utf8))
        let bytes = try encodeImage(gradient(width: 16, height: 16),
                                           options: EncodeOptions(format: .jpeg, icc: icc))
        let decoder = try JPEGDecoder(bytes: bytes, limits: DecodeLimits())
        #expect(decoder.info.icc == nil)
        #expect(decoder.warnings.contains { $0.contains("CMYK colour profile") })
    }

    @Test("an invalid EXIF orientation counts as 1")
    func invalidOrientation() throws {
        let exif = try #require(Exif.make(orientation: 9))
        let bytes = try encodeImage(gradient(width: 16, height: 16),
                                           options: EncodeOptions(format: .jpeg, exif: exif))
        let decoder = try JPEGDecoder(bytes: bytes, limits: DecodeLimits())
        #expect(decoder.info.orientation == 1)
    }

    @Test("a JPEG cut in half is corrupt-image: data ends early")
    func truncated() throws {
        for progressive in [false, true] {
            let bytes = try encodeImage(gradient(width: 256, height: 256),
                                               options: EncodeOptions(format: .jpeg, quality: 92, progressive: progressive))
            let half = Array(bytes.prefix(bytes.count / 2))
            let decoder = try JPEGDecoder(bytes: half, limits: DecodeLimits())
            let error = #expect(throws: PhotoError.self) { _ = try decodeAll(decoder) }
            #expect(error?.code == .corruptImage)
            #expect(error?.message.hasPrefix("JPEG data ends early at byte \(half.count): ") == true, "\(error!)")
        }
    }

    @Test("a JPEG cut anywhere is corrupt-image: data ends early, never a partial picture",
          arguments: [false, true])
    func everyCut(progressive: Bool) throws {
        let bytes = try encodeImage(gradient(width: 40, height: 24),
                                           options: EncodeOptions(format: .jpeg, progressive: progressive))
        // Up to the file without its EOI marker (that case is below).
        for cut in 3..<(bytes.count - 2) {
            let error = #expect(throws: PhotoError.self, "cut at \(cut)") {
                let decoder = try JPEGDecoder(bytes: Array(bytes.prefix(cut)), limits: DecodeLimits())
                try decoder.decode(eighths: 8, channels: 3, limits: DecodeLimits()) { _ in }
            }
            #expect(error?.code == .corruptImage)
            #expect(error?.message.hasPrefix("JPEG data ends early at byte \(cut)") == true, "cut at \(cut): \(error!)")
        }
    }

    @Test("a baseline JPEG missing only its EOI marker decodes in full")
    func missingEOI() throws {
        let image = gradient(width: 203, height: 117)
        let bytes = try encodeImage(image, options: EncodeOptions(format: .jpeg, quality: 95))
        let complete = try decodeAll(try JPEGDecoder(bytes: bytes, limits: DecodeLimits()))
        let decoder = try JPEGDecoder(bytes: Array(bytes.dropLast(2)), limits: DecodeLimits())
        let decoded = try decodeAll(decoder)
        #expect(maxDifference(complete, decoded) == 0)
        // Without one more byte, data really is missing.
        let error = #expect(throws: PhotoError.self) {
            _ = try decodeAll(try JPEGDecoder(bytes: Array(bytes.dropLast(3)), limits: DecodeLimits()))
        }
        #expect(error?.message == "JPEG data ends early at byte \(bytes.count - 3): the bottom 5 of 117 rows are missing (grey)")
    }

    @Test("trailing bytes after EOI are ignored")
    func trailingData() throws {
        let bytes = try encodeImage(gradient(width: 64, height: 48), options: EncodeOptions(format: .jpeg))
        let decoder = try JPEGDecoder(bytes: bytes + Array(repeating: 0, count: 100) + [1, 2, 3], limits: DecodeLimits())
        _ = try decodeAll(decoder)
        #expect(decoder.warnings.isEmpty)
    }

    @Test("a header cut short is corrupt-image")
    func truncatedHeader() throws {
        let bytes = try encodeImage(gradient(width: 16, height: 16), options: EncodeOptions(format: .jpeg))
        let error = #expect(throws: PhotoError.self) { _ = try JPEGDecoder(bytes: Array(bytes.prefix(40)), limits: DecodeLimits()) }
        #expect(error?.code == .corruptImage)
        #expect(error?.message.contains("ends early") == true)
    }

    @Test("not a JPEG at all is corrupt-image with libjpeg's reason")
    func notJPEG() {
        let error = #expect(throws: PhotoError.self) {
            _ = try JPEGDecoder(bytes: Array("hello, this is text".utf8), limits: DecodeLimits())
        }
        #expect(error?.code == .corruptImage)
        #expect(error?.message.contains("Not a JPEG file") == true)
    }

    @Test("empty bytes are empty-file")
    func empty() {
        let error = #expect(throws: PhotoError.self) { _ = try JPEGDecoder(bytes: [], limits: DecodeLimits()) }
        #expect(error?.code == .emptyFile)
    }

    @Test("too many pixels is refused from the header")
    func tooLarge() throws {
        let bytes = try encodeImage(gradient(width: 100, height: 50), options: EncodeOptions(format: .jpeg))
        let error = #expect(throws: PhotoError.self) {
            _ = try JPEGDecoder(bytes: bytes, limits: DecodeLimits(maxPixels: 4999))
        }
        #expect(error?.code == .tooLarge)
        #expect(error?.message.contains("100×50") == true)
        #expect(error?.message.contains("4999") == true)
        #expect(throws: Never.self) { _ = try JPEGDecoder(bytes: bytes, limits: DecodeLimits(maxPixels: 5000)) }
    }

    @Test("a progressive file with more than 500 scans is refused")
    func tooManyScans() throws {
        let prog = try encodeImage(gradient(width: 16, height: 16),
                                          options: EncodeOptions(format: .jpeg, quality: 80, progressive: true))
        let (header, scans) = splitScans(prog)
        var hostile = header
        for _ in 0..<600 { hostile += scans[0] }
        hostile += [0xFF, 0xD9]
        let decoder = try JPEGDecoder(bytes: hostile, limits: DecodeLimits())
        let error = #expect(throws: PhotoError.self) { _ = try decodeAll(decoder) }
        #expect(error?.code == .corruptImage)
        #expect(error?.message.contains("more than 500 scans") == true)
    }

    @Test("a deadline already passed stops the decode with timeout")
    func timeout() throws {
        let bytes = try encodeImage(gradient(width: 64, height: 64), options: EncodeOptions(format: .jpeg))
        let decoder = try JPEGDecoder(bytes: bytes, limits: DecodeLimits())
        let past = DecodeLimits(deadline: ContinuousClock.now - .seconds(1))
        let error = #expect(throws: PhotoError.self) { _ = try decodeAll(decoder, limits: past) }
        #expect(error?.code == .timeout)
        // The decoder is still usable afterwards.
        _ = try decodeAll(decoder)
    }

    @Test("an error thrown by the row callback comes out unchanged and the decoder can start again")
    func callbackError() throws {
        struct Stop: Error {}
        let bytes = try encodeImage(gradient(width: 64, height: 64), options: EncodeOptions(format: .jpeg))
        let decoder = try JPEGDecoder(bytes: bytes, limits: DecodeLimits())
        #expect(throws: Stop.self) {
            try decoder.decode(eighths: 8, channels: 3, limits: DecodeLimits()) { _ in throw Stop() }
        }
        let again = try decodeAll(decoder, eighths: 4)
        #expect(again.width == 32)
    }

    @Test("extraneous bytes are a warning, not an error")
    func warnings() throws {
        var bytes = try encodeImage(gradient(width: 32, height: 32), options: EncodeOptions(format: .jpeg))
        // Garbage between the last scan and EOI.
        bytes.insert(contentsOf: [0x12, 0x34, 0x56], at: bytes.count - 2)
        let decoder = try JPEGDecoder(bytes: bytes, limits: DecodeLimits())
        _ = try decodeAll(decoder)
        #expect(decoder.warnings.count == 1)
        #expect(decoder.warnings.first?.contains("extraneous bytes") == true)
    }
}
