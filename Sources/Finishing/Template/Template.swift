import Codecs
import QR

/// A template as written by an admin (reference: Templates), after validation. Every size is a
/// fraction of the photo (short side unless stated), so one template fits every shape.
public struct Template: Sendable, Equatable {
    /// The template's name (file stem) and the SHA-256 of its bytes, for the report.
    public var name: String
    public var sha256: String
    /// The folder the template file lives in: logo paths are relative to it.
    public var directory: String
    /// The template file, as an absolute path (nil for the built-in default and for text not
    /// read from a file): the report names it, so `redo` can finish a batch with it again.
    public var file: String?

    public var order: Order = .name
    public var resize: Resize?
    public var crops: [Crop] = []
    /// `cropFocus`: where crops are placed unless a crop says otherwise.
    public var cropFocus: CropFocus = .subject
    public var frame: Frame?
    public var text: TextMark?
    public var logo: LogoMark?
    public var tile: TileMark?
    /// `qr`: a QR code of a text (the batch's share link), placed and sized like the logo.
    public var qr: QRMark?
    public var stitch: Stitch?
    public var colorCard: Bool = false
    /// `harmonize`: the batch's photos brought toward one white balance and exposure (nil: each
    /// photo as it came).
    public var harmonize: Harmonize?
    public var output: Output = Output()
    public var originals: Originals = .keep
    /// `damaged`: a photo whose data turns out damaged while it is decoded fails as
    /// `corrupt-image` (`fail`), or is finished with a warning saying what (`warn`).
    public var damaged: DamagePolicy = .fail
    /// `metadata`: the captions written into every output's IPTC and XMP (nil: none).
    public var metadata: MetadataTemplate?
    /// More products from the same decode (`variants`), each this template with the keys it
    /// names overridden.
    public var variants: [Variant] = []

    public init(name: String, sha256: String = "", directory: String = ".") {
        self.name = name
        self.sha256 = sha256
        self.directory = directory
    }

    /// Order inside a batch (reference: From arrival to batch).
    public enum Order: String, Sendable, CaseIterable {
        case name, arrival, captured
    }

    /// `resize`: exactly one of the three forms. Never upscales.
    public enum Resize: Sendable, Equatable {
        case longSide(Int)
        case shortSide(Int)
        case fit(width: Int, height: Int)
    }

    /// One entry of `crops`: an aspect ratio and the skip rule.
    public struct Crop: Sendable, Equatable {
        /// The ratio as written ("4:5").
        public var label: String
        public var width: Int
        public var height: Int
        /// Skip this crop when it would cut away more than this fraction of the photo.
        public var skipIfCutOver: Double?
        /// This crop's `focus`, or nil for the template's `cropFocus`.
        public var focus: CropFocus?

        public init(label: String, width: Int, height: Int, skipIfCutOver: Double? = nil, focus: CropFocus? = nil) {
            self.label = label
            self.width = width
            self.height = height
            self.skipIfCutOver = skipIfCutOver
            self.focus = focus
        }
    }

    /// Where a crop is placed: around the photo's subject (faces, XMP regions, the attention
    /// map) or plainly centred.
    public enum CropFocus: String, Sendable, CaseIterable {
        case subject, center
    }

    /// The pair `color: "auto"` chooses from (`autoColors`): whichever contrasts more with
    /// the photo under the mark.
    public struct AutoColors: Sendable, Equatable {
        public var light: Color
        public var dark: Color
        public init(light: Color = .white, dark: Color = Color(r: 0x1a, g: 0x1a, b: 0x1a)) {
            self.light = light
            self.dark = dark
        }
    }

    /// The corners `position: "auto"` chooses among when no `positions` list is given.
    public static let cornerPositions: [Position] = [.bottomRight, .bottomLeft, .topRight, .topLeft]

    /// An sRGB colour with alpha, parsed from `#rgb`, `#rrggbb` or `#rrggbbaa`.
    public struct Color: Sendable, Equatable {
        public var r: UInt8, g: UInt8, b: UInt8, a: UInt8
        public init(r: UInt8, g: UInt8, b: UInt8, a: UInt8 = 255) {
            self.r = r; self.g = g; self.b = b; self.a = a
        }
        public static let white = Color(r: 255, g: 255, b: 255)
        public static let black = Color(r: 0, g: 0, b: 0)
    }

    /// `frame`: a border of `width` × short side, in `color`.
    public struct Frame: Sendable, Equatable {
        public var width: Double
        public var color: Color
        public init(width: Double, color: Color) { self.width = width; self.color = color }
    }

    /// The nine positions of a mark.
    public enum Position: String, Sendable, CaseIterable {
        case topLeft = "top-left", top = "top", topRight = "top-right"
        case left = "left", center = "center", right = "right"
        case bottomLeft = "bottom-left", bottom = "bottom", bottomRight = "bottom-right"
    }

