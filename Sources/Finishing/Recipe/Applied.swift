import Codecs
import Foundation
import Pixels

/// What was actually done to make one output, in pixels (the report's `applied`: reference, The
/// report), so a person or a test can audit the result without opening the image.
///
/// This is the report's record itself: `report.json` writes its properties in declaration
/// order, under their own names (an optional is left out when nil unless it says otherwise:
/// see `NullWhenNil`). A new field is one new property here, in its place.
public struct Applied: Codable, Sendable, Equatable {
    /// When the source is a camera raw: the embedded preview the output was made from.
    public var rawPreview: RawPreviewRecord?
    /// The scale the source was decoded at ("1/1", "5/8", "1/2", …).
    public var decodeScale: String
    /// The crop ratio and its rectangle in upright source pixels, or `null`.
    @NullWhenNil public var crop: CropRecord?
    /// The size the photo was resampled to (upright), before any frame.
    public var resizedTo: OutputPlan.Size
    /// The unsharp mask applied after the downscale (`output.sharpen`), when there was one.
    public var sharpen: SharpenRecord?
    /// The frame border in pixels, when there is one.
    public var frame: Int?
    /// The text mark as drawn, when there is one.
    public var text: TextRecord?
    /// The logo as drawn, when there is one.
    public var logo: LogoRecord?
    /// The tiled mark as drawn, when there is one.
    public var tile: TileRecord?
    /// The QR code as drawn, when there is one.
    public var qr: QRRecord?
    /// What happened to the colour profile, in words ("Display P3 (kept)", "Display P3 → sRGB"),
    /// or `null`.
    @NullWhenNil public var icc: String?
    /// The batch's correction of the photo (`harmonize`), when the template asks for one: the
    /// same for every output of the photo.
    public var harmonize: HarmonizeRecord?
    /// Metadata taken out ("GPS", "EXIF").
    public var removed: [String]
    /// The metadata template's texts as written into the file, when the template has one.
    public var metadata: MetadataRecord?
    /// The quality the file was written at, when `output.maxBytes` lowered it.
    public var quality: Int?

    /// `applied.rawPreview`: a raw finished from the JPEG preview it embeds.
    public struct RawPreviewRecord: Codable, Sendable, Equatable {
        /// The raw format ("DNG", "CR2").
        public var format: String
        /// The preview's size, upright.
        public var size: [Int]
        /// The raw image's own size, upright.
        public var rawSize: [Int]
    }

    /// `applied.metadata`: the metadata template's texts as written (variables and codes
    /// replaced; a text left empty, or the place where the policy strips location, is left out).
    public struct MetadataRecord: Codable, Sendable, Equatable {
        public var title: String?
        public var caption: String?
        @OmittedWhenEmpty public var keywords: [String]?
        public var creator: String?
        public var copyright: String?
        public var usageTerms: String?
        public var city: String?
        public var country: String?
        public var event: String?
        /// The `=CODE=`s left as written: not in the codes file (or no text in that column).
        @OmittedWhenEmpty public var unknownCodes: [String]?

        /// The record of `texts` as written, with the codes left as written.
        public init(_ texts: MetadataTexts, unknownCodes: [String]) {
            (title, caption, creator, copyright) = (texts.title, texts.caption, texts.creator, texts.copyright)
            (usageTerms, city, country, event) = (texts.usageTerms, texts.city, texts.country, texts.event)
            keywords = texts.keywords.isEmpty ? nil : texts.keywords
            self.unknownCodes = unknownCodes.isEmpty ? nil : unknownCodes
        }

        /// The texts in words, in the record's order (`title "…", keywords "a, b", …`; the codes
        /// left as written at the end): what `explain` and `photofinish report` show.
        public var words: String {
            let texts = [("title", title), ("caption", caption), ("keywords", keywords?.joined(separator: ", ")),
                         ("creator", creator), ("copyright", copyright), ("usageTerms", usageTerms), ("city", city),
                         ("country", country), ("event", event)]
                .compactMap { key, text in text.map { "\(key) \"\($0)\"" } }
            return (texts.isEmpty ? "nothing" : texts.joined(separator: ", "))
                + (unknownCodes.map { "; not in the codes file, left as written: \($0.joined(separator: " "))" } ?? "")
        }
    }

    /// `applied.crop`.
    public struct CropRecord: Codable, Sendable, Equatable {
        public var ratio: String
        /// x, y, width, height in upright source pixels.
        public var box: [Int]
        /// What placed it: "subject" (the attention map), "faces" or "xmp-region" (regions
        /// the file carries), "center".
        public var focus: String?
    }
}

extension Applied {
    /// `applied.text`: the capitals' height and the ink's box, in the output's pixels.
    public struct TextRecord: Codable, Sendable, Equatable {
        /// The capitals' height in pixels (rounded).
        public var capHeightPx: Int
        /// x, y, width, height of the ink, in the output file's pixels (frame included).
        public var box: [Int]
        /// The words drawn (the template's, variables filled in).
        public var text: String
        /// True when the minimum legible size overrode the template (tiny photos).
        @OmittedWhenFalse public var clamped: Bool
        /// The place used (the one "auto" chose, or the template's).
        public var position: String?
        /// The fill used, "#rrggbb" (the one "auto" chose, or the template's).
        public var color: String?
    }

