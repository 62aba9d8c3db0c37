import Codecs
import Pixels

/// What one output is, decided from the header before any pixel: its format, whether alpha
/// is flattened, its colour, its frame and its metadata. Its line (`OutputLine`) follows it
/// band by band.
struct OutputSettings {
    let format: ImageFormat
    /// The colour RGBA is flattened over (formats without alpha: white, or the frame's
    /// colour), or nil when nothing is flattened.
    let background: [UInt8]?
    /// Channels written: the decoded ones, 3 once flattened.
    let channels: Int
    /// The profile embedded in the output.
    let icc: [UInt8]?
    /// What the report says of the colour (`applied.icc`).
    let iccNote: String?
    /// The conversion to sRGB, when one is made.
    let transform: ColorTransform?
    /// The profile the marks' colours are converted into (`keep`: the photo's own).
    let marksProfile: [UInt8]?
    /// The frame's border in pixels (0: no frame) and its colour (with alpha when kept).
    let border: Int
    let borderColor: [UInt8]
    /// The finished size, frame included.
    let size: OutputPlan.Size
    /// The encoder's settings, metadata rewritten for this output.
    let options: EncodeOptions
    /// What the metadata policy removed (`applied.removed`).
    let removed: [String]
    /// The metadata template's texts as written (`applied.metadata`).
    let metadata: Applied.MetadataRecord?
    /// A camera raw's embedded preview the output is made from (`applied.rawPreview`).
    let rawPreview: Applied.RawPreviewRecord?

    /// - Parameter channels: 3 or 4, as decoded.
    init(template: Template, plan: OutputPlan, info: SourceInfo, orientation: Int, channels decoded: Int,
         credit: Credit) {
        format = switch template.output.format {
        case .same: info.format
        case .format(let f): f
        }
        // Only PNG and WebP keep transparency; the others are flattened over white (or the frame's colour).
        let frameColor = template.frame.map { [$0.color.r, $0.color.g, $0.color.b] }
        background = decoded == 4 && !format.keepsAlpha ? frameColor ?? [255, 255, 255] : nil
        channels = background == nil ? decoded : 3

        var icc = info.icc
        var iccNote: String?
        var transform: ColorTransform?
        let sourceName = info.icc.flatMap { ICC.description($0) } ?? "embedded profile"
        switch template.output.color {
        case .keep:
            if info.icc != nil { iccNote = "\(sourceName) (kept)" }
        case .srgb:
            if let source = info.icc, !ICC.isSRGB(source) {
                transform = ColorTransform.toSRGB(from: source, channels: channels)
                iccNote = transform == nil ? "\(sourceName) unreadable, treated as sRGB" : "\(sourceName) → sRGB"
            } else {
                iccNote = info.icc == nil ? "sRGB (assumed)" : "\(sourceName) (already sRGB)"
            }
            icc = ICC.sRGB
        }
        self.icc = icc
        self.iccNote = iccNote
        self.transform = transform
        marksProfile = template.output.color == .keep ? icc : nil

        let width = plan.upright.width, height = plan.upright.height
        var borderColor: [UInt8] = []
        if let frame = template.frame {
            borderColor = [frame.color.r, frame.color.g, frame.color.b]
            if channels == 4 { borderColor.append(frame.color.a) }
        }
        border = Self.border(template.frame, photo: plan.upright)
        self.borderColor = borderColor
        size = OutputPlan.Size(width + 2 * border, height + 2 * border)

        let metadata = MetadataRewrite.rewrite(info, policy: PhotoFinisher.policy(template.output.metadata), credit: credit,
                                               texts: template.metadata?.texts ?? MetadataTexts(),
                                               width: size.width, height: size.height, format: format,
                                               regions: PhotoFinisher.regionFrame(plan, info: info, orientation: orientation,
                                                                                  border: self.border))
        var options = EncodeOptions(format: format, quality: template.output.quality,
                                    progressive: template.output.progressive, icc: icc, exif: metadata.exif)
        options.xmp = metadata.xmp
        options.iptc = metadata.iptc
        self.options = options
        removed = metadata.removed
        self.metadata = template.metadata.map { Applied.MetadataRecord(metadata.written, unknownCodes: $0.unknownCodes) }
        rawPreview = info.raw.map { raw in
            let turned = Layout.swapsAxes(orientation)
            return .init(format: raw.kind,
                         size: turned ? [raw.previewHeight, raw.previewWidth] : [raw.previewWidth, raw.previewHeight],
                         rawSize: turned ? [raw.height, raw.width] : [raw.width, raw.height])
        }
    }

    /// The frame in `applied.frame` (nil: none).
    /// The frame's border in pixels around a photo of `photo`'s size (a fraction of its
    /// short side), 0 without a frame.
    static func border(_ frame: Template.Frame?, photo: OutputPlan.Size) -> Int {
        guard let frame else { return 0 }
        return max(0, Int((frame.width * Double(min(photo.width, photo.height))).rounded()))
    }

    var frame: Int? { border > 0 ? border : nil }

    /// What the report says was done to this output.
    func applied(plan: OutputPlan, scale: DecodeScale, sharpen: Applied.SharpenRecord?, marks: MarkPainter.Result,
                 quality: Int?) -> Applied {
        Applied(
            rawPreview: rawPreview,
            decodeScale: scale.label,
            crop: plan.crop.map { .init(ratio: $0.label, box: [plan.uprightCrop.x, plan.uprightCrop.y,
                                                                 plan.uprightCrop.width, plan.uprightCrop.height]) },
            resizedTo: plan.upright, sharpen: sharpen, frame: frame,
            text: marks.text.map { var r = $0; r.box = Self.shifted(r.box, by: border); return r },
            logo: marks.logo.map { var r = $0; r.box = Self.shifted(r.box, by: border); return r },
            tile: marks.tile, qr: marks.qr.map { var r = $0; r.box = Self.shifted(r.box, by: border); return r },
            icc: iccNote, removed: removed, metadata: metadata, quality: quality)
    }

    /// A box in the marked image moved into the framed output's pixels.
    static func shifted(_ box: [Int], by border: Int) -> [Int] {
        [box[0] + border, box[1] + border, box[2], box[3]]
    }
}
