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
