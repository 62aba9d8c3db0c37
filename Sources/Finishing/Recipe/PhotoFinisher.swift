import Codecs
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
    /// - Returns: the encoded outputs and what was done.
    /// - Throws: `PhotoError` with the report's code.
    public func finish(bytes: consuming [UInt8], limits: DecodeLimits) throws(PhotoError) -> FinishedPhoto {
        let assets = try marks.get()
        // The decoder (and its copy of the file) is gone once this returns: finishing the
        // outputs holds only the resized images.
        let decoded = try decode(bytes, limits: limits)
        let info = decoded.info, orientation = Self.orientationToApply(info)
        let stored = OutputPlan.Size(info.width, info.height)
        var warnings = decoded.warnings
        var outputs: [FinishedOutput] = []
        var preview: Image?
        let wholeOutput = decoded.plans.firstIndex { $0.crop == nil }
        for (index, (plan, resizer)) in zip(decoded.plans, decoded.resizers).enumerated() {
            try limits.checkDeadline()
            let image = resizer.finish()
            // Made before finishOutput, which converts the canvas to sRGB and draws marks on
            // it: the preview shows the photo as it came.
            if index == wholeOutput { preview = image.withUnsafeRows { Self.preview($0, orientation: orientation) } }
            outputs.append(try finishOutput(image, plan: plan, info: info, orientation: orientation,
                                            scale: decoded.denominator, assets: assets, warnings: &warnings))
        }
        if wholeOutput == nil, let small = decoded.resizers.last, decoded.resizers.count > decoded.plans.count {
            preview = small.finish().withUnsafeRows { Self.preview($0, orientation: orientation) }
        }
        return FinishedPhoto(format: info.format.rawValue,
                             uprightSize: Layout.swapsAxes(orientation) ? stored.swapped : stored,
                             orientation: info.declaredOrientation, outputs: outputs, skipped: decoded.skipped,
                             warnings: warnings, preview: preview)
    }

    /// What one decode pass produced: every planned output resized (and, when every output
    /// is a crop, the preview's source as one more after them), each still in its resampler
    /// until it is finished.
    struct Decoded {
        var info: SourceInfo
        var plans: [OutputPlan]
        var skipped: [SkippedCrop]
        var denominator: Int
        var resizers: [StreamingResizer]
        var warnings: [String]
    }

    /// Opens the decoder, plans the outputs and decodes once, at the smallest DCT scale that
    /// serves them all, streaming rows into one resampler per output.
    private func decode(_ bytes: consuming [UInt8], limits: DecodeLimits) throws(PhotoError) -> Decoded {
        let decoder = try openDecoder(bytes: bytes, limits: limits)
        // The JPEG and HEIF decoders keep their own copy: let ours go before decoding, so a
        // photo in flight holds its file once.
        _ = consume bytes
        let info = decoder.info
        let orientation = Self.orientationToApply(info)
        let stored = OutputPlan.Size(info.width, info.height)
        let (plans, skipped) = Layout.plan(stored: stored, orientation: orientation, template: template)
        // The preview (report thumbnail, colour card sample) costs no second decode: it is
        // shrunk from the first whole-photo output, or, when every output is a crop, rides
        // along the decode as one more small resampler.
        let streamed = plans.contains { $0.crop == nil }
            ? plans : plans + [Self.previewPlan(stored: stored, orientation: orientation)]
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

    /// A box in the marked image moved into the framed output's pixels.
    static func shifted(_ box: [Int], by border: Int?) -> [Int] {
        [box[0] + (border ?? 0), box[1] + (border ?? 0), box[2], box[3]]
    }

    /// Orient, colour, mark, frame, metadata and encode one resized output.
    private func finishOutput(_ resized: consuming Canvas, plan: OutputPlan, info: SourceInfo, orientation: Int,
                              scale: Int, assets: MarkAssets,
                              warnings: inout [String]) throws(PhotoError) -> FinishedOutput {
        let format: ImageFormat
        switch template.output.format {
        case .same: format = info.format
        case .format(let f): format = f
        }
        var image = Orientation.apply(resized, exif: orientation)
        // Only PNG keeps transparency; the others are flattened over white (or the frame's colour).
        let background: [UInt8] = template.frame.map { [$0.color.r, $0.color.g, $0.color.b] } ?? [255, 255, 255]
        if image.channels == 4 && format != .png {
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

        var exif: [UInt8]?
        var removed: [String] = []
        if let source = info.exif {
            let policy: MetadataPolicy = switch template.output.metadata {
            case .keep: .keep
            case .stripLocation: .stripLocation
            case .stripAll: .stripAll
            }
            (exif, removed) = Exif.rewrite(source, policy: policy, width: image.width, height: image.height)
        }

        let options = EncodeOptions(format: format, quality: template.output.quality,
                                    progressive: template.output.progressive, icc: icc, exif: exif)
        let size = OutputPlan.Size(image.width, image.height)
        let bytes = try encodeImage(image.finished(), options: options)
        let applied = Applied(
            decodeScale: "1/\(scale)",
            crop: plan.crop.map { .init(ratio: $0.label, box: [plan.uprightCrop.x, plan.uprightCrop.y,
                                                                 plan.uprightCrop.width, plan.uprightCrop.height]) },
            resizedTo: plan.upright, frame: framePx,
            text: marked.text.map { var r = $0; r.box = Self.shifted(r.box, by: framePx); return r },
            logo: marked.logo.map { var r = $0; r.box = Self.shifted(r.box, by: framePx); return r },
            tile: marked.tile, icc: iccNote, removed: removed)
        return FinishedOutput(cropLabel: plan.crop?.label, bytes: bytes, fileExtension: format.fileExtension,
                              size: size, applied: applied)
    }
}
