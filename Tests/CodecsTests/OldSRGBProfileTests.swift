import Foundation
import Testing
@testable import Codecs
import Pixels

/// The old HP/Microsoft "sRGB IEC61966-2.1" profile (3144 bytes, 1998), which many cameras
/// embed, is on libpng's list of known incorrect sRGB profiles: PNG output of such photos
/// failed with "known incorrect sRGB profile" under `color: "keep"`. Both variants found in
/// real photos (perceptual and media-relative intent) are checked in (Fixtures/README.md).
@Suite struct OldSRGBProfileTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func profile(_ name: String) throws -> [UInt8] {
        let url = fixtures.appendingPathComponent(name)
        return [UInt8](try #require(FileManager.default.contents(atPath: url.path), "missing fixture \(url.path)"))
    }

    @Test("a PNG is written with the old HP sRGB profile, and read back with it", arguments: ["hp-srgb-perceptual.icc", "hp-srgb-relative.icc"])
    func writesAndReadsBack(name: String) throws {
        let icc = try Self.profile(name)
        #expect(icc.count == 3144)
        #expect(ICC.description(icc) == "sRGB IEC61966-2.1")
        for channels in [3, 4] {
            let image = gradient(width: 19, height: 7, channels: channels)
            let png = try encodeImage(image, options: EncodeOptions(format: .png, icc: icc))
            let decoder = try PNGDecoder(bytes: png, limits: DecodeLimits())
            // The reader keeps it too (libpng alone would drop it with a warning).
            #expect(decoder.info.icc == icc)
            #expect(samePixels(try decodeAll(decoder, channels: channels), image))
        }
    }

    @Test("a JPEG carrying the profile reads it, and its PNG keeps it")
    func fromJPEG() throws {
        let icc = try Self.profile("hp-srgb-perceptual.icc")
        let jpeg = try encodeImage(gradient(width: 32, height: 24, channels: 3),
                                          options: EncodeOptions(format: .jpeg, icc: icc))
        let decoder = try JPEGDecoder(bytes: jpeg, limits: DecodeLimits())
        #expect(decoder.info.icc == icc)
        let pixels = try decodeAll(decoder, channels: 3)
        let png = try encodeImage(pixels, options: EncodeOptions(format: .png, icc: decoder.info.icc))
        #expect(try PNGDecoder(bytes: png, limits: DecodeLimits()).info.icc == icc)
    }
}
