internal import CCodecs
import Pixels

/// Writes JPEG files through libjpeg-turbo: 8-bit RGB, 4:2:0 chroma, baseline or
/// progressive, with the ICC profile and EXIF block of `EncodeOptions` embedded.
///
/// Rows go in as they are finished (`jpeg_write_scanlines`), band by band: a photo finished
/// at full resolution is never whole in memory on its way out. The file is written into a block
/// of the pixel pool (`PixelPool`: kept from photo to photo of a batch, so its pages are mapped
/// once, not grown by doubling into fresh memory every photo); a file larger than the block goes
/// on in memory of its own. One writer belongs to one thread at a time.
public final class JPEGEncoder: ImageWriter {
    /// The C encoder (`pf_jpeg_encoder *`); this object is its only owner.
    private let handle: OpaquePointer
    /// Where libjpeg writes the file first (`outputBytes` of the pixel pool).
    private let output: UnsafeMutablePointer<UInt8>
    private let outputBytes: Int
    private let width: Int
    private let height: Int
    private let channels: Int
    private var rowsWritten = 0

    /// Starts a file: header, EXIF and ICC profile are written, rows follow.
    /// - Parameters:
    ///   - width: pixels per row.
    ///   - height: rows.
    ///   - channels: 3 (RGB), or 4 when the rows carry a fourth byte to ignore (flatten alpha
    ///     first: it is not written).
    ///   - options: `quality` (1–100), `progressive`, `icc`, `exif` (TIFF header onwards,
    ///     without "Exif\0\0"; at most 65527 bytes, the room in one APP1 marker), `xmp`
    ///     (APP1) and `iptc` (APP13).
    /// - Throws: `PhotoError` with code `io-error` when libjpeg refuses or the EXIF block
    ///   does not fit.
    public init(width: Int, height: Int, channels: Int, options: EncodeOptions) throws(PhotoError) {
        var created: OpaquePointer?
        // XMP and IPTC markers, written as they are (each fits one marker: MetadataRewrite saw to it).
        let extra = JPEGMetadata.markers(xmp: options.xmp, iptc: options.iptc)
        let outputBytes = Self.outputBlock(width: width, height: height)
        let output = PixelPool.shared.allocate(outputBytes)
        let status = Self.withOptionalBytes(options.icc) { icc, iccCount in
            Self.withOptionalBytes(options.exif) { exif, exifCount in
                Self.withMarkers(extra) { markers, markerCount in
                    pf_jpeg_encoder_start(&created, Int32(width), Int32(height), Int32(channels),
                                          Int32(options.quality), options.progressive ? 1 : 0, 0,
                                          icc, iccCount, exif, exifCount, markers, markerCount, output, outputBytes)
                }
            }
        }
        guard let created else {
            PixelPool.shared.deallocate(output, bytes: outputBytes)
            throw PhotoError(.ioError, "JPEG encoding failed: out of memory")
        }
        handle = created
        self.output = output
        self.outputBytes = outputBytes
        self.width = width
        self.height = height
        self.channels = channels
        if status != Int32(PF_JPEG_OK) { throw failure() }
    }

    deinit {
        pf_jpeg_encoder_destroy(handle)
        PixelPool.shared.deallocate(output, bytes: outputBytes)
    }

    /// The block a file of `width` × `height` is written into: 3 bits a pixel (a photo at
    /// quality 88 with halved chroma takes about 1.4; at 95 and above a file may outgrow it),
    /// in whole MiB, so files of one size share one kept block.
    static func outputBlock(width: Int, height: Int) -> Int {
        let estimate = max(1, width * height / 8 * 3)
        return ((estimate + (1 << 20) - 1) >> 20) << 20
    }

    /// Writes the next rows (a band), top to bottom.
    public func write(_ rows: PixelRows) throws(PhotoError) {
        precondition(rows.width == width && rows.channels == channels, "rows do not fit the JPEG being written")
        precondition(rowsWritten + rows.height <= height, "more rows than the JPEG has")
        if pf_jpeg_encoder_write(handle, rows.base, rows.rowBytes, Int32(rows.height)) != Int32(PF_JPEG_OK) {
            throw failure()
        }
        rowsWritten += rows.height
    }

    /// Ends the file after the last row.
    /// - Returns: the JPEG file's bytes.
    public func finish() throws(PhotoError) -> [UInt8] {
        precondition(rowsWritten == height, "JPEG finished after \(rowsWritten) of \(height) rows")
        var bytes: UnsafePointer<UInt8>?
        var size = 0
        var owned: Int32 = 0
        guard pf_jpeg_encoder_finish(handle, &bytes, &size, &owned) == Int32(PF_JPEG_OK), let bytes else {
            throw failure()
        }
        return Array(UnsafeBufferPointer(start: bytes, count: size))
    }

    private func failure() -> PhotoError {
        PhotoError(.ioError, "JPEG encoding failed: \(String(cString: pf_jpeg_encoder_message(handle)))")
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
