import Foundation
import Pixels
import Testing

/// The set-wide correction's pure parts (docs/reference.md, `harmonize`): measuring a photo's
/// light, the correction toward a reference, and the curve that applies it.
@Suite struct LightTests {
    /// A small scene in linear light: greys from dark to light, a few colours, some grain; nothing
    /// in it clips under the lights tried.
    static let scene: [(Double, Double, Double)] = {
        let blocks: [(Double, Double, Double)] = [
            (0.45, 0.45, 0.45), (0.3, 0.3, 0.3), (0.18, 0.18, 0.18), (0.09, 0.09, 0.09), (0.03, 0.03, 0.03),
            (0.4, 0.22, 0.12), (0.1, 0.2, 0.4), (0.08, 0.18, 0.05), (0.42, 0.38, 0.28), (0.3, 0.3, 0.32),
        ]
        var seed: UInt32 = 11
        return (0..<(160 * 120)).map { i in
            let b = blocks[(i % 160) / 16]
            seed = seed &* 1_664_525 &+ 1_013_904_223
            let grain = 1 + (Double(seed >> 16) / 65536 - 0.5) * 0.06
            return (b.0 * grain, b.1 * grain, b.2 * grain)
        }
    }()

    /// The scene under light of `kelvin`, `ev` brighter, as 8-bit sRGB.
    static func shot(kelvin: Double, ev: Double = 0) -> Image {
        let w = ColourTemperature.white(kelvin: kelvin), k = exp2(ev)
        return makeImage(width: 160, height: 120, channels: 3) { x, y in
            let p = scene[y * 160 + x]
            return [SRGBCurve.code(p.0 * w.r * k), SRGBCurve.code(p.1 * w.g * k), SRGBCurve.code(p.2 * w.b * k)]
        }
    }

    static func measure(_ image: Image, excluding: [PixelRect] = []) -> LightEstimate {
        image.withUnsafeRows { LightEstimate.measure($0, excluding: excluding) }
    }

    @Test func theEstimateMovesWithTheLight() {
        let warm = Self.measure(Self.shot(kelvin: 3200, ev: 0.2)), cool = Self.measure(Self.shot(kelvin: 7000, ev: -0.8))
        let a = ColourTemperature.white(kelvin: 3200), b = ColourTemperature.white(kelvin: 7000)
        // The light moved as the estimate did — but for half its tint across the warm–cool line
        // (the Planckian locus curves a little) — and the level by 1 EV.
        var du = log(a.r / a.g) - log(b.r / b.g), dv = log(a.b / a.g) - log(b.b / b.g)
        let across = (u: -ColourTemperature.coolward.v, v: ColourTemperature.coolward.u)
        let tint = du * across.u + dv * across.v
        du -= 0.5 * tint * across.u
        dv -= 0.5 * tint * across.v
        #expect(abs((warm.chromaticity.u - cool.chromaticity.u) - du) < 0.04)
        #expect(abs((warm.chromaticity.v - cool.chromaticity.v) - dv) < 0.04)
        #expect(abs((warm.level - cool.level) - 1) < 0.04)
        #expect(warm.neutral > 0.12 && cool.neutral > 0.12, "half the scene is grey: \(warm.neutral), \(cool.neutral)")
    }

    @Test func facesAreLeftOutOfTheWhite() {
        // Grey on the left, skin on the right: skin left out, the white is the grey's.
        let image = makeImage(width: 100, height: 80, channels: 3) { x, _ in x < 50 ? [128, 128, 128] : [224, 172, 140] }
        let all = Self.measure(image), greyOnly = Self.measure(image, excluding: [PixelRect(x: 50, y: 0, width: 50, height: 80)])
        #expect(abs(greyOnly.chromaticity.u) < 0.01 && abs(greyOnly.chromaticity.v) < 0.01)
        #expect(all.chromaticity.u > 0.1, "skin counted warms the white: \(all.white)")
        // The level still counts every pixel.
        #expect(abs(all.level - greyOnly.level) < 1e-9)
    }

    @Test func clippedAndDarkPixelsSayNothingOfTheWhite() {
        let blown = makeImage(width: 80, height: 60, channels: 3) { x, _ in x < 40 ? [255, 255, 250] : [3, 2, 1] }
        let estimate = Self.measure(blown)
        #expect(estimate.neutral == 0 && estimate.confidence == 0 && estimate.white == [1, 1, 1])
        #expect(Self.measure(makeImage(width: 1, height: 1, channels: 4) { _, _ in [9, 9, 9, 0] }) == .unknown)
    }

