import Codecs
import Foundation
import Pixels

/// One photo's recipe (reference: Templates, the order of operations): orient → crop (per ratio) →
/// resize → marks → frame → encode. The source is decoded once, at the smallest DCT scale
/// that still serves every output, and its rows flow straight into one streaming resampler
/// per output: only the outputs are ever whole in memory.
public struct PhotoFinisher: Sendable {
    public let template: Template
    /// The marks' fonts and decoded logo, made once for the whole batch (or why they could
    /// not be: then every photo fails with that message).
    public let marks: Result<MarkAssets, PhotoError>

    /// Prepares the recipe and its marks (opens the fonts, decodes the logo): build one
    /// finisher per batch and share it.
    public init(template: Template) {
        self.template = template
        marks = Result { () throws(PhotoError) in try MarkAssets.load(for: template) }
    }

    /// A recipe with marks prepared elsewhere.
    public init(template: Template, marks: MarkAssets) {
        self.template = template
        self.marks = .success(marks)
    }

    /// Finishes one photo.
    /// - Parameters:
    ///   - bytes: the whole source file.
    ///   - limits: `maxPixels` (checked from the header) and the item deadline.
    ///   - facts: its name and place in the batch, for the template's variables (the EXIF
    ///     facts are read here).
    ///   - light: the batch's correction of this photo (`harmonize`), applied to every row as
    ///     it leaves its resampler, before anything else is done to it; nil for none.
    /// - Returns: the encoded outputs and what was done.
    /// - Throws: `PhotoError` with the report's code.
    public func finish(bytes: consuming [UInt8], limits: DecodeLimits, facts: PhotoFacts = PhotoFacts(),
                       light: LightCorrection? = nil) throws(PhotoError) -> FinishedPhoto {
        try finish(bytes: bytes, limits: limits, facts: facts, light: light, open: openDecoder)
    }

    /// Opens a decoder on a file's bytes (`openDecoder`; tests count decode passes through it).
    typealias Opener = (_ bytes: [UInt8], _ limits: DecodeLimits) throws(PhotoError) -> any PhotoDecoder

