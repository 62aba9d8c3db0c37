import Testing
@testable import Codecs
import Pixels

/// Smooth content (lossy codecs keep it close): a diagonal gradient with a red block.
/// With 4 channels, `transparentRight` makes the right half fully transparent.
func smoothImage(width: Int, height: Int, channels: Int, transparentRight: Bool = false) -> Image {
    Image(width: width, height: height, channels: channels) { rows in
        for y in 0..<height {
            for x in 0..<width {
                let p = rows[y] + x * channels
                let inBlock = x < width / 2 && y < height / 2
                p[0] = inBlock ? 220 : UInt8(x * 200 / width)
                p[1] = inBlock ? 30 : UInt8(y * 200 / height)
                p[2] = inBlock ? 30 : 128
                if channels == 4 { p[3] = transparentRight && x >= width / 2 ? 0 : 255 }
            }
        }
    }
}

/// Largest per-channel difference averaged over the image.
func meanAbsoluteError(_ a: Image, _ b: Image) -> Double {
    precondition(a.width == b.width && a.height == b.height && a.channels == b.channels)
    let total = zip(bytes(of: a), bytes(of: b)).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
    return Double(total) / Double(a.byteCount)
}

/// EXIF with IFD0 holding one entry: Orientation = `orientation` (big-endian TIFF).
func exifWithOrientation(_ orientation: UInt8) -> [UInt8] {
    [0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08,
     0x00, 0x01,
     0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, orientation, 0x00, 0x00,
     0x00, 0x00, 0x00, 0x00]
}

@Suite struct HEIFTests {
    @Test(arguments: [ImageFormat.heic, .avif])
    func roundTripCarriesPixelsICCAndEXIF(format: ImageFormat) throws {
        let image = smoothImage(width: 64, height: 48, channels: 3)
        let icc = ICC.sRGB
        let exif = exifWithOrientation(1)
        let bytes = try HEIFEncoder.encode(image, options: EncodeOptions(format: format, quality: 90, icc: icc, exif: exif))
        let decoder = try HEIFDecoder(bytes: bytes, limits: DecodeLimits())
        #expect(decoder.info.format == format)
        #expect(decoder.info.width == 64 && decoder.info.height == 48)
        #expect(!decoder.info.hasAlpha)
        #expect(decoder.info.orientation == 1)
        #expect(decoder.info.icc == icc)
        #expect(decoder.info.exif == exif)
        let decoded = try decodeAll(decoder, channels: 3)
        #expect(meanAbsoluteError(decoded, image) < 4)
        let red = decoded.pixel(8, 8)
        #expect(abs(Int(red[0]) - 220) < 12 && red[1] < 50 && red[2] < 50)
    }

    @Test func heicKeepsAlpha() throws {
        let image = smoothImage(width: 32, height: 32, channels: 4, transparentRight: true)
        let bytes = try HEIFEncoder.encode(image, options: EncodeOptions(format: .heic, quality: 90))
        let decoder = try HEIFDecoder(bytes: bytes, limits: DecodeLimits())
        #expect(decoder.info.hasAlpha)
        let rgba = try decodeAll(decoder, channels: 4)
        #expect(rgba.pixel(4, 20)[3] > 240)
        #expect(rgba.pixel(28, 20)[3] < 15)
        let rgb = try decodeAll(decoder, channels: 3)
        #expect(rgb.pixel(28, 20).allSatisfy { $0 > 240 })  // transparent → white
    }

    @Test func avifWithAlphaIsFlattenedOverWhite() throws {
        let image = smoothImage(width: 32, height: 32, channels: 4, transparentRight: true)
        let bytes = try HEIFEncoder.encode(image, options: EncodeOptions(format: .avif, quality: 90))
        let decoder = try HEIFDecoder(bytes: bytes, limits: DecodeLimits())
        #expect(!decoder.info.hasAlpha)
        let rgb = try decodeAll(decoder, channels: 3)
        #expect(rgb.pixel(28, 20).allSatisfy { $0 > 235 })
    }

