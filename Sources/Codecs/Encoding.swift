import Pixels

/// How to write one finished image.
public struct EncodeOptions: Sendable {
    /// Output format (`same` is resolved by the caller).
    public var format: ImageFormat
    /// 1–100 (JPEG, HEIC, AVIF); ignored for PNG.
    public var quality: Int
    /// JPEG only: progressive scans.
    public var progressive: Bool
    /// ICC profile to embed, if any.
    public var icc: [UInt8]?
    /// EXIF block to embed (TIFF header onwards), already rewritten for the output.
    public var exif: [UInt8]?
    /// XMP packet to embed (every format but PNG's old readers shows it).
    public var xmp: [UInt8]?
    /// IPTC IIM stream to embed (JPEG only: a Photoshop APP13 block).
    public var iptc: [UInt8]?

    public init(format: ImageFormat, quality: Int = 88, progressive: Bool = false,
                icc: [UInt8]? = nil, exif: [UInt8]? = nil) {
        self.format = format
        self.quality = quality
        self.progressive = progressive
        self.icc = icc
        self.exif = exif
    }
}

/// A file being written row band by row band, top to bottom: a finished photo goes out as
/// its rows are ready, and only formats that must see the whole picture (HEIC, AVIF) keep it.
/// One writer belongs to one thread at a time.
public protocol ImageWriter: AnyObject {
    /// Starts a file of `width` × `height` for rows of `channels` bytes a pixel (3: RGB,
    /// 4: RGBA); metadata and the header go first.
    /// - Throws: `PhotoError` (`io-error`) when the library refuses.
    init(width: Int, height: Int, channels: Int, options: EncodeOptions) throws(PhotoError)
    /// Writes the next rows (a band), top to bottom.
    /// - Throws: `PhotoError` (`io-error`) when the library refuses.
    func write(_ rows: PixelRows) throws(PhotoError)
    /// Ends the file after the last row.
    /// - Returns: the file's bytes.
    /// - Throws: `PhotoError` (`io-error`) when the library refuses.
    func finish() throws(PhotoError) -> [UInt8]
}

extension ImageWriter {
    /// Encodes a whole image (fixtures, and what is finished whole).
    /// - Returns: the file's bytes.
    /// - Throws: `PhotoError` (`io-error`) when the library refuses.
    public static func encode(_ image: Image, options: EncodeOptions) throws(PhotoError) -> [UInt8] {
        try Self(width: image.width, height: image.height, channels: image.channels, options: options).encode(image)
    }

    /// Writes every row of `image` and ends the file.
    /// - Returns: the file's bytes.
    public func encode(_ image: Image) throws(PhotoError) -> [UInt8] {
        try image.withUnsafeRows { rows throws(PhotoError) in try write(rows) }
        return try finish()
    }
}