    /// `finish`, with the decoder opened by `open`.
    func finish(bytes: consuming [UInt8], limits: DecodeLimits, facts: PhotoFacts, light: LightCorrection? = nil,
                open: Opener) throws(PhotoError) -> FinishedPhoto {
        let assets = try marks.get()
        var limits = limits
        limits.damaged = template.damaged
        // The decoder (and its copy of the file) is gone once this returns: what is left is
        // what the outputs still hold (a turned photo, an output finished whole).
        let decoded = try decode(bytes, limits: limits, facts: facts, assets: assets,
                                 curve: light.flatMap { $0.isNone ? nil : LightCurve($0) }, open: open)
        let info = decoded.info, orientation = Self.orientationToApply(info)
        let stored = OutputPlan.Size(info.width, info.height)
        let upright = Layout.swapsAxes(orientation) ? stored.swapped : stored
        var warnings = decoded.warnings
        // Bands are finished once into read-only images, shared by the crops cut from them; a
        // band is let go after its last crop.
        var shared: [Int: Image] = [:]
        func band(_ index: Int) -> Image {
            if let image = shared[index] { return image }
            let image = decoded.bands[index].finish().finished()
            shared[index] = image
            return image
        }
        // The preview (made before anything is drawn) is also the subject analysis' image:
        // made now from the smallest band or its own resampler, or from the whole-photo output,
        // which is therefore finished first (the outputs keep the plans' order).
        let wholeOutput = decoded.outputs.firstIndex { $0.makesPreview }
        let needsSubject = decoded.outputs.contains { if case .band = $0.way { true } else { false } }
            || template.recipes.contains { $0.recipe.text?.autoPositions != nil || $0.recipe.logo?.autoPositions != nil }
        var preview: Image?, subject = decoded.subject
        // The faces the report names: the file's, or the detector's when a crop is placed on them.
        var faces = decoded.subject.flatMap { $0.faces.isEmpty ? nil : $0.faces }
        func findSubject() -> Subject? {
            let attention = preview.flatMap { Self.subject(of: $0) }
            // Faces are looked for only when a crop must be placed (it has bands).
            guard let largest = decoded.bands.indices.max(by: {
                decoded.bands[$0].targetWidth * decoded.bands[$0].targetHeight
                    < decoded.bands[$1].targetWidth * decoded.bands[$1].targetHeight
            }) else { return attention }
            do {
                let found = try band(largest).withUnsafeRows { rows throws(FaceDetectionError) in
                    try FaceDetector.shared.get().faces(inStored: rows, orientation: orientation)
                }
                faces = found
                return Subject.detected(faces: found, attention: attention)
            } catch {
                warnings.append("face detector: \(error.message); crops placed without faces")
                return attention
            }
        }
        if wholeOutput == nil {
            if let index = decoded.previewBand {
                preview = band(index).withUnsafeRows { Self.preview($0, orientation: orientation) }
            } else if let small = decoded.preview {
                preview = small.finish().withUnsafeRows { Self.preview($0, orientation: orientation) }
            }
            if needsSubject && subject == nil { subject = findSubject() }
        }
        var finished = [FinishedOutput?](repeating: nil, count: decoded.outputs.count)
        let order = wholeOutput.map { [$0] + decoded.outputs.indices.filter { $0 != wholeOutput } }
            ?? Array(decoded.outputs.indices)
        for (step, index) in order.enumerated() {
            try limits.checkDeadline()
            let pending = decoded.outputs[index]
            let recipe = decoded.recipes[pending.recipe]
            var plan = pending.plan
            var focus: String? = plan.crop == nil ? nil : plan.focus.rawValue
            if plan.crop != nil, plan.focus == .subject, let subject = decoded.subject { focus = subject.source.rawValue }
            var output: FinishedOutput
            switch pending.way {
            case .streamed(let line):
                let (done, shrunk) = try line.finish()
                output = done
                preview = preview ?? shrunk
                for warning in line.warnings where !warnings.contains(warning) { warnings.append(warning) }
            case .whole(let resizer):
                let image = resizer.finish()
                // Made before finishOutput, which converts the canvas to sRGB and draws marks on
                // it: the preview shows the photo as it came.
                if pending.makesPreview {
                    preview = image.withUnsafeRows { Self.preview($0, orientation: orientation) }
                }
                if pending.makesPreview && needsSubject && subject == nil { subject = findSubject() }
                output = try recipe.finisher.finishOutput(image, plan: plan, subject: Self.subjectBox(subject, plan, upright),
                                                          info: info, orientation: orientation,
                                                          scale: decoded.denominator, assets: assets,
                                                          credit: recipe.credit, warnings: &warnings)
            case .band(let source, let size):
                if let subject {
                    let origin = CropPlacement.place(window: .init(plan.uprightCrop.width, plan.uprightCrop.height),
                                                     in: upright, subject: subject)
                    plan = Layout.placed(plan, at: origin, stored: stored, orientation: orientation)
                    focus = subject.source.rawValue
                } else {
                    focus = Template.CropFocus.center.rawValue  // nothing in the photo to centre on
                }
                let canvas = band(source).withUnsafeRows {
                    Self.cut($0, window: Layout.window(of: plan, inBand: size, upright: upright), orientation: orientation)
                }
                if !order[(step + 1)...].contains(where: {
                    if case .band(let other, _) = decoded.outputs[$0].way { other == source } else { false }
                }) {
                    shared[source] = nil
                }
                output = try recipe.finisher.finishOutput(canvas, plan: plan, subject: Self.subjectBox(subject, plan, upright),
                                                          info: info, orientation: orientation,
                                                          scale: decoded.denominator, assets: assets,
                                                          credit: recipe.credit, warnings: &warnings)
            }
            if pending.makesPreview && needsSubject && subject == nil { subject = findSubject() }
            output.applied.crop?.focus = focus
            output.variant = recipe.variant
            finished[index] = output
        }
        // Names in the plans' order: a name taken twice is told apart the same way every time.
        var outputs: [FinishedOutput] = []
        for (index, output) in finished.enumerated() {
            guard var output else { continue }
            let recipe = decoded.recipes[decoded.outputs[index].recipe].finisher.template
            output.name = OutputName.file(pattern: recipe.output.name, suffix: recipe.output.suffix,
                                          values: decoded.facts.values, variant: output.variant,
                                          crop: output.cropLabel, extension: output.fileExtension,
                                          taken: outputs.map(\.name))
            outputs.append(output)
        }
        return FinishedPhoto(format: info.raw.map { $0.kind.lowercased() } ?? info.format.rawValue, uprightSize: upright,
                             orientation: info.declaredOrientation, outputs: outputs, skipped: decoded.skipped,
                             warnings: warnings, preview: preview,
                             faces: faces?.map { $0.pixels(width: upright.width, height: upright.height) })
    }