    /// irot: stored 64×32 with "rotate 90° clockwise" (EXIF 6) decodes upright as 32×64,
    /// and the red block (stored top-left) ends top-right.
    @Test func rotationIsAppliedByDecode() throws {
        let image = smoothImage(width: 64, height: 32, channels: 3)
        let bytes = try HEIFEncoder.encode(image, options: EncodeOptions(format: .heic, quality: 90,
                                                                         exif: exifWithOrientation(6)),
                                           orientation: 6)
        let decoder = try HEIFDecoder(bytes: bytes, limits: DecodeLimits())
        #expect(decoder.info.width == 32 && decoder.info.height == 64)
        #expect(decoder.info.orientation == 1)
        #expect(decoder.info.declaredOrientation == 6)
        let decoded = try decodeAll(decoder, channels: 3)
        #expect(decoded.width == 32 && decoded.height == 64)
        let topRight = decoded.pixel(28, 4), topLeft = decoded.pixel(3, 4)
        #expect(topRight[0] > 180 && topRight[1] < 70)
        #expect(!(topLeft[0] > 180 && topLeft[1] < 70))
    }

    @Test func overTheLimitIsTooLarge() throws {
        let bytes = try HEIFEncoder.encode(smoothImage(width: 64, height: 48, channels: 3),
                                           options: EncodeOptions(format: .heic))
        #expect {
            _ = try HEIFDecoder(bytes: bytes, limits: DecodeLimits(maxPixels: 1000))
        } throws: { error in
            (error as? PhotoError)?.code == .tooLarge
        }
    }

    @Test func brokenIsCorrupt() throws {
        let bytes = try HEIFEncoder.encode(smoothImage(width: 64, height: 48, channels: 3),
                                           options: EncodeOptions(format: .heic))
        let cut = Array(bytes.prefix(bytes.count / 2))
        #expect {
            let decoder = try HEIFDecoder(bytes: cut, limits: DecodeLimits())
            _ = try decodeAll(decoder, channels: 3)
        } throws: { error in
            (error as? PhotoError)?.code == .corruptImage
        }
    }

    @Test func exifOrientationReader() {
        #expect(Exif.orientation(exifWithOrientation(8)) == 8)
        #expect(Exif.orientation([0x49, 0x49, 0x2A, 0x00, 0x08, 0, 0, 0, 0, 0]) == nil)
        #expect(Exif.orientation([1, 2, 3]) == nil)
    }
}

import Foundation

/// TRAPS: some libheif 1.15 + aom 3.6 builds abort the process on AVIF 4:2:0/4:4:4. An abort
/// can't be caught in-process, so the exact encoder settings are first proven in a child
/// process (libheif's own `heif-enc`, when installed) on a PNG our encoder wrote.
@Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/heif-enc")))
func avifSettingsDoNotAbortInAChildProcess() throws {
    let dir = URL(fileURLWithPath: try TemporaryFolder.make("avif"))
    defer { try? FileManager.default.removeItem(at: dir) }
    let png = try encodeImage(smoothImage(width: 96, height: 64, channels: 3), options: EncodeOptions(format: .png))
    let input = dir.appendingPathComponent("in.png"), output = dir.appendingPathComponent("out.avif")
    try Data(png).write(to: input)
    let child = Process()
    child.executableURL = URL(fileURLWithPath: "/usr/bin/heif-enc")
    child.arguments = ["-A", "-q", "88", "-p", "chroma=422", "-p", "speed=\(HEIFEncoder.avifSpeed)",
                       "-o", output.path, input.path]
    child.standardOutput = FileHandle.nullDevice
    child.standardError = FileHandle.nullDevice
    try child.run()
    child.waitUntilExit()
    #expect(child.terminationReason == .exit, "heif-enc was killed by signal \(child.terminationStatus)")
    #expect(child.terminationStatus == 0)
    let decoder = try HEIFDecoder(bytes: [UInt8](try Data(contentsOf: output)), limits: DecodeLimits())
    #expect(decoder.info.format == .avif && decoder.info.width == 96)
}
