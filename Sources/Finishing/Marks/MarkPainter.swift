import Codecs
import Pixels
import Typesetting

/// Draws a template's marks on one resized, upright photo: the tiled mark underneath, then
/// the logo, then the text with its shadow on top. Sizes and places come from
/// `MarkLayout`; pixels from `MarkAssets` (cached per size) and the compositing in
/// `Pixels`.
///
/// Planning and drawing are apart: `plan` needs only the photo's size (everything is known
/// before its first row is decoded), and the plan draws on the whole photo or on one band of
/// rows at a time, with the same result.
struct MarkPainter {
    let template: Template
    let assets: MarkAssets

    /// What was drawn, in the marked image's pixels (before any frame).
    struct Result {
        var text: Applied.TextRecord?
        var logo: Applied.LogoRecord?
        var tile: Applied.TileRecord?
        var warnings: [String] = []
    }

    /// Paints every mark on a whole canvas.
    /// - Parameters:
    ///   - image: the photo, RGB or RGBA, in its output colour space.
    ///   - icc: see `plan`.
    func paint(_ image: inout Canvas, icc: [UInt8]?) -> Result {
        let plan = plan(width: image.width, height: image.height, icc: icc)
        image.withUnsafeMutableRows { plan.draw(onto: $0, top: 0) }
        return plan.result
    }

    /// Sizes, places and renders every mark for a photo of `width` × `height`.
    /// - Parameter icc: the profile the output keeps, or nil for sRGB: mark colours (sRGB, as
    ///   written in the template) and the logo are converted into it, so white stays white
    ///   and brand colours stay true in a wide-gamut photo.
    func plan(width: Int, height: Int, icc: [UInt8]?) -> MarkPlan {
        var plan = MarkPlan(width: width, height: height)
        let shortSide = min(width, height)
        let colours = MarkColours(icc: icc)
        if let tile = template.tile, let setter = assets.tileSetter {
            let (cap, clamped) = MarkLayout.tileCapHeight(tile, shortSide: shortSide)
            let text = assets.text(tile.text, setter: setter, capHeight: cap)
            if text.mask.width > 0 {
                let lattice = MarkLayout.tile(tile, capHeight: cap, clamped: clamped,
                                              ink: .init(text.mask.width, text.mask.height))
                let colour = template.text?.color ?? .white
                plan.steps.append(.tiled(text.mask, angle: tile.angle, along: lattice.along, across: lattice.across,
                                         color: colours.convert(colour), opacity: tile.opacity * Double(colour.a) / 255))
                plan.result.tile = .init(capHeightPx: Int(cap.rounded()), angle: tile.angle,
                                         step: [Int(lattice.along.rounded()), Int(lattice.across.rounded())],
                                         opacity: tile.opacity, clamped: clamped)
            }
        }
        if let mark = template.logo, let file = assets.logo {
            let (size, scale) = MarkLayout.logoSize(file: .init(file.width, file.height), width: mark.width,
                                                    shortSide: shortSide)
            if var overlay = assets.scaledLogo(size) {
                if let transform = colours.transform(channels: 4) {
                    overlay = transform.applied(to: overlay)
                }
                let (x, y) = MarkLayout.logoOrigin(position: mark.position, image: .init(width, height),
                                                   logo: size, padding: mark.padding)
                plan.steps.append(.overlay(overlay, x: x, y: y, opacity: mark.opacity))
                plan.result.logo = .init(box: [x, y, size.width, size.height], scale: (scale * 1000).rounded() / 1000)
                if let warning = MarkLayout.upscaleWarning(scale: scale) { plan.result.warnings.append(warning) }
            }
        }
        if let mark = template.text, let setter = assets.textSetter {
            var (cap, clamped) = MarkLayout.capHeight(fraction: mark.capHeight, shortSide: shortSide)
            var text = assets.text(mark.text, setter: setter, capHeight: cap)
            // One measurement, one proportional correction (sizes are linear in the cap height).
            let fit = MarkLayout.fitted(capHeight: cap, inkWidth: text.ink.width, imageWidth: width,
                                        maxWidth: mark.maxWidth)
            if fit.pixels != cap {
                cap = fit.pixels
                text = assets.text(mark.text, setter: setter, capHeight: cap)
            }
            clamped = clamped || fit.clamped
            if let substitution = setter.substitution { plan.result.warnings.append("text mark: \(substitution)") }
            if !text.missing.isEmpty {
                let list = text.missing.map { "U+" + String($0.value, radix: 16, uppercase: true) }.joined(separator: ", ")
                plan.result.warnings.append("text mark: no installed font has \(list); drawn as a missing-glyph box")
            }
            // At the smallest legible size the text may still not fit between the margins of
            // a tiny photo: text cut at the edge is worse than none, so it is left out, said.
            let room = Double(width) - 2 * mark.margin * Double(shortSide)
            if clamped && text.ink.width > room {
                plan.result.warnings.append(String(format: "text mark left out: at the smallest legible size (%.0f px capitals) "
                                                   + "it is %.0f px wide, wider than this %d px wide photo",
                                                   cap, text.ink.width.rounded(.up), width))
            } else if text.mask.width > 0 {
                let (x, y) = MarkLayout.textOrigin(
                    position: mark.position, image: .init(width, height),
                    ink: text.ink, baseline: text.baseline, capHeight: cap,
                    margin: mark.margin * Double(shortSide))
                let alpha = Double(mark.color.a) / 255
                if let shadow = mark.shadow {
                    let (sigma, offset) = MarkLayout.shadow(shadow, shortSide: shortSide)
                    let blurred = assets.shadow(of: text, key: mark.text, sigma: sigma)
                    plan.steps.append(.mask(blurred.mask, x: x + offset - blurred.padding, y: y + offset - blurred.padding,
                                            color: colours.convert(.black), opacity: shadow.opacity * alpha))
                }
                plan.steps.append(.mask(text.mask, x: x, y: y, color: colours.convert(mark.color),
                                        opacity: mark.opacity * alpha))
                plan.result.text = .init(capHeightPx: Int(cap.rounded()), box: MarkLayout.inkBox(text.ink, at: x, y),
                                         text: mark.text, clamped: clamped)
            }
        }
        return plan
    }
}