    /// One product's recipe (the template's, or a variant's), its variables filled in.
    struct Recipe {
        var variant: String?
        var finisher: PhotoFinisher
        var credit: Credit
    }

    /// One planned output, on its way while the source is decoded.
    struct PendingOutput {
        /// The recipe (index into `Decoded.recipes`) it is made with.
        var recipe: Int
        var plan: OutputPlan
        var way: Way
        /// The photo's preview is shrunk from this output (the first uncropped one).
        var makesPreview: Bool

        enum Way {
            /// Finished band by band as the rows come (`OutputLine`).
            case streamed(OutputLine)
            /// Resized whole, then finished whole (`finishOutput`): an output that is
            /// sharpened, must fit `maxBytes` or has marks chosen from its pixels ("auto")
            /// needs every pixel at once.
            case whole(StreamingResizer)
            /// A subject crop, cut after the decode from the whole photo at its scale (the band
            /// `Decoded.bands[index]`, of upright `size`), then finished whole.
            case band(Int, size: OutputPlan.Size)
        }
    }

    /// What one decode pass produced: every planned output, encoded as its rows came or
    /// resized and waiting to be finished whole, and the preview's resampler when no output
    /// is the whole photo.
    struct Decoded {
        var info: SourceInfo
        /// The facts the variables were filled from (the EXIF's added).
        var facts: PhotoFacts
        var recipes: [Recipe]
        var outputs: [PendingOutput]
        var skipped: [SkippedCrop]
        var denominator: Int
        var preview: StreamingResizer?
        /// The whole photo at each subject crop's scale (shared by the crops of one scale).
        var bands: [StreamingResizer]
        /// The band the preview is shrunk from when no output is the whole photo.
        var previewBand: Int?
        /// The subject the file's MWG regions name (crops already placed on it), or nil: found
        /// on the preview.
        var subject: Subject?
        var warnings: [String]
    }

