internal import CWebP
import Pixels

/// Writes WebP files through libwebp: lossy at `quality` (alpha kept), with the ICC profile,
/// EXIF and XMP added as chunks by its muxer.
public enum WebPEncoder {
    /// Encodes an RGB or RGBA image.
    /// - Parameters:
    ///   - image: the pixels (alpha is kept).
    ///   - options: `quality` (1–100); `icc`, `exif` and `xmp` become ICCP, EXIF and XMP chunks.
    /// - Returns: the WebP file's bytes.
    /// - Throws: `PhotoError` `io-error` with libwebp's reason.
    public static func encode(_ image: Image, options: EncodeOptions) throws(PhotoError) -> [UInt8] {
        var config = WebPConfig()
        guard WebPConfigInit(&config) != 0 else { throw PhotoError(.ioError, "libwebp: version mismatch") }
        config.quality = Float(min(100, max(1, options.quality)))
        // 4 is libwebp's default balance of speed and size.
        config.method = 4
        var picture = WebPPicture()
        guard WebPPictureInit(&picture) != 0 else { throw PhotoError(.ioError, "libwebp: version mismatch") }
        defer { WebPPictureFree(&picture) }
        picture.use_argb = 1
        picture.width = Int32(image.width)
        picture.height = Int32(image.height)
        let imported = image.withUnsafeRows { rows in
            rows.channels == 4 ? WebPPictureImportRGBA(&picture, rows.base, Int32(rows.rowBytes))
                               : WebPPictureImportRGB(&picture, rows.base, Int32(rows.rowBytes))
        }
        guard imported != 0 else { throw PhotoError(.ioError, "libwebp: out of memory for a \(image.width)×\(image.height) picture") }
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
        return try mux(bitstream, chunks: chunks)
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
