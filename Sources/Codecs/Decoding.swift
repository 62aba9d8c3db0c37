import Foundation
import Pixels

/// The formats PhotoFinish reads and writes.
public enum ImageFormat: String, Sendable, Codable, CaseIterable {
    case jpeg, png, heic, avif, webp

    /// The file extension written for this format.
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        case .heic: "heic"
        case .avif: "avif"
        case .webp: "webp"
        }
    }

    /// True when the format keeps an alpha channel in PhotoFinish's outputs.
    public var keepsAlpha: Bool { self == .png || self == .webp }
}

/// Limits checked before and while decoding, so a hostile file costs little, and what is done
/// with damaged data.
public struct DecodeLimits: Sendable {
    /// Largest width × height accepted (checked from the header).
    public var maxPixels: Int
    /// Largest file accepted, in bytes (checked before reading).
    public var maxFileBytes: Int
    /// Work stops with `timeout` once this moment has passed (checked between rows and scans).
    public var deadline: ContinuousClock.Instant?
    /// Damaged data (corrupt, cut short) stops the decode with `corrupt-image` (`fail`), or the
    /// decode goes on and the decoder's `damage` says what was wrong (`warn`): `accept`.
    public var damaged: DamagePolicy

    /// The config's defaults (reference: Config): 150 MP, 512 MiB, no deadline; damage fails.
    public init(maxPixels: Int = 150_000_000, maxFileBytes: Int = 512 << 20,
                deadline: ContinuousClock.Instant? = nil, damaged: DamagePolicy = .fail) {
        self.maxPixels = maxPixels
        self.maxFileBytes = maxFileBytes
        self.deadline = deadline
        self.damaged = damaged
    }

    /// Refuses an image whose header declares more than `maxPixels`, before any pixel is
    /// decoded. The sides come from the file, so any value is possible: the product is
    /// checked for overflow (a PNG may say 4294967295×4294967295), never trapped on.
    /// - Parameter format: the format's name as a person knows it ("JPEG").
    /// - Throws: `PhotoError` with code `too-large`, naming the size and the limit;
    ///   `corrupt-image` for a negative side.
    public func checkPixels(width: Int, height: Int, format: String) throws(PhotoError) {
        guard width >= 0, height >= 0 else {
            throw PhotoError(.corruptImage, "\(format) header declares an impossible size (\(width)×\(height))")
        }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        guard overflow || pixels > maxPixels else { return }
        let product = overflow ? "" : " = \(Self.words(pixels))"
        throw PhotoError(.tooLarge, "\(format) header says \(width)×\(height)\(product), "
                         + "over the limit of \(Self.words(maxPixels)) (maxPixels)")
    }

    /// A pixel count as a person reads it: "24 MP", or "640 pixels" below a megapixel
    /// (rounded without an addition that could overflow near `Int.max`).
    static func words(_ n: Int) -> String {
        guard n >= 1_000_000 else { return "\(n) pixels" }
        return "\(n / 1_000_000 + (n % 1_000_000 >= 500_000 ? 1 : 0)) MP"
    }

    /// The bytes of a `width` × `height` image of `channels` channels, or nil when that
    /// does not fit an `Int` (sizes from a file's header may be anything).
    public static func byteCount(width: Int, height: Int, channels: Int) -> Int? {
        guard width >= 0, height >= 0, channels >= 0 else { return nil }
        let (pixels, o1) = width.multipliedReportingOverflow(by: height)
        let (bytes, o2) = pixels.multipliedReportingOverflow(by: channels)
        return o1 || o2 ? nil : bytes
    }

    /// Throws `timeout` when the deadline has passed.
    /// - Throws: `PhotoError` with code `timeout`.
    public func checkDeadline() throws(PhotoError) {
        if let deadline, ContinuousClock.now > deadline {
            throw PhotoError(.timeout, "stopped: the photo took longer than the item timeout")
        }
    }
}

/// What a decoder learned from the header, before any pixel is decoded.
public struct SourceInfo: Sendable {
    /// The format, found by content.
    public var format: ImageFormat
    /// Width of the pixels the decoder delivers at full scale (stored orientation).
    public var width: Int
    /// Height of the pixels the decoder delivers at full scale (stored orientation).
    public var height: Int
    /// The EXIF orientation (1–8) still to apply to the delivered pixels. HEIF decoders
    /// apply `irot`/`imir` themselves and report 1 here.
    public var orientation: Int
    /// The orientation the file declares, for the report (EXIF tag, or the HEIF
    /// transform expressed as an EXIF value).
    public var declaredOrientation: Int
    /// True when the source has an alpha channel worth keeping.
    public var hasAlpha: Bool
    /// The embedded ICC profile, if any.
    public var icc: [UInt8]?
    /// The raw EXIF block (TIFF header onwards, without the "Exif\0\0" prefix), if any.
    public var exif: [UInt8]?
    /// The XMP packet (JPEG APP1, PNG iTXt, HEIF metadata item, WebP chunk), if any.
    public var xmp: [UInt8]?
    /// True when a JPEG also carried extended XMP (not read: it is made for the source's
    /// pixels, see `MetadataRewrite`).
    public var xmpExtended = false
    /// The IPTC IIM stream (JPEG APP13), if any.
    public var iptc: [UInt8]?
    /// When the file is a camera raw: the raw it is, and the embedded preview the pixels come
    /// from (the rest of this info is the preview's).
    public var raw: RawSource?