    /// `text.shadow`.
    public struct Shadow: Sendable, Equatable {
        public var opacity: Double
        public var blur: Double
        public var offset: Double
        public init(opacity: Double, blur: Double, offset: Double) {
            self.opacity = opacity; self.blur = blur; self.offset = offset
        }
    }

    /// `text`: a text mark sized by its capitals.
    public struct TextMark: Sendable, Equatable {
        public var text: String
        public var font: String = "DejaVu Sans:bold"
        public var capHeight: Double = 0.035
        public var margin: Double = 0.03
        public var maxWidth: Double = 0.8
        public var position: Position = .bottomRight
        public var color: Color = .white
        /// `color: "auto"`: the light or dark colour of the pair, whichever contrasts more
        /// with the photo under the text (nil: `color` as written).
        public var autoColors: AutoColors?
        /// A rim in the colour opposite the fill, as a fraction of the cap height (nil: none).
        public var outline: Double?
        public var opacity: Double = 0.85
        public var shadow: Shadow?
        /// `position: "auto"`: the calmest of these places (nil: `position` as written).
        public var autoPositions: [Position]?
        public init(text: String) { self.text = text }
    }

    /// `logo`: a PNG with alpha, `width` × short side wide.
    public struct LogoMark: Sendable, Equatable {
        /// As written in the template (relative to the template's folder).
        public var file: String
        public var width: Double = 0.16
        public var padding: Double = 0.04
        public var opacity: Double = 0.8
        public var position: Position = .topLeft
        /// `onDark`: a second logo file used where the photo under the logo is dark.
        public var onDark: String?
        /// `position: "auto"`: the calmest of these places (nil: `position` as written).
        public var autoPositions: [Position]?
        public init(file: String) { self.file = file }
    }

    /// `qr`: a QR code, `width` × short side wide with its quiet zone, so a phone scanning the
    /// photo opens the link (reference: Marks, The QR code mark).
    public struct QRMark: Sendable, Equatable {
        /// What the code holds: `{shareURL}` (the batch's share link), the text variables, or
        /// any text.
        public var text: String = "{shareURL}"
        /// The whole code, quiet zone included, as a fraction of the short side.
        public var width: Double = 0.12
        /// As the logo's: a fraction of the width from a side, of the height from the top or bottom.
        public var padding: Double = 0.03
        public var position: Position = .bottomLeft
        /// The dark modules' colour and the light modules' (and quiet zone's): dark on light,
        /// contrasting at least `QRMark.minimumContrast` to 1.
        public var color: Color = .black
        public var background: Color = .white
        /// How much of the code may be covered or damaged and still be read.
        public var level: QRCode.Level = .medium
        /// The WCAG contrast ratio the two colours must reach: what scanners read in poor light.
        public static let minimumContrast = 7.0
        /// The fewest pixels a module should have: below, a print or a photo of a screen is
        /// read badly, and the report warns.
        public static let minimumModulePixels = 2
        public init(text: String = "{shareURL}") { self.text = text }
    }

    /// `tile`: a diagonal repeated text mark.
    public struct TileMark: Sendable, Equatable {
        public var text: String
        public var angle: Double = -30
        public var size: Double = 0.05
        public var opacity: Double = 0.25
        public var gap: Double = 1.0
        /// `color`: nil draws in the text mark's colour (white without one).
        public var color: Color?
        /// `color: "auto"`: every glyph two-toned (light fill, dark rim), visible on light and
        /// dark parts of the same photo.
        public var autoColors: AutoColors?
        public init(text: String) { self.text = text }
    }

    /// `stitch`: the batch as one long image.
    public struct Stitch: Sendable, Equatable {
        public var width: Int = 1080
        public var spacing: Int = 0
        public var maxHeight: Int = 16000
        public var background: Color = .white
        public var split: Bool = true
        /// Blow photos narrower than `width` up to it (otherwise the canvas takes the
        /// narrowest photo's width, so no photo is enlarged).
        public var upscale: Bool = false
        /// Whether the template's text, logo and tile marks go on each stitched part. On by
        /// default: a template that marks its photos must not hand out an unmarked copy of
        /// every one of them as a story.
        public var marks: Bool = true
        public init() {}
    }

    /// `harmonize`: a set that looks like one set (reference: `harmonize`). Each photo's white
    /// point and exposure are measured, the batch's reference is chosen, and each photo is
    /// corrected toward it by `strength`, within caps.
    public struct Harmonize: Sendable, Equatable {
        /// Match the white points.
        public var whiteBalance = true
        /// Match the middle tones' brightness.
        public var exposure = true
        /// The share of each difference taken away, 0 < strength ≤ 1.
        public var strength = 0.7
        /// What the photos are brought toward.
        public var reference: Reference = .median