    @Test func aCorrectionTowardItselfIsNone() {
        let light = Self.measure(Self.shot(kelvin: 5000))
        #expect(LightCorrection.toward(light, from: light, strength: 0.7).isNone)
        // Below the deadbands (about ΔE 2, 0.15 EV): nothing either.
        var near = light
        near.white[0] *= 1.02
        near.level += 0.1
        #expect(LightCorrection.toward(light, from: near, strength: 1).isNone)
    }

    @Test func theCorrectionIsCapped() {
        let tungsten = Self.measure(Self.shot(kelvin: 2600, ev: -2.5)), daylight = Self.measure(Self.shot(kelvin: 8000, ev: 0))
        let c = LightCorrection.toward(daylight, from: tungsten, strength: 1)
        #expect(abs((c.gains.max() ?? 0) - LightCorrection.maxGain) < 0.001, "\(c.gains)")
        #expect(c.gains.allSatisfy { $0 >= 1 / LightCorrection.maxGain - 0.001 })
        #expect(abs(c.gains.reduce(1, *) - 1) < 0.002, "geometric mean 1: \(c.gains)")
        // The exposure's cap is on the move toward the level: the grey ends exactly 1 EV brighter
        // (what keeps its luminance through the gains comes on top of the move).
        #expect(abs(c.applied(to: tungsten).level - tungsten.level - LightCorrection.maxEV) < 0.01, "\(c.exposure)")
        // Warm light is cooled: red down, blue up.
        #expect(c.gains[0] < 1 && c.gains[2] > 1)
    }

    @Test func strengthIsTheShareOfTheDifferenceTaken() {
        let a = Self.measure(Self.shot(kelvin: 4500, ev: 0.3)), b = Self.measure(Self.shot(kelvin: 5500, ev: 0))
        let full = LightCorrection.toward(b, from: a, strength: 1), half = LightCorrection.toward(b, from: a, strength: 0.5)
        // Everything within the caps and past the deadbands: the log gains halve.
        let ratio = log(half.gains[2] / half.gains[0]) / log(full.gains[2] / full.gains[0])
        #expect(abs(ratio - 0.5) < 0.01, "\(ratio)")
        // Brought all the way, the photo's light is the reference's.
        let moved = full.applied(to: a)
        #expect(abs(moved.level - b.level) < 0.11)
        #expect(abs(moved.chromaticity.u - b.chromaticity.u) < 0.04 && abs(moved.chromaticity.v - b.chromaticity.v) < 0.04)
        #expect(full.undone(moved) == a || abs(full.undone(moved).level - a.level) < 0.002)
    }

    @Test func aVisibleDifferenceIsAboutTwoDeltaE() {
        let c = LightCorrection(gains: [1, 1, 1], exposure: 0)
        #expect(c.difference(c) == 0)
        #expect(c.difference(LightCorrection(gains: [1.03, 1, 0.97], exposure: 0)) < 2)
        #expect(c.difference(LightCorrection(gains: [1.12, 1, 0.89], exposure: 0)) > 2)
        #expect(c.difference(LightCorrection(gains: [1, 1, 1], exposure: 0.25)) > 2)
    }

    @Test func theCurveKeepsWhiteAndClipsNothingNew() {
        for gain in [0.45, 0.67, 0.9, 1.0, 1.1, 1.5, 2.0, 2.9] {
            let curve = LightCurve(LightCorrection(gains: [1, 1, 1], exposure: log2(gain)))
            let table = Array(curve.table[0..<256])
            #expect(zip(table, table.dropFirst()).allSatisfy { $0 <= $1 }, "monotone at \(gain)")
            #expect(table[255] == 255 && table[0] == 0, "white stays white, black black at \(gain)")
            #expect(!table.dropLast().contains(255), "nothing new clips at \(gain)")
            // Below the bend the gain is exact.
            for code in [20, 60, 100, 140] where SRGBCurve.linear[code] * max(1, gain) < 0.5 {
                #expect(Int(table[code]) == Int(SRGBCurve.code(SRGBCurve.linear[code] * gain)), "code \(code) at \(gain)")
            }
        }
    }

    @Test func theCurveAppliesPerChannelAndKeepsAlpha() {
        let curve = LightCurve(LightCorrection(gains: [1.2, 1, 0.8], exposure: 0))
        var canvas = makeCanvas(width: 2, height: 1, channels: 4) { _, _ in [100, 100, 100, 77] }
        canvas.withUnsafeMutableRows { curve.apply(to: $0) }
        let p = canvas.pixel(1, 0)
        #expect(p[0] > 100 && p[1] == 100 && p[2] < 100 && p[3] == 77)
    }