    /// Opens the decoder, fills in the variables, plans the outputs of every recipe (the
    /// template's and its variants') and decodes once, at the smallest DCT scale that serves
    /// them all, streaming rows into one output line (or resampler) per output.
    private func decode(_ bytes: consuming [UInt8], limits: DecodeLimits, facts: PhotoFacts,
                        assets: MarkAssets, curve: LightCurve?, open: Opener) throws(PhotoError) -> Decoded {
        let decoder = try open(bytes, limits)
        // The JPEG and HEIF decoders keep their own copy: let ours go before decoding, so a
        // photo in flight holds its file once.
        _ = consume bytes
        let info = decoder.info
        let orientation = Self.orientationToApply(info)
        let stored = OutputPlan.Size(info.width, info.height)
        var facts = facts
        if let exif = info.exif {
            let summary = Exif.summary(exif)
            facts.captured = summary.dateTimeOriginal
            facts.make = summary.make
            facts.model = summary.model
            facts.lens = summary.lens
        }
        // Each product's recipe (the template's, each variant's), variables filled in.
        var warnings: [String] = []
        let recipes = template.recipes.map { variant, recipe in
            let (filled, credit, missing) = recipe.filled(with: facts)
            for warning in missing where !warnings.contains(warning) { warnings.append(warning) }
            return Recipe(variant: variant, finisher: PhotoFinisher(template: filled, marks: assets), credit: credit)
        }
        var plans: [(recipe: Int, plan: OutputPlan)] = [], skipped: [SkippedCrop] = []
        for (index, (variant, recipe)) in template.recipes.enumerated() {
            let planned = Layout.plan(stored: stored, orientation: orientation, template: recipe)
            plans += planned.outputs.map { (index, $0) }
            skipped += planned.skipped.map { var s = $0; s.variant = variant; return s }
            if let raw = info.raw { try Self.checkPreview(raw, serves: planned.outputs, template: recipe, orientation: orientation) }
        }
        // Regions the file names are known from its header: subject crops are placed on them
        // now and stream like any crop. Otherwise each streams into a band (the whole photo at
        // its scale) and is placed after the decode, once the subject is found on the preview.
        let upright = Layout.swapsAxes(orientation) ? stored.swapped : stored
        let regions = Self.regionSubject(info, orientation: orientation)
        if let regions {
            for index in plans.indices where plans[index].plan.crop != nil && plans[index].plan.focus == .subject {
                let crop = plans[index].plan.uprightCrop
                plans[index].plan = Layout.placed(plans[index].plan,
                                                  at: CropPlacement.place(window: .init(crop.width, crop.height),
                                                                          in: upright, subject: regions),
                                                  stored: stored, orientation: orientation)
            }
        }
        let bandSizes = plans.map { regions == nil ? Layout.band(for: $0.plan, upright: upright) : nil }
        var bandPlans: [OutputPlan] = []
        for size in bandSizes.compactMap({ $0 }) where !bandPlans.contains(where: { $0.upright == size }) {
            bandPlans.append(Layout.wholePhoto(stored: stored, orientation: orientation, size: size))
        }
        // The preview (report thumbnail, colour card sample, subject analysis) costs no second
        // decode: the first whole-photo output shrinks its upright rows into it before anything
        // is drawn, or the smallest band, or it rides along the decode as one more resampler.
        let previewPlan = Self.previewPlan(stored: stored, orientation: orientation)
        let wholeOutput = plans.firstIndex { $0.plan.crop == nil }
        let previewBand = wholeOutput != nil ? nil
            : bandPlans.indices.min { bandPlans[$0].upright.width * bandPlans[$0].upright.height
                < bandPlans[$1].upright.width * bandPlans[$1].upright.height }
        let ownPreview = wholeOutput == nil && previewBand == nil
        let (denominator, scaled) = Self.decodeScale(decoder, for: plans.map(\.plan) + bandPlans
                                                     + (ownPreview ? [previewPlan] : []))
        let channels = info.hasAlpha ? 4 : 3
        let planar = Self.planarChroma(decoder, template: template, plans: plans.map(\.plan), orientation: orientation)
        let bands = bandPlans.map { Self.resizer(for: $0, stored: stored, scaled: scaled, channels: channels) }
        var outputs: [PendingOutput] = []
        var resizers: [StreamingResizer] = bands
        for (index, (recipeIndex, plan)) in plans.enumerated() {
            let finisher = recipes[recipeIndex].finisher
            let way: PendingOutput.Way
            if let size = bandSizes[index], let band = bandPlans.firstIndex(where: { $0.upright == size }) {
                way = .band(band, size: size)
            } else if finisher.streams(plan) && !MarkPainter(template: finisher.template, assets: assets).needsPixels {
                let line = try OutputLine(plan: plan, source: scaled,
                                          crop: Layout.scaledCrop(plan.storedCrop, from: stored, to: scaled),
                                          channels: channels, info: info, orientation: orientation, scale: denominator,
                                          template: finisher.template, assets: assets, credit: recipes[recipeIndex].credit,
                                          preview: index == wholeOutput ? previewPlan.upright : nil, planes: planar)
                if let resizer = line.resizer { resizers.append(resizer) }
                way = .streamed(line)
            } else {
                let resizer = Self.resizer(for: plan, stored: stored, scaled: scaled, channels: channels)
                resizers.append(resizer)
                way = .whole(resizer)
            }
            outputs.append(PendingOutput(recipe: recipeIndex, plan: plan, way: way, makesPreview: index == wholeOutput))
        }
        let preview = ownPreview ? Self.resizer(for: previewPlan, stored: stored, scaled: scaled, channels: channels,
                                                shrinkFirst: true) : nil
        if case .streamed(let line) = outputs.first?.way, let planes = line.planes, let jpeg = decoder as? JPEGDecoder {
            try Self.decodePlanes(jpeg, into: planes, limits: limits)
        } else {
            // The batch's correction (`harmonize`) is made on the rows each resampler gives, at
            // the size of what it makes (a table lookup: at a web output's size a quarter of
            // what it costs on the decoded rows).
            for resizer in resizers + (preview.map { [$0] } ?? []) { resizer.curve = curve }
            try Self.decode(decoder, denominator: denominator, channels: channels,
                            into: resizers + (preview.map { [$0] } ?? []), limits: limits)
        }
        // What the decode found: damage it went on past (`damaged: warn`) first, then the
        // decoder's notes, then the variables'.
        let notes = (decoder.damage.map { [$0.warning] } ?? []) + ((decoder as? JPEGDecoder)?.warnings ?? [])
        warnings = notes + warnings.filter { !notes.contains($0) }
        return Decoded(info: info, facts: facts, recipes: recipes, outputs: outputs, skipped: skipped,
                       denominator: denominator, preview: preview, bands: bands, previewBand: previewBand,
                       subject: regions, warnings: warnings)
    }

