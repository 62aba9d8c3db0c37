import Codecs
import Pixels
import QR
import Typesetting

/// Draws a template's marks on one resized, upright photo: the tiled mark underneath, then
/// the logo, then the text with its shadow, then the QR code on top (nothing may cover it). Sizes and places come from
/// `MarkLayout`; pixels from `MarkAssets` (cached per size) and the compositing in
/// `Pixels`.
///
/// Planning and drawing are apart: `plan` needs only the photo's size, unless a mark is
/// "auto" (then it reads the clean photo first), and the plan draws on the whole photo or on
/// one band of rows at a time, with the same result.
struct MarkPainter {
    let template: Template
    let assets: MarkAssets

    /// What was drawn, in the marked image's pixels (before any frame).
    struct Result {
        var text: Applied.TextRecord?
        var logo: Applied.LogoRecord?
        var tile: Applied.TileRecord?
        var qr: Applied.QRRecord?
        var warnings: [String] = []
    }

    /// Paints every mark on a whole canvas, choosing what is "auto" from its clean pixels.
    /// - Parameters:
    ///   - image: the photo, RGB or RGBA, in its output colour space.
    ///   - icc: see `plan`.
    ///   - subject: the photo's subject as fractions of `image`, which `position: "auto"`
    ///     keeps its marks off.
    func paint(_ image: inout Canvas, icc: [UInt8]?, subject: FocusBox? = nil) -> Result {
        let (width, height) = (image.width, image.height)
        let marks: MarkPlan = image.withUnsafeRows { clean in
            self.plan(width: width, height: height, icc: icc, clean: clean, subject: subject)
        }
        image.withUnsafeMutableRows { marks.draw(onto: $0, top: 0) }
        return marks.result
    }

    /// True when the marks are chosen from the photo's pixels (text colour `"auto"`, `position:
    /// "auto"`, a logo with an `onDark` file): such an output is finished whole, not band by band.
    var needsPixels: Bool {
        template.text.map { $0.autoColors != nil || $0.autoPositions != nil } == true
            || (template.logo != nil && (template.logo?.autoPositions != nil || assets.logoOnDark != nil))
    }

    /// Sizes, places and renders every mark for a photo of `width` × `height`.
    /// - Parameters:
    ///   - icc: the profile the output keeps, or nil for sRGB: mark colours (sRGB, as written
    ///     in the template) and the logo are converted into it, so white stays white and brand
    ///     colours stay true in a wide-gamut photo.
    ///   - clean: the photo's rows before anything is drawn, which "auto" reads; nil when
    ///     planned before the first row (`needsPixels` false: nothing to read).
    ///   - subject: the subject as fractions of the photo, which `position: "auto"` avoids.
    func plan(width: Int, height: Int, icc: [UInt8]?, clean: PixelRows? = nil, subject: FocusBox? = nil) -> MarkPlan {
        var plan = MarkPlan(width: width, height: height)
        let shortSide = min(width, height)
        let colours = MarkColours(icc: icc)
        // Sizes first, then places and colours, all read from the clean photo: what "auto"
        // measures is the photo, not the marks.
        let choice = choose(size: .init(width, height), on: clean, subject: subject, warnings: &plan.result.warnings)

        if let tile = template.tile, let setter = assets.tileSetter {
            plan.result.tile = planTile(tile, setter: setter, shortSide: shortSide, colours: colours, into: &plan)
        }
        let logoOnDark = choice.logoOnDark
        if let mark = template.logo, let logo = choice.logo,
           var overlay = assets.scaledLogo(logo.size, onDark: logoOnDark) {
            if let transform = colours.transform(channels: 4) {
                overlay = transform.applied(to: overlay)
            }
            plan.steps.append(.overlay(overlay, x: logo.box.x, y: logo.box.y, opacity: mark.opacity))
            plan.result.logo = .init(box: [logo.box.x, logo.box.y, logo.box.width, logo.box.height],
                                     scale: (logo.scale * 1000).rounded() / 1000, position: logo.position.rawValue,
                                     variant: logoOnDark ? "onDark" : "file")
            if let warning = MarkLayout.upscaleWarning(scale: logo.scale) { plan.result.warnings.append(warning) }
        }
        if let mark = template.text, let text = choice.text, let (colour, rim) = choice.textFill {
            let (x, y) = text.origins[text.chosen]
            let alpha = Double(colour.a) / 255
            if let shadow = mark.shadow {
                let (sigma, offset) = MarkLayout.shadow(shadow, shortSide: shortSide)
                let blurred = assets.shadow(of: text.rendered, key: mark.text, sigma: sigma)
                plan.steps.append(.mask(blurred.mask, x: x + offset - blurred.padding, y: y + offset - blurred.padding,
                                        color: colours.convert(.black), opacity: shadow.opacity * alpha))
            }
            if let rim {
                let radius = MarkLayout.rimRadius(fraction: rim.fraction, capHeight: text.cap)
                let grown = assets.rim(of: text.rendered, key: mark.text, radius: radius)
                plan.steps.append(.mask(grown, x: x - radius, y: y - radius, color: colours.convert(rim.colour),
                                        opacity: mark.opacity * alpha))
            }
            plan.steps.append(.mask(text.rendered.mask, x: x, y: y, color: colours.convert(colour),
                                    opacity: mark.opacity * alpha))
            plan.result.text = .init(capHeightPx: Int(text.cap.rounded()),
                                     box: MarkLayout.inkBox(text.rendered.ink, at: x, y),
                                     text: mark.text, clamped: text.clamped, position: text.position.rawValue,
                                     color: MarkChoice.hex(colour))
        }
        if let mark = template.qr {
            plan.result.qr = planQR(mark, image: .init(width, height), colours: colours, into: &plan)
        }
        return plan
    }

