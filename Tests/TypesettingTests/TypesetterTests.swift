import Pixels
import Testing
import Typesetting

/// Rows (top, bottom exclusive) and columns whose coverage reaches half: the visible ink.
func halfCoverageBox(_ mask: CoverageMask) -> PixelRect? {
    var minX = Int.max, minY = Int.max, maxX = -1, maxY = -1
    for y in 0..<mask.height {
        for x in 0..<mask.width where mask[x, y] >= 128 {
            minX = min(minX, x); maxX = max(maxX, x); minY = min(minY, y); maxY = max(maxY, y)
        }
    }
    return maxX < 0 ? nil : PixelRect(x: minX, y: minY, width: maxX - minX + 1, height: maxY - minY + 1)
}

@Suite struct TypesetterTests {
    static let font = "DejaVu Sans:bold"

    @Test("the capitals are as tall as asked and sit on the baseline", arguments: [9.0, 21.0, 40.0, 73.5])
    func capHeight(_ cap: Double) throws {
        let setter = try Typesetter(pattern: Self.font)
        #expect(setter.primary.family == "DejaVu Sans")
        // Flat-topped, flat-bottomed capitals: their ink is exactly the cap height.
        let text = setter.render("HELL FIT", capHeight: cap)
        let box = try #require(halfCoverageBox(text.mask))
        #expect(abs(Double(box.height) - cap) <= 1, "cap height \(box.height) px for \(cap)")
        // Ink ends at the baseline: the last half-covered row is the one just above it.
        #expect(box.y + box.height == text.baseline)
        #expect(text.mask.height == text.baseline, "nothing descends in HELL FIT")
    }

    @Test("DejaVu Sans Bold's cap height comes from OS/2 (1493 of 2048 units)")
    func capHeightFromTheFont() throws {
        let setter = try Typesetter(pattern: Self.font)
        #expect(abs(setter.capHeightPerEm - 1493.0 / 2048) < 1e-9)
    }

    @Test("HarfBuzz kerns: AV is narrower than A and V set apart")
    func kerning() throws {
        let setter = try Typesetter(pattern: Self.font)
        let pair = setter.render("AV", capHeight: 50).advance
        let apart = setter.render("A", capHeight: 50).advance + setter.render("V", capHeight: 50).advance
        #expect(pair < apart - 1, "AV \(pair) px, A + V \(apart) px")
    }

    @Test("descenders hang below the baseline")
    func descenders() throws {
        let text = try Typesetter(pattern: Self.font).render("Hg", capHeight: 30)
        #expect(text.mask.height > text.baseline + 5)
    }

    @Test("width scales with the cap height (no hinting: sizes are linear)")
    func linear() throws {
        let setter = try Typesetter(pattern: Self.font)
        let small = setter.render("© Example Studio", capHeight: 20).advance
        let large = setter.render("© Example Studio", capHeight: 60).advance
        #expect(abs(large / small - 3) < 0.001)
    }

    @Test("a font that is not installed is substituted, and said so")
    func substitution() throws {
        #expect(try Typesetter(pattern: "DejaVu Sans:bold").substitution == nil)
        #expect(try Typesetter(pattern: "sans-serif").substitution == nil)
        let missing = try Typesetter(pattern: "No Such Font Family 7:bold")
        #expect(missing.substitution?.hasPrefix("font \"No Such Font Family 7\" is not installed; fontconfig chose ") == true)
        #expect(missing.render("H", capHeight: 20).mask.width > 0)
    }

    static let cjkFont = Typesetter.installedFont(covering: "灵")

    @Test("glyphs the first font lacks come from an installed CJK font",
          .enabled(if: cjkFont != nil, "no installed font has CJK glyphs (apt-get install fonts-wqy-microhei)"))
    func fallback() throws {
        let setter = try Typesetter(pattern: Self.font)
        let text = setter.render("© 灵感图像大师", capHeight: 30)
        #expect(text.missing.isEmpty, "missing: \(text.missing)")
        #expect(text.fonts.count >= 2 && text.fonts[0] == "DejaVu Sans", "fonts: \(text.fonts)")
        // Six ideographs, each about an em wide, after "© ": ink well past the copyright sign.
        let copyright = setter.render("© ", capHeight: 30).advance
        #expect(text.advance > copyright + 5 * text.em)
        // Each ideograph's cell holds real strokes (not an empty or .notdef box).
        let ink = halfCoverageBox(text.mask)
        #expect((ink?.width ?? 0) > Int(copyright + 5 * text.em))
        var inked = 0
        for y in 0..<text.mask.height {
            for x in Int(copyright)..<text.mask.width where text.mask[x, y] >= 128 { inked += 1 }
        }
        #expect(inked > Int(text.em * text.em * 6 * 0.15), "ideograph strokes: \(inked) px")
    }

    @Test("a character no font has is reported, not silently dropped")
    func missing() throws {
        let text = try Typesetter(pattern: Self.font).render("A\u{10FFFD}", capHeight: 20)
        #expect(text.missing == ["\u{10FFFD}"])
    }
}