    /// Whether an output goes from the decoder to the encoder band by band. Not when it is
    /// sharpened (the blur reaches across bands; sharpened outputs are downscaled, small) or
    /// must fit `maxBytes` (it may be encoded again at a lower quality).
    func streams(_ plan: OutputPlan) -> Bool { Self.streams(plan, template: template) }

    /// `streams`, for `template`'s outputs.
    static func streams(_ plan: OutputPlan, template: Template) -> Bool {
        template.output.maxBytes == nil && sharpening(plan, amount: template.output.sharpen) == nil
    }

    /// The smallest DCT scale that still serves every plan, and the size delivered at it.
    static func decodeScale(_ decoder: any PhotoDecoder, for plans: [OutputPlan]) -> (Int, OutputPlan.Size) {
        let stored = OutputPlan.Size(decoder.info.width, decoder.info.height)
        let denominator = Layout.decodeDenominator(
            stored: stored, outputs: plans, denominators: decoder.scaleDenominators,
            scaledSize: { d in let s = decoder.scaledSize(denominator: d); return .init(s.width, s.height) })
        let scaled = decoder.scaledSize(denominator: denominator)
        return (denominator, OutputPlan.Size(scaled.width, scaled.height))
    }

    /// A resampler of the decoded rows into `plan`'s stored size, keeping its image whole
    /// (`shrinkFirst`: the preview's, see `StreamingResizer`).
    static func resizer(for plan: OutputPlan, stored: OutputPlan.Size, scaled: OutputPlan.Size,
                        channels: Int, shrinkFirst: Bool = false) -> StreamingResizer {
        StreamingResizer(sourceWidth: scaled.width, sourceHeight: scaled.height,
                         crop: Layout.scaledCrop(plan.storedCrop, from: stored, to: scaled),
                         targetWidth: plan.stored.width, targetHeight: plan.stored.height, channels: channels,
                         shrinkFirst: shrinkFirst)
    }

    /// Decodes every row once, pushing it into each resampler that still wants rows.
    /// - Throws: `PhotoError` (`corrupt-image`, `timeout`, …).
    static func decode(_ decoder: any PhotoDecoder, denominator: Int, channels: Int,
                       into resizers: [StreamingResizer], limits: DecodeLimits) throws(PhotoError) {
        try photoErrors {
            try decoder.decode(denominator: denominator, channels: channels, limits: limits) { row in
                for resizer in resizers where !resizer.isComplete { resizer.push(row) }
            }
        }
    }

    /// The JPEG's luma rows per chroma row when its one output is best fed its YCbCr planes
    /// (`UprightPlanes`): the whole photo (no crop, so no band and no preview of its own) at
    /// full resolution, turned or flipped upside down (so held whole), from a YCbCr file with
    /// halved chroma and even sides (chroma over 2 samples wide: libjpeg filters narrower
    /// chroma otherwise). Nil otherwise: rows, as for everything else — and for a template that
    /// harmonizes (its correction is made on the rows its resamplers give).
    static func planarChroma(_ decoder: any PhotoDecoder, template: Template, plans: [OutputPlan], orientation: Int) -> Int? {
        let info = decoder.info
        let stored = OutputPlan.Size(info.width, info.height)
        guard template.harmonize == nil, plans.count == 1, let plan = plans.first, plan.crop == nil,
              let jpeg = decoder as? JPEGDecoder, let rows = jpeg.planarChromaRows, !info.hasAlpha,
              (3...8).contains(orientation), info.width % 2 == 0, info.height % 2 == 0, info.width > 4,
              plan.stored == stored, plan.storedCrop == PixelRect(x: 0, y: 0, width: stored.width, height: stored.height)
        else { return nil }
        return rows
    }

