internal import CLCMS

/// Converts pixels from one ICC profile to another with lcms2 (perceptual intent), in place.
///
/// One instance owns one `cmsHTRANSFORM`. It is made with `cmsFLAGS_NOCACHE`, so `apply`
/// keeps no state between calls and one transform may be used from several threads at once.
public final class ColorTransform: @unchecked Sendable {
    // @unchecked: the transform is immutable after init and lcms2 transforms made with
    // cmsFLAGS_NOCACHE are safe to run concurrently.
    private let transform: cmsHTRANSFORM
    /// 3 (RGB) or 4 (RGBA; alpha is copied through untouched).
    public let channels: Int

    /// Builds a transform between two RGB profiles.
    /// - Parameters:
    ///   - fromICC: the source profile.
    ///   - toICC: the destination profile.
    ///   - channels: 3 or 4, the layout of the buffers `apply` will see.
    /// - Returns: nil when a profile can't be opened, isn't RGB, or lcms2 can't link them.
    public convenience init?(fromICC: [UInt8], toICC: [UInt8], channels: Int) {
        guard let source = ColorTransform.openRGB(fromICC) else { return nil }
        defer { cmsCloseProfile(source) }
        guard let destination = ColorTransform.openRGB(toICC) else { return nil }
        defer { cmsCloseProfile(destination) }
        self.init(source: source, destination: destination, channels: channels)
    }

    /// Links two open RGB profiles (the caller keeps and closes them).
    private init?(source: cmsHPROFILE, destination: cmsHPROFILE, channels: Int) {
        precondition(channels == 3 || channels == 4, "channels must be 3 or 4")
        // TYPE_RGB_8 / TYPE_RGBA_8 spelled out: the C macros are not imported into Swift.
        let format = ColorTransform.pixelFormat(channels: channels)
        var flags = UInt32(cmsFLAGS_NOCACHE)
        if channels == 4 { flags |= UInt32(cmsFLAGS_COPY_ALPHA) }
        guard let transform = cmsCreateTransform(source, format, destination, format,
                                                 UInt32(INTENT_PERCEPTUAL), flags) else { return nil }
        self.transform = transform
        self.channels = channels
    }

    deinit { cmsDeleteTransform(transform) }

    /// A transform from `icc` to lcms2's built-in sRGB.
    /// - Parameters:
    ///   - icc: the source profile.
    ///   - channels: 3 or 4.
    /// - Returns: nil when the profile can't be used (not RGB, broken).
    public static func toSRGB(from icc: [UInt8], channels: Int) -> ColorTransform? {
        guard let source = openRGB(icc) else { return nil }
        defer { cmsCloseProfile(source) }
        guard let srgb = cmsCreate_sRGBProfile() else { return nil }
        defer { cmsCloseProfile(srgb) }
        return ColorTransform(source: source, destination: srgb, channels: channels)
    }

    /// Converts every pixel of `canvas` in place, row by row.
    /// - Parameter canvas: must have `channels` channels.
    public func apply(to canvas: inout Canvas) {
        canvas.withUnsafeMutableRows { apply(to: $0) }
    }

    /// Converts rows already lent (a band being drawn) in place.
    public func apply(to rows: MutablePixelRows) {
        precondition(rows.channels == channels, "image has \(rows.channels) channels, transform \(channels)")
        for y in 0..<rows.height {
            cmsDoTransform(transform, rows[y], rows[y], UInt32(rows.width))
        }
    }

    /// A converted copy of a read-only image (a shared logo stays as it is).
    /// - Parameter image: must have `channels` channels.
    public func applied(to image: Image) -> Image {
        precondition(image.channels == channels, "image has \(image.channels) channels, transform \(channels)")
        var result = Canvas(width: image.width, height: image.height, channels: channels)
        image.withUnsafeRows { source in
            result.withUnsafeMutableRows { out in
                for y in 0..<source.height { cmsDoTransform(transform, source[y], out[y], UInt32(source.width)) }
            }
        }
        return result.finished()
    }

    private static func openRGB(_ icc: [UInt8]) -> cmsHPROFILE? {
        guard !icc.isEmpty, let count = UInt32(exactly: icc.count) else { return nil }
        let profile = icc.withUnsafeBytes { cmsOpenProfileFromMem($0.baseAddress, count) }
        guard let profile else { return nil }
        guard cmsGetColorSpace(profile) == cmsSigRgbData else {
            cmsCloseProfile(profile)
            return nil
        }
        return profile
    }

    /// lcms2's TYPE_RGB_8 = COLORSPACE_SH(PT_RGB)|CHANNELS_SH(3)|BYTES_SH(1);
    /// TYPE_RGBA_8 adds EXTRA_SH(1).
    private static func pixelFormat(channels: Int) -> UInt32 {
        let ptRGB: UInt32 = 4
        var format = (ptRGB << 16) | (3 << 3) | 1
        if channels == 4 { format |= (1 << 7) }
        return format
    }
}
