@testable import Codecs
import Pixels
import Testing

/// Camera raws read with LibRaw: a DNG made here (a real DNG LibRaw reads, with a raw SubIFD
/// and an embedded JPEG preview) opens as its preview, with the raw's own facts.
@Suite struct RawTests {
    /// A preview without EXIF of its own (as cameras embed them): LibRaw adds the raw's.
    static func preview(width: Int, height: Int) throws -> [UInt8] {
        let image = Canvas(width: width, height: height, channels: 3, fill: [200, 40, 40]).finished()
        return try encodeImage(image, options: EncodeOptions(format: .jpeg, quality: 90))
    }

    @Test func aDNGOpensAsItsEmbeddedPreviewWithTheRawsFacts() throws {
        var facts = DNGWriter.Facts()
        facts.orientation = 6
        let dng = DNGWriter.dng(preview: try Self.preview(width: 320, height: 240), previewWidth: 320, previewHeight: 240,
                                rawWidth: 640, rawHeight: 480, facts: facts)
        #expect(sniff(dng) == .cameraRaw("DNG"))
        let decoder = try openDecoder(bytes: dng, limits: DecodeLimits())
        let info = decoder.info
        #expect(info.format == .jpeg)
        #expect(info.width == 320 && info.height == 240)
        #expect(info.raw == RawSource(kind: "DNG", width: 640, height: 480, previewWidth: 320, previewHeight: 240))
        // LibRaw's EXIF: the raw's orientation, make, model and date.
        #expect(info.orientation == 6)
        let summary = Exif.summary(try #require(info.exif))
        #expect(summary.make == "Canon")
        #expect(summary.model == "EOS R5")
        // The pixels are the preview's.
        var rows = 0
        try decoder.decode(eighths: 8, channels: 3, limits: DecodeLimits()) { row in
            if rows == 120 { #expect(row[160 * 3] > 170 && row[160 * 3 + 1] < 80) }
            rows += 1
        }
        #expect(rows == 240)
    }

    @Test func aRawLibRawCannotReadFailsWithAReason() {
        // A TIFF that declares DNG and holds nothing else.
        var b: [UInt8] = [0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0, 1, 0]
        b += [0x12, 0xC6, 1, 0, 4, 0, 0, 0, 1, 4, 0, 0, 0, 0, 0, 0]
        b += [UInt8](repeating: 0, count: 64)
        #expect(sniff(b) == .cameraRaw("DNG"))
        #expect(throws: PhotoError.self) { _ = try openDecoder(bytes: b, limits: DecodeLimits()) }
        do {
            _ = try openDecoder(bytes: b, limits: DecodeLimits())
        } catch {
            #expect([.cameraRaw, .corruptImage].contains(error.code), "\(error)")
            #expect(error.message.hasPrefix("DNG camera raw file"), "\(error)")
        }
        // A truncated DNG: the preview is cut off.
        let dng = DNGWriter.dng(preview: (try? Self.preview(width: 64, height: 48)) ?? [], previewWidth: 64, previewHeight: 48,
                                rawWidth: 64, rawHeight: 48)
        #expect(throws: PhotoError.self) {
            let d = try openDecoder(bytes: Array(dng.prefix(400)), limits: DecodeLimits())
            try d.decode(eighths: 8, channels: 3, limits: DecodeLimits()) { _ in }
        }
    }
}
