import Testing
import Pixels

@Suite struct CompositeTests {
    @Test("a mask paints its colour in proportion to coverage × opacity, clipped at the edges")
    func maskOverRGB() {
        var image = makeCanvas(width: 4, height: 2, channels: 3) { _, _ in [100, 100, 100] }
        var drawn = MaskCanvas(width: 3, height: 1)
        drawn[0, 0] = 255; drawn[1, 0] = 128; drawn[2, 0] = 0
        let mask = drawn.finished()
        composite(mask, at: 2, 1, color: [200, 0, 100], opacity: 0.5, onto: &image)
        #expect(image.pixel(2, 1) == [150, 50, 100])   // A = 0.5
        #expect(image.pixel(3, 1) == [125, 75, 100])   // A = 0.25 (128/255 · 0.5, rounded)
        #expect(image.pixel(1, 1) == [100, 100, 100] && image.pixel(2, 0) == [100, 100, 100])
    }

    @Test("an overlay over a transparent RGBA pixel keeps its colour and takes alpha × opacity")
    func overlayOverTransparent() {
        var image = makeCanvas(width: 2, height: 1, channels: 4) { x, _ in x == 0 ? [0, 0, 0, 0] : [0, 0, 255, 255] }
        let overlay = makeImage(width: 2, height: 1, channels: 4) { _, _ in [255, 0, 0, 255] }
        composite(overlay, at: 0, 0, opacity: 0.6, onto: &image)
        #expect(image.pixel(0, 0) == [255, 0, 0, 153])
        #expect(image.pixel(1, 0) == [153, 0, 102, 255])
    }

    @Test("a fully transparent overlay pixel changes nothing, whatever its colour")
    func transparentOverlay() {
        var image = makeCanvas(width: 1, height: 1, channels: 3) { _, _ in [10, 20, 30] }
        let overlay = makeImage(width: 1, height: 1, channels: 4) { _, _ in [255, 255, 255, 0] }
        composite(overlay, at: 0, 0, opacity: 1, onto: &image)
        #expect(image.pixel(0, 0) == [10, 20, 30])
    }

    @Test("the Gaussian blur keeps the ink's total, spreads it symmetrically, and pads by 3σ")
    func blur() {
        var drawn = MaskCanvas(width: 21, height: 21)
        drawn[10, 10] = 255
        for y in 5..<16 { for x in 0..<3 { drawn[x, y] = 200 } }
        let mask = drawn.finished()
        let (blurred, padding) = gaussianBlurred(mask, sigma: 2)
        #expect(padding == 6 && blurred.width == 33 && blurred.height == 33)
        let sum = { (m: CoverageMask) in (0..<m.height).reduce(0) { t, y in (0..<m.width).reduce(t) { $0 + Int(m[$1, y]) } } }
        #expect(abs(sum(blurred) - sum(mask)) < sum(mask) / 50)
        var point = MaskCanvas(width: 21, height: 21)
        point[10, 10] = 255
        let (dot, _) = gaussianBlurred(point.finished(), sigma: 2)
        let c = 10 + padding
        #expect(dot[c - 2, c] == dot[c + 2, c] && dot[c, c - 2] == dot[c, c + 2] && dot[c - 2, c] == dot[c, c + 2])
        #expect(dot[c, c] < 255 && dot[c, c] > dot[c + 2, c] && dot[c + 2, c] > 0)
        // A flat area stays flat: the weights sum to exactly one.
        var full = MaskCanvas(width: 30, height: 30)
        full.withUnsafeMutableRows { $0.base.update(repeating: 255, count: 900) }
        let (solid, p) = gaussianBlurred(full.finished(), sigma: 2)
        #expect(solid[15 + p, 15 + p] == 255)
    }

    @Test("a mask canvas becomes a read-only mask without a copy; copies of a mask share it")
    func maskStates() {
        var canvas = MaskCanvas(width: 4, height: 3)
        #expect(canvas[3, 2] == 0, "a new canvas is all zeros")
        canvas[1, 2] = 9
        canvas.withUnsafeMutableRows { $0[0][3] = 7 }
        let mask = canvas.finished()
        let copy = mask
        #expect(copy[1, 2] == 9 && copy[3, 0] == 7)
        #expect(mask.inkBounds == PixelRect(x: 1, y: 0, width: 3, height: 3))
        #expect(CoverageMask(width: 5, height: 5).inkBounds == nil)
        #expect(dilated(mask, radius: 1)[2, 3] == 9)
    }

    @Test("a tiled mark fills the whole image at any angle")
    func tiles() {
        var image = makeCanvas(width: 120, height: 80, channels: 3) { _, _ in [0, 0, 0] }
        var bar = MaskCanvas(width: 10, height: 4)
        bar.withUnsafeMutableRows { $0.base.update(repeating: 255, count: 40) }
        let mask = bar.finished()
        compositeTiled(mask, angle: -30, along: 20, across: 10, color: [255, 255, 255], opacity: 1, onto: &image)
        for (x0, y0) in [(0, 0), (100, 0), (0, 60), (100, 60)] {
            var lit = 0
            for y in y0..<(y0 + 20) { for x in x0..<(x0 + 20) where image.pixel(x, y)[0] > 128 { lit += 1 } }
            #expect(lit > 40, "corner (\(x0), \(y0)): \(lit) lit pixels")
        }
    }
}