/// The marks of one photo, sized, placed and rendered: what `MarkPainter` will draw and
/// what the report says of it. Draws on the whole photo or on any band of its rows.
struct MarkPlan {
    /// The photo's size the plan was made for.
    let width: Int
    let height: Int
    /// What is drawn, in the order it is drawn (each pixel sees the same order in any band).
    var steps: [Step] = []
    var result = MarkPainter.Result()

    enum Step {
        /// A coverage mask in one colour (text, its shadow).
        case mask(CoverageMask, x: Int, y: Int, color: [UInt8], opacity: Double)
        /// An RGBA overlay (the logo).
        case overlay(Image, x: Int, y: Int, opacity: Double)
        /// A mask repeated over the whole photo on a turned lattice.
        case tiled(CoverageMask, angle: Double, along: Double, across: Double, color: [UInt8], opacity: Double)
    }

    /// True when nothing is drawn.
    var isEmpty: Bool { steps.isEmpty }

    /// Draws the part of every mark that falls in `band`.
    /// - Parameters:
    ///   - band: rows of the photo (all of them, or a band).
    ///   - top: the photo row of the band's first row.
    func draw(onto band: MutablePixelRows, top: Int) {
        precondition(band.width == width && top >= 0 && top + band.height <= height, "band outside the photo")
        for step in steps {
            switch step {
            case .mask(let mask, let x, let y, let color, let opacity):
                guard y < top + band.height, y + mask.height > top else { continue }
                composite(mask, at: x, y - top, color: color, opacity: opacity, onto: band)
            case .overlay(let overlay, let x, let y, let opacity):
                guard y < top + band.height, y + overlay.height > top else { continue }
                composite(overlay, at: x, y - top, opacity: opacity, onto: band)
            case .tiled(let mask, let angle, let along, let across, let color, let opacity):
                compositeTiled(mask, angle: angle, along: along, across: across, color: color, opacity: opacity,
                               onto: band, top: top, imageHeight: height)
            }
        }
    }
}

/// sRGB mark colours in the output's colour space.
struct MarkColours {
    private let icc: [UInt8]?
    private let rgb: ColorTransform?

    init(icc: [UInt8]?) {
        // No profile, or an sRGB one: template colours are already right.
        let target = icc.flatMap { ICC.isSRGB($0) ? nil : $0 }
        self.icc = target
        rgb = target.flatMap { ColorTransform(fromICC: ICC.sRGB, toICC: $0, channels: 3) }
    }

    /// A transform from sRGB into the output's profile for `channels`-channel pixels, or nil.
    func transform(channels: Int) -> ColorTransform? {
        guard let icc, rgb != nil else { return nil }
        return channels == 3 ? rgb : ColorTransform(fromICC: ICC.sRGB, toICC: icc, channels: channels)
    }

    /// The colour's R, G, B in the output's space.
    func convert(_ colour: Template.Color) -> [UInt8] {
        let values = [colour.r, colour.g, colour.b]
        guard let rgb else { return values }
        var pixel = Canvas(width: 1, height: 1, channels: 3, fill: values)
        rgb.apply(to: &pixel)
        return pixel.pixel(0, 0)
    }
}
