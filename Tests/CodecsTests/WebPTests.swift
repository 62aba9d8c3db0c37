import Testing
@testable import Codecs
import Pixels

@Suite("WebP in and out")
struct WebPTests {
    @Test func roundTripKeepsPixelsAndMetadata() throws {
        let image = smoothImage(width: 96, height: 64, channels: 3)
        var options = EncodeOptions(format: .webp, quality: 90, icc: ICC.sRGB, exif: exifWithOrientation(1))
        options.xmp = XMPTests.packet
        let bytes = try encodeImage(image, options: options)
        #expect(sniff(bytes) == .image(.webp), "found by content")
        let decoder = try openDecoder(bytes: bytes, limits: DecodeLimits())
        #expect(decoder is WebPDecoder)
        #expect(decoder.info.format == .webp && decoder.info.width == 96 && decoder.info.height == 64)
        #expect(!decoder.info.hasAlpha)
        #expect(decoder.info.icc == ICC.sRGB)
        #expect(decoder.info.exif == exifWithOrientation(1))
        #expect(decoder.info.xmp == XMPTests.packet)
        let decoded = try decodeAll(decoder, channels: 3)
        #expect(meanAbsoluteError(decoded, image) < 4)
        let red = decoded.pixel(8, 8)
        #expect(abs(Int(red[0]) - 220) < 16 && red[1] < 60 && red[2] < 60)
    }

    @Test func alphaIsKeptAndPlainFilesHaveNoChunks() throws {
        let image = smoothImage(width: 32, height: 32, channels: 4, transparentRight: true)
        let bytes = try encodeImage(image, options: EncodeOptions(format: .webp, quality: 90))
        let decoder = try WebPDecoder(bytes: bytes, limits: DecodeLimits())
        #expect(decoder.info.hasAlpha)
        #expect(decoder.info.icc == nil && decoder.info.exif == nil && decoder.info.xmp == nil)
        let rgba = try decodeAll(decoder, channels: 4)
        #expect(rgba.pixel(25, 5)[3] == 0 && rgba.pixel(5, 25)[3] == 255)
        // Asked for RGB, the transparent half comes over white.
        let rgb = try decodeAll(decoder, channels: 3)
        #expect(rgb.pixel(25, 5) == [255, 255, 255])
    }

    @Test func brokenAndAnimatedFilesFailWithAReason() throws {
        let bytes = try encodeImage(smoothImage(width: 64, height: 64, channels: 3),
                                    options: EncodeOptions(format: .webp, quality: 80))
        #expect(throws: PhotoError.self) {
            let decoder = try WebPDecoder(bytes: Array(bytes.prefix(bytes.count / 2)), limits: DecodeLimits())
            _ = try decodeAll(decoder, channels: 3)
        }
        // An extended header whose flags say "animation".
        var animated: [UInt8] = Array("RIFF".utf8) + [30, 0, 0, 0] + Array("WEBPVP8X".utf8) + [10, 0, 0, 0]
        animated += [0x02, 0, 0, 0, 63, 0, 0, 63, 0, 0]
        animated += Array("ANIM".utf8) + [6, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        do {
            _ = try WebPDecoder(bytes: animated, limits: DecodeLimits())
            Issue.record("an animated WebP was opened")
        } catch {
            #expect(error.code == .unsupportedFormat && error.message.contains("animated"), "\(error)")
        }
        #expect(throws: PhotoError.self) { _ = try WebPDecoder(bytes: bytes, limits: DecodeLimits(maxPixels: 1000)) }
    }
}
