import Pixels

/// A line of text set by `Typesetter`: its coverage mask, tight around the ink, and where
/// the baseline and the pen's start are in it.
public struct RenderedText: Sendable {
    /// Coverage of the ink; 0×0 when the text draws nothing (only spaces).
    public let mask: CoverageMask
    /// The baseline, as a mask row: ink in rows `0..<baseline` is above the baseline, rows
    /// from `baseline` on are descenders. Equal to `mask.height` when nothing descends.
    public let baseline: Int
    /// The pen's starting point as a mask column (the left side bearing moves the ink
    /// right of it, a swash can reach left of it).
    public let origin: Int
    /// The capitals' height in pixels, as asked.
    public let capHeight: Double
    /// The em size in pixels that gives that cap height in the primary font.
    public let em: Double
    /// The pen's advance over the whole line, in pixels.
    public let advance: Double
    /// The families that drew the text, primary first.
    public let fonts: [String]
    /// Characters no installed font has (drawn as the primary font's missing-glyph box).
    public let missing: [Unicode.Scalar]
    /// The outlines' exact extent in mask coordinates (fractional pixels): where the ink's
    /// edges are to the eye. The mask reaches a little further, into pixels the
    /// antialiasing only touches.
    public let ink: InkBox

    init(glyphs: [GlyphBitmap], capHeight: Double, em: Double, advance: Double, fonts: [String],
         missing: [Unicode.Scalar]) {
        self.capHeight = capHeight
        self.em = em
        self.advance = advance
        self.fonts = fonts
        self.missing = missing
        guard let first = glyphs.first else {
            mask = CoverageMask(width: 0, height: 0)
            baseline = 0
            origin = 0
            ink = InkBox(left: 0, top: 0, right: 0, bottom: 0)
            return
        }
        var minX = first.left, minY = first.top
        var maxX = first.left + first.width, maxY = first.top + first.height
        for g in glyphs.dropFirst() {
            minX = min(minX, g.left); minY = min(minY, g.top)
            maxX = max(maxX, g.left + g.width); maxY = max(maxY, g.top + g.height)
        }
        var mask = MaskCanvas(width: maxX - minX, height: maxY - minY)
        // Where glyphs overlap (tight kerning, joined scripts), the larger coverage wins:
        // adding would draw a darker seam.
        mask.withUnsafeMutableRows { rows in
            for g in glyphs {
                for r in 0..<g.height {
                    let d = rows[g.top - minY + r] + (g.left - minX)
                    g.pixels.withUnsafeBufferPointer { p in
                        for c in 0..<g.width { d[c] = max(d[c], p[r * g.width + c]) }
                    }
                }
            }
        }
        self.mask = mask.finished()
        baseline = -minY
        origin = -minX
        var exact = first.ink
        for g in glyphs.dropFirst() {
            exact = InkBox(left: min(exact.left, g.ink.left), top: min(exact.top, g.ink.top),
                           right: max(exact.right, g.ink.right), bottom: max(exact.bottom, g.ink.bottom))
        }
        ink = InkBox(left: exact.left - Double(minX), top: exact.top - Double(minY),
                     right: exact.right - Double(minX), bottom: exact.bottom - Double(minY))
    }
}

/// A box with fractional edges (x right, y down).
public struct InkBox: Sendable, Equatable {
    public var left: Double, top: Double, right: Double, bottom: Double
    public init(left: Double, top: Double, right: Double, bottom: Double) {
        self.left = left; self.top = top; self.right = right; self.bottom = bottom
    }
    public var width: Double { right - left }
    public var height: Double { bottom - top }
}