    /// `applied.logo`: where the logo went and how it was scaled.
    public struct LogoRecord: Codable, Sendable, Equatable {
        /// x, y, width, height in the output file's pixels (frame included).
        public var box: [Int]
        /// Logo pixels per logo-file pixel (over 1: scaled up, and warned about).
        public var scale: Double
        /// The place used (the one "auto" chose, or the template's).
        public var position: String?
        /// Which file was drawn: "file", or "onDark" where the photo under it is dark.
        public var variant: String?
    }

    /// `applied.qr`: where the QR code went, how large its modules are, and what it holds.
    public struct QRRecord: Codable, Sendable, Equatable {
        /// x, y, width, height of the whole code, quiet zone included, in the output file's
        /// pixels (frame included).
        public var box: [Int]
        /// Modules per side of the symbol (without the quiet zone).
        public var modules: Int
        /// Pixels per module.
        public var modulePx: Int
        /// The light margin around the symbol, in pixels (four modules).
        public var quietZonePx: Int
        public var position: String?
        /// What a scanner reads from it (the link, variables filled in).
        public var text: String
    }

    /// `applied.harmonize`: the photo brought toward its batch's light (reference: `harmonize`).
    /// Channel c of the photo, in linear light, was multiplied by `gains[c]` × 2^`exposure`.
    public struct HarmonizeRecord: Codable, Sendable, Equatable {
        /// The white balance: gains of linear R, G, B, their geometric mean 1.
        public var gains: [Double]
        /// The exposure, in EV, on top of the gains.
        public var exposure: Double
        /// The photo's light as it came (the correction was made from it).
        public var before: LightEstimate
        /// The finished photo's light, measured on it.
        public var after: LightEstimate?
        /// Why the photo was finished a second time, when it was.
        public var again: String?

        public init(_ correction: LightCorrection, before: LightEstimate, after: LightEstimate? = nil, again: String? = nil) {
            gains = correction.gains
            exposure = correction.exposure
            self.before = before
            self.after = after
            self.again = again
        }

        /// The correction recorded.
        public var correction: LightCorrection { LightCorrection(gains: gains, exposure: exposure) }
    }

    /// `applied.sharpen`: the unsharp mask's amount and blur, scaled to the downscale.
    public struct SharpenRecord: Codable, Sendable, Equatable {
        public var amount: Double
        /// The blur's standard deviation in output pixels.
        public var sigma: Double
    }

    /// `applied.tile`: the tiled mark's lattice in pixels.
    public struct TileRecord: Codable, Sendable, Equatable {
        /// The capitals' height in pixels (rounded).
        public var capHeightPx: Int
        /// Degrees, as in the template.
        public var angle: Double
        /// Pixels from one copy to the next along the text, and from one row to the next.
        public var step: [Int]
        public var opacity: Double
        /// True when the minimum legible size overrode the template.
        @OmittedWhenFalse public var clamped: Bool
        /// "#rrggbb", or "auto" (two-toned: light fill, dark rim).
        public var color: String?
    }
}

/// A crop the skip rule ruled out (the report's item `skipped`).
public struct Skipped: Codable, Sendable, Equatable {
    /// The ratio as written ("16:9").
    public var ratio: String
    /// The variant whose crop it was (left out for the template's own).
    public var variant: String?
    /// The fraction of the photo the crop would have cut away (three decimals).
    public var cut: Double
    /// Why, in words.
    public var reason: String
}

extension Skipped {
    /// The record of a crop `Layout` skipped.
    public init(_ skipped: SkippedCrop) {
        self.ratio = skipped.crop.label
        self.variant = skipped.variant
        self.cut = (skipped.cutFraction * 1000).rounded() / 1000
        self.reason = String(format: "the %@ crop would cut away %.0f%% of the photo (limit %.0f%%)",
                             skipped.crop.label, skipped.cutFraction * 100, (skipped.crop.skipIfCutOver ?? 1) * 100)
    }
}

extension OutputPlan.Size: Codable {
    /// Written `[width, height]`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(width)
        try container.encode(height)
    }

    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        self.init(try container.decode(Int.self), try container.decode(Int.self))
    }
}

/// One finished output, encoded and ready to write.
public struct FinishedOutput: Sendable {
    /// Its file name (`output.name`, or `<stem><suffix>[-<variant>][-<ratio>].<ext>`).
    public var name: String = ""
    /// The variant it was made for (nil: the template's own).
    public var variant: String?
    /// The crop label ("4:5"), or nil for the whole photo.
    public var cropLabel: String?
    /// The encoded file.
    public var bytes: [UInt8]
    /// The file extension of its format ("jpg").
    public var fileExtension: String
    /// The final size, frame included.
    public var size: OutputPlan.Size
    public var applied: Applied
}

/// Everything one photo produced.
public struct FinishedPhoto: Sendable {
    /// The source format found by content ("jpeg", "png", "heic", "avif").
    public var format: String
    /// The source as a person sees it (upright), full scale.
    public var uprightSize: OutputPlan.Size
    /// The orientation the file declared (EXIF value).
    public var orientation: Int
    public var outputs: [FinishedOutput]
    public var skipped: [SkippedCrop]
    public var warnings: [String]
    /// A small upright RGB copy (long side at most `PhotoFinisher.previewLongSide`), made from
    /// the same decode: the report's thumbnail and the colour card's sample.
    public var preview: Image?
    /// The faces in upright source pixels: the ones the file's XMP names, or the ones the
    /// detector found when a crop was placed on the photo (empty: it found none); nil when no
    /// face was looked for.
    public var faces: [PixelRect]?
}
