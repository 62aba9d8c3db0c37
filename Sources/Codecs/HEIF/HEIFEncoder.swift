import Foundation
internal import CHeif
import Pixels

/// Writes HEIC (x265) and AVIF (aom) files with libheif, in memory.
///
/// Settings, chosen for a daemon on a small machine (measurements in the README/report):
/// - AVIF: aom `chroma` = `422` always — the setting known safe with libheif 1.15 and
///   Debian's aom 3.6 (4:2:0 and 4:4:4 are reported to abort the process on an assertion
///   in some builds); `speed` 8 (measured: 2.7 s at 7 → 1.5 s at 8 for a 2048×1536 photo, 4 % larger); `threads` = cores. aom here cannot encode an alpha plane
///   (libheif returns "Failed to encode frame"), so RGBA is composited over white first.
/// - HEIC: x265 `preset` `fast` (libheif's default is `slow`), 4:2:0; alpha kept.
/// - Quality: `options.quality` (libheif's own default for both encoders is 50).
///
/// libheif encodes a whole picture: rows written band by band go straight into its image
/// plane (the one full frame this format needs), and `finish()` encodes it.
public final class HEIFEncoder: ImageWriter {
    static let avifSpeed = 8
    static let x265Preset = "fast"

    private let options: EncodeOptions
    private let orientation: Int
    private let keepAlpha: Bool
    private let channels: Int
    private let width: Int
    private let height: Int
    private let image: HEIFImage
    private let plane: UnsafeMutablePointer<UInt8>
    private let stride: Int
    private var rowsWritten = 0

    /// Starts an image of `width` × `height` (RGB, or RGBA: alpha kept for HEIC, composited
    /// over white for AVIF); rows follow.
    /// - Parameters:
    ///   - options: `format` `.heic` or `.avif`; `quality` 1–100; `icc` embedded as `prof`;
    ///     `exif` (TIFF header onwards) added as the image's Exif item, `xmp` as its XMP item.
    ///   - orientation: an EXIF-style value written as `irot`/`imir` (libheif ≥ 1.15 writes
    ///     them from the encoding options; tests use it for rotated files).
    /// - Throws: `PhotoError` `io-error` with libheif's message.
    public init(width: Int, height: Int, channels: Int, options: EncodeOptions, orientation: Int) throws(PhotoError) {
        precondition(options.format == .heic || options.format == .avif, "HEIFEncoder writes heic or avif")
        self.options = options
        self.orientation = orientation
        self.width = width
        self.height = height
        self.channels = channels
        keepAlpha = channels == 4 && options.format != .avif
        var pointer: OpaquePointer?
        try heifCheck(heif_image_create(Int32(width), Int32(height), heif_colorspace_RGB,
                                        keepAlpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB, &pointer),
                      "libheif image", as: .ioError)
        guard let pointer else { throw PhotoError(.ioError, "libheif: out of memory for an image") }
        image = HEIFImage(pointer)
        try heifCheck(heif_image_add_plane(pointer, heif_channel_interleaved, Int32(width), Int32(height), 8),
                      "libheif image plane", as: .ioError)
        var stride: Int32 = 0
        guard let plane = heif_image_get_plane(pointer, heif_channel_interleaved, &stride) else {
            throw PhotoError(.ioError, "libheif: no image plane")
        }
        self.plane = plane
        self.stride = Int(stride)
    }

    /// An upright image (orientation 1).
    public convenience init(width: Int, height: Int, channels: Int, options: EncodeOptions) throws(PhotoError) {
        try self.init(width: width, height: height, channels: channels, options: options, orientation: 1)
    }

    /// Encodes a whole image as HEIC or AVIF with `irot`/`imir` for an EXIF-style `orientation`.
    /// - Returns: the file's bytes.
    /// - Throws: `PhotoError` `io-error` with libheif's message (no encoder, encoder failure).
    public static func encode(_ image: Image, options: EncodeOptions, orientation: Int) throws(PhotoError) -> [UInt8] {
        try HEIFEncoder(width: image.width, height: image.height, channels: image.channels,
                        options: options, orientation: orientation).encode(image)
    }

    /// Copies the next rows (a band) into the image plane, composited over white when alpha
    /// is not kept.
    public func write(_ rows: PixelRows) throws(PhotoError) {
        precondition(rows.width == width && rows.channels == channels, "rows do not fit the image being written")
        precondition(rowsWritten + rows.height <= height, "more rows than the image has")
        for y in 0..<rows.height {
            let target = plane + (rowsWritten + y) * stride
            if rows.channels == 4 && !keepAlpha {
                flattenRow(rows[y], into: target, width: rows.width, over: [255, 255, 255])
            } else {
                target.update(from: rows[y], count: rows.rowBytes)
            }
        }
        rowsWritten += rows.height
    }