    /// The QR code, on top of every other mark: sized in whole pixels per module with its quiet
    /// zone, placed as the logo is, in its two colours (converted into the output's profile).
    private func planQR(_ mark: Template.QRMark, image: OutputPlan.Size, colours: MarkColours,
                        into plan: inout MarkPlan) -> Applied.QRRecord? {
        let code: QRCode
        switch assets.qrCode(mark.text, level: mark.level) {
        case .success(let made): code = made
        case .failure(let refused):
            plan.result.warnings.append("qr mark left out: \(refused.description)")
            return nil
        }
        let modules = code.sizeWithQuietZone
        let (perModule, side) = MarkLayout.qrSize(modules: modules, width: mark.width, shortSide: min(image.width, image.height))
        guard perModule >= 1, side <= image.width, side <= image.height else {
            plan.result.warnings.append("qr mark left out: its \(modules) modules (quiet zone included) need at least \(modules) px, "
                                        + "and qr.width gives \(Int(mark.width * Double(min(image.width, image.height)))) px on this photo")
            return nil
        }
        if perModule < Template.QRMark.minimumModulePixels {
            plan.result.warnings.append("qr mark: \(perModule) px a module is hard to scan: raise qr.width (or shorten web.publicURL)")
        }
        let dark = colours.convert(mark.color) + [255], light = colours.convert(mark.background) + [255]
        let drawn = assets.qrImage(code, pixelsPerModule: perModule, dark: dark, light: light)
        let (x, y) = MarkLayout.logoOrigin(position: mark.position, image: image, logo: .init(side, side), padding: mark.padding)
        plan.steps.append(.overlay(drawn, x: x, y: y, opacity: 1))
        return .init(box: [x, y, side, side], modules: code.size, modulePx: perModule,
                     quietZonePx: QRCode.quietZone * perModule, position: mark.position.rawValue, text: code.text)
    }

    /// What "auto" chose from the clean photo: each mark's size and place, the logo file,
    /// the text's fill and rim.
    struct Choice {
        var text: SetText?
        var logo: SetLogo?
        var logoOnDark = false
        var textFill: (Template.Color, rim: (colour: Template.Color, fraction: Double)?)?
    }

