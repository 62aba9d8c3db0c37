import Testing
import Typesetting
@testable import Finishing

@Suite struct MarkLayoutTests {
    @Test("cap height is a fraction of the short side, raised to the legible minimum on tiny photos")
    func capHeight() {
        #expect(MarkLayout.capHeight(fraction: 0.035, shortSide: 1536) == (0.035 * 1536, false))
        let tiny = MarkLayout.capHeight(fraction: 0.035, shortSide: 120)
        #expect(tiny.pixels == MarkLayout.minimumCapHeight && tiny.clamped)
    }

    @Test("shrink to fit: one proportional correction, a pixel inside the limit, never below the minimum")
    func fitted() {
        // 1000 px of ink on a 1000 px wide photo with maxWidth 0.8: limit 800, aim 799.
        let fit = MarkLayout.fitted(capHeight: 40, inkWidth: 1000, imageWidth: 1000, maxWidth: 0.8)
        #expect(MarkLayout.inkBox(InkBox(left: 1.3, top: 0.2, right: 11.6, bottom: 9), at: 10, 20) == [11, 20, 11, 9])
        #expect(abs(fit.pixels - 40 * 799 / 1000) < 1e-9 && !fit.clamped)
        #expect(MarkLayout.fitted(capHeight: 40, inkWidth: 700, imageWidth: 1000, maxWidth: 0.8) == (40, false))
        let floor = MarkLayout.fitted(capHeight: 10, inkWidth: 1000, imageWidth: 100, maxWidth: 0.8)
        #expect(floor == (MarkLayout.minimumCapHeight, true))
    }

    @Test("text is placed by its ink and its baseline", arguments: Template.Position.allCases)
    func textOrigin(_ position: Template.Position) {
        // Ink from mask column 2.5 to 302.5.
        let image = OutputPlan.Size(1000, 600), ink = InkBox(left: 2.5, top: 0, right: 302.5, bottom: 50)
        // Baseline 40 rows into the mask (10 rows of descender), capitals 36 px tall.
        let (x, y) = MarkLayout.textOrigin(position: position, image: image, ink: ink, baseline: 40,
                                           capHeight: 36, margin: 18)
        let name = position.rawValue
        // Whole-pixel placement: the ink's edge lands within half a pixel of the margin.
        if name.hasSuffix("left") || name == "left" { #expect(abs(Double(x) + 2.5 - 18) <= 0.5) }
        if name.hasSuffix("right") || name == "right" { #expect(abs(Double(x) + 302.5 - (1000 - 18)) <= 0.5) }
        if name == "top" || name == "center" || name == "bottom" { #expect(abs(Double(x) + 2.5 - 350) <= 0.5) }
        if name.hasPrefix("bottom") { #expect(y + 40 == 600 - 18, "baseline 18 px above the bottom") }
        if name.hasPrefix("top") { #expect(y + 40 - 36 == 18, "capitals' top 18 px below the top") }
        if name == "left" || name == "center" || name == "right" { #expect(y + 40 - 18 == 300, "cap band centred") }
    }

    @Test("logo: width from the short side, aspect kept, padding per axis")
    func logo() {
        let (size, scale) = MarkLayout.logoSize(file: .init(600, 200), width: 0.16, shortSide: 1536)
        #expect(size == .init(246, 82) && abs(scale - 246.0 / 600) < 1e-12)
        let image = OutputPlan.Size(2048, 1536)
        #expect(MarkLayout.logoOrigin(position: .topLeft, image: image, logo: size, padding: 0.04) == (82, 61))
        let br = MarkLayout.logoOrigin(position: .bottomRight, image: image, logo: size, padding: 0.04)
        #expect(br.x == 2048 - 82 - 246 && br.y == 1536 - 61 - 82)
        #expect(MarkLayout.logoOrigin(position: .center, image: image, logo: size, padding: 0.04) == (901, 727))
    }

    @Test("a logo scaled up gets the report's warning")
    func upscaleWarning() {
        #expect(MarkLayout.upscaleWarning(scale: 1.8) == "logo scaled up 1.8×: use a larger logo file")
        #expect(MarkLayout.upscaleWarning(scale: 1.02) == "logo scaled up 1.02×: use a larger logo file")
        #expect(MarkLayout.upscaleWarning(scale: 1) == nil)
        #expect(MarkLayout.upscaleWarning(scale: 0.4) == nil)
    }

    @Test("tile steps: the ink plus gap × cap height, both ways")
    func tile() {
        var mark = Template.TileMark(text: "PREVIEW")
        mark.gap = 1.5
        let cap = MarkLayout.tileCapHeight(mark, shortSide: 1000)
        #expect(cap == (50, false))
        let lattice = MarkLayout.tile(mark, capHeight: 50, clamped: false, ink: .init(400, 52))
        #expect(lattice.along == 475 && lattice.across == 127)
    }

    @Test("shadow blur and offset scale with the photo")
    func shadow() {
        let s = MarkLayout.shadow(Template.Shadow(opacity: 0.35, blur: 0.004, offset: 0.001), shortSide: 3000)
        #expect(abs(s.sigma - 12) < 1e-9 && s.offset == 3)
    }
}
