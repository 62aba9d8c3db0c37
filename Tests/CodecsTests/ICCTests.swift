import Testing
import CLCMS
@testable import Codecs
import Pixels

/// A Display P3 profile built with lcms2: P3 primaries, D65, the sRGB transfer curve.
func displayP3Profile() -> [UInt8] {
    var white = cmsCIExyY(x: 0.3127, y: 0.3290, Y: 1)
    var primaries = cmsCIExyYTRIPLE(Red: cmsCIExyY(x: 0.680, y: 0.320, Y: 1),
                                    Green: cmsCIExyY(x: 0.265, y: 0.690, Y: 1),
                                    Blue: cmsCIExyY(x: 0.150, y: 0.060, Y: 1))
    var parameters: [Double] = [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]
    let curve = cmsBuildParametricToneCurve(nil, 4, &parameters)!
    defer { cmsFreeToneCurve(curve) }
    var curves: [OpaquePointer?] = [curve, curve, curve]
    let profile = cmsCreateRGBProfile(&white, &primaries, &curves)!
    defer { cmsCloseProfile(profile) }
    let name = cmsMLUalloc(nil, 1)!
    defer { cmsMLUfree(name) }
    _ = cmsMLUsetASCII(name, "en", "US", "Display P3")
    _ = cmsWriteTag(profile, cmsSigProfileDescriptionTag, UnsafeRawPointer(name))
    var length: UInt32 = 0
    _ = cmsSaveProfileToMem(profile, nil, &length)
    var bytes = [UInt8](repeating: 0, count: Int(length))
    _ = cmsSaveProfileToMem(profile, &bytes, &length)
    return bytes
}

@Suite struct ICCTests {
    @Test func sRGBIsNamedAndRecognised() {
        let srgb = ICC.sRGB
        #expect(srgb.count > 128)
        #expect(ICC.description(srgb)?.contains("sRGB") == true)
        #expect(ICC.isSRGB(srgb))
        #expect(ICC.sRGB == srgb)  // built once, same bytes
    }

    @Test func p3IsNamedAndNotSRGB() {
        let p3 = displayP3Profile()
        #expect(ICC.description(p3) == "Display P3")
        #expect(!ICC.isSRGB(p3))
    }

    @Test func garbageHasNoDescriptionAndNoTransform() {
        #expect(ICC.description([1, 2, 3, 4]) == nil)
        #expect(ICC.description([]) == nil)
        #expect(ColorTransform(fromICC: [1, 2, 3], toICC: ICC.sRGB, channels: 3) == nil)
    }

    @Test(arguments: [3, 4])
    func p3RedBecomesClippedSRGBRedAndGreyStaysGrey(channels: Int) throws {
        var buffer = Canvas(width: 3, height: 2, channels: channels)
        let pixels: [[UInt8]] = [[255, 0, 0], [128, 128, 128], [0, 0, 0]]
        buffer.withUnsafeMutableRows { rows in
            for y in 0..<2 {
                for x in 0..<3 {
                    for c in 0..<3 { rows[y][x * channels + c] = pixels[x][c] }
                    if channels == 4 { rows[y][x * channels + 3] = 77 }
                }
            }
        }
        let transform = try #require(ColorTransform.toSRGB(from: displayP3Profile(), channels: channels))
        transform.apply(to: &buffer)
        let red = buffer.pixel(0, 1)
        #expect(red[0] == 255 && red[1] < 20 && red[2] < 20)
        let grey = buffer.pixel(1, 0)
        #expect(abs(Int(grey[0]) - 128) <= 2 && grey[0] == grey[1] && grey[1] == grey[2])
        #expect(Array(buffer.pixel(2, 0).prefix(3)) == [0, 0, 0])
        if channels == 4 { #expect(red[3] == 77) }
    }
}