    /// Decodes a JPEG's planes into `planes`.
    /// - Throws: `PhotoError` (`corrupt-image`, `timeout`, …).
    static func decodePlanes(_ decoder: JPEGDecoder, into planes: UprightPlanes, limits: DecodeLimits) throws(PhotoError) {
        try photoErrors { try decoder.decodePlanes(limits: limits) { planes.take($0) } }
    }

    /// Runs a decode, its errors as `PhotoError`s (anything else a decoder throws is a
    /// corrupt image).
    private static func photoErrors(_ decode: () throws -> Void) throws(PhotoError) {
        do {
            try decode()
        } catch let error as PhotoError {
            throw error
        } catch {
            throw PhotoError(.corruptImage, "\(error)")
        }
    }

    /// Decodes once, at the smallest DCT scale that serves every plan, streaming the rows into
    /// one resampler per plan: no whole source frame is held for a downscale.
    /// - Returns: the denominator used and each plan's resampler, complete: `finish()` hands
    ///   over its image, in stored orientation.
    /// - Throws: `PhotoError` (`corrupt-image`, `timeout`, …).
    static func resample(_ decoder: any PhotoDecoder, into plans: [OutputPlan],
                         limits: DecodeLimits) throws(PhotoError) -> (denominator: Int, resizers: [StreamingResizer]) {
        let stored = OutputPlan.Size(decoder.info.width, decoder.info.height)
        let (denominator, scaled) = decodeScale(decoder, for: plans)
        let channels = decoder.info.hasAlpha ? 4 : 3
        let resizers = plans.map { resizer(for: $0, stored: stored, scaled: scaled, channels: channels) }
        try decode(decoder, denominator: denominator, channels: channels, into: resizers, limits: limits)
        return (denominator, resizers)
    }

    /// The subject of a photo from its preview (upright), or nil when it shows nothing to
    /// centre on. Portrait-shaped photos weigh their top more: heads are near the top.
    static func subject(of preview: Image) -> Subject? {
        let small = AttentionMap.analysisImage(from: preview)
        return SubjectFinder.find(in: AttentionMap(small, topBias: small.height > small.width ? 0.5 : 0))
    }

    /// The subject the file's XMP names (MWG `mwg-rs:Regions`, turned upright with the
    /// photo), or nil when it names none.
    static func regionSubject(_ info: SourceInfo, orientation: Int) -> Subject? {
        guard let bytes = info.xmp, let regions = XMPPacket(bytes)?.regions else { return nil }
        return SubjectFinder.fromRegions(regions.upright(stored: (info.width, info.height), orientation: orientation))
    }

    /// The subject's box as fractions of one output (its crop), or nil.
    static func subjectBox(_ subject: Subject?, _ plan: OutputPlan, _ upright: OutputPlan.Size) -> FocusBox? {
        subject.flatMap { Layout.box($0.box, in: plan, upright: upright) }
    }

    /// The stored-orientation pixels of an upright `window` of a stored-orientation band, in
    /// a canvas of their own (bands are shared by crops, and outputs are drawn on in place).
    static func cut(_ band: PixelRows, window: PixelRect, orientation: Int) -> Canvas {
        let rect = Orientation.storedRect(forUpright: window, storedWidth: band.width, storedHeight: band.height,
                                          exif: orientation)
        var result = Canvas(width: rect.width, height: rect.height, channels: band.channels)
        result.withUnsafeMutableRows { out in
            for y in 0..<rect.height {
                out[y].update(from: band[rect.y + y] + rect.x * band.channels, count: out.rowBytes)
            }
        }
        return result
    }

    /// A camera raw is finished from its embedded preview only when the preview serves every
    /// output at the size the raw itself would give it (2 % less is allowed: previews and raws
    /// are cropped a little differently).
    /// - Throws: `camera-raw`, naming the sizes, when the preview is too small.
    static func checkPreview(_ raw: RawSource, serves outputs: [OutputPlan], template: Template,
                             orientation: Int) throws(PhotoError) {
        let full = Layout.plan(stored: .init(raw.width, raw.height), orientation: orientation, template: template).outputs
        for (fromPreview, fromRaw) in zip(outputs, full) {
            let need = fromRaw.upright, have = fromPreview.upright
            if Double(have.width) < Double(need.width) * 0.98 || Double(have.height) < Double(need.height) * 0.98 {
                let preview = OutputPlan.Size(raw.previewWidth, raw.previewHeight)
                throw PhotoError(.cameraRaw, "\(raw.kind) camera raw file: its embedded preview (\(preview)) is smaller than "
                                 + "the \(need) output the template makes from it, and PhotoFinish does not develop raw "
                                 + "files; drop the camera's JPEG or HEIC with it")
            }
        }
    }

