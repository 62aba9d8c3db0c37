internal import CWebP
import Pixels

/// Writes WebP files through libwebp: lossy at `quality` (alpha kept), with the ICC profile,
/// EXIF and XMP added as chunks by its muxer.
///
/// libwebp encodes a whole picture: rows written band by band are packed straight into its
/// ARGB plane (the one full frame this format needs, as `WebPPictureImportRGB(A)` would fill
/// it), and `finish()` encodes it. One writer belongs to one thread at a time.
public final class WebPEncoder: ImageWriter {
    /// libwebp's picture; this object is its only owner.
    private var picture = WebPPicture()
    private let options: EncodeOptions
    private let width: Int
    private let height: Int
    private let channels: Int
    private var rowsWritten = 0

    /// Starts a picture of `width` × `height` (RGB, or RGBA: alpha is kept); rows follow.
    /// - Parameter options: `quality` (1–100); `icc`, `exif` and `xmp` become ICCP, EXIF and
    ///   XMP chunks.
    /// - Throws: `PhotoError` `io-error` with libwebp's reason.
    public init(width: Int, height: Int, channels: Int, options: EncodeOptions) throws(PhotoError) {
        precondition(channels == 3 || channels == 4, "WebP takes RGB or RGBA")
        self.options = options
        self.width = width
        self.height = height
        self.channels = channels
        guard WebPPictureInit(&picture) != 0 else { throw PhotoError(.ioError, "libwebp: version mismatch") }
        picture.use_argb = 1
        picture.width = Int32(width)
        picture.height = Int32(height)
        guard WebPPictureAlloc(&picture) != 0, picture.argb != nil else {
            throw PhotoError(.ioError, "libwebp: out of memory for a \(width)×\(height) picture")
        }
    }

    deinit { WebPPictureFree(&picture) }

    /// Packs the next rows (a band) into the picture's ARGB plane.
    public func write(_ rows: PixelRows) throws(PhotoError) {
        precondition(rows.width == width && rows.channels == channels, "rows do not fit the WebP being written")
        precondition(rowsWritten + rows.height <= height, "more rows than the WebP has")
        let stride = Int(picture.argb_stride)
        for y in 0..<rows.height {
            let source = rows[y], target = picture.argb + (rowsWritten + y) * stride
            if channels == 4 {
                for x in 0..<width {
                    let p = source + 4 * x
                    target[x] = UInt32(p[3]) << 24 | UInt32(p[0]) << 16 | UInt32(p[1]) << 8 | UInt32(p[2])
                }
            } else {
                for x in 0..<width {
                    let p = source + 3 * x
                    target[x] = 0xFF00_0000 | UInt32(p[0]) << 16 | UInt32(p[1]) << 8 | UInt32(p[2])
                }
            }
        }
        rowsWritten += rows.height
    }

    /// Encodes the picture once every row is written.
    /// - Returns: the WebP file's bytes.
    /// - Throws: `PhotoError` `io-error` with libwebp's reason.
    public func finish() throws(PhotoError) -> [UInt8] {
        precondition(rowsWritten == height, "WebP finished after \(rowsWritten) of \(height) rows")
        var config = WebPConfig()
        guard WebPConfigInit(&config) != 0 else { throw PhotoError(.ioError, "libwebp: version mismatch") }
        config.quality = Float(min(100, max(1, options.quality)))
        // 4 is libwebp's default balance of speed and size.
        config.method = 4
        var writer = WebPMemoryWriter()
        WebPMemoryWriterInit(&writer)
        defer { WebPMemoryWriterClear(&writer) }
        let encoded = withUnsafeMutablePointer(to: &writer) { writerPointer in
            picture.writer = WebPMemoryWrite
            picture.custom_ptr = UnsafeMutableRawPointer(writerPointer)
            return WebPEncode(&config, &picture)
        }
        guard encoded != 0, let memory = writer.mem else {
            throw PhotoError(.ioError, "WebP encoding failed (libwebp error \(picture.error_code.rawValue))")
        }
        let bitstream = Array(UnsafeBufferPointer(start: memory, count: writer.size))
        let chunks: [(String, [UInt8]?)] = [("ICCP", options.icc), ("EXIF", options.exif), ("XMP ", options.xmp)]
        guard chunks.contains(where: { !($0.1 ?? []).isEmpty }) else { return bitstream }
        return try Self.mux(bitstream, chunks: chunks)
    }

    /// The bitstream in an extended WebP file with the metadata chunks.
    private static func mux(_ bitstream: [UInt8], chunks: [(String, [UInt8]?)]) throws(PhotoError) -> [UInt8] {
        let result: Result<[UInt8], PhotoError> = bitstream.withUnsafeBufferPointer { image in
            var imageData = WebPData(bytes: image.baseAddress, size: image.count)
            guard let mux = WebPMuxCreate(&imageData, 1) else {
                return .failure(PhotoError(.ioError, "libwebp could not read back its own bitstream"))
            }
            defer { WebPMuxDelete(mux) }
            for (fourCC, bytes) in chunks {
                guard let bytes, !bytes.isEmpty else { continue }
                let status = bytes.withUnsafeBufferPointer { chunk in
                    var data = WebPData(bytes: chunk.baseAddress, size: chunk.count)
                    return WebPMuxSetChunk(mux, fourCC, &data, 1)
                }
                guard status == WEBP_MUX_OK else {
                    return .failure(PhotoError(.ioError, "WebP \(fourCC) chunk could not be added (mux error \(status.rawValue))"))
                }
            }
            var assembled = WebPData()
            guard WebPMuxAssemble(mux, &assembled) == WEBP_MUX_OK, let start = assembled.bytes else {
                return .failure(PhotoError(.ioError, "WebP file could not be assembled"))
            }
            defer { WebPDataClear(&assembled) }
            return .success(Array(UnsafeBufferPointer(start: start, count: assembled.size)))
        }
        return try result.get()
    }
}