    /// Where the CPU has AVX-512 VBMI, RGB rows go through a loop of byte permutes, 64 pixels a
    /// step: each byte is its channel's table entry, as in the scalar loop, at every length
    /// (whole steps and the pixels left over), into another row or in place.
    @Test func theVectorLoopWritesTheTablesBytes() {
        let curve = LightCurve(LightCorrection(gains: [1.3, 0.9, 0.7], exposure: 0.2))
        var seed: UInt32 = 7
        let source = (0..<(3 * 517)).map { _ -> UInt8 in
            seed = seed &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: seed >> 24)
        }
        if !LightCurve.vbmi { print("theVectorLoopWritesTheTablesBytes: this CPU has no AVX-512 VBMI, only the scalar loop is checked") }
        for width in [1, 63, 64, 65, 128, 130, 517] {
            let expected = (0..<(3 * width)).map { curve.table[256 * ($0 % 3) + Int(source[$0])] }
            for simd in [true, false] {
                var copied = [UInt8](repeating: 0, count: 3 * width), inPlace = Array(source.prefix(3 * width))
                source.withUnsafeBufferPointer { from in
                    copied.withUnsafeMutableBufferPointer {
                        curve.apply(from: from.baseAddress!, to: $0.baseAddress!, width: width, channels: 3, simd: simd)
                    }
                }
                inPlace.withUnsafeMutableBufferPointer {
                    curve.apply(from: $0.baseAddress!, to: $0.baseAddress!, width: width, channels: 3, simd: simd)
                }
                #expect(copied == expected && inPlace == expected, "\(width) pixels, simd \(simd)")
            }
        }
    }

    @Test func theCurveAfterResizingIsTheCurveBefore() {
        // The resampler filters sRGB codes; a gain in linear light is nearly a constant factor
        // on them, so correcting its output rows (as a photo is finished) gives what correcting
        // the decoded rows would, to about a code.
        let shot = Self.shot(kelvin: 3200, ev: -0.6)
        let curve = LightCurve(LightCorrection(gains: [0.72, 0.97, 1.43], exposure: 0.55))
        func resized(_ image: Image, curve: LightCurve?) -> Image {
            let resizer = StreamingResizer(sourceWidth: image.width, sourceHeight: image.height,
                                           crop: PixelRect(x: 0, y: 0, width: image.width, height: image.height),
                                           targetWidth: 53, targetHeight: 40, channels: 3)
            resizer.curve = curve
            image.withUnsafeRows { rows in for y in 0..<rows.height { resizer.push(UnsafePointer(rows[y])) } }
            return resizer.finish().finished()
        }
        let early = makeImage(width: shot.width, height: shot.height, channels: 3) { x, y in
            shot.pixel(x, y).enumerated().map { curve.table[$0.offset * 256 + Int($0.element)] }
        }
        let before = resized(early, curve: nil), after = resized(shot, curve: curve)
        var total = 0, largest = 0
        for y in 0..<after.height {
            for x in 0..<after.width {
                for c in 0..<3 {
                    let d = abs(Int(after.pixel(x, y)[c]) - Int(before.pixel(x, y)[c]))
                    total += d; largest = max(largest, d)
                }
            }
        }
        let mean = Double(total) / Double(after.width * after.height * 3)
        #expect(mean < 0.6 && largest <= 3, "correcting after resizing: mean \(mean), largest \(largest) codes from before")
    }

    @Test func aSetsSpreadIsZeroWhenItsLightsAgree() {
        let light = Self.measure(Self.shot(kelvin: 5000))
        #expect(LightEstimate.spread([light, light, light]) == (0, 0))
        let mixed = LightEstimate.spread([light, Self.measure(Self.shot(kelvin: 3000, ev: 1))])
        #expect(mixed.white > 5 && mixed.exposure > 0.4)
    }

    @Test func brighteningStopsWhereHighlightsWouldReachWhite() {
        // The same scene dark: room for the whole move up; with a near-white wall: none.
        let dark = Self.measure(Self.shot(kelvin: 6500, ev: -2)), reference = Self.measure(Self.shot(kelvin: 6500, ev: 0))
        #expect(dark.headroom.allSatisfy { $0 > 1.2 }, "\(dark.headroom)")
        let up = LightCorrection.toward(reference, from: dark, strength: 1)
        #expect(abs(up.exposure - LightCorrection.maxEV) < 0.05, "\(up.exposure)")
        let wall = makeImage(width: 100, height: 80, channels: 3) { x, _ in x < 20 ? [246, 246, 246] : [40, 40, 40] }
        let bright = Self.measure(wall)
        #expect(bright.headroom.allSatisfy { $0 < 0.1 }, "\(bright.headroom)")
        #expect(LightCorrection.toward(reference, from: bright, strength: 1).exposure < 0.1)
        // Darkening is never held back.
        #expect(LightCorrection.toward(dark, from: reference, strength: 1).exposure < -0.9)
    }
}
