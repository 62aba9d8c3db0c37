import Testing
import Foundation
@testable import Codecs
import Pixels

/// Every size a header can declare, up to 0xFFFFFFFF a side, fails cleanly: `too-large` or
/// `corrupt-image`, never a trap (a 33-byte PNG of 0xFFFFFFFF² once crashed the process).
@Suite struct HeaderSizeTests {
    /// The sides tried for 32-bit headers (PNG, HEIF): the extremes, the edges of Int32 and
    /// UInt32, and sizes whose product overflows Int64 or only its ×4.
    static let sides32: [(UInt32, UInt32)] = [
        (0xFFFF_FFFF, 0xFFFF_FFFF), (0xFFFF_FFFF, 1), (1, 0xFFFF_FFFF), (0xFFFF_FFFF, 0x7FFF_FFFF),
        (0x7FFF_FFFF, 0x7FFF_FFFF), (0x8000_0000, 0x8000_0000), (0x8000_0000, 1), (65536, 65536),
        (150_000_001, 1), (12_248, 12_248), (0, 0), (0, 0xFFFF_FFFF), (0xFFFF_FFFF, 0),
    ]

    /// Opens the bytes and, when the header is accepted, decodes every row at every scale:
    /// the error it ends with, or nil when it decodes.
    static func outcome(_ bytes: [UInt8], limits: DecodeLimits = DecodeLimits()) -> PhotoError? {
        do {
            let decoder = try openDecoder(bytes: bytes, limits: limits)
            for eighths in decoder.scales {
                try decoder.decode(eighths: eighths, channels: 3, limits: limits) { _ in }
            }
            return nil
        } catch let error as PhotoError {
            return error
        } catch {
            Issue.record("not a PhotoError: \(error)")
            return nil
        }
    }

