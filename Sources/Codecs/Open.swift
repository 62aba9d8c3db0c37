import Pixels

/// Opens the right decoder for a file's bytes, chosen by content (magic bytes), never by
/// extension. Only the header is read: limits are checked before any pixel is decoded.
/// - Parameters:
///   - bytes: the whole file.
///   - limits: `maxPixels` and the deadline.
/// A camera raw file opens as its embedded JPEG preview (LibRaw), `info.raw` saying so.
/// - Throws: `PhotoError`: `empty-file`, `camera-raw` (a raw without a JPEG preview),
///   `unsupported-format` (naming what was found), `too-large`, `corrupt-image`.
public func openDecoder(bytes: [UInt8], limits: DecodeLimits) throws(PhotoError) -> any PhotoDecoder {
    switch sniff(bytes) {
    case .empty:
        throw PhotoError(.emptyFile, "the file is empty (0 bytes)")
    case .cameraRaw(let kind):
        // A raw alone is finished from its embedded preview (the recipe checks that it is large
        // enough for the outputs: `SourceInfo.raw`).
        let (jpeg, raw) = try RawPreview.read(bytes: bytes, kind: kind)
        guard sniff(jpeg) == .image(.jpeg) else {
            throw PhotoError(.cameraRaw, "\(kind) camera raw file: its embedded preview is not a JPEG; "
                             + "drop the camera's JPEG or HEIC with it")
        }
        let decoder = try JPEGDecoder(bytes: jpeg, limits: limits)
        decoder.info.raw = RawSource(kind: kind, width: raw.width, height: raw.height,
                                     previewWidth: decoder.info.width, previewHeight: decoder.info.height)
        return decoder
    case .unsupported(let kind):
        throw PhotoError(.unsupportedFormat, "\(kind): not a format PhotoFinish reads (JPEG, PNG, HEIC/HEIF, AVIF, WebP)")
    case .image(.jpeg):
        return try JPEGDecoder(bytes: bytes, limits: limits)
    case .image(.png):
        return try PNGDecoder(bytes: bytes, limits: limits)
    case .image(.heic), .image(.avif):
        return try HEIFDecoder(bytes: bytes, limits: limits)
    case .image(.webp):
        return try WebPDecoder(bytes: bytes, limits: limits)
    }
}

/// Starts a file in the format `options` names, for rows of `width` × `channels` bytes.
/// - Parameter channels: 3 (RGB) or 4 (RGBA; JPEG takes RGB only: flatten first).
/// - Throws: `PhotoError` (`io-error`) when the library refuses.
public func makeWriter(width: Int, height: Int, channels: Int, options: EncodeOptions) throws(PhotoError) -> any ImageWriter {
    switch options.format {
    case .jpeg:
        precondition(channels == 3, "JPEG takes RGB; flatten the alpha channel first")
        return try JPEGEncoder(width: width, height: height, channels: channels, options: options)
    case .png: return try PNGEncoder(width: width, height: height, channels: channels, options: options)
    case .heic, .avif: return try HEIFEncoder(width: width, height: height, channels: channels, options: options)
    case .webp: return try WebPEncoder(width: width, height: height, channels: channels, options: options)
    }
}

/// Encodes a finished image in the format `options` names.
/// - Throws: `PhotoError` (`io-error`) when the library refuses.
public func encodeImage(_ image: Image, options: EncodeOptions) throws(PhotoError) -> [UInt8] {
    try makeWriter(width: image.width, height: image.height, channels: image.channels, options: options).encode(image)
}