    /// Sizes every mark and makes the "auto" choices (places, logo file, text fill) from the
    /// photo before anything is drawn on it.
    /// - Parameters:
    ///   - size: the photo's size.
    ///   - clean: the photo's rows, unmarked; without them (planned before the first row)
    ///     "auto" takes the first place listed, the `file` logo and the light fill with a rim.
    ///   - subject: the subject as fractions of the photo, which `position: "auto"` avoids.
    func choose(size: OutputPlan.Size, on clean: PixelRows?, subject: FocusBox?, warnings: inout [String]) -> Choice {
        var choice = Choice()
        let shortSide = min(size.width, size.height)
        let subjectBox = subject.map { $0.pixels(width: size.width, height: size.height) }
        choice.text = template.text.flatMap { setText($0, image: size, warnings: &warnings) }
        choice.logo = template.logo.flatMap { mark in assets.logo.map { setLogo(mark, file: $0, image: size) } }
        // The other mark is kept at a distance: the text's margin (at least 1 % of the short side).
        let room = max(shortSide / 100, Int(((template.text?.margin ?? 0.03) * Double(shortSide)).rounded()))
        if let mark = template.logo, let logo = choice.logo, mark.autoPositions != nil {
            let avoid = [template.text?.autoPositions == nil ? choice.text.map { MarkChoice.grown($0.box, by: room) } : nil,
                         subjectBox].compactMap { $0 }
            choice.logo?.choose(calmest(logo.boxes, clean, avoid: avoid))
        }
        if let mark = template.text, let text = choice.text, mark.autoPositions != nil {
            let avoid = [choice.logo.map { MarkChoice.grown($0.box, by: room) }, subjectBox].compactMap { $0 }
            choice.text?.choose(calmest(text.boxes, clean, avoid: avoid))
        }
        choice.logoOnDark = choice.logo.map { logo in
            guard let clean else { return false }
            return assets.logoOnDark != nil && MarkChoice.prefersOnDark(
                file: assets.luminances(ofLogo: false), onDark: assets.luminances(ofLogo: true),
                under: PhotoSample.luminances(clean, in: logo.box))
        } ?? false
        choice.textFill = choice.text.map { text in fill(template.text!, text: text, image: clean) }
        return choice
    }

    /// The text mark set for one photo: its size, and its box at each candidate place.
    struct SetText {
        var rendered: RenderedText
        var cap: Double
        var clamped: Bool
        var places: [Template.Position]
        var origins: [(x: Int, y: Int)]
        var boxes: [PixelRect]
        var chosen = 0
        var position: Template.Position { places[chosen] }
        var box: PixelRect { boxes[chosen] }
        mutating func choose(_ index: Int) { chosen = index }
    }

    /// The logo sized for one photo, and its box at each candidate place.
    struct SetLogo {
        var size: OutputPlan.Size
        var scale: Double
        var places: [Template.Position]
        var boxes: [PixelRect]
        var chosen = 0
        var position: Template.Position { places[chosen] }
        var box: PixelRect { boxes[chosen] }
        mutating func choose(_ index: Int) { chosen = index }
    }

    /// Sets the text at its size (shrunk to `maxWidth`, clamped to the smallest legible
    /// size) and finds its box at every candidate place; nil when it is left out.
    private func setText(_ mark: Template.TextMark, image: OutputPlan.Size, warnings: inout [String]) -> SetText? {
        guard let setter = assets.textSetter else { return nil }
        let shortSide = min(image.width, image.height)
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
        if let substitution = setter.substitution { warnings.append("text mark: \(substitution)") }
        if !text.missing.isEmpty {
            let list = text.missing.map { "U+" + String($0.value, radix: 16, uppercase: true) }.joined(separator: ", ")
            warnings.append("text mark: no installed font has \(list); drawn as a missing-glyph box")
        }
        // At the smallest legible size the text may still not fit between the margins of
        // a tiny photo: text cut at the edge is worse than none, so it is left out, said.
        let room = Double(image.width) - 2 * mark.margin * Double(shortSide)
        if clamped && text.ink.width > room {
            warnings.append(String(format: "text mark left out: at the smallest legible size (%.0f px capitals) "
                                   + "it is %.0f px wide, wider than this %d px wide photo",
                                   cap, text.ink.width.rounded(.up), image.width))
            return nil
        }
        guard text.mask.width > 0 else { return nil }
        let places = mark.autoPositions ?? [mark.position]
        let origins = places.map {
            MarkLayout.textOrigin(position: $0, image: image, ink: text.ink, baseline: text.baseline, capHeight: cap,
                                  margin: mark.margin * Double(shortSide))
        }
        let boxes = origins.map { o in
            let b = MarkLayout.inkBox(text.ink, at: o.x, o.y)
            return PixelRect(x: b[0], y: b[1], width: b[2], height: b[3])
        }
        return SetText(rendered: text, cap: cap, clamped: clamped, places: places, origins: origins, boxes: boxes)
    }

    private func setLogo(_ mark: Template.LogoMark, file: Image, image: OutputPlan.Size) -> SetLogo {
        let (size, scale) = MarkLayout.logoSize(file: .init(file.width, file.height), width: mark.width,
                                                shortSide: min(image.width, image.height))
        let places = mark.autoPositions ?? [mark.position]
        let boxes = places.map { place in
            let (x, y) = MarkLayout.logoOrigin(position: place, image: image, logo: size, padding: mark.padding)
            return PixelRect(x: x, y: y, width: size.width, height: size.height)
        }
        return SetLogo(size: size, scale: scale, places: places, boxes: boxes)
    }

