internal import CLibRaw

/// What a camera raw file was finished from: its embedded preview (reference, What a card holds: a
/// RAW alone is finished from its full-size preview when it has one large enough).
public struct RawSource: Sendable, Equatable {
    /// The raw format ("DNG", "CR2", "NEF", …).
    public var kind: String
    /// The raw image's own size (sensor pixels as LibRaw develops them), stored orientation.
    public var width: Int
    public var height: Int
    /// The embedded preview's size, stored orientation.
    public var previewWidth: Int
    public var previewHeight: Int
}

/// The embedded JPEG preview of a camera raw file, read with LibRaw (Debian's libraw, the
/// thread-safe build). The JPEG comes with an EXIF block LibRaw writes from the raw's own
/// facts — make, model, date, orientation — so the preview is finished like a camera JPEG.
enum RawPreview {
    /// The preview and what it was taken from.
    /// - Parameters:
    ///   - bytes: the whole raw file.
    ///   - kind: its format, as `sniff` named it.
    /// - Throws: `camera-raw` when the file has no JPEG preview LibRaw can read (the message
    ///   says what to do); `corrupt-image` when LibRaw cannot read the file at all.
    static func read(bytes: [UInt8], kind: String) throws(PhotoError) -> (jpeg: [UInt8], source: RawSource) {
        guard let processor = LibRawProcessor() else {
            throw PhotoError(.ioError, "\(kind) camera raw file: LibRaw could not start (out of memory)")
        }
        // LibRaw reads the buffer in place: it must stay alive (and unmoved) until the
        // preview is copied out, so everything happens inside this closure.
        return try bytes.withUnsafeBytes { buffer in
            Result { () throws(PhotoError) in try processor.preview(of: buffer, kind: kind) }
        }.get()
    }
}

/// One LibRaw processor (`libraw_data_t`): the only owner of its pointer, closed once.
private final class LibRawProcessor {
    private let handle: UnsafeMutablePointer<libraw_data_t>

    init?() {
        // No callbacks: LibRaw's default ones print to stderr; errors come back as codes.
        let flags = UInt32(LIBRAW_OPIONS_NO_MEMERR_CALLBACK.rawValue | LIBRAW_OPIONS_NO_DATAERR_CALLBACK.rawValue)
        guard let handle = libraw_init(flags) else { return nil }
        self.handle = handle
    }

    deinit { libraw_close(handle) }

    func preview(of buffer: UnsafeRawBufferPointer, kind: String) throws(PhotoError) -> (jpeg: [UInt8], source: RawSource) {
        func words(_ code: Int32) -> String { String(cString: libraw_strerror(code)) }
        let opened = libraw_open_buffer(handle, UnsafeMutableRawPointer(mutating: buffer.baseAddress), buffer.count)
        guard opened == LIBRAW_SUCCESS.rawValue else {
            // A raw LibRaw does not know (a camera newer than it) is still a camera raw, said
            // so; one it knows but cannot read is damaged.
            if opened == LIBRAW_FILE_UNSUPPORTED.rawValue {
                throw PhotoError(.cameraRaw, "\(kind) camera raw file LibRaw does not know (\(words(opened))): PhotoFinish "
                                 + "does not develop raw files; drop the camera's JPEG or HEIC with it")
            }
            throw PhotoError(.corruptImage, "\(kind) camera raw file: LibRaw cannot read it (\(words(opened)))")
        }
        let width = Int(handle.pointee.sizes.width), height = Int(handle.pointee.sizes.height)
        let unpacked = libraw_unpack_thumb(handle)
        guard unpacked == LIBRAW_SUCCESS.rawValue else {
            throw PhotoError(.cameraRaw, "\(kind) camera raw file with no embedded preview to finish (\(words(unpacked))): "
                             + "PhotoFinish does not develop raw files; drop the camera's JPEG or HEIC with it")
        }
        var made: Int32 = 0
        guard let image = libraw_dcraw_make_mem_thumb(handle, &made) else {
            throw PhotoError(.cameraRaw, "\(kind) camera raw file: its embedded preview cannot be read (\(words(made)))")
        }
        defer { libraw_dcraw_clear_mem(image) }
        guard image.pointee.type == LIBRAW_IMAGE_JPEG else {
            throw PhotoError(.cameraRaw, "\(kind) camera raw file: its embedded preview is a bitmap, not a JPEG; "
                             + "drop the camera's JPEG or HEIC with it")
        }
        let offset = MemoryLayout<libraw_processed_image_t>.offset(of: \libraw_processed_image_t.data)!
        let data = UnsafeRawPointer(image) + offset
        let jpeg = [UInt8](UnsafeRawBufferPointer(start: data, count: Int(image.pointee.data_size)))
        let thumb = handle.pointee.thumbnail
        return (jpeg, RawSource(kind: kind, width: width, height: height,
                                previewWidth: Int(thumb.twidth), previewHeight: Int(thumb.theight)))
    }
}
