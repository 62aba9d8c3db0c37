internal import CCodecs
internal import CPNG
import Pixels

/// Writes 8-bit RGB or RGBA PNG files with libpng, in memory, row band by row band.
public final class PNGEncoder: ImageWriter {
    /// zlib level 3 with the SUB and UP filters only. Measured on a 2048×1536 photo: about
    /// 3× faster than libpng's default (level 6, all five filters) for files about 10 %
    /// larger; PNG output is for screenshots, cards and transparency, not for size.
    static let compressionLevel: Int32 = 3
    static let filters: Int32 = Int32(PNG_FILTER_SUB | PNG_FILTER_UP)

    /// The C writer (`pf_png_writer *`); this object is its only owner.
    private let handle: OpaquePointer
    private let rowBytes: Int

    /// Starts a PNG (RGB for 3 channels, RGBA for 4; not interlaced); rows follow.
    /// - Parameter options: `icc` is written as `iCCP`, `exif` as `eXIf`, `xmp` as the iTXt
    ///   chunk `XML:com.adobe.xmp`; quality is ignored (and IPTC IIM has no place in PNG).
    /// - Throws: `PhotoError` `io-error` with libpng's reason (out of memory, a profile
    ///   libpng refuses).
    public convenience init(width: Int, height: Int, channels: Int, options: EncodeOptions) throws(PhotoError) {
        try self.init(width: width, height: height, rowBytes: width * channels,
                      colorType: channels == 4 ? PNG_COLOR_TYPE_RGB_ALPHA : PNG_COLOR_TYPE_RGB, bitDepth: 8,
                      icc: options.icc, exif: options.exif, xmp: options.xmp)
    }

    /// Any PNG layout libpng writes (tests use it for grey, palette, 16-bit, interlaced).
    private init(width: Int, height: Int, rowBytes: Int, colorType: Int32, bitDepth: Int32,
                 interlaced: Bool = false, palette: [UInt8]? = nil, trns: [UInt8]? = nil,
                 icc: [UInt8]? = nil, exif: [UInt8]? = nil, xmp: [UInt8]? = nil) throws(PhotoError) {
        var created: OpaquePointer?
        let palette = palette ?? [], trns = trns ?? [], icc = icc ?? [], exif = exif ?? [], xmp = xmp ?? []
        let status = palette.withUnsafeBufferPointer { pal in
            trns.withUnsafeBufferPointer { tr in
                icc.withUnsafeBufferPointer { ic in
                    exif.withUnsafeBufferPointer { ex in
                        xmp.withUnsafeBufferPointer { xm in
                            pf_png_writer_start(&created, UInt32(width), UInt32(height), colorType, bitDepth,
                                                interlaced ? 1 : 0, pal.baseAddress, Int32(pal.count / 3),
                                                tr.baseAddress, Int32(tr.count), ic.baseAddress, ic.count,
                                                ex.baseAddress, ex.count, xm.baseAddress, xm.count,
                                                Self.compressionLevel, Self.filters)
                        }
                    }
                }
            }
        }
        guard let created else { throw PhotoError(.ioError, "PNG could not be written: out of memory") }
        handle = created
        self.rowBytes = rowBytes
        if status != Int32(PF_PNG_OK) { throw failure() }
    }

    deinit { pf_png_writer_destroy(handle) }

    /// Writes the next rows (a band), top to bottom.
    public func write(_ rows: PixelRows) throws(PhotoError) {
        precondition(rows.rowBytes == rowBytes, "rows do not fit the PNG being written")
        try write(rows.base, count: rows.height)
    }

    /// Ends the file after the last row.
    /// - Returns: the PNG file's bytes.
    public func finish() throws(PhotoError) -> [UInt8] {
        var bytes: UnsafePointer<UInt8>?
        var count = 0
        guard pf_png_writer_finish(handle, &bytes, &count) == Int32(PF_PNG_OK), let bytes else { throw failure() }
        return Array(UnsafeBufferPointer(start: bytes, count: count))
    }

    private func write(_ rows: UnsafePointer<UInt8>, count: Int) throws(PhotoError) {
        if pf_png_writer_write(handle, rows, rowBytes, UInt32(count)) != Int32(PF_PNG_OK) { throw failure() }
    }

    private func failure() -> PhotoError {
        PhotoError(.ioError, "PNG could not be written: \(String(cString: pf_png_writer_message(handle)))")
    }

    /// Any PNG layout libpng writes (tests use it for grey, palette, 16-bit, interlaced).
    /// 16-bit samples are big-endian; `palette` holds RGB triples.
    static func encodeRaw(pixels: UnsafePointer<UInt8>, width: Int, height: Int, rowBytes: Int,
                          colorType: Int32, bitDepth: Int32, interlaced: Bool = false,
                          palette: [UInt8]? = nil, trns: [UInt8]? = nil,
                          icc: [UInt8]? = nil, exif: [UInt8]? = nil, xmp: [UInt8]? = nil) throws(PhotoError) -> [UInt8] {
        let writer = try PNGEncoder(width: width, height: height, rowBytes: rowBytes, colorType: colorType,
                                    bitDepth: bitDepth, interlaced: interlaced, palette: palette, trns: trns,
                                    icc: icc, exif: exif, xmp: xmp)
        for _ in 0..<pf_png_writer_passes(writer.handle) { try writer.write(pixels, count: height) }
        return try writer.finish()
    }
}