    /// The calmest of `boxes` on `image`, off the boxes to avoid.
    private func calmest(_ boxes: [PixelRect], _ image: PixelRows?, avoid: [PixelRect]) -> Int {
        guard let image else { return 0 }
        return MarkChoice.calmest(boxes: boxes, detail: boxes.map { PhotoSample.detail(image, in: $0) }, avoid: avoid)
    }

    /// The text's fill and rim: the template's colour, or for "auto" the light or dark one
    /// that contrasts more with the photo under the text (with a rim in the other when the
    /// photo there is both light and dark); the rim when `outline` asks for one.
    private func fill(_ mark: Template.TextMark, text: SetText,
                      image: PixelRows?) -> (Template.Color, rim: (colour: Template.Color, fraction: Double)?) {
        guard let pair = mark.autoColors else {
            return (mark.color, mark.outline.map { (MarkLayout.opposite(of: mark.color), $0) })
        }
        guard let image else { return (pair.light, (pair.dark, mark.outline ?? MarkLayout.autoRim)) }
        let under = PhotoSample.luminances(image, in: text.box)
        let choice = MarkChoice.fill(light: MarkChoice.luminance(pair.light.r, pair.light.g, pair.light.b),
                                     dark: MarkChoice.luminance(pair.dark.r, pair.dark.g, pair.dark.b), under: under)
        let (fill, other) = choice.light ? (pair.light, pair.dark) : (pair.dark, pair.light)
        let fraction = mark.outline ?? (choice.rim ? MarkLayout.autoRim : nil)
        return (fill, fraction.map { (other, $0) })
    }

    /// The tiled mark, under everything else: in its colour, or two-toned for "auto" (a dark
    /// rim around a light fill, so every copy shows on light and dark parts of the photo).
    private func planTile(_ tile: Template.TileMark, setter: Typesetter, shortSide: Int, colours: MarkColours,
                          into plan: inout MarkPlan) -> Applied.TileRecord? {
        let (cap, clamped) = MarkLayout.tileCapHeight(tile, shortSide: shortSide)
        let text = assets.text(tile.text, setter: setter, capHeight: cap)
        guard text.mask.width > 0 else { return nil }
        let lattice = MarkLayout.tile(tile, capHeight: cap, clamped: clamped,
                                      ink: .init(text.mask.width, text.mask.height))
        let pair = tile.autoColors ?? (tile.color == nil ? template.text?.autoColors : nil)
        let colour = tile.color ?? template.text?.color ?? .white
        if let pair {
            let radius = MarkLayout.rimRadius(fraction: MarkLayout.tileRim, capHeight: cap)
            let grown = assets.rim(of: text, key: "tile|" + tile.text, radius: radius)
            plan.steps.append(.tiled(grown, angle: tile.angle, along: lattice.along, across: lattice.across,
                                     color: colours.convert(pair.dark), opacity: tile.opacity * Double(pair.dark.a) / 255,
                                     inset: Double(radius)))
            plan.steps.append(.tiled(text.mask, angle: tile.angle, along: lattice.along, across: lattice.across,
                                     color: colours.convert(pair.light),
                                     opacity: tile.opacity * Double(pair.light.a) / 255, inset: 0))
        } else {
            plan.steps.append(.tiled(text.mask, angle: tile.angle, along: lattice.along, across: lattice.across,
                                     color: colours.convert(colour), opacity: tile.opacity * Double(colour.a) / 255,
                                     inset: 0))
        }
        return .init(capHeightPx: Int(cap.rounded()), angle: tile.angle,
                     step: [Int(lattice.along.rounded()), Int(lattice.across.rounded())],
                     opacity: tile.opacity, clamped: clamped, color: pair == nil ? MarkChoice.hex(colour) : "auto")
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
        case tiled(CoverageMask, angle: Double, along: Double, across: Double, color: [UInt8], opacity: Double,
                   inset: Double)
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
            case .tiled(let mask, let angle, let along, let across, let color, let opacity, let inset):
                compositeTiled(mask, angle: angle, along: along, across: across, color: color, opacity: opacity,
                               inset: inset, onto: band, top: top, imageHeight: height)
            }
        }
    }
}

