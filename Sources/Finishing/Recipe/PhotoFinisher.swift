import Codecs
import Foundation
import Pixels

/// One photo's recipe (reference: Templates, the order of operations): orient → crop (per ratio) →
/// resize → marks → frame → encode. The source is decoded once, at the smallest scale (a
/// JPEG: M/8) that still serves every output, and its rows flow into one line per output (`OutputLine`),
/// band by band: only an output a step needs whole is ever whole in memory
/// (docs/architecture.md, "A photo's recipe").
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

    /// `finish`, with the decoder opened by `open`: the plan from the header, one decode that
    /// every output's line takes its rows from, the subject searched for once the preview is
    /// whole, then each line's whole steps and the end of its file.
    func finish(bytes: consuming [UInt8], limits: DecodeLimits, facts: PhotoFacts, light: LightCorrection? = nil,
                open: Opener) throws(PhotoError) -> FinishedPhoto {
        let assets = try marks.get()
        var limits = limits
        limits.damaged = template.damaged
        // The decoder (and its copy of the file) is gone once this returns: what is left is
        // what the lines hold (a turned photo, an output held whole), the bands and the preview.
        var decoded = try decode(bytes, limits: limits, facts: facts, assets: assets,
                                 curve: light.flatMap { $0.isNone ? nil : LightCurve($0) }, open: open)
        // What the lines held to turn goes through their streaming steps now, the decoder gone.
        for line in decoded.lines { line?.endOfRows() }
        let preview = decoded.preview.finish()
        return try complete(&decoded, preview: preview, limits: limits, assets: assets, curve: nil)
    }

    /// The rest of a photo once every row is decoded: the subject searched for, then each
    /// output's line readied (a band's window fed to it, corrected by `curve` when the bands
    /// were held: `hold`), its whole steps run and its file ended.
    func complete(_ decoded: inout Decoded, preview: Image, limits: DecodeLimits, assets: MarkAssets,
                  curve: LightCurve?) throws(PhotoError) -> FinishedPhoto {
        let plan = decoded.plan
        var warnings = decoded.warnings
        // The subject: the one the file names, or searched for here, once.
        var subject = plan.regions
        // The faces the report names: the file's, or the detector's when a crop is placed on them.
        var faces = plan.regions.flatMap { $0.faces.isEmpty ? nil : $0.faces }
        if plan.needsSubject {
            let found = Self.searchSubject(preview: preview, band: plan.largestBand.flatMap { decoded.bands[$0] },
                                           orientation: plan.orientation)
            subject = found.subject
            faces = found.faces
            if let warning = found.warning { warnings.append(warning) }
        }
        var finished = [FinishedOutput?](repeating: nil, count: plan.outputs.count)
        let order = plan.order
        for (step, index) in order.enumerated() {
            try limits.checkDeadline()
            let (line, placed, focus) = try readyLine(index, of: &decoded, subject: subject, assets: assets, curve: curve)
            if let band = plan.outputs[index].band, !order[(step + 1)...].contains(where: { plan.outputs[$0].band == band }) {
                decoded.bands[band] = nil  // its last crop is cut
            }
            var done = try line.finish(subject: Self.subjectBox(subject, placed, plan.upright), warnings: &warnings)
            done.applied.crop?.focus = focus
            done.variant = plan.recipes[plan.outputs[index].recipe].variant
            finished[index] = done
        }
        // Names in the plans' order: a name taken twice is told apart the same way every time.
        var outputs: [FinishedOutput] = []
        for (index, output) in finished.enumerated() {
            guard var output else { continue }
            let recipe = plan.recipes[plan.outputs[index].recipe].finisher.template
            output.name = OutputName.file(pattern: recipe.output.name, suffix: recipe.output.suffix,
                                          values: plan.facts.values, variant: output.variant,
                                          crop: output.cropLabel, extension: output.fileExtension,
                                          taken: outputs.map(\.name))
            outputs.append(output)
        }
        let info = plan.info
        return FinishedPhoto(format: info.raw.map { $0.kind.lowercased() } ?? info.format.rawValue,
                             uprightSize: plan.upright, orientation: info.declaredOrientation, outputs: outputs,
                             skipped: plan.skipped, warnings: warnings, preview: preview,
                             faces: faces?.map { $0.pixels(width: plan.upright.width, height: plan.upright.height) })
    }

    /// One product's recipe (the template's, or a variant's), its variables filled in.
    struct Recipe {
        var variant: String?
        var finisher: PhotoFinisher
        var credit: Credit
    }

    /// What the one decode left: the outputs' lines (nil for a subject crop: its line is made
    /// once it is placed; a line's rows are all in, what it held to turn not handed on yet),
    /// the bands they are cut from, the preview.
    struct Decoded {
        var plan: PhotoPlan
        var lines: [OutputLine?]
        var bands: [Image?]
        var preview: PhotoPreview
        var warnings: [String]
    }

    /// Opens the decoder, plans the photo and decodes it once, at the plan's scale, each row
    /// going into every line, band and preview that takes the decoder's rows.
    /// - Parameter held: every output's pixels are held in a band of their own (`hold`).
    func decode(_ bytes: consuming [UInt8], limits: DecodeLimits, facts: PhotoFacts,
                assets: MarkAssets, curve: LightCurve?, open: Opener, held: Bool = false) throws(PhotoError) -> Decoded {
        let decoder = try open(bytes, limits)
        // The JPEG and HEIF decoders keep their own copy: let ours go before decoding, so a
        // photo in flight holds its file once.
        _ = consume bytes
        let plan = PhotoPlan(template: template, decoder: decoder, facts: facts, assets: assets, held: held)
        if let raw = plan.info.raw {
            for (index, recipe) in template.recipes.enumerated() {
                try Self.checkPreview(raw, serves: plan.outputs.filter { $0.recipe == index }.map(\.plan),
                                      template: recipe.recipe, orientation: plan.orientation)
            }
        }
        let preview = PhotoPreview(for: plan)
        // The bands: the whole photo at each subject crop's scale, kept whole for the crops.
        let bands = plan.bands.indices.map { index in
            let band = plan.bands[index]
            // A held output's pixels are kept until the batch's light is known: mapped at once.
            let canvas = CanvasRows(width: band.stored.width, height: band.stored.height, channels: plan.channels,
                                    prefault: plan.held)
            let resizer = Self.resizer(for: band, stored: plan.stored, scale: plan.scale, channels: plan.channels,
                                       into: plan.preview == .band(index) ? preview.tee(into: canvas) : canvas)
            return (canvas: canvas, resizer: resizer)
        }
        var lines: [OutputLine?] = []
        for (index, output) in plan.outputs.enumerated() {
            guard output.band == nil else { lines.append(nil); continue }
            let feedsPreview: Bool = if case .output(index, _) = plan.preview { true } else { false }
            lines.append(try line(plan, index, placed: output.plan, input: plan.input,
                                  preview: feedsPreview ? preview : nil, assets: assets))
        }
        if let planes = lines.first??.planes, let jpeg = decoder as? JPEGDecoder {
            try Self.decodePlanes(jpeg, into: planes, limits: limits)
        } else {
            let resizers = bands.map(\.resizer) + lines.compactMap { $0?.resizer } + (plan.preview == .decode ? [preview.resizer] : [])
            // The batch's correction (`harmonize`) is made on the rows each resampler gives, at
            // the size of what it makes (a table lookup: at a web output's size a quarter of
            // what it costs on the decoded rows).
            for resizer in resizers { resizer.curve = curve }
            try Self.decode(decoder, eighths: plan.scale.eighths, channels: plan.channels, into: resizers,
                            limits: limits)
        }
        // What the decode found: damage it went on past (`damaged: warn`) first, then the
        // decoder's notes, then the variables'.
        let notes = (decoder.damage.map { [$0.warning] } ?? []) + ((decoder as? JPEGDecoder)?.warnings ?? [])
        return Decoded(plan: plan, lines: lines, bands: bands.map { $0.canvas.take().finished() }, preview: preview,
                       warnings: notes + plan.warnings.filter { !notes.contains($0) })
    }

    /// The line of output `index`, every row in: the one made for the decode, or, for a subject
    /// crop, one made now, placed on the subject and fed its window of the band.
    /// - Returns: the line, the output's placed plan, and what its crop was placed on
    ///   (`applied.crop.focus`).
    /// - Parameter curve: the correction of held bands (`hold`), made on each row as it is fed.
    private func readyLine(_ index: Int, of decoded: inout Decoded, subject: Subject?, assets: MarkAssets,
                           curve: LightCurve?) throws(PhotoError) -> (OutputLine, placed: OutputPlan, focus: String?) {
        let plan = decoded.plan
        var placed = plan.outputs[index].plan
        var focus: String? = placed.crop == nil ? nil : placed.focus.rawValue
        if placed.crop != nil, placed.focus == .subject, let regions = plan.regions { focus = regions.source.rawValue }
        guard let band = plan.outputs[index].band, let image = decoded.bands[band] else {
            guard let line = decoded.lines[index] else { preconditionFailure("output \(index) has no line") }
            decoded.lines[index] = nil  // let go once finished
            return (line, placed, focus)
        }
        if plan.outputs[index].ownBand {
            // Its own pixels, held: the whole band is its rows.
            let line = try self.line(plan, index, placed: placed, input: .fed, preview: nil, assets: assets)
            image.withUnsafeRows { rows in
                line.feed(rows, rect: PixelRect(x: 0, y: 0, width: rows.width, height: rows.height), curve: curve)
            }
            line.endOfRows()
            return (line, placed, focus)
        }
        if let subject {
            let origin = CropPlacement.place(window: .init(placed.uprightCrop.width, placed.uprightCrop.height),
                                             in: plan.upright, subject: subject)
            placed = Layout.placed(placed, at: origin, stored: plan.stored, orientation: plan.orientation)
            focus = subject.source.rawValue
        } else {
            focus = Template.CropFocus.center.rawValue  // nothing in the photo to centre on
        }
        let line = try self.line(plan, index, placed: placed, input: .fed, preview: nil, assets: assets)
        let window = Layout.window(of: placed, inBand: plan.bands[band].upright, upright: plan.upright)
        image.withUnsafeRows { rows in
            line.feed(rows, rect: Orientation.storedRect(forUpright: window, storedWidth: rows.width,
                                                         storedHeight: rows.height, exif: plan.orientation),
                      curve: plan.held ? curve : nil)
        }
        line.endOfRows()
        return (line, placed, focus)
    }

    /// The line of output `index` of `plan`, at the place it was given (`placed`).
    private func line(_ plan: PhotoPlan, _ index: Int, placed: OutputPlan, input: OutputLine.Input,
                      preview: PhotoPreview?, assets: MarkAssets) throws(PhotoError) -> OutputLine {
        let output = plan.outputs[index]
        return try OutputLine(plan: placed, photo: plan, recipe: plan.recipes[output.recipe], whole: output.whole,
                              assets: assets, input: input, preview: preview)
    }

    /// Searches a photo for its subject: the attention map of its preview, and, when a crop
    /// must be placed, the faces in the largest band.
    /// - Returns: the subject (nil when the photo shows nothing to centre on), the faces found
    ///   (nil when none were looked for), and a warning when the face detector failed.
    static func searchSubject(preview: Image, band: Image?,
                              orientation: Int) -> (subject: Subject?, faces: [FocusBox]?, warning: String?) {
        let attention = subject(of: preview)
        guard let band else { return (attention, nil, nil) }
        do {
            let faces = try band.withUnsafeRows { rows throws(FaceDetectionError) in
                try FaceDetector.shared.get().faces(inStored: rows, orientation: orientation)
            }
            return (Subject.detected(faces: faces, attention: attention), faces, nil)
        } catch {
            return (attention, nil, "face detector: \(error.message); crops placed without faces")
        }
    }

    /// Decodes every row once, pushing it into each resampler that still wants rows.
    /// - Throws: `PhotoError` (`corrupt-image`, `timeout`, …).
    static func decode(_ decoder: any PhotoDecoder, eighths: Int, channels: Int,
                       into resizers: [StreamingResizer], limits: DecodeLimits) throws(PhotoError) {
        try photoErrors {
            try decoder.decode(eighths: eighths, channels: channels, limits: limits) { row in
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

    /// Decodes once, at the smallest scale that serves every plan (`DecodeScale`), streaming the
    /// rows into one resampler per plan: no whole source frame is held for a downscale.
    /// - Returns: the scale used and each plan's resampler, complete: `finish()` hands
    ///   over its image, in stored orientation.
    /// - Throws: `PhotoError` (`corrupt-image`, `timeout`, …).
    static func resample(_ decoder: any PhotoDecoder, into plans: [OutputPlan],
                         limits: DecodeLimits) throws(PhotoError) -> (scale: DecodeScale, resizers: [StreamingResizer]) {
        let stored = OutputPlan.Size(decoder.info.width, decoder.info.height)
        let scale = DecodeScale(decoder, serving: plans)
        let channels = decoder.info.hasAlpha ? 4 : 3
        let resizers = plans.map { resizer(for: $0, stored: stored, scale: scale, channels: channels) }
        try decode(decoder, eighths: scale.eighths, channels: channels, into: resizers, limits: limits)
        return (scale, resizers)
    }

    /// A resampler of the decoder's rows at `scale` into `plan`'s stored size.
    /// - Parameter sink: where its rows go; nil: into a canvas of its own (`finish()`).
    static func resizer(for plan: OutputPlan, stored: OutputPlan.Size, scale: DecodeScale, channels: Int,
                        into sink: RowSink? = nil) -> StreamingResizer {
        StreamingResizer(sourceWidth: scale.size.width, sourceHeight: scale.size.height,
                         crop: Layout.scaledCrop(plan.storedCrop, from: stored, to: scale.size),
                         targetWidth: plan.stored.width, targetHeight: plan.stored.height, channels: channels,
                         into: sink)
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
}
