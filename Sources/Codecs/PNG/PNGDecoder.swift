internal import CCodecs
import Pixels

/// Reads PNG files with libpng: grey, grey+alpha, palette (with `tRNS`), RGB, RGBA, 1–16 bits,
/// interlaced or not, always delivered as 8-bit RGB or RGBA rows.
///
/// The header is read in `init`; pixels only in `decode`. The `iCCP` profile and the `eXIf`
/// block (before or after the image data) are exposed in `info`; the EXIF Orientation tag,
/// when present, becomes `info.orientation` (PNG has no other orientation, and browsers
/// honour `eXIf`), so the pipeline applies it like a JPEG's.
public final class PNGDecoder: PhotoDecoder {
    /// What the header says.
    public let info: SourceInfo
    /// PNG has no cheap reduced decode.
    public let scales: [Int] = [8]

    /// The file's bytes, copied once so libpng can read them across calls.
    private let bytes: PNGBytes

    /// What the last decode found damaged and went on past (`damaged: warn`).
    public private(set) var damage: Damage?

    /// Reads the PNG header and the chunks before the image data.
    /// - Parameters:
    ///   - bytes: the whole file.
    ///   - limits: `maxPixels` is checked against the header before any pixel is decoded.
    /// - Throws: `PhotoError` `empty-file`, `too-large` (over `maxPixels`), `corrupt-image`
    ///   (not a PNG, broken header, truncated before the image data).
    public init(bytes: [UInt8], limits: DecodeLimits) throws(PhotoError) {
        guard !bytes.isEmpty else { throw PhotoError(.emptyFile, "the PNG file is empty") }
        // IHDR is the first chunk (bytes 16..<24 hold width and height): check the size
        // from it before libpng reads on, so a header bomb costs nothing.
        if let (width, height) = PNGDecoder.ihdrSize(bytes) {
            try limits.checkPixels(width: width, height: height, format: "PNG")
        }
        self.bytes = PNGBytes(bytes)
        let reader = try PNGReader(self.bytes, limits: limits)
        let header = reader.header
        let width = Int(header.width), height = Int(header.height)
        try limits.checkPixels(width: width, height: height, format: "PNG")
        // A chunk before the pixels that fails its CRC (a colour profile, EXIF) is damage too.
        _ = try reader.damage(height: height, orientation: 1).map(limits.accept)
        let icc = header.icc.map { [UInt8](UnsafeBufferPointer(start: $0, count: header.icc_length)) }
        // libpng sees eXIf only before IDAT; other writers (exiftool) put it after.
        let exif = header.exif.map { [UInt8](UnsafeBufferPointer(start: $0, count: header.exif_length)) }
            ?? PNGDecoder.chunk("eXIf", in: bytes)
        let orientation = exif.flatMap { Exif.orientation($0) } ?? 1
        var info = SourceInfo(format: .png, width: width, height: height, orientation: orientation,
                              declaredOrientation: orientation, hasAlpha: header.has_alpha != 0,
                              icc: icc, exif: exif)
        info.xmp = header.xmp.map { [UInt8](UnsafeBufferPointer(start: $0, count: header.xmp_length)) }
        self.info = info
    }

