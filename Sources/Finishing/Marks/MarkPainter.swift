import Codecs
import Pixels
import Typesetting

/// Draws a template's marks on one resized, upright photo: the tiled mark underneath, then
/// the logo, then the text with its shadow on top. Sizes and places come from
/// `MarkLayout`; pixels from `MarkAssets` (cached per size) and the compositing in
/// `Pixels`.
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

    /// Paints every mark in place.
    /// - Parameters:
    ///   - image: the photo, RGB or RGBA, in its output colour space.
    ///   - icc: the profile the output keeps, or nil for sRGB: mark colours (sRGB, as
    ///     written in the template) and the logo are converted into it, so white stays
    ///     white and brand colours stay true in a wide-gamut photo.
    func paint(_ image: inout Canvas, icc: [UInt8]?) -> Result {
        var result = Result()
        let shortSide = min(image.width, image.height)
        let colours = MarkColours(icc: icc)
        if let tile = template.tile, let setter = assets.tileSetter {
            let (cap, clamped) = MarkLayout.tileCapHeight(tile, shortSide: shortSide)
            let text = assets.text(tile.text, setter: setter, capHeight: cap)
            if text.mask.width > 0 {
                let lattice = MarkLayout.tile(tile, capHeight: cap, clamped: clamped,
                                              ink: .init(text.mask.width, text.mask.height))
                let colour = template.text?.color ?? .white
                compositeTiled(text.mask, angle: tile.angle, along: lattice.along, across: lattice.across,
                               color: colours.convert(colour), opacity: tile.opacity * Double(colour.a) / 255,
                               onto: &image)
                result.tile = .init(capHeightPx: Int(cap.rounded()), angle: tile.angle,
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
                let (x, y) = MarkLayout.logoOrigin(position: mark.position, image: .init(image.width, image.height),
                                                   logo: size, padding: mark.padding)
                composite(overlay, at: x, y, opacity: mark.opacity, onto: &image)
                result.logo = .init(box: [x, y, size.width, size.height], scale: (scale * 1000).rounded() / 1000)
                if let warning = MarkLayout.upscaleWarning(scale: scale) { result.warnings.append(warning) }
            }
        }
        if let mark = template.text, let setter = assets.textSetter {
            var (cap, clamped) = MarkLayout.capHeight(fraction: mark.capHeight, shortSide: shortSide)
            var text = assets.text(mark.text, setter: setter, capHeight: cap)
            // One measurement, one proportional correction (sizes are linear in the cap height).
            let fit = MarkLayout.fitted(capHeight: cap, inkWidth: text.ink.width, imageWidth: image.width,
                                        maxWidth: mark.maxWidth)
            if fit.pixels != cap {
                cap = fit.pixels
                text = assets.text(mark.text, setter: setter, capHeight: cap)
            }
            clamped = clamped || fit.clamped
            if let substitution = setter.substitution { result.warnings.append("text mark: \(substitution)") }
            if !text.missing.isEmpty {
                let list = text.missing.map { "U+" + String($0.value, radix: 16, uppercase: true) }.joined(separator: ", ")
                result.warnings.append("text mark: no installed font has \(list); drawn as a missing-glyph box")
            }
            // At the smallest legible size the text may still not fit between the margins of
            // a tiny photo: text cut at the edge is worse than none, so it is left out, said.
            let room = Double(image.width) - 2 * mark.margin * Double(shortSide)
            if clamped && text.ink.width > room {
                result.warnings.append(String(format: "text mark left out: at the smallest legible size (%.0f px capitals) "
                                              + "it is %.0f px wide, wider than this %d px wide photo",
                                              cap, text.ink.width.rounded(.up), image.width))
            } else if text.mask.width > 0 {
                let (x, y) = MarkLayout.textOrigin(
                    position: mark.position, image: .init(image.width, image.height),
                    ink: text.ink, baseline: text.baseline, capHeight: cap,
                    margin: mark.margin * Double(shortSide))
                let alpha = Double(mark.color.a) / 255
                if let shadow = mark.shadow {
                    let (sigma, offset) = MarkLayout.shadow(shadow, shortSide: shortSide)
                    let blurred = assets.shadow(of: text, key: mark.text, sigma: sigma)
                    composite(blurred.mask, at: x + offset - blurred.padding, y + offset - blurred.padding,
                              color: colours.convert(.black), opacity: shadow.opacity * alpha, onto: &image)
                }
                composite(text.mask, at: x, y, color: colours.convert(mark.color), opacity: mark.opacity * alpha,
                          onto: &image)
                result.text = .init(capHeightPx: Int(cap.rounded()), box: MarkLayout.inkBox(text.ink, at: x, y),
                                    text: mark.text, clamped: clamped)
            }
        }
        return result
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
