import Pixels
import Testing

@Suite struct DominantColorTests {
    /// An image made of colour bands covering the given fractions of its rows, with a little
    /// deterministic noise so clusters have spread, as in a photo.
    func bands(_ parts: [([UInt8], Double)], width: Int = 120, height: Int = 100) -> Image {
        var seed: UInt32 = 7
        var limits: [(Int, [UInt8])] = []
        var acc = 0.0
        for (c, f) in parts { acc += f; limits.append((Int((acc * Double(height)).rounded()), c)) }
        return makeImage(width: width, height: height, channels: 3) { _, y in
            let c = limits.first { y < $0.0 }?.1 ?? parts.last!.0
            seed = seed &* 1_664_525 &+ 1_013_904_223
            let n = Int(seed >> 29) - 4  // -4…3
            return c.map { UInt8(clamping: Int($0) + n) }
        }
    }

    func expectNear(_ image: Image, _ rgb: [UInt8], within dE: Double = 3) {
        let got = DominantColor.of(image)
        let want = Lab(srgb: rgb[0], rgb[1], rgb[2])
        #expect(got.deltaE(want) < dE, "got \(got.hex), want \(want.hex)")
    }

    @Test func theBiggestColourWins() {
        expectNear(bands([([40, 90, 200], 0.6), ([200, 60, 40], 0.4)]), [40, 90, 200])
    }

    @Test func whiteBackgroundAndBlackShadowsAreIgnored() {
        // A red product on white paper with a black shadow: red, not white.
        expectNear(bands([([252, 252, 252], 0.6), ([190, 30, 40], 0.3), ([5, 5, 5], 0.1)]), [190, 30, 40])
    }

    @Test func neutralsCountWhenTheyAreThePicture() {
        // A night shot: almost all near-black, a small yellow light.
        expectNear(bands([([6, 6, 8], 0.9), ([240, 200, 40], 0.1)]), [6, 6, 8])
        // Snow: almost all near-white.
        expectNear(bands([([245, 246, 250], 0.92), ([90, 60, 40], 0.08)]), [245, 246, 250])
    }

    @Test func labRoundTripsAndHex() {
        for c in [[0, 0, 0], [255, 255, 255], [90, 125, 154], [255, 0, 0], [12, 200, 99]] as [[UInt8]] {
            let lab = Lab(srgb: c[0], c[1], c[2])
            let back = lab.srgb
            #expect([back.r, back.g, back.b] == c)
        }
        #expect(Lab(srgb: 90, 125, 154).hex == "#5a7d9a")
        #expect(abs(Lab(srgb: 255, 255, 255).l - 100) < 0.01)
    }

    @Test func repeatable() {
        let image = bands([([40, 90, 200], 0.5), ([200, 60, 40], 0.5)])
        #expect(DominantColor.of(image) == DominantColor.of(image))
    }
}