    /// Decodes every row, top to bottom, as 8-bit RGB or RGBA. A chunk that fails its CRC, data
    /// that ends early or that zlib finds broken is damage (`DecodeLimits.accept`): the decode
    /// stops, or goes on with the rows libpng could not read grey.
    ///
    /// Asking 3 channels from a PNG with alpha (or `tRNS`) composites it over white, so
    /// transparent areas come out white, as a viewer with a white page would show them.
    /// Interlaced (Adam7) files are decoded whole first, then handed out row by row.
    /// - Parameters:
    ///   - eighths: must be 8 (full size).
    ///   - channels: 3 or 4.
    ///   - limits: the deadline is checked between rows.
    ///   - row: receives `width * channels` bytes per row.
    /// - Throws: `PhotoError` `corrupt-image` (libpng's message), `timeout`, or what `row` throws.
    public func decode(eighths: Int, channels: Int, limits: DecodeLimits,
                       row: (UnsafePointer<UInt8>) throws -> Void) throws {
        precondition(eighths == 8, "PNG decodes at full size only")
        precondition(channels == 3 || channels == 4, "channels must be 3 or 4")
        damage = nil
        let reader = try PNGReader(bytes, limits: limits)
        try reader.check(pf_png_start(reader.handle, Int32(channels)))
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: info.width * channels)
        defer { buffer.deallocate() }
        let orientation = (1...8).contains(info.orientation) ? info.orientation : 1
        var seen = 0
        for y in 0..<info.height {
            if y & 15 == 0 { try limits.checkDeadline() }
            try reader.check(pf_png_next_row(reader.handle, buffer))
            // Damage in this row (or before it) stops the decode before the row is handed on.
            if reader.damageCount != seen, let found = reader.damage(height: info.height, orientation: orientation) {
                seen = found.count
                damage = try limits.accept(found)
            }
            try row(buffer)
        }
    }

    /// The data of the first chunk of `type`, found by walking the chunk headers (no CRC
    /// check: libpng checks the chunks it reads; this only finds a late `eXIf`).
    static func chunk(_ type: String, in b: [UInt8]) -> [UInt8]? {
        let wanted = Array(type.utf8)
        var at = 8
        while b.count - at >= 12 {
            let length = Int(b[at]) << 24 | Int(b[at + 1]) << 16 | Int(b[at + 2]) << 8 | Int(b[at + 3])
            // The length comes from the file: compared with what is left, never added to.
            guard length <= b.count - at - 12 else { return nil }
            let end = at + 8 + length
            if b[(at + 4)..<(at + 8)].elementsEqual(wanted) { return Array(b[(at + 8)..<end]) }
            if b[(at + 4)..<(at + 8)].elementsEqual("IEND".utf8) { return nil }
            at = end + 4
        }
        return nil
    }

    /// Width and height from IHDR, when the file starts with the PNG signature and an IHDR
    /// whose CRC matches (a damaged IHDR is libpng's to report as corrupt, not too large).
    static func ihdrSize(_ b: [UInt8]) -> (Int, Int)? {
        guard b.count >= 33, b.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
              b[12..<16].elementsEqual("IHDR".utf8) else { return nil }
        func u32(_ i: Int) -> Int { Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3]) }
        guard UInt32(u32(29)) == crc32(b[12..<29]) else { return nil }
        return (u32(16), u32(20))
    }

    /// CRC-32 as PNG uses it (bitwise: only ever run over IHDR's 17 bytes).
    static func crc32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 1 ? 0xEDB8_8320 : 0) }
        }
        return ~crc
    }

}

/// The file's bytes in memory that does not move, owned here, read by libpng.
final class PNGBytes {
    let base: UnsafeMutableBufferPointer<UInt8>

    init(_ bytes: [UInt8]) {
        base = .allocate(capacity: bytes.count)
        _ = base.initialize(from: bytes)
    }

    deinit { base.deallocate() }
}

/// One libpng read struct: the only owner of the `pf_png_reader`.
final class PNGReader {
    let handle: OpaquePointer
    private let bytes: PNGBytes  // kept alive as long as libpng may read it

    /// Opens the bytes and reads the header.
    init(_ bytes: PNGBytes, limits: DecodeLimits) throws(PhotoError) {
        self.bytes = bytes
        // libpng's own guard: no side longer than the pixel budget allows (and libpng's
        // 2^31-1 ceiling), so a hostile IHDR is refused inside libpng too.
        let side = UInt32(clamping: min(limits.maxPixels, 0x7fff_ffff))
        guard let handle = pf_png_open(bytes.base.baseAddress, bytes.base.count, side, side) else {
            throw PhotoError(.corruptImage, "PNG: out of memory opening the file")
        }
        self.handle = handle
        try check(pf_png_status(handle))
    }

    deinit { pf_png_close(handle) }

    var header: pf_png_header { pf_png_get_header(handle).pointee }

    /// How many problems libpng's reading has found so far (`damage`).
    var damageCount: Int {
        var effect: Int32 = 0, row: Int32 = 0
        var message: UnsafePointer<CChar>?
        return Int(pf_png_damage(handle, &effect, &row, &message))
    }

    /// What libpng's reading found damaged so far, nil when nothing.
    func damage(height: Int, orientation: Int) -> Damage? {
        var effect: Int32 = 0, row: Int32 = 0
        var message: UnsafePointer<CChar>?
        let count = Int(pf_png_damage(handle, &effect, &row, &message))
        guard count > 0 else { return nil }
        let kind: Damage.Effect = switch effect {
        case Int32(PF_PNG_DAMAGE_MISSING): .missing
        case Int32(PF_PNG_DAMAGE_LEFT_OUT): .leftOut
        default: .wrong
        }
        let words = message.map { String(cString: $0) } ?? ""
        return Damage(reason: "PNG: " + (words.isEmpty ? "data is broken" : words), effect: kind,
                      fromRow: row < 0 ? nil : Int(row), height: height, count: count, orientation: orientation)
    }

    /// Turns a glue status into a `PhotoError`, once, here.
    func check(_ status: Int32) throws(PhotoError) {
        guard status != Int32(PF_PNG_OK) else { return }
        let message = String(cString: pf_png_message(handle))
        if message.contains("exceeds user limit") {
            throw PhotoError(.tooLarge, "PNG: \(message)")
        }
        throw PhotoError(.corruptImage, message.isEmpty ? "PNG data is broken" : "PNG: \(message)")
    }
}
