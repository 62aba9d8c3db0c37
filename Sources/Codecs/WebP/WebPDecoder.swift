internal import CWebP
import Pixels

/// Reads WebP files (lossy, lossless, with alpha) through libwebp; the ICC profile, EXIF
/// and XMP chunks through its demuxer. Animated WebP is refused: PhotoFinish finishes
/// still photos.
///
/// libwebp decodes whole images; the rows are then handed out one by one like the other
/// decoders'. One decoder belongs to one thread at a time.
public final class WebPDecoder: PhotoDecoder {
    public let info: SourceInfo
    /// WebP is decoded at full size only.
    public let scaleDenominators: [Int] = [1]
    private let bytes: [UInt8]

    /// Reads the header and the metadata chunks; no pixel is decoded yet.
    /// - Throws: `PhotoError`: `too-large`, `corrupt-image` (a header libwebp cannot read),
    ///   `unsupported-format` (animated).
    public init(bytes: [UInt8], limits: DecodeLimits) throws(PhotoError) {
        guard bytes.count <= limits.maxFileBytes else {
            throw PhotoError(.tooLarge, "file of \(bytes.count) bytes is over the limit of \(limits.maxFileBytes) bytes (maxFileBytes)")
        }
        var features = WebPBitstreamFeatures()
        let status = bytes.withUnsafeBufferPointer { WebPGetFeatures($0.baseAddress, $0.count, &features) }
        guard status == VP8_STATUS_OK else {
            throw PhotoError(.corruptImage, "WebP header could not be read (\(Self.words(status)))")
        }
        if features.has_animation != 0 {
            throw PhotoError(.unsupportedFormat, "animated WebP: PhotoFinish finishes still photos")
        }
        let width = Int(features.width), height = Int(features.height)
        guard width > 0, height > 0 else { throw PhotoError(.corruptImage, "WebP header declares an empty image") }
        try limits.checkPixels(width: width, height: height, format: "WebP")
        let chunks = WebPChunks(bytes)
        let exif = chunks.exif
        let orientation = exif.flatMap { Exif.orientation($0) } ?? 1
        var info = SourceInfo(format: .webp, width: width, height: height, orientation: orientation,
                              declaredOrientation: orientation, hasAlpha: features.has_alpha != 0,
                              icc: chunks.icc, exif: exif)
        info.xmp = chunks.xmp
        self.info = info
        self.bytes = bytes
    }

    /// Decodes the whole image, then hands out its rows, top to bottom.
    /// - Throws: `PhotoError` `corrupt-image` (libwebp's status), `timeout`, or what `row` throws.
    public func decode(denominator: Int, channels: Int, limits: DecodeLimits,
                       row: (UnsafePointer<UInt8>) throws -> Void) throws {
        precondition(denominator == 1, "WebP decodes at full size only")
        precondition(channels == 3 || channels == 4, "channels must be 3 or 4")
        try limits.checkDeadline()
        let width = info.width, height = info.height
        let decodeAlpha = channels == 4 || info.hasAlpha
        let stride = width * (decodeAlpha ? 4 : 3)
        let (size, overflow) = stride.multipliedReportingOverflow(by: height)
        guard !overflow else { throw PhotoError(.tooLarge, "WebP of \(width)×\(height) does not fit in memory") }
        let pixels = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
        defer { pixels.deallocate() }
        let done = bytes.withUnsafeBufferPointer { data in
            decodeAlpha ? WebPDecodeRGBAInto(data.baseAddress, data.count, pixels, size, Int32(stride))
                        : WebPDecodeRGBInto(data.baseAddress, data.count, pixels, size, Int32(stride))
        }
        guard done != nil else { throw PhotoError(.corruptImage, "WebP data is broken or cut short") }
        try handOutRows(pixels, stride: stride, width: width, height: height, rgba: decodeAlpha,
                        channels: channels, limits: limits, row: row)
    }

    private static func words(_ status: VP8StatusCode) -> String {
        switch status {
        case VP8_STATUS_NOT_ENOUGH_DATA: "the data ends early"
        case VP8_STATUS_BITSTREAM_ERROR: "bitstream error"
        case VP8_STATUS_UNSUPPORTED_FEATURE: "a feature libwebp does not support"
        case VP8_STATUS_OUT_OF_MEMORY: "out of memory"
        default: "status \(status.rawValue)"
        }
    }
}

/// The metadata chunks of a WebP file (extended format), read through libwebp's demuxer.
struct WebPChunks {
    var icc: [UInt8]?
    var exif: [UInt8]?
    var xmp: [UInt8]?

    init(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { buffer in
            var data = WebPData(bytes: buffer.baseAddress, size: buffer.count)
            guard let demuxer = WebPDemux(&data) else { return }
            defer { WebPDemuxDelete(demuxer) }
            func chunk(_ fourCC: String) -> [UInt8]? {
                var iterator = WebPChunkIterator()
                guard WebPDemuxGetChunk(demuxer, fourCC, 1, &iterator) != 0 else { return nil }
                defer { WebPDemuxReleaseChunkIterator(&iterator) }
                guard let start = iterator.chunk.bytes, iterator.chunk.size > 0 else { return nil }
                return Array(UnsafeBufferPointer(start: start, count: iterator.chunk.size))
            }
            icc = chunk("ICCP")
            // Some writers keep the JPEG-style "Exif\0\0" in front of the TIFF header.
            exif = chunk("EXIF").map { $0.starts(with: [0x45, 0x78, 0x69, 0x66, 0, 0]) ? Array($0.dropFirst(6)) : $0 }
            xmp = chunk("XMP ")
        }
    }
}
