internal import CShims
internal import CPNG
import Pixels

/// Writes 8-bit RGB or RGBA PNG files with libpng, in memory.
public enum PNGEncoder {
    /// zlib level 3 with the SUB and UP filters only. Measured on a 2048×1536 photo: about
    /// 3× faster than libpng's default (level 6, all five filters) for files about 10 %
    /// larger; PNG output is for screenshots, cards and transparency, not for size.
    static let compressionLevel: Int32 = 3
    static let filters: Int32 = Int32(PNG_FILTER_SUB | PNG_FILTER_UP)

    /// Encodes `image` as PNG (RGB for 3 channels, RGBA for 4; not interlaced).
    /// - Parameters:
    ///   - image: the pixels.
    ///   - options: `icc` is written as `iCCP`, `exif` as `eXIf`, `xmp` as the iTXt chunk
    ///     `XML:com.adobe.xmp`; quality is ignored (and IPTC IIM has no place in PNG).
    /// - Returns: the PNG file's bytes.
    /// - Throws: `PhotoError` `io-error` with libpng's reason (out of memory, a profile
    ///   libpng refuses).
    public static func encode(_ image: Image, options: EncodeOptions) throws(PhotoError) -> [UInt8] {
        let colorType = image.channels == 4 ? PNG_COLOR_TYPE_RGB_ALPHA : PNG_COLOR_TYPE_RGB
        return try image.withUnsafeRows { rows throws(PhotoError) in
            try encodeRaw(pixels: rows.base, width: rows.width, height: rows.height,
                          rowBytes: rows.rowBytes, colorType: colorType, bitDepth: 8,
                          icc: options.icc, exif: options.exif, xmp: options.xmp)
        }
    }

    /// Any PNG layout libpng writes (tests use it for grey, palette, 16-bit, interlaced).
    /// 16-bit samples are big-endian; `palette` holds RGB triples.
    static func encodeRaw(pixels: UnsafePointer<UInt8>, width: Int, height: Int, rowBytes: Int,
                          colorType: Int32, bitDepth: Int32, interlaced: Bool = false,
                          palette: [UInt8]? = nil, trns: [UInt8]? = nil,
                          icc: [UInt8]? = nil, exif: [UInt8]? = nil, xmp: [UInt8]? = nil,
                          compressionLevel: Int32 = compressionLevel,
                          filters: Int32 = filters) throws(PhotoError) -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>? = nil
        var outLength = 0
        var message = [CChar](repeating: 0, count: 256)
        let palette = palette ?? [], trns = trns ?? [], icc = icc ?? [], exif = exif ?? [], xmp = xmp ?? []
        let status = palette.withUnsafeBufferPointer { pal in
            trns.withUnsafeBufferPointer { tr in
                icc.withUnsafeBufferPointer { ic in
                    exif.withUnsafeBufferPointer { ex in
                        xmp.withUnsafeBufferPointer { xm in
                            pf_png_encode(pixels, UInt32(width), UInt32(height), rowBytes,
                                          colorType, bitDepth, interlaced ? 1 : 0,
                                          pal.baseAddress, Int32(pal.count / 3),
                                          tr.baseAddress, Int32(tr.count),
                                          ic.baseAddress, ic.count, ex.baseAddress, ex.count,
                                          xm.baseAddress, xm.count,
                                          compressionLevel, filters,
                                          &out, &outLength, &message, message.count)
                        }
                    }
                }
            }
        }
        guard status == Int32(PF_PNG_OK), let out else {
            let reason = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) },
                                as: UTF8.self)
            throw PhotoError(.ioError, "PNG could not be written: \(reason)")
        }
        defer { pf_png_free(out) }
        return [UInt8](UnsafeBufferPointer(start: out, count: outLength))
    }
}
