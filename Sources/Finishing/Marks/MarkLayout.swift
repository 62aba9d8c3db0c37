import Foundation
import Typesetting

/// Where and how large the marks go on one photo: pure geometry from the template's
/// fractions and the photo's size, so the same template puts "the same" mark on a square
/// screenshot and a 16000 px panorama. No pixels here; `MarkPainter` draws what this plans.
///
/// Conventions: every fraction is of the short side unless stated; boxes are in the
/// marked image's pixels (x right, y down); positions are rounded to whole pixels once, at
/// the end.
public enum MarkLayout {
    /// The smallest cap height drawn, in pixels: below this, capitals stop being legible
    /// letters. A template's `capHeight` (and a tiled mark's `size`) is raised to it on tiny
    /// images, and the report says so (`clamped: true`).
    public static let minimumCapHeight = 8.0

    /// The text's cap height in pixels before fitting: `fraction` × short side, raised to
    /// `minimumCapHeight` when that is smaller.
    public static func capHeight(fraction: Double, shortSide: Int) -> (pixels: Double, clamped: Bool) {
        let wanted = fraction * Double(shortSide)
        return wanted < minimumCapHeight ? (minimumCapHeight, true) : (wanted, false)
    }

    /// Shrink to fit, in one proportional step: text sizes are linear in the cap height
    /// (outlines are not hinted), so measuring once at `capHeight` and scaling by
    /// limit / width lands within a pixel of the limit; one pixel is kept in hand for the
    /// antialiased edge. Never below `minimumCapHeight`.
    /// - Parameters:
    ///   - capHeight: the size the ink was measured at.
    ///   - inkWidth: the measured ink width at that size, in pixels (the outlines' extent).
    ///   - imageWidth: the photo's width.
    ///   - maxWidth: the template's `maxWidth` (fraction of the image width).
    /// - Returns: the cap height to use (`capHeight` itself when the text already fits) and
    ///   whether the minimum stopped the shrink.
    public static func fitted(capHeight: Double, inkWidth: Double, imageWidth: Int,
                              maxWidth: Double) -> (pixels: Double, clamped: Bool) {
        let limit = maxWidth * Double(imageWidth)
        guard inkWidth > limit, inkWidth > 0 else { return (capHeight, false) }
        let shrunk = capHeight * max(0, limit - 1) / inkWidth
        return shrunk < minimumCapHeight ? (min(capHeight, minimumCapHeight), true) : (shrunk, false)
    }

    /// The top-left corner of a text mask, placed by its ink and its baseline:
    /// - left / right: the ink's edge is `margin` from the side (not the advance box, so a
    ///   letter's side bearing never adds to the margin); centre: the ink is centred;
    /// - bottom: the baseline is `margin` above the bottom edge (descenders dip into the
    ///   margin); top: the capitals' top is `margin` below the top edge; centre: the band
    ///   of the capitals is centred.
    /// - Parameters:
    ///   - position: one of the nine.
    ///   - image: the photo's width and height.
    ///   - ink: the outlines' exact extent in mask coordinates.
    ///   - baseline: the baseline's row in the mask.
    ///   - capHeight: the capitals' height in pixels.
    ///   - margin: the margin in pixels (`margin` × short side).
    public static func textOrigin(position: Template.Position, image: OutputPlan.Size, ink: InkBox,
                                  baseline: Int, capHeight: Double, margin: Double) -> (x: Int, y: Int) {
        let (h, v) = axes(position)
        let x: Double = switch h {
        case .start: margin - ink.left
        case .middle: Double(image.width) / 2 - (ink.left + ink.right) / 2
        case .end: Double(image.width) - margin - ink.right
        }
        let capTop = Double(baseline) - capHeight  // the capitals' top, as a mask row
        let y: Double = switch v {
        case .start: margin - capTop
        case .middle: Double(image.height) / 2 - (Double(baseline) - capHeight / 2)
        case .end: Double(image.height) - margin - Double(baseline)
        }
        return (Int(x.rounded()), Int(y.rounded()))
    }

    /// The ink's box `[x, y, w, h]` in whole pixels, once the mask is at (`x`, `y`).
    public static func inkBox(_ ink: InkBox, at x: Int, _ y: Int) -> [Int] {
        let left = (Double(x) + ink.left).rounded(), top = (Double(y) + ink.top).rounded()
        return [Int(left), Int(top), Int((Double(x) + ink.right).rounded() - left),
                Int((Double(y) + ink.bottom).rounded() - top)]
    }

    /// The shadow's blur (the Gaussian's standard deviation) and offset (right and down) in
    /// pixels: fractions of the short side, like every other size.
    public static func shadow(_ shadow: Template.Shadow, shortSide: Int) -> (sigma: Double, offset: Int) {
        (shadow.blur * Double(shortSide), Int((shadow.offset * Double(shortSide)).rounded()))
    }

