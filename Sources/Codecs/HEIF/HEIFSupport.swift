internal import CHeif

/// libheif reports errors as a struct: turned into a `PhotoError` here, once.
func heifCheck(_ error: heif_error, _ doing: String, as code: PhotoError.Code = .corruptImage) throws(PhotoError) {
    guard error.code != heif_error_Ok else { return }
    let detail = error.message.map { String(cString: $0) } ?? "unknown libheif error"
    throw PhotoError(code, "\(doing): \(detail)")
}

/// One libheif context: the only owner of the `heif_context`.
final class HEIFContext {
    let pointer: OpaquePointer

    init() throws(PhotoError) {
        guard let pointer = heif_context_alloc() else {
            throw PhotoError(.ioError, "libheif: out of memory for a context")
        }
        self.pointer = pointer
    }

    deinit { heif_context_free(pointer) }
}

/// One image handle (owned).
final class HEIFHandle {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    deinit { heif_image_handle_release(pointer) }
}

/// One decoded or to-be-encoded image (owned).
final class HEIFImage {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    deinit { heif_image_release(pointer) }
}

/// The Orientation tag (0x0112) from IFD0 of a TIFF-headed EXIF block, or nil.
/// A tiny reader on purpose: the report only needs this one value here.
func exifOrientation(_ tiff: [UInt8]) -> Int? {
    guard tiff.count >= 8 else { return nil }
    let little: Bool
    switch (tiff[0], tiff[1]) {
    case (0x49, 0x49): little = true
    case (0x4D, 0x4D): little = false
    default: return nil
    }
    func u16(_ i: Int) -> Int? {
        guard i >= 0, i + 2 <= tiff.count else { return nil }
        return little ? Int(tiff[i]) | Int(tiff[i + 1]) << 8 : Int(tiff[i]) << 8 | Int(tiff[i + 1])
    }
    func u32(_ i: Int) -> Int? {
        guard let a = u16(i), let b = u16(i + 2) else { return nil }
        return little ? a | b << 16 : a << 16 | b
    }
    guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return nil }
    for entry in 0..<count {
        let at = ifd + 2 + entry * 12
        guard let tag = u16(at) else { return nil }
        if tag == 0x0112, u16(at + 2) == 3, let value = u16(at + 8), (1...8).contains(value) {
            return value
        }
    }
    return nil
}

/// Straight-alpha RGBA over white, into RGB.
func compositeOverWhite(_ rgba: UnsafePointer<UInt8>, _ rgb: UnsafeMutablePointer<UInt8>, width: Int) {
    for x in 0..<width {
        let a = Int(rgba[4 * x + 3]), inverse = 255 - a
        for c in 0..<3 {
            rgb[3 * x + c] = UInt8((Int(rgba[4 * x + c]) * a + 255 * inverse + 127) / 255)
        }
    }
}