    /// The long side of the preview every finished photo carries (report thumbnails are
    /// shown up to 240 CSS px wide, sharp on a 2× phone screen).
    public static let previewLongSide = 480

    /// The whole photo, shrunk to the preview size (never enlarged).
    static func previewPlan(stored: OutputPlan.Size, orientation: Int) -> OutputPlan {
        let upright = Layout.swapsAxes(orientation) ? stored.swapped : stored
        return Layout.wholePhoto(stored: stored, orientation: orientation,
                                 size: Layout.resized(upright, by: .longSide(previewLongSide)))
    }

    /// A stored-orientation image of the whole photo made into the preview: shrunk to
    /// `previewLongSide` (never enlarged), upright, flattened over white. An image of its
    /// own: the output it came from is drawn on afterwards, and the preview shows the photo
    /// (its colour feeds the colour card).
    static func preview(_ image: PixelRows, orientation: Int) -> Image {
        let size = Layout.resized(.init(image.width, image.height), by: .longSide(previewLongSide))
        return flattened(Orientation.apply(resized(image, width: size.width, height: size.height, shrinkFirst: true),
                                           exif: orientation), over: [255, 255, 255]).finished()
    }

    /// The EXIF orientation still to apply (HEIF decoders apply `irot`/`imir` themselves and
    /// report 1).
    static func orientationToApply(_ info: SourceInfo) -> Int {
        (1...8).contains(info.orientation) ? info.orientation : 1
    }

    /// How a downscaled output is sharpened (`output.sharpen`): the amount grows with the
    /// downscale (none at 1:1, half at 2:1, all of it from 4:1 on), the blur widens a little
    /// with it (σ 0.5 → 0.8 px).
    /// - Returns: what is done, for `applied.sharpen`; nil when nothing is (no downscale).
    static func sharpening(_ plan: OutputPlan, amount: Double) -> Applied.SharpenRecord? {
        guard amount > 0 else { return nil }
        let factor = max(Double(plan.uprightCrop.width) / Double(max(1, plan.upright.width)),
                         Double(plan.uprightCrop.height) / Double(max(1, plan.upright.height)))
        let octaves = log2(factor)
        guard octaves > 0.05 else { return nil }
        let strength = ((amount * min(1, octaves / 2)) * 100).rounded() / 100
        let sigma = ((0.5 + 0.15 * min(2, octaves)) * 100).rounded() / 100
        guard strength > 0 else { return nil }
        return Applied.SharpenRecord(amount: strength, sigma: sigma)
    }

    /// Sharpens a downscaled output in place, as `sharpening` says.
    /// - Returns: what was done, for `applied.sharpen`; nil when nothing was.
    static func sharpen(_ image: inout Canvas, plan: OutputPlan, amount: Double) -> Applied.SharpenRecord? {
        guard let record = sharpening(plan, amount: amount) else { return nil }
        unsharpMask(&image, amount: record.amount, sigma: record.sigma)
        return record
    }