        /// `harmonize.reference`.
        public enum Reference: Sendable, Equatable {
            /// The batch's median white point and median level.
            case median
            /// The photo of the batch with this file name.
            case file(String)
        }

        public init() {}
    }

    /// `output.format`.
    public enum OutputFormat: Sendable, Equatable {
        case format(ImageFormat)
        /// The source's own format.
        case same
    }

    /// `output.metadata`.
    public enum Metadata: String, Sendable, CaseIterable {
        case keep
        case stripLocation = "strip-location"
        case copyrightOnly = "copyright-only"
        case stripAll = "strip-all"
    }

    /// `output.credit`: who made the photos and who owns them, written into every output
    /// whatever `metadata` says. Each may hold variables (`"© {year} Studio Nord"`).
    public struct Credit: Sendable, Equatable {
        public var creator: String?
        public var copyright: String?
        public var credit: String?
        public init(creator: String? = nil, copyright: String? = nil, credit: String? = nil) {
            self.creator = creator; self.copyright = copyright; self.credit = credit
        }
    }

    /// `metadata` (reference: Metadata templates): the texts written into every output as IPTC
    /// IIM (JPEG) and XMP. Each may hold the text variables and `=CODE=`s, replaced through
    /// `codes`; once filled for one photo (`filled(with:)`) they are the texts as written.
    public struct MetadataTemplate: Sendable, Equatable {
        /// `title`, `caption`, `keywords`, `creator`, `copyright`, `usageTerms`, `city`,
        /// `country`, `event`: as the template writes them, or once filled, as written.
        public var texts = MetadataTexts()
        /// `codes`: the codes file's codes (nil: no codes file; then every `=CODE=` is left as
        /// written).
        public var codes: CodeReplacements?
        /// The `=CODE=`s left as written in this photo's texts (set by `filled(with:)`): the
        /// codes file has no such code, or no text in that column.
        public var unknownCodes: [String] = []

        public init() {}

        /// Every text with the key it is written under (`keywords[2]` for a keyword), in the
        /// reference's order.
        public var keyed: [(key: String, text: String)] {
            let t = texts
            let single: [(String, String?)] = [("title", t.title), ("caption", t.caption)]
            let rest: [(String, String?)] = [("creator", t.creator), ("copyright", t.copyright), ("usageTerms", t.usageTerms),
                                             ("city", t.city), ("country", t.country), ("event", t.event)]
            return single.compactMap { key, text in text.map { (key, $0) } }
                + t.keywords.enumerated().map { ("keywords[\($0.offset)]", $0.element) }
                + rest.compactMap { key, text in text.map { (key, $0) } }
        }
    }

    /// `output.color`.
    public enum ColorPolicy: String, Sendable, CaseIterable {
        case keep, srgb
    }

    /// `output`.
    public struct Output: Sendable, Equatable {
        public var format: OutputFormat = .format(.jpeg)
        public var quality: Int = 88
        public var progressive: Bool = false
        public var suffix: String = ""
        public var metadata: Metadata = .stripLocation
        public var credit: Credit?
        public var color: ColorPolicy = .keep
        /// The largest file, in bytes: lossy quality is lowered step by step until it fits.
        public var maxBytes: Int?
        /// The unsharp mask's amount after a downscale (0: off), scaled by how much the photo
        /// was shrunk.
        public var sharpen: Double = 0
        /// The amount `sharpen: true` means: crisp after a strong downscale, no halos.
        public static let defaultSharpen = 0.6
        /// The file name pattern (`"{stem}-{variant}-{ratio}"`), nil for
        /// `<stem><suffix>[-<variant>][-<ratio>]`.
        public var name: String?
        public init() {}
    }

    /// One entry of `variants`: a name (in the file names) and the template it makes.
    public struct Variant: Sendable, Equatable {
        public var name: String
        /// The template with this variant's keys applied (no variants of its own).
        public var recipe: Template
        public init(name: String, recipe: Template) { self.name = name; self.recipe = recipe }
    }

    /// The codes files the template read (`metadata.codes`, its variants' too), by the name it
    /// gives them, with their texts: a claimed batch keeps them (so it is finished with the
    /// codes it was claimed with, as with the template itself).
    public var codesFiles: [String: String] {
        var files: [String: String] = [:]
        for (_, recipe) in recipes {
            if let codes = recipe.metadata?.codes { files[codes.file] = codes.source }
        }
        return files
    }

    /// The base recipe (variant nil) and each variant's, in order.
    public var recipes: [(variant: String?, recipe: Template)] {
        [(nil, self)] + variants.map { ($0.name, $0.recipe) }
    }

    /// `originals`.
    public enum Originals: String, Sendable, CaseIterable {
        case keep, delete
    }
}