    static func expectCleanFailure(_ bytes: [UInt8], _ what: String,
                                   sourceLocation: SourceLocation = #_sourceLocation) {
        let error = outcome(bytes)
        #expect(error?.code == .tooLarge || error?.code == .corruptImage,
                "\(what): \(error.map(\.description) ?? "decoded")", sourceLocation: sourceLocation)
    }

    // MARK: PNG

    /// A PNG signature and an IHDR of the given size (8-bit RGB), with a right or wrong CRC.
    static func pngHeader(width: UInt32, height: UInt32, goodCRC: Bool = true) -> [UInt8] {
        let ihdr: [UInt8] = Array("IHDR".utf8) + bigEndian(width) + bigEndian(height) + [8, 2, 0, 0, 0]
        let crc = crc32(ihdr) ^ (goodCRC ? 0 : 1)
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [0, 0, 0, 13] + ihdr + bigEndian(crc)
    }

    @Test("the 33-byte PNG of 0xFFFFFFFF² is too-large, with the size in words")
    func pngOfMaxSides() {
        let error = Self.outcome(Self.pngHeader(width: 0xFFFF_FFFF, height: 0xFFFF_FFFF))
        #expect(error?.code == .tooLarge)
        #expect(error?.message == "PNG header says 4294967295×4294967295, over the limit of 150 MP (maxPixels)")
    }

    @Test("any PNG header size fails cleanly, CRC right or wrong, data or none")
    func pngSizes() throws {
        let idat = try encodeImage(Image(width: 2, height: 2, channels: 3, fill: [9, 9, 9]),
                                         options: EncodeOptions(format: .png)).dropFirst(33)
        for (w, h) in Self.sides32 {
            for goodCRC in [true, false] {
                let header = Self.pngHeader(width: w, height: h, goodCRC: goodCRC)
                Self.expectCleanFailure(header, "PNG \(w)×\(h) crc \(goodCRC)")
                Self.expectCleanFailure(header + idat, "PNG \(w)×\(h) crc \(goodCRC) + 2×2 data")
            }
        }
    }

    @Test("a PNG over the limit says too-large, even under a limit of Int.max")
    func pngOverLimit() {
        #expect(Self.outcome(Self.pngHeader(width: 0xFFFF_FFFF, height: 0x7FFF_FFFF))?.code == .tooLarge)
        let bomb = Self.pngHeader(width: 0xFFFF_FFFF, height: 0xFFFF_FFFF)
        #expect(Self.outcome(bomb, limits: DecodeLimits(maxPixels: .max))?.code == .tooLarge)
        // libpng's own side limit (2^31 - 1) speaks when the CRC keeps ours from reading IHDR.
        let damaged = Self.pngHeader(width: 0x7FFF_FFFF, height: 0x7FFF_FFFF, goodCRC: false)
        #expect(Self.outcome(damaged, limits: DecodeLimits(maxPixels: .max))?.code == .corruptImage)
    }

    @Test("a late-chunk walk over chunk lengths near 2^32 stays in bounds")
    func pngChunkLengths() {
        var png = Self.pngHeader(width: 1, height: 1)
        png += bigEndian(0xFFFF_FFFF) + Array("eXIf".utf8) + [1, 2, 3, 4, 5, 6, 7, 8]
        #expect(PNGDecoder.chunk("eXIf", in: png) == nil)
        png = Self.pngHeader(width: 1, height: 1) + bigEndian(0x7FFF_FFF0) + Array("tEXt".utf8) + [0, 0, 0, 0]
        #expect(PNGDecoder.chunk("eXIf", in: png) == nil)
    }

    // MARK: JPEG

    /// A real JPEG with the SOF's size replaced (16 bits each: all a JPEG can say).
    static func jpeg(width: UInt16, height: UInt16, progressive: Bool) throws -> [UInt8] {
        var bytes = try encodeImage(Image(width: 16, height: 16, channels: 3, fill: [90, 120, 150]),
                                           options: EncodeOptions(format: .jpeg, progressive: progressive))
        let sof: UInt8 = progressive ? 0xC2 : 0xC0
        let at = try #require((2..<bytes.count - 9).first { bytes[$0] == 0xFF && bytes[$0 + 1] == sof })
        bytes[at + 5] = UInt8(height >> 8); bytes[at + 6] = UInt8(height & 0xFF)
        bytes[at + 7] = UInt8(width >> 8); bytes[at + 8] = UInt8(width & 0xFF)
        return bytes
    }

    @Test("any JPEG header size fails cleanly", arguments: [false, true])
    func jpegSizes(progressive: Bool) throws {
        let sides: [(UInt16, UInt16)] = [(0xFFFF, 0xFFFF), (0xFFFF, 1), (1, 0xFFFF), (65501, 8), (65500, 65500),
                                         (65500, 2291), (0, 0), (0, 16), (16, 0)]
        for (w, h) in sides {
            Self.expectCleanFailure(try Self.jpeg(width: w, height: h, progressive: progressive),
                                    "JPEG \(w)×\(h) progressive \(progressive)")
        }
    }

    @Test("a JPEG side over libjpeg's 65500 is too-large, named")
    func jpegOverLibjpeg() throws {
        let error = Self.outcome(try Self.jpeg(width: 0xFFFF, height: 0xFFFF, progressive: false))
        #expect(error?.code == .tooLarge)
        #expect(error?.message.contains("65535×65535") == true)
        let big = Self.outcome(try Self.jpeg(width: 65500, height: 65500, progressive: false))
        #expect(big?.code == .tooLarge)
        #expect(big?.message == "JPEG header says 65500×65500 = 4290 MP, over the limit of 150 MP (maxPixels)")
    }

    // MARK: HEIF / AVIF

    /// A real HEIC or AVIF with every `ispe` (image spatial extents) box saying the given size.
    static func heif(_ format: ImageFormat, width: UInt32, height: UInt32) throws -> [UInt8] {
        var bytes = try HEIFEncoder.encode(Image(width: 64, height: 48, channels: 3, fill: [90, 120, 150]),
                                           options: EncodeOptions(format: format))
        let ispe = Array("ispe".utf8)
        var patched = 0
        for at in 4..<(bytes.count - 16) where bytes[at..<(at + 4)].elementsEqual(ispe) {
            // box type, then version and flags (4 bytes), then width and height.
            bytes.replaceSubrange((at + 8)..<(at + 16), with: bigEndian(width) + bigEndian(height))
            patched += 1
        }
        #expect(patched >= 1)
        return bytes
    }

    @Test("any HEIF/AVIF ispe size fails cleanly", arguments: [ImageFormat.heic, .avif])
    func heifSizes(format: ImageFormat) throws {
        for (w, h) in Self.sides32 + [(4096, 4096), (64, 4800), (32768, 32768), (150_000_000, 1)] {
            Self.expectCleanFailure(try Self.heif(format, width: w, height: h), "\(format) \(w)×\(h)")
        }
    }

    @Test("a HEIF side over every limit is too-large", arguments: [ImageFormat.heic, .avif])
    func heifOverLimit(format: ImageFormat) throws {
        let error = Self.outcome(try Self.heif(format, width: 0xFFFF_FFFF, height: 0xFFFF_FFFF))
        #expect(error?.code == .tooLarge, "\(error.map(\.description) ?? "decoded")")
        #expect(error?.message.contains("4294967295x4294967295") == true, "\(error.map(\.description) ?? "decoded")")
        #expect(error?.message.hasSuffix("over the limit of 150 MP (maxPixels)") == true)
        let wide = Self.outcome(try Self.heif(format, width: 40_000, height: 3000))
        #expect(wide?.code == .corruptImage, "120 MP within the limit opens; its data is 64×48: \(wide.map(\.description) ?? "")")
    }

    // MARK: limits and counts

    @Test("checkPixels and byteCount never trap")
    func arithmetic() {
        let limits = DecodeLimits()
        for (w, h) in [(Int.max, Int.max), (Int.max, 2), (1 << 32, 1 << 32), (Int.min, 1), (-1, -1)] {
            #expect(throws: PhotoError.self) { try limits.checkPixels(width: w, height: h, format: "X") }
        }
        #expect(throws: Never.self) { try DecodeLimits(maxPixels: .max).checkPixels(width: 1 << 31, height: 1 << 31, format: "X") }
        #expect(DecodeLimits.byteCount(width: 1 << 31, height: 1 << 31, channels: 4) == nil)
        #expect(DecodeLimits.byteCount(width: 1 << 31, height: 1 << 30, channels: 4) == nil)
        #expect(DecodeLimits.byteCount(width: 1 << 31, height: 1 << 29, channels: 4) == 1 << 62)
        #expect(DecodeLimits.byteCount(width: 3, height: 5, channels: 4) == 60)
        #expect(DecodeLimits.words(.max) == "9223372036855 MP")
    }
}

