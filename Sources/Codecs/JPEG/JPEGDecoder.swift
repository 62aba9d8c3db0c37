internal import CCodecs
import Pixels

/// Reads JPEG files through libjpeg-turbo: header first (size, EXIF, ICC), then rows at any
/// scale M/8 from 1/8 to 8/8 (libjpeg's DCT scaling, so a small output never costs a full-size
/// decode). At 1/8, 1/4, 1/2 and 1/1 every step is libjpeg-turbo's own, SIMD; at 3/8, 5/8, 6/8
/// and 7/8 the blocks' inverse DCTs are ours (CCodecs' jpeg_idct.c, built for SSE2 and AVX2
/// like the resampler's loops: `ResampleKernels.current` picks the build), where libjpeg-turbo
/// has only plain C ones, slower than its full-size decode.
///
/// Hostile files are bounded: the pixel count is checked from the header before any pixel
/// is decoded, progressive files with more than 500 scans are refused, the deadline is
/// checked inside libjpeg (between scans and MCU rows) as well as between batches of rows.
/// Damaged data — libjpeg's warnings while the pixels are read: corrupt data, a premature
/// end, extraneous bytes, a bad Huffman code — stops the decode as `corrupt-image`, or under
/// `damaged: warn` is decoded as libjpeg can (grey where data is missing) and said in `damage`:
/// never a half-grey photo nobody was told about.
///
/// One decoder belongs to one thread at a time (it is not `Sendable`).
public final class JPEGDecoder: PhotoDecoder {
    /// What the header says; `orientation` comes from the EXIF block (1 when absent or invalid).
    public internal(set) var info: SourceInfo
    /// Every M/8, 1 ≤ M ≤ 8 (libjpeg's DCT scaling).
    public let scales: [Int] = Array(1...8)
    /// A baseline JPEG is decoded a few MCU rows at a time (a few hundred KB); a progressive
    /// one holds every DCT coefficient of the picture (2 bytes each, up to 3 per pixel with
    /// full-resolution chroma) whatever the scale.
    public var workingBytes: Int {
        let pixels = DecodeLimits.byteCount(width: info.width, height: info.height, channels: 1) ?? Int.max / 8
        return pf_jpeg_decoder_is_progressive(handle) != 0 ? pixels * 6 : info.width * 3 * 64
    }

    /// Warnings found in Swift (added to libjpeg's).
    private let notes: [String]

    /// What the last decode found damaged and went on past (`damaged: warn`).
    public private(set) var damage: Damage?

    /// The C decoder (`pf_jpeg_decoder *`); this object is its only owner.
    private let handle: OpaquePointer

    /// The file, which libjpeg reads in place (no copy of a few MB per photo): kept here as long
    /// as the decoder, its address handed over again before every call that reads it (`reading`).
    private let bytes: [UInt8]

    /// Rows fetched from C per call: enough to amortise the call and the jump point,
    /// small enough to stay in cache.
    private static let rowBatch = 16

