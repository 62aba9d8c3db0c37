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
    public let scales: [Int] = [8]
    private let bytes: [UInt8]

    /// What the last decode found damaged and went on past (`damaged: warn`).
    public private(set) var damage: Damage?

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

    /// Decodes the whole image, then hands out its rows, top to bottom. A file cut short or broken
    /// is damage (`DecodeLimits.accept`): the decode stops, or hands out the rows libwebp could
    /// decode and grey below them.
    /// - Throws: `PhotoError` `corrupt-image` (libwebp's status), `timeout`, or what `row` throws.
    public func decode(eighths: Int, channels: Int, limits: DecodeLimits,
                       row: (UnsafePointer<UInt8>) throws -> Void) throws {
        precondition(eighths == 8, "WebP decodes at full size only")
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
        damage = nil
        if done == nil {
            // Cut short or broken: what libwebp's incremental decoder gets before it stops is
            // the photo's top, the rest grey (decoded again only for such a file).
            let (lastRow, status) = partialDecode(into: pixels, size: size, stride: stride, alpha: decodeAlpha)
            let reason = status == VP8_STATUS_SUSPENDED || status == VP8_STATUS_NOT_ENOUGH_DATA
                ? "WebP data ends early at byte \(bytes.count)" : "WebP data is broken (\(Self.words(status)))"
            damage = try limits.accept(Damage(reason: reason, effect: .missing, fromRow: lastRow, height: height,
                                              orientation: (1...8).contains(info.orientation) ? info.orientation : 1))
            let pixel: [UInt8] = decodeAlpha ? [128, 128, 128, 255] : [128, 128, 128]
            for y in lastRow..<height {
                for x in 0..<width { (pixels + y * stride + x * pixel.count).update(from: pixel, count: pixel.count) }
            }
        }
        try handOutRows(pixels, stride: stride, width: width, height: height, rgba: decodeAlpha,
                        channels: channels, limits: limits, row: row)
    }

    /// Decodes as much of the file as libwebp's incremental decoder can into `pixels`.
    /// - Returns: the rows decoded from the top, and why it stopped (`VP8_STATUS_SUSPENDED`:
    ///   the data ends early).
    private func partialDecode(into pixels: UnsafeMutablePointer<UInt8>, size: Int, stride: Int,
                               alpha: Bool) -> (rows: Int, status: VP8StatusCode) {
        guard let decoder = WebPINewRGB(alpha ? MODE_RGBA : MODE_RGB, pixels, size, Int32(stride)) else {
            return (0, VP8_STATUS_OUT_OF_MEMORY)
        }
        defer { WebPIDelete(decoder) }
        let status = bytes.withUnsafeBufferPointer { WebPIUpdate(decoder, $0.baseAddress, $0.count) }
        var lastRow: Int32 = 0, width: Int32 = 0, height: Int32 = 0, rowBytes: Int32 = 0
        guard WebPIDecGetRGB(decoder, &lastRow, &width, &height, &rowBytes) != nil else { return (0, status) }
        return (min(max(0, Int(lastRow)), info.height), status)
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
