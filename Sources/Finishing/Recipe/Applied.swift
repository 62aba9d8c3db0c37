import Pixels

/// What was actually done to make one output, in pixels (the report's `applied`), so a
/// person or a test can audit the result without opening the image.
public struct Applied: Sendable, Equatable {
    /// The JPEG DCT scale the source was decoded at ("1/1", "1/2", …).
    public var decodeScale: String
    /// The crop ratio and its rectangle in upright source pixels, or nil.
    public var crop: CropRecord?
    /// The size the photo was resampled to (upright), before any frame.
    public var resizedTo: OutputPlan.Size
    /// The frame border in pixels, when there is one.
    public var framePx: Int?
    /// What happened to the colour profile, in words ("Display P3 (kept)", "Display P3 → sRGB").
    public var icc: String?
    /// Metadata taken out ("GPS", "EXIF").
    public var removed: [String]
    /// The text mark as drawn, when there is one.
    public var text: TextRecord? = nil
    /// The logo as drawn, when there is one.
    public var logo: LogoRecord? = nil
    /// The tiled mark as drawn, when there is one.
    public var tile: TileRecord? = nil

    public struct CropRecord: Sendable, Equatable {
        public var ratio: String
        /// x, y, width, height in upright source pixels.
        public var box: [Int]
    }
}

extension Applied {
    /// `applied.text`: the capitals' height and the ink's box, in the output's pixels.
    public struct TextRecord: Sendable, Equatable {
        /// The capitals' height in pixels (rounded).
        public var capHeightPx: Int
        /// x, y, width, height of the ink, in the output file's pixels (frame included).
        public var box: [Int]
        /// True when the minimum legible size overrode the template (tiny photos).
        public var clamped: Bool
    }

    /// `applied.logo`: where the logo went and how it was scaled.
    public struct LogoRecord: Sendable, Equatable {
        /// x, y, width, height in the output file's pixels (frame included).
        public var box: [Int]
        /// Logo pixels per logo-file pixel (over 1: scaled up, and warned about).
        public var scale: Double
    }

    /// `applied.tile`: the tiled mark's lattice in pixels.
    public struct TileRecord: Sendable, Equatable {
        /// The capitals' height in pixels (rounded).
        public var capHeightPx: Int
        /// Degrees, as in the template.
        public var angle: Double
        /// Pixels from one copy to the next along the text, and from one row to the next.
        public var step: [Int]
        public var opacity: Double
        /// True when the minimum legible size overrode the template.
        public var clamped: Bool
    }
}

/// One finished output, encoded and ready to write.
public struct FinishedOutput: Sendable {
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
    public var preview: PixelBuffer?
}