    /// Opens a JPEG and reads its header; no pixel is decoded yet.
    /// - Parameters:
    ///   - bytes: the whole file (kept by the decoder and read in place).
    ///   - limits: `maxFileBytes` and `maxPixels` are checked here.
    /// - Throws: `PhotoError`: `empty-file`, `too-large` (naming the size and the limit),
    ///   `corrupt-image` (with libjpeg's reason, or where the data ends early).
    public init(bytes: [UInt8], limits: DecodeLimits) throws(PhotoError) {
        guard !bytes.isEmpty else {
            throw PhotoError(.emptyFile, "the file is empty (0 bytes)")
        }
        guard bytes.count <= limits.maxFileBytes else {
            throw PhotoError(.tooLarge, "file of \(bytes.count) bytes is over the limit of \(limits.maxFileBytes) bytes (maxFileBytes)")
        }
        guard let handle = pf_jpeg_decoder_create() else {
            throw PhotoError(.ioError, "out of memory while opening the JPEG decoder")
        }
        let status = bytes.withUnsafeBufferPointer {
            pf_jpeg_decoder_read_header(handle, $0.baseAddress, $0.count)
        }
        if status != Int32(PF_JPEG_OK) {
            let error = JPEGDecoder.error(handle, status)
            pf_jpeg_decoder_destroy(handle)
            throw error
        }
        let width = Int(pf_jpeg_decoder_width(handle))
        let height = Int(pf_jpeg_decoder_height(handle))
        guard width > 0, height > 0 else {
            pf_jpeg_decoder_destroy(handle)
            throw PhotoError(.corruptImage, "JPEG header declares an empty image (\(width)×\(height))")
        }
        do {
            try limits.checkPixels(width: width, height: height, format: "JPEG")
        } catch {
            pf_jpeg_decoder_destroy(handle)
            throw error
        }
        var exifCount = 0
        let exif = pf_jpeg_decoder_exif(handle, &exifCount).map { Array(UnsafeBufferPointer(start: $0, count: exifCount)) }
        var iccCount = 0
        var icc = pf_jpeg_decoder_icc(handle, &iccCount).map { Array(UnsafeBufferPointer(start: $0, count: iccCount)) }
        // CMYK sources come out as (naively converted) RGB; their CMYK profile does not
        // describe those pixels, so it must not travel on as if it did.
        var notes: [String] = []
        if let profile = icc, profile.count >= 20, profile[16..<20].elementsEqual("CMYK".utf8) {
            icc = nil
            notes.append("CMYK colour profile not applied: colours converted to RGB without it")
        }
        let orientation = exif.flatMap { Exif.orientation($0) } ?? 1
        // The saved markers live in libjpeg's pool until the first decode: read them now.
        var markers: [(code: Int, bytes: ArraySlice<UInt8>)] = []
        var code: Int32 = 0, size = 0
        while let p = pf_jpeg_decoder_marker(handle, Int32(markers.count), &code, &size) {
            markers.append((Int(code), ArraySlice(UnsafeBufferPointer(start: p, count: size))))
        }
        let found = JPEGMetadata.read(markers)
        self.handle = handle
        self.bytes = bytes
        self.notes = notes
        var info = SourceInfo(format: .jpeg, width: width, height: height,
                              orientation: orientation, declaredOrientation: orientation,
                              hasAlpha: false, icc: icc, exif: exif)
        info.xmp = found.xmp
        info.xmpExtended = found.xmpExtended
        info.iptc = found.iptc
        self.info = info
    }

    deinit { pf_jpeg_decoder_destroy(handle) }

    /// A call into libjpeg that reads the file: the bytes' address is given to the C decoder first
    /// (an array's storage is only promised for the length of `withUnsafeBufferPointer`).
    private func reading(_ call: (OpaquePointer) -> Int32) -> Int32 {
        bytes.withUnsafeBufferPointer { buffer in
            pf_jpeg_decoder_rebase(handle, buffer.baseAddress)
            return call(handle)
        }
    }

    /// Notes about the file that are not damaged pixels (`damage` says those), in words: a
    /// CMYK profile not applied, libjpeg's warnings about a header ("Corrupt JPEG data: bad ICC
    /// marker") or padding before the end marker. Past the first three they are counted.
    public var warnings: [String] {
        var reported: [String] = []
        for index in 0..<pf_jpeg_decoder_warning_count(handle) {
            let note = String(cString: pf_jpeg_decoder_warning(handle, index))
            if !reported.contains(note) { reported.append(note) }  // a header read again says it again
        }
        let total = reported.count + Int(pf_jpeg_decoder_warnings_dropped(handle))
        var result = notes + reported.prefix(3)
        if total > 3 { result.append("… and \(total - 3) more JPEG warnings") }
        return result
    }

