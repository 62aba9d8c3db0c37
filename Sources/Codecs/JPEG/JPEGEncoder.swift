internal import CShims
import Pixels

/// Writes JPEG files through libjpeg-turbo: 8-bit RGB, 4:2:0 chroma, baseline or
/// progressive, with the ICC profile and EXIF block of `EncodeOptions` embedded.
public enum JPEGEncoder {
    /// Encodes an RGB image.
    /// - Parameters:
    ///   - image: 3 channels (flatten alpha first: passing RGBA is a programmer's mistake).
    ///   - options: `quality` (1–100), `progressive`, `icc`, `exif` (TIFF header onwards,
    ///     without "Exif\0\0"; at most 65527 bytes, the room in one APP1 marker), `xmp`
    ///     (APP1) and `iptc` (APP13).
    /// - Returns: the JPEG file's bytes.
    /// - Throws: `PhotoError` with code `io-error` when libjpeg fails or the EXIF block
    ///   does not fit.
    public static func encode(_ image: Image, options: EncodeOptions) throws(PhotoError) -> [UInt8] {
        precondition(image.channels == 3, "JPEGEncoder takes RGB; flatten the alpha channel first")
        var out: UnsafeMutablePointer<UInt8>?
        var size = 0
        let messageSize = 256
        var message = [CChar](repeating: 0, count: messageSize)
        // XMP and IPTC markers, written as they are (each fits one marker: MetadataRewrite saw to it).
        let extra = JPEGMetadata.markers(xmp: options.xmp, iptc: options.iptc)
        let status = withOptionalBytes(options.icc) { icc, iccCount in
            withOptionalBytes(options.exif) { exif, exifCount in
                withMarkers(extra) { markers, markerCount in
                    image.withUnsafeRows { rows in
                        pf_jpeg_encode_rgb(rows.base, Int32(rows.width), Int32(rows.height), rows.rowBytes,
                                           Int32(options.quality), options.progressive ? 1 : 0, 0,
                                           icc, iccCount, exif, exifCount, markers, markerCount,
                                           &out, &size, &message, messageSize)
                    }
                }
            }
        }
        defer { pf_jpeg_free(out) }
        guard status == Int32(PF_JPEG_OK), let out else {
            let reason = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw PhotoError(.ioError, "JPEG encoding failed: \(reason)")
        }
        return Array(UnsafeBufferPointer(start: out, count: size))
    }

    /// `markers` as C structs pointing into their bytes, valid during `body`.
    private static func withMarkers<R>(_ markers: [(code: Int, bytes: [UInt8])],
                                       _ body: (UnsafePointer<pf_jpeg_marker>?, Int32) -> R) -> R {
        func nest(_ i: Int, _ built: [pf_jpeg_marker]) -> R {
            guard i < markers.count else {
                return built.withUnsafeBufferPointer { body($0.baseAddress, Int32($0.count)) }
            }
            return markers[i].bytes.withUnsafeBufferPointer { bytes in
                nest(i + 1, built + [pf_jpeg_marker(code: Int32(markers[i].code), data: bytes.baseAddress,
                                                    size: bytes.count)])
            }
        }
        return nest(0, [])
    }

    private static func withOptionalBytes<R>(_ bytes: [UInt8]?,
                                             _ body: (UnsafePointer<UInt8>?, Int) -> R) -> R {
        guard let bytes, !bytes.isEmpty else { return body(nil, 0) }
        return bytes.withUnsafeBufferPointer { body($0.baseAddress, $0.count) }
    }
}