    /// The logo's size on the photo: `width` × short side wide (at least 1 px), its aspect
    /// kept.
    /// - Returns: the size and the scale from the logo file's pixels.
    public static func logoSize(file: OutputPlan.Size, width: Double, shortSide: Int) -> (size: OutputPlan.Size, scale: Double) {
        let w = max(1, Int((width * Double(shortSide)).rounded()))
        let h = max(1, Int((Double(w) * Double(file.height) / Double(file.width)).rounded()))
        return (OutputPlan.Size(w, h), Double(w) / Double(file.width))
    }

    /// The logo's top-left corner: `padding` × the image width from a side, `padding` ×
    /// the image height from the top or bottom (reference: Marks); centred on a centre axis.
    public static func logoOrigin(position: Template.Position, image: OutputPlan.Size, logo: OutputPlan.Size,
                                  padding: Double) -> (x: Int, y: Int) {
        let (h, v) = axes(position)
        func place(_ axis: Axis, _ length: Int, _ size: Int) -> Int {
            let pad = padding * Double(length)
            let value: Double = switch axis {
            case .start: pad
            case .middle: Double(length - size) / 2
            case .end: Double(length) - pad - Double(size)
            }
            return Int(value.rounded())
        }
        return (place(h, image.width, logo.width), place(v, image.height, logo.height))
    }

    /// The QR code's size on the photo: as near `width` × short side as whole pixels per module
    /// allow, quiet zone included (a module of 2.5 pixels would be drawn 2 and 3 wide by turns,
    /// which scanners misread), never larger.
    /// - Parameter modules: the code's modules per side with its quiet zone.
    /// - Returns: pixels per module (0: not even one pixel each: the code cannot be drawn) and
    ///   the code's side in pixels.
    public static func qrSize(modules: Int, width: Double, shortSide: Int) -> (pixelsPerModule: Int, side: Int) {
        let wanted = width * Double(shortSide)
        let perModule = max(0, Int((wanted / Double(modules)).rounded(.down)))
        return (perModule, perModule * modules)
    }

    /// The warning for a logo drawn larger than its file, or nil.
    public static func upscaleWarning(scale: Double) -> String? {
        guard scale > 1 else { return nil }
        let shown = String(format: "%.1f", scale)
        return "logo scaled up \(shown == "1.0" ? String(format: "%.2f", scale) : shown)×: use a larger logo file"
    }

    /// A tiled mark's lattice: the text's cap height and the steps between copies.
    public struct Tile: Sendable, Equatable {
        /// The capitals' height in pixels.
        public var capHeight: Double
        /// Whether `minimumCapHeight` raised it.
        public var clamped: Bool
        /// From one copy to the next along the text's direction, in pixels: the ink's width
        /// plus `gap` × cap height.
        public var along: Double
        /// From one row of copies to the next, across the text, in pixels: the ink's height
        /// plus `gap` × cap height. Every other row is shifted half a step, like bricks.
        public var across: Double
    }

    /// The tiled mark's size before the text is set: cap height from `size` (clamped).
    public static func tileCapHeight(_ tile: Template.TileMark, shortSide: Int) -> (pixels: Double, clamped: Bool) {
        capHeight(fraction: tile.size, shortSide: shortSide)
    }

    /// The tile lattice once the text's ink size is known.
    public static func tile(_ tile: Template.TileMark, capHeight: Double, clamped: Bool, ink: OutputPlan.Size) -> Tile {
        let gap = tile.gap * capHeight
        return Tile(capHeight: capHeight, clamped: clamped, along: Double(ink.width) + gap,
                    across: Double(ink.height) + gap)
    }

    /// The rim "auto" adds around text when the photo under it is both light and dark, and
    /// the rim of a two-toned tiled mark, as fractions of the cap height.
    public static let autoRim = 0.08, tileRim = 0.1

    /// A rim's width in whole pixels: `fraction` × cap height, at least 1.
    public static func rimRadius(fraction: Double, capHeight: Double) -> Int {
        max(1, Int((fraction * capHeight).rounded()))
    }

    /// The outline colour of a fixed fill: white or near-black (#1a1a1a), whichever
    /// contrasts more with it.
    public static func opposite(of fill: Template.Color) -> Template.Color {
        let auto = Template.AutoColors()
        let l = MarkChoice.luminance(fill.r, fill.g, fill.b)
        let light = MarkChoice.luminance(auto.light.r, auto.light.g, auto.light.b)
        let dark = MarkChoice.luminance(auto.dark.r, auto.dark.g, auto.dark.b)
        return MarkChoice.contrast(l, light) >= MarkChoice.contrast(l, dark) ? auto.light : auto.dark
    }

    enum Axis { case start, middle, end }

    static func axes(_ position: Template.Position) -> (horizontal: Axis, vertical: Axis) {
        switch position {
        case .topLeft: (.start, .start)
        case .top: (.middle, .start)
        case .topRight: (.end, .start)
        case .left: (.start, .middle)
        case .center: (.middle, .middle)
        case .right: (.end, .middle)
        case .bottomLeft: (.start, .end)
        case .bottom: (.middle, .end)
        case .bottomRight: (.end, .end)
        }
    }
}