    /// Decodes every row, top to bottom, in stored orientation. Can be called again (the
    /// header is read again from the kept bytes).
    /// - Parameters:
    ///   - eighths: the scale, 1 to 8 (`scaledSize(eighths:)` gives the size).
    ///   - channels: 3 (RGB) or 4 (RGBA, alpha 255). Grey and CMYK sources come out as RGB.
    ///   - limits: the deadline is checked inside libjpeg and between batches of rows.
    ///   - row: called once per row with `width * channels` bytes, valid only during the call.
    /// - Throws: `PhotoError` (`corrupt-image`, `timeout`), or whatever `row` throws.
    public func decode(eighths: Int, channels: Int, limits: DecodeLimits,
                       row: (UnsafePointer<UInt8>) throws -> Void) throws {
        precondition(scales.contains(eighths), "JPEG scale \(eighths)/8 is not one of 1/8 to 8/8")
        precondition(channels == 3 || channels == 4, "channels must be 3 or 4")
        try limits.checkDeadline()
        pf_jpeg_decoder_set_timeout(handle, JPEGDecoder.nanosecondsLeft(limits.deadline))
        damage = nil

        var width: Int32 = 0
        var height: Int32 = 0
        let simd = ResampleKernels.current == .avx2 ? PF_JPEG_SIMD_AVX2 : PF_JPEG_SIMD_SSE2
        try check(reading { pf_jpeg_decoder_start($0, Int32(eighths), Int32(channels), Int32(simd), &width, &height) })
        try checkDamage(limits)
        let stride = Int(width) * channels
        let batch = JPEGDecoder.rowBatch
        // One buffer for the whole decode: no allocation per row.
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: stride * batch)
        defer { buffer.deallocate() }
        var y = 0
        while y < Int(height) {
            var got: Int32 = 0
            try check(reading { pf_jpeg_decoder_read_rows($0, buffer, stride, Int32(batch), &got) })
            guard got > 0 else {
                throw PhotoError(.corruptImage, "JPEG decoder delivered only \(y) of \(height) rows")
            }
            // Damage found in these rows stops the decode before they are handed on (`fail`).
            try checkDamage(limits)
            for i in 0..<Int(got) {
                try row(UnsafePointer(buffer + i * stride))
            }
            y += Int(got)
            try limits.checkDeadline()
        }
        try check(reading { pf_jpeg_decoder_finish($0) })
        try checkDamage(limits)
    }

    /// Luma rows per chroma row (2 for 4:2:0, 1 for 4:2:2) when the file can be read as
    /// planes (`decodePlanes`): YCbCr with chroma halved across; nil otherwise.
    public var planarChromaRows: Int? {
        let rows = Int(pf_jpeg_decoder_planar_rows(handle))
        return rows == 0 ? nil : rows
    }

    /// Decodes the picture as libjpeg stores it: luma and the two halved chroma planes, no
    /// upsampling, no colour conversion, at full scale (only when `planarChromaRows`).
    /// - Parameters:
    ///   - limits: the deadline, as in `decode`.
    ///   - band: called with each band of rows (8 or 16 luma rows, 8 chroma rows; the last
    ///     band's rows are clipped to the picture), valid only during the call.
    /// - Throws: `PhotoError`, or whatever `band` throws.
    public func decodePlanes(limits: DecodeLimits, band: (PlaneRows) throws -> Void) throws {
        guard let lumaPerChroma = planarChromaRows else { preconditionFailure("not a planar JPEG") }
        try limits.checkDeadline()
        pf_jpeg_decoder_set_timeout(handle, JPEGDecoder.nanosecondsLeft(limits.deadline))
        damage = nil
        var lumaStride: Int32 = 0, chromaStride: Int32 = 0
        try check(reading { pf_jpeg_decoder_start_planes($0, &lumaStride, &chromaStride) })
        try checkDamage(limits)
        let width = info.width, height = info.height
        let chromaHeight = (height + lumaPerChroma - 1) / lumaPerChroma
        let lumaRows = 8 * lumaPerChroma
        let luma = UnsafeMutablePointer<UInt8>.allocate(capacity: Int(lumaStride) * lumaRows)
        let cb = UnsafeMutablePointer<UInt8>.allocate(capacity: Int(chromaStride) * 8)
        let cr = UnsafeMutablePointer<UInt8>.allocate(capacity: Int(chromaStride) * 8)
        defer { luma.deallocate(); cb.deallocate(); cr.deallocate() }
        var top = 0
        while top < height {
            var got: Int32 = 0
            try check(reading { pf_jpeg_decoder_read_planes($0, luma, cb, cr, &got) })
            guard got > 0 else {
                throw PhotoError(.corruptImage, "JPEG decoder delivered only \(top) of \(height) rows")
            }
            try checkDamage(limits)
            let chromaTop = top / lumaPerChroma
            try band(PlaneRows(top: top, lumaRows: min(Int(got), height - top), luma: luma, lumaStride: Int(lumaStride),
                               chromaTop: chromaTop, chromaRows: min(8, chromaHeight - chromaTop),
                               cb: cb, cr: cr, chromaStride: Int(chromaStride), width: width))
            top += Int(got)
            try limits.checkDeadline()
        }
        try check(reading { pf_jpeg_decoder_finish($0) })
        try checkDamage(limits)
    }

    /// Takes the damage libjpeg reported so far into `damage`, or stops the decode with it.
    /// - Throws: `corrupt-image` under `damaged: fail`, or when no row is left.
    private func checkDamage(_ limits: DecodeLimits) throws(PhotoError) {
        var effect: Int32 = 0, row: Int32 = 0
        var message: UnsafePointer<CChar>?
        let count = Int(pf_jpeg_decoder_damage(handle, &effect, &row, &message))
        guard count > 0, count != damage?.count else { return }
        let kind: Damage.Effect = switch effect {
        case Int32(PF_JPEG_DAMAGE_MISSING): .missing
        case Int32(PF_JPEG_DAMAGE_BLURRED): .blurred
        default: .wrong
        }
        damage = try limits.accept(Damage(reason: message.map { String(cString: $0) } ?? "corrupt JPEG data", effect: kind,
                                          fromRow: Int(row), height: info.height, count: count,
                                          orientation: (1...8).contains(info.orientation) ? info.orientation : 1))
    }

    /// Throws the `PhotoError` for a C status other than OK.
    private func check(_ status: Int32) throws(PhotoError) {
        if status != Int32(PF_JPEG_OK) { throw JPEGDecoder.error(handle, status) }
    }

    /// The error a person reads for a C status.
    private static func error(_ handle: OpaquePointer, _ status: Int32) -> PhotoError {
        let message = String(cString: pf_jpeg_decoder_message(handle))
        switch status {
        case Int32(PF_JPEG_EOF), Int32(PF_JPEG_TOO_MANY_SCANS):
            return PhotoError(.corruptImage, message)
        case Int32(PF_JPEG_TOO_LARGE):
            return PhotoError(.tooLarge, message)
        case Int32(PF_JPEG_STOPPED):
            return PhotoError(.timeout, message)
        case Int32(PF_JPEG_NO_MEMORY):
            return PhotoError(.ioError, "out of memory while decoding the JPEG")
        case Int32(PF_JPEG_BAD_STATE):
            preconditionFailure("JPEG decoder called out of order")
        default:
            return PhotoError(.corruptImage, "JPEG data is broken: \(message)")
        }
    }

    /// Time left before `deadline`, for the C side's own clock; -1 for none.
    private static func nanosecondsLeft(_ deadline: ContinuousClock.Instant?) -> Int64 {
        guard let deadline else { return -1 }
        let left = deadline - ContinuousClock.now
        let (seconds, attoseconds) = left.components
        if seconds < 0 { return 0 }
        if seconds > 1_000_000_000 { return -1 }
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
