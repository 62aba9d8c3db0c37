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
