import Codecs
import Pixels

/// Decoding a whole photo straight to the upright size it will be shown at, for whole-set
/// outputs (stitch): the header is read first, the JPEG scale (M/8) is the smallest that still
/// covers the target, rows stream into the resampler, and only the small result is ever
/// whole in memory.
public enum UprightDecode {
    /// What the header says, without decoding a pixel.
    public struct Header: Sendable {
        /// The size as a person sees it.
        public var upright: OutputPlan.Size
        /// The EXIF orientation still to apply to the decoded pixels.
        public var orientation: Int
    }

    /// Reads a photo's upright size from its header.
    /// - Throws: `PhotoError` (unreadable, unsupported, too large).
    public static func header(bytes: [UInt8], limits: DecodeLimits) throws(PhotoError) -> Header {
        let info = try openDecoder(bytes: bytes, limits: limits).info
        let orientation = PhotoFinisher.orientationToApply(info)
        let stored = OutputPlan.Size(info.width, info.height)
        return Header(upright: Layout.swapsAxes(orientation) ? stored.swapped : stored, orientation: orientation)
    }

    /// Decodes `bytes` to an upright, opaque RGB image of exactly `size`, in sRGB.
    /// - Parameters:
    ///   - size: the upright target size (smaller or larger than the photo).
    ///   - background: what transparent pixels are flattened over (R, G, B).
    ///   - limits: `maxPixels` and the deadline.
    /// - Returns: the image and the decode scale used, in eighths.
    /// - Throws: `PhotoError` with the report's code.
    public static func decode(bytes: [UInt8], size: OutputPlan.Size, background: [UInt8],
                              limits: DecodeLimits) throws(PhotoError) -> (image: Image, eighths: Int) {
        let decoder = try openDecoder(bytes: bytes, limits: limits)
        let info = decoder.info
        let orientation = PhotoFinisher.orientationToApply(info)
        let stored = OutputPlan.Size(info.width, info.height)
        let swaps = Layout.swapsAxes(orientation)
        let whole = PixelRect(x: 0, y: 0, width: stored.width, height: stored.height)
        let plan = OutputPlan(crop: nil, uprightCrop: swaps ? PixelRect(x: 0, y: 0, width: stored.height, height: stored.width) : whole,
                              storedCrop: whole, upright: size, stored: swaps ? size.swapped : size)
        let (scale, resizers) = try PhotoFinisher.resample(decoder, into: [plan], limits: limits)
        var image = flattened(Orientation.apply(resizers[0].finish(), exif: orientation), over: background)
        // A story mixes photos from several devices: everything is brought to sRGB, the one
        // profile a shared long image can honestly carry.
        if let icc = info.icc, !ICC.isSRGB(icc), let transform = ColorTransform.toSRGB(from: icc, channels: 3) {
            transform.apply(to: &image)
        }
        return (image.finished(), scale.eighths)
    }
}