    /// Encodes an output; with `maxBytes`, a lossy format's quality is lowered until the file
    /// fits (a binary search down to `minQuality`), and a file that cannot fit is warned about.
    /// - Returns: the file and the quality used when it is not the template's (nil: as asked).
    static func encode(_ image: Image, options: EncodeOptions, maxBytes: Int?,
                       warnings: inout [String]) throws(PhotoError) -> (bytes: [UInt8], quality: Int?) {
        let first = try encodeImage(image, options: options)
        guard let maxBytes, first.count > maxBytes else { return (first, nil) }
        func over(_ bytes: [UInt8]) -> String {
            "\(bytes.count) bytes, over output.maxBytes (\(maxBytes))"
        }
        guard options.format != .png else {
            warnings.append("PNG output of \(over(first)): PNG is lossless, so its quality cannot be lowered; "
                            + "resize smaller or write a lossy format")
            return (first, nil)
        }
        var low = minQuality, high = options.quality - 1
        var best: (bytes: [UInt8], quality: Int)?
        while low <= high {
            let quality = (low + high) / 2
            var attempt = options
            attempt.quality = quality
            let bytes = try encodeImage(image, options: attempt)
            if bytes.count <= maxBytes {
                best = (bytes, quality)
                low = quality + 1
            } else {
                high = quality - 1
            }
        }
        if let best { return best }
        var floor = options
        floor.quality = minQuality
        let smallest = try encodeImage(image, options: floor)
        warnings.append("output of \(over(smallest)) even at quality \(minQuality): resize smaller")
        return (smallest, minQuality)
    }

    /// The lowest quality `maxBytes` goes down to: below it JPEG blocks show at any size.
    static let minQuality = 20

    /// The template's metadata policy in the codecs' terms.
    static func policy(_ metadata: Template.Metadata) -> MetadataPolicy {
        switch metadata {
        case .keep: .keep
        case .stripLocation: .stripLocation
        case .copyrightOnly: .copyrightOnly
        case .stripAll: .stripAll
        }
    }

    /// Where an output's pixels come from, for the MWG regions it carries: its crop of the
    /// upright photo, and where that sits inside a frame of `border` pixels.
    static func regionFrame(_ plan: OutputPlan, info: SourceInfo, orientation: Int, border: Int) -> RegionFrame {
        let stored = OutputPlan.Size(info.width, info.height)
        let upright = Layout.swapsAxes(orientation) ? stored.swapped : stored
        let crop = plan.uprightCrop
        let photo = plan.upright
        let canvas = (width: Double(photo.width + 2 * border), height: Double(photo.height + 2 * border))
        return RegionFrame(
            stored: (stored.width, stored.height), orientation: orientation,
            crop: .init(x: (Double(crop.x) + Double(crop.width) / 2) / Double(upright.width),
                        y: (Double(crop.y) + Double(crop.height) / 2) / Double(upright.height),
                        width: Double(crop.width) / Double(upright.width),
                        height: Double(crop.height) / Double(upright.height)),
            placed: .init(x: (Double(border) + Double(photo.width) / 2) / canvas.width,
                          y: (Double(border) + Double(photo.height) / 2) / canvas.height,
                          width: Double(photo.width) / canvas.width, height: Double(photo.height) / canvas.height))
    }

    /// Orient, colour, sharpen, mark, frame, metadata and encode one resized output, whole.
    /// - Parameter subject: the subject's box as fractions of this output, for auto marks to avoid.
    private func finishOutput(_ resized: consuming Canvas, plan: OutputPlan, subject: FocusBox?, info: SourceInfo,
                              orientation: Int, scale: Int, assets: MarkAssets, credit: Credit,
                              warnings: inout [String]) throws(PhotoError) -> FinishedOutput {
        let settings = OutputSettings(template: template, plan: plan, info: info, orientation: orientation,
                                      channels: resized.channels, credit: credit)
        var image = Orientation.apply(resized, exif: orientation)
        if let background = settings.background { image = flattened(image, over: background) }
        settings.transform?.apply(to: &image)

        // Sharpened after the downscale, before anything is drawn on it.
        let sharpened = Self.sharpen(&image, plan: plan, amount: template.output.sharpen)

        // Marks go on the upright, resized photo in its output colour space, before the frame.
        let marked = MarkPainter(template: template, assets: assets)
            .paint(&image, icc: settings.marksProfile, subject: subject)
        for warning in marked.warnings where !warnings.contains(warning) { warnings.append(warning) }

        if settings.border > 0 { image = framed(image, border: settings.border, color: settings.borderColor) }
        let (bytes, quality) = try Self.encode(image.finished(), options: settings.options,
                                               maxBytes: template.output.maxBytes, warnings: &warnings)
        return FinishedOutput(cropLabel: plan.crop?.label, bytes: bytes, fileExtension: settings.format.fileExtension,
                              size: settings.size,
                              applied: settings.applied(plan: plan, scale: scale, sharpen: sharpened, marks: marked,
                                                        quality: quality))
    }
}