    /// Encodes the image once every row is written.
    /// - Returns: the file's bytes.
    public func finish() throws(PhotoError) -> [UInt8] {
        precondition(rowsWritten == height, "image finished after \(rowsWritten) of \(height) rows")
        let avif = options.format == .avif
        let name = avif ? "AVIF" : "HEIC"
        let context = try HEIFContext()

        var encoderPointer: OpaquePointer?
        try heifCheck(heif_context_get_encoder_for_format(context.pointer, avif ? heif_compression_AV1 : heif_compression_HEVC,
                                                          &encoderPointer),
                      "no \(name) encoder in libheif", as: .ioError)
        guard let encoder = encoderPointer else { throw PhotoError(.ioError, "no \(name) encoder in libheif") }
        defer { heif_encoder_release(encoder) }
        try heifCheck(heif_encoder_set_lossy_quality(encoder, Int32(min(max(options.quality, 1), 100))),
                      "\(name) quality", as: .ioError)
        if avif {
            try heifCheck(heif_encoder_set_parameter_string(encoder, "chroma", "422"), "AVIF chroma", as: .ioError)
            try heifCheck(heif_encoder_set_parameter_integer(encoder, "speed", Int32(Self.avifSpeed)), "AVIF speed", as: .ioError)
            let threads = Int32(min(max(1, ProcessInfo.processInfo.activeProcessorCount), 16))
            try heifCheck(heif_encoder_set_parameter_integer(encoder, "threads", threads), "AVIF threads", as: .ioError)
        } else {
            try heifCheck(heif_encoder_set_parameter_string(encoder, "preset", Self.x265Preset), "HEIC preset", as: .ioError)
        }

        if let icc = options.icc, !icc.isEmpty {
            try heifCheck(icc.withUnsafeBytes { heif_image_set_raw_color_profile(image.pointer, "prof", $0.baseAddress, $0.count) },
                          "\(name) ICC profile", as: .ioError)
        }

        guard let encoding = heif_encoding_options_alloc() else {
            throw PhotoError(.ioError, "libheif: out of memory for encoding options")
        }
        defer { heif_encoding_options_free(encoding) }
        encoding.pointee.save_alpha_channel = keepAlpha ? 1 : 0
        encoding.pointee.image_orientation = heif_orientation(rawValue: UInt32(orientation))

        var handlePointer: OpaquePointer?
        try heifCheck(heif_context_encode_image(context.pointer, image.pointer, encoder, encoding, &handlePointer),
                      "\(name) encoding failed", as: .ioError)
        guard let handlePointer else { throw PhotoError(.ioError, "\(name) encoding returned no image") }
        let handle = HEIFHandle(handlePointer)
        if let exif = options.exif, !exif.isEmpty {
            // libheif prepends the 4-byte offset to the TIFF header itself.
            try heifCheck(exif.withUnsafeBytes { heif_context_add_exif_metadata(context.pointer, handle.pointer, $0.baseAddress, Int32($0.count)) },
                          "\(name) EXIF", as: .ioError)
        }
        if let xmp = options.xmp, !xmp.isEmpty {
            try heifCheck(xmp.withUnsafeBytes { heif_context_add_XMP_metadata(context.pointer, handle.pointer, $0.baseAddress, Int32($0.count)) },
                          "\(name) XMP", as: .ioError)
        }
        return try Self.write(context)
    }

    /// Serialises the context into memory.
    private static func write(_ context: HEIFContext) throws(PhotoError) -> [UInt8] {
        final class Sink { var bytes: [UInt8] = [] }
        let sink = Sink()
        var writer = heif_writer(writer_api_version: 1, write: { _, data, size, userdata in
            let sink = Unmanaged<Sink>.fromOpaque(userdata!).takeUnretainedValue()
            if let data, size > 0 {
                sink.bytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size))
            }
            return heif_error(code: heif_error_Ok, subcode: heif_suberror_Unspecified, message: nil)
        })
        let error = withExtendedLifetime(sink) {
            heif_context_write(context.pointer, &writer, Unmanaged.passUnretained(sink).toOpaque())
        }
        try heifCheck(error, "HEIF file could not be written", as: .ioError)
        return sink.bytes
    }
}
