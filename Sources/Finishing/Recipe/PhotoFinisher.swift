import Codecs
import Foundation
import Pixels

/// One photo's recipe (SPEC §3, "Order of operations"): orient → crop (per ratio) →
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
    /// - Returns: the encoded outputs and what was done.
    /// - Throws: `PhotoError` with the report's code.
    public func finish(bytes: consuming [UInt8], limits: DecodeLimits,
                       facts: PhotoFacts = PhotoFacts()) throws(PhotoError) -> FinishedPhoto {
        try finish(bytes: bytes, limits: limits, facts: facts, open: openDecoder)
    }

    /// Opens a decoder on a file's bytes (`openDecoder`; tests count decode passes through it).
    typealias Opener = (_ bytes: [UInt8], _ limits: DecodeLimits) throws(PhotoError) -> any PhotoDecoder

    /// `finish`, with the decoder opened by `open`.
    func finish(bytes: consuming [UInt8], limits: DecodeLimits, facts: PhotoFacts,
                open: Opener) throws(PhotoError) -> FinishedPhoto {
        let assets = try marks.get()
        // The decoder (and its copy of the file) is gone once this returns: finishing the
        // outputs holds only the resized images.
        let decoded = try decode(bytes, limits: limits, open: open)
        let info = decoded.info, orientation = Self.orientationToApply(info)
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
        var warnings = decoded.warnings
        let recipes = template.recipes.map { variant, recipe in
            let (filled, credit, missing) = recipe.filled(with: facts)
            for warning in missing where !warnings.contains(warning) { warnings.append(warning) }
            return (finisher: PhotoFinisher(template: filled, marks: assets), credit: credit)
        }
        var outputs: [FinishedOutput] = []
        var preview: Image?
        let wholeOutput = decoded.plans.firstIndex { $0.plan.crop == nil }
        for (index, (planned, resizer)) in zip(decoded.plans, decoded.resizers).enumerated() {
            try limits.checkDeadline()
            let image = resizer.finish()
            // Made before finishOutput, which converts the canvas to sRGB and draws marks on
            // it: the preview shows the photo as it came.
            if index == wholeOutput { preview = image.withUnsafeRows { Self.preview($0, orientation: orientation) } }
            let recipe = recipes[planned.recipe]
            var output = try recipe.finisher.finishOutput(image, plan: planned.plan, info: info, orientation: orientation,
                                                          scale: decoded.denominator, assets: assets,
                                                          credit: recipe.credit, warnings: &warnings)
            output.variant = template.recipes[planned.recipe].variant
            output.name = OutputName.file(pattern: recipe.finisher.template.output.name,
                                          suffix: recipe.finisher.template.output.suffix, values: facts.values,
                                          variant: output.variant, crop: output.cropLabel,
                                          extension: output.fileExtension, taken: outputs.map(\.name))
            outputs.append(output)
        }
        if wholeOutput == nil, let small = decoded.resizers.last, decoded.resizers.count > decoded.plans.count {
            preview = small.finish().withUnsafeRows { Self.preview($0, orientation: orientation) }
        }
        return FinishedPhoto(format: info.format.rawValue,
                             uprightSize: Layout.swapsAxes(orientation) ? stored.swapped : stored,
                             orientation: info.declaredOrientation, outputs: outputs, skipped: decoded.skipped,
                             warnings: warnings, preview: preview)
    }

    /// One planned output and the recipe (index into `template.recipes`) it is made with.
    struct PlannedOutput {
        var recipe: Int
        var plan: OutputPlan
    }

    /// What one decode pass produced: every planned output resized (and, when every output
    /// is a crop, the preview's source as one more after them), each still in its resampler
    /// until it is finished.
    struct Decoded {
        var info: SourceInfo
        var plans: [PlannedOutput]
        var skipped: [SkippedCrop]
        var denominator: Int
        var resizers: [StreamingResizer]
        var warnings: [String]
    }

    /// Opens the decoder, plans the outputs of every recipe (the template's and its
    /// variants') and decodes once, at the smallest DCT scale that serves them all, streaming
    /// rows into one resampler per output.
    private func decode(_ bytes: consuming [UInt8], limits: DecodeLimits, open: Opener) throws(PhotoError) -> Decoded {
        let decoder = try open(bytes, limits)
        // The JPEG and HEIF decoders keep their own copy: let ours go before decoding, so a
        // photo in flight holds its file once.
        _ = consume bytes
        let info = decoder.info
        let orientation = Self.orientationToApply(info)
        let stored = OutputPlan.Size(info.width, info.height)
        var plans: [PlannedOutput] = [], skipped: [SkippedCrop] = []
        for (index, (variant, recipe)) in template.recipes.enumerated() {
            let planned = Layout.plan(stored: stored, orientation: orientation, template: recipe)
            plans += planned.outputs.map { PlannedOutput(recipe: index, plan: $0) }
            skipped += planned.skipped.map { var s = $0; s.variant = variant; return s }
        }
        // The preview (report thumbnail, colour card sample) costs no second decode: it is
        // shrunk from the first whole-photo output, or, when every output is a crop, rides
        // along the decode as one more small resampler.
        let streamed = plans.map(\.plan) + (plans.contains { $0.plan.crop == nil }
            ? [] : [Self.previewPlan(stored: stored, orientation: orientation)])
        let (denominator, resizers) = try Self.resample(decoder, into: streamed, limits: limits)
        return Decoded(info: info, plans: plans, skipped: skipped, denominator: denominator, resizers: resizers,
                       warnings: (decoder as? JPEGDecoder)?.warnings ?? [])
    }

    /// Decodes once, at the smallest DCT scale that serves every plan, streaming the rows into
    /// one resampler per plan: no whole source frame is held for a downscale.
    /// - Returns: the denominator used and each plan's resampler, complete: `finish()` hands
    ///   over its image, in stored orientation.
    /// - Throws: `PhotoError` (`corrupt-image`, `timeout`, …).
    static func resample(_ decoder: any PhotoDecoder, into plans: [OutputPlan],
                         limits: DecodeLimits) throws(PhotoError) -> (denominator: Int, resizers: [StreamingResizer]) {
        let stored = OutputPlan.Size(decoder.info.width, decoder.info.height)
        let denominator = Layout.decodeDenominator(
            stored: stored, outputs: plans, denominators: decoder.scaleDenominators,
            scaledSize: { d in let s = decoder.scaledSize(denominator: d); return .init(s.width, s.height) })
        let scaledTuple = decoder.scaledSize(denominator: denominator)
        let scaled = OutputPlan.Size(scaledTuple.width, scaledTuple.height)
        let channels = decoder.info.hasAlpha ? 4 : 3
        let resizers = plans.map { plan in
            StreamingResizer(sourceWidth: scaled.width, sourceHeight: scaled.height,
                             crop: Layout.scaledCrop(plan.storedCrop, from: stored, to: scaled),
                             targetWidth: plan.stored.width, targetHeight: plan.stored.height,
                             channels: channels)
        }
        do {
            try decoder.decode(denominator: denominator, channels: channels, limits: limits) { row in
                for resizer in resizers where !resizer.isComplete { resizer.push(row) }
            }
        } catch let error as PhotoError {
            throw error
        } catch {
            throw PhotoError(.corruptImage, "\(error)")
        }
        return (denominator, resizers)
    }

    /// The long side of the preview every finished photo carries (report thumbnails are
    /// shown up to 240 CSS px wide, sharp on a 2× phone screen).
    public static let previewLongSide = 480

    /// The whole photo, shrunk to the preview size (never enlarged).
    static func previewPlan(stored: OutputPlan.Size, orientation: Int) -> OutputPlan {
        let upright = Layout.swapsAxes(orientation) ? stored.swapped : stored
        let size = Layout.resized(upright, by: .longSide(previewLongSide))
        return OutputPlan(crop: nil, uprightCrop: PixelRect(x: 0, y: 0, width: upright.width, height: upright.height),
                          storedCrop: PixelRect(x: 0, y: 0, width: stored.width, height: stored.height),
                          upright: size, stored: Layout.swapsAxes(orientation) ? size.swapped : size)
    }

    /// A stored-orientation image of the whole photo made into the preview: shrunk to
    /// `previewLongSide` (never enlarged), upright, flattened over white. An image of its
    /// own: the output it came from is drawn on afterwards, and the preview shows the photo
    /// (its colour feeds the colour card).
    static func preview(_ image: PixelRows, orientation: Int) -> Image {
        let size = Layout.resized(.init(image.width, image.height), by: .longSide(previewLongSide))
        return flattened(Orientation.apply(resized(image, width: size.width, height: size.height),
                                           exif: orientation), over: [255, 255, 255]).finished()
    }

    /// The EXIF orientation still to apply (HEIF decoders apply `irot`/`imir` themselves and
    /// report 1).
    static func orientationToApply(_ info: SourceInfo) -> Int {
        (1...8).contains(info.orientation) ? info.orientation : 1
    }

    /// Sharpens a downscaled output in place (`output.sharpen`): the amount grows with the
    /// downscale (none at 1:1, half at 2:1, all of it from 4:1 on), the blur widens a little
    /// with it (σ 0.5 → 0.8 px).
    /// - Returns: what was done, for `applied.sharpen`; nil when nothing was.
    static func sharpen(_ image: inout Canvas, plan: OutputPlan, amount: Double) -> Applied.SharpenRecord? {
        guard amount > 0 else { return nil }
        let factor = max(Double(plan.uprightCrop.width) / Double(max(1, plan.upright.width)),
                         Double(plan.uprightCrop.height) / Double(max(1, plan.upright.height)))
        let octaves = log2(factor)
        guard octaves > 0.05 else { return nil }
        let strength = ((amount * min(1, octaves / 2)) * 100).rounded() / 100
        let sigma = ((0.5 + 0.15 * min(2, octaves)) * 100).rounded() / 100
        guard strength > 0 else { return nil }
        unsharpMask(&image, amount: strength, sigma: sigma)
        return Applied.SharpenRecord(amount: strength, sigma: sigma)
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

    /// A box in the marked image moved into the framed output's pixels.
    static func shifted(_ box: [Int], by border: Int?) -> [Int] {
        [box[0] + (border ?? 0), box[1] + (border ?? 0), box[2], box[3]]
    }

    /// Orient, colour, mark, frame, metadata and encode one resized output.
    private func finishOutput(_ resized: consuming Canvas, plan: OutputPlan, info: SourceInfo, orientation: Int,
                              scale: Int, assets: MarkAssets, credit: Credit,
                              warnings: inout [String]) throws(PhotoError) -> FinishedOutput {
        let format: ImageFormat
        switch template.output.format {
        case .same: format = info.format
        case .format(let f): format = f
        }
        var image = Orientation.apply(resized, exif: orientation)
        // Only PNG and WebP keep transparency; the others are flattened over white (or the frame's colour).
        let background: [UInt8] = template.frame.map { [$0.color.r, $0.color.g, $0.color.b] } ?? [255, 255, 255]
        if image.channels == 4 && !format.keepsAlpha {
            image = flattened(image, over: background)
        }

        var icc = info.icc
        var iccNote: String?
        let sourceName = info.icc.flatMap { ICC.description($0) } ?? "embedded profile"
        switch template.output.color {
        case .keep:
            if info.icc != nil { iccNote = "\(sourceName) (kept)" }
        case .srgb:
            if let source = info.icc, !ICC.isSRGB(source) {
                if let transform = ColorTransform.toSRGB(from: source, channels: image.channels) {
                    transform.apply(to: &image)
                    iccNote = "\(sourceName) → sRGB"
                } else {
                    iccNote = "\(sourceName) unreadable, treated as sRGB"
                }
            } else {
                iccNote = info.icc == nil ? "sRGB (assumed)" : "\(sourceName) (already sRGB)"
            }
            icc = ICC.sRGB
        }

        // Sharpened after the downscale, before anything is drawn on it.
        let sharpened = Self.sharpen(&image, plan: plan, amount: template.output.sharpen)

        // Marks go on the upright, resized photo in its output colour space, before the frame.
        let marked = MarkPainter(template: template, assets: assets)
            .paint(&image, icc: template.output.color == .keep ? icc : nil)
        for warning in marked.warnings where !warnings.contains(warning) { warnings.append(warning) }

        var framePx: Int?
        if let frame = template.frame {
            let border = Int((frame.width * Double(min(image.width, image.height))).rounded())
            if border > 0 {
                var color = [frame.color.r, frame.color.g, frame.color.b]
                if image.channels == 4 { color.append(frame.color.a) }
                image = framed(image, border: border, color: color)
                framePx = border
            }
        }

        let metadata = MetadataRewrite.rewrite(info, policy: Self.policy(template.output.metadata), credit: credit,
                                               width: image.width, height: image.height, format: format,
                                               regions: Self.regionFrame(plan, info: info, orientation: orientation,
                                                                         border: framePx ?? 0))
        var options = EncodeOptions(format: format, quality: template.output.quality,
                                    progressive: template.output.progressive, icc: icc, exif: metadata.exif)
        options.xmp = metadata.xmp
        options.iptc = metadata.iptc
        let removed = metadata.removed
        let size = OutputPlan.Size(image.width, image.height)
        let (bytes, quality) = try Self.encode(image.finished(), options: options, maxBytes: template.output.maxBytes,
                                               warnings: &warnings)
        let applied = Applied(
            decodeScale: "1/\(scale)",
            crop: plan.crop.map { .init(ratio: $0.label, box: [plan.uprightCrop.x, plan.uprightCrop.y,
                                                                 plan.uprightCrop.width, plan.uprightCrop.height]) },
            resizedTo: plan.upright, sharpen: sharpened, frame: framePx,
            text: marked.text.map { var r = $0; r.box = Self.shifted(r.box, by: framePx); return r },
            logo: marked.logo.map { var r = $0; r.box = Self.shifted(r.box, by: framePx); return r },
            tile: marked.tile, icc: iccNote, removed: removed, quality: quality)
        return FinishedOutput(cropLabel: plan.crop?.label, bytes: bytes, fileExtension: format.fileExtension,
                              size: size, applied: applied)
    }
}