/// A HEIF grid's own canvas size must agree with the primary image's `ispe`: libheif 1.15
/// allocates the canvas from the grid and overflowed its offsets pasting tiles into a canvas of
/// 26725×30317 under an `ispe` of 48×32 (a write out of bounds, found by fuzzing).
@Suite struct HEIFCanvasTests {
    /// A HEIC with the grid descriptor's width and height (16-bit fields) replaced.
    static func heicWithGrid(width: UInt16, height: UInt16) throws -> (bytes: [UInt8], patched: Bool) {
        var bytes = try HEIFEncoder.encode(Image(width: 48, height: 32, channels: 3, fill: [90, 120, 150]),
                                           options: EncodeOptions(format: .heic))
        let boxes = HEIFBoxes(bytes)
        guard boxes.primaryType == "grid" else { return (bytes, false) }
        // The grid descriptor sits in idat: version, flags, rows − 1, columns − 1, width, height.
        let at = try #require((4..<bytes.count - 16).first { bytes[$0..<($0 + 4)].elementsEqual("idat".utf8) }) + 4
        bytes.replaceSubrange((at + 4)..<(at + 8), with: [UInt8(width >> 8), UInt8(width & 0xFF), UInt8(height >> 8), UInt8(height & 0xFF)])
        return (bytes, true)
    }