    public init(format: ImageFormat, width: Int, height: Int, orientation: Int = 1,
                declaredOrientation: Int = 1, hasAlpha: Bool = false,
                icc: [UInt8]? = nil, exif: [UInt8]? = nil) {
        self.format = format
        self.width = width
        self.height = height
        self.orientation = orientation
        self.declaredOrientation = declaredOrientation
        self.hasAlpha = hasAlpha
        self.icc = icc
        self.exif = exif
    }
}

/// A decoder opened on one file's bytes: the header is read, no pixel yet.
///
/// Rows come out top to bottom, in stored orientation, 8 bits per channel, interleaved,
/// through a callback, so a consumer (a streaming resampler) never needs the whole frame.
public protocol PhotoDecoder: AnyObject {
    /// What the header says.
    var info: SourceInfo { get }
    /// The scales this decoder delivers, in eighths of the full size, smallest first (JPEG:
    /// 1…8, libjpeg's DCT scaling; the others: 8, the full size only).
    var scales: [Int] { get }
    /// The size delivered at `eighths`/8 of the full size (rounded up, as libjpeg does).
    func scaledSize(eighths: Int) -> (width: Int, height: Int)
    /// Decodes every row, in order.
    /// - Parameters:
    ///   - eighths: the scale, one of `scales`.
    ///   - channels: 3 (RGB) or 4 (RGBA; opaque sources get alpha 255).
    ///   - limits: the deadline is checked as rows come out; `damaged` says whether damaged
    ///     data stops the decode (`DecodeLimits.accept`).
    ///   - row: called once per row with `width * channels` bytes, valid only during the call.
    /// - Throws: `PhotoError` (`corrupt-image`, `timeout`, …), or whatever `row` throws.
    func decode(eighths: Int, channels: Int, limits: DecodeLimits,
                row: (UnsafePointer<UInt8>) throws -> Void) throws
    /// What the last decode found damaged and went on past (`damaged: warn`), nil when the data
    /// was whole. Rows delivered from a damaged part are grey where data is missing.
    var damage: Damage? { get }
    /// The most memory the decoder itself holds while decoding (beyond the file's bytes), from
    /// the header: what the memory budget counts for it.
    var workingBytes: Int { get }
}

extension PhotoDecoder {
    /// Decoders that hold the whole picture (libheif, libwebp, interlaced PNG, …): 4 bytes a
    /// pixel at full size, the most any of them holds.
    public var workingBytes: Int {
        DecodeLimits.byteCount(width: info.width, height: info.height, channels: 4) ?? Int.max / 4
    }

    /// The size delivered at `eighths`/8 of the full size, each side rounded up as libjpeg does
    /// (⌈side · eighths / 8⌉; decoders without scaling only offer 8, the full size).
    public func scaledSize(eighths: Int) -> (width: Int, height: Int) {
        precondition(scales.contains(eighths), "scale \(eighths)/8 is not one of \(scales)")
        // Computed without multiplying a size that came from the file.
        func scaled(_ side: Int) -> Int { side / 8 * eighths + (side % 8 * eighths + 7) / 8 }
        return (scaled(info.width), scaled(info.height))
    }
}

/// Hands out the rows of an image decoded whole (HEIF, WebP), top to bottom, checking the
/// deadline every 64 rows. RGBA rows asked for as RGB are composited over white first.
/// - Parameters:
///   - pixels: the first row; rows are `stride` bytes apart, RGBA when `rgba`, else RGB.
///   - channels: what the caller asked for (3 or 4; 4 only from RGBA rows).
func handOutRows(_ pixels: UnsafePointer<UInt8>, stride: Int, width: Int, height: Int, rgba: Bool, channels: Int,
                 limits: DecodeLimits, row: (UnsafePointer<UInt8>) throws -> Void) throws {
    let composite: UnsafeMutablePointer<UInt8>? = (rgba && channels == 3) ? .allocate(capacity: width * 3) : nil
    defer { composite?.deallocate() }
    for y in 0..<height {
        if y & 63 == 0 { try limits.checkDeadline() }
        let source = pixels + y * stride
        if let composite {
            flattenRow(source, into: composite, width: width, over: [255, 255, 255])
            try row(composite)
        } else {
            try row(source)
        }
    }
}