    @Test("the boxes of a HEIC libheif wrote: its grid canvas is its ispe")
    func readsTheBoxes() throws {
        let bytes = try HEIFEncoder.encode(Image(width: 48, height: 32, channels: 3, fill: [90, 120, 150]),
                                           options: EncodeOptions(format: .heic))
        let boxes = HEIFBoxes(bytes)
        #expect(boxes.primaryType == "grid" || boxes.primaryType == "hvc1")
        #expect(boxes.primaryExtent.map { [$0.width, $0.height] } == [48, 32])
        if boxes.primaryType == "grid" { #expect(boxes.derivedCanvas.map { [$0.width, $0.height] } == [48, 32]) }
    }

    @Test("a grid canvas that disagrees with ispe is corrupt-image, one over the limit too-large")
    func gridDisagrees() throws {
        let (bigger, patched) = try Self.heicWithGrid(width: 26725, height: 30317)
        try #require(patched, "libheif wrote no grid: nothing to patch")
        let error = HeaderSizeTests.outcome(bigger)
        #expect(error?.code == .tooLarge, "\(error.map(\.description) ?? "decoded")")
        let wrong = HeaderSizeTests.outcome(try Self.heicWithGrid(width: 4000, height: 3000).bytes)
        #expect(wrong?.code == .corruptImage)
        #expect(wrong?.message == "HEIF grid says its canvas is 4000×3000, its image extent (ispe) says 48×32")
        #expect(HeaderSizeTests.outcome(try Self.heicWithGrid(width: 48, height: 32).bytes) == nil)
    }

    @Test("a grid made of itself (the fuzzer's file: an alpha grid whose input is itself; libheif 1.15 recursed on new threads and aborted) is corrupt-image")
    func gridMadeOfItself() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/regressions/heif/alpha-grid-made-of-itself.heic")
        let bytes = [UInt8](try Data(contentsOf: file))
        #expect(HEIFBoxes(bytes).nestedDerivation)
        let error = HeaderSizeTests.outcome(bytes)
        #expect(error?.code == .corruptImage)
        #expect(error?.message == "HEIF file has a grid or overlay made of other grids or overlays, or of itself: "
                + "not a photo a camera writes, and libheif cannot decode it safely")
        // A grid of coded tiles, as libheif and phones write it, is not nested.
        let (grid, _) = try Self.heicWithGrid(width: 48, height: 32)
        #expect(!HEIFBoxes(grid).nestedDerivation)
    }

    @Test("box walking never reads past the data", arguments: [0, 1, 7, 8, 9, 16, 40, 100, 400])
    func truncated(length: Int) throws {
        let bytes = try HEIFEncoder.encode(Image(width: 16, height: 16, channels: 3, fill: [1, 2, 3]),
                                           options: EncodeOptions(format: .heic))
        _ = HEIFBoxes(Array(bytes.prefix(length)))
        // Sizes of 1 (a 64-bit size follows) and 0 (to the end), lengths near 2^32 and 2^64.
        var weird = bytes
        if weird.count > 40 {
            weird.replaceSubrange(28..<32, with: [0, 0, 0, 1])
            _ = HEIFBoxes(weird)
            weird.replaceSubrange(28..<32, with: [0xFF, 0xFF, 0xFF, 0xFF])
            _ = HEIFBoxes(weird)
            weird.replaceSubrange(28..<32, with: [0, 0, 0, 0])
            _ = HEIFBoxes(weird)
        }
        #expect(BoxReader(bytes: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]).uint(0, size: 8) == nil)
        #expect(BoxReader(bytes: [1, 2]).uint(1, size: 2) == nil)
        #expect(BoxReader(bytes: [1, 2]).uint(Int.max, size: 2) == nil)
    }
}
