/// What a file is, found from its first bytes (never from its name).
public enum SniffResult: Equatable, Sendable {
    /// A format PhotoFinish reads.
    case image(ImageFormat)
    /// A camera raw file, named by its usual extension ("DNG", "CR3", "NEF", …, or
    /// "camera raw" when the maker is known but the format is not).
    case cameraRaw(String)
    /// Something else, named for a person ("GIF", "PDF", "text", "unknown (first bytes 0x…)").
    case unsupported(String)
    /// Zero bytes.
    case empty

    /// True for a picture of any kind, read or not (JPEG, a camera raw, GIF, TIFF, BMP, PSD…);
    /// false for what is no picture at all (text, PDF, XML, video, audio, archives, unknown
    /// bytes) and for an empty file.
    public var isPicture: Bool {
        switch self {
        case .image, .cameraRaw: true
        case .unsupported(let kind): Self.pictureKinds.contains(kind)
        case .empty: false
        }
    }

    /// The `unsupported` kinds that are pictures, in the names `sniff` gives them.
    static let pictureKinds: Set<String> = ["TIFF", "GIF", "BMP", "JPEG 2000", "JPEG XL", "PSD", "ICO", "OpenEXR", "SVG"]

    /// The report's error for anything that is not a readable image; nil for `.image`.
    public var error: PhotoError? {
        switch self {
        case .image: nil
        case .cameraRaw(let kind):
            PhotoError(.cameraRaw, "\(kind) camera raw file: not converted (export a JPEG or HEIC from the raw developer)")
        case .unsupported(let kind):
            PhotoError(.unsupportedFormat, "\(kind) is not a supported format (JPEG, PNG, HEIC and AVIF are)")
        case .empty:
            PhotoError(.emptyFile, "the file is empty (0 bytes)")
        }
    }
}

/// Finds a file's format from its content (magic bytes), never its extension.
///
/// Reads only what it needs of `bytes` (the first few KiB are enough) and never traps on
/// garbage: every offset taken from the file is bounds-checked.
/// - Parameter bytes: the file's bytes, or at least its first 4 KiB.
public func sniff(_ bytes: [UInt8]) -> SniffResult {
    Sniffer(bytes).result()
}

private struct Sniffer {
    let b: [UInt8]

    init(_ bytes: [UInt8]) { b = bytes }

    func has(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
        offset >= 0 && offset + prefix.count <= b.count && b[offset..<(offset + prefix.count)].elementsEqual(prefix)
    }

    func has(_ ascii: String, at offset: Int = 0) -> Bool { has(Array(ascii.utf8), at: offset) }

    func ascii(_ offset: Int, _ count: Int) -> String? {
        guard offset >= 0, offset + count <= b.count else { return nil }
        return String(decoding: b[offset..<(offset + count)], as: UTF8.self)
    }

    func result() -> SniffResult {
        if b.isEmpty { return .empty }
        if has([0xFF, 0xD8, 0xFF]) { return .image(.jpeg) }
        if has([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .image(.png) }
        if has("ftyp", at: 4) { return isoMedia() }
        if has("II*\0") || has("MM\0*") { return tiff(littleEndian: b[0] == 0x49) }
        if has("IIRO") || has("IIRS") || has("MMOR") { return .cameraRaw("ORF") }
        if has("IIU\0") { return .cameraRaw("RW2") }
        if has("II+\0") || has("MM\0+") { return .unsupported("TIFF") } // BigTIFF
        if has("FUJIFILMCCD-RAW") { return .cameraRaw("RAF") }
        if has([0x00, 0x4D, 0x52, 0x4D]) { return .cameraRaw("MRW") }
        if has("FOVb") { return .cameraRaw("X3F") }
        if has("GIF87a") || has("GIF89a") { return .unsupported("GIF") }
        if has("RIFF") {
            if has("WEBP", at: 8) { return .image(.webp) }
            if has("AVI ", at: 8) { return .unsupported("AVI video") }
            if has("WAVE", at: 8) { return .unsupported("WAV audio") }
            return .unsupported("RIFF file")
        }
        if has("BM"), b.count >= 18, [12, 40, 52, 56, 64, 108, 124].contains(Int(b[14]) | Int(b[15]) << 8) {
            return .unsupported("BMP")
        }
        if has([0x00, 0x00, 0x00, 0x0C, 0x6A, 0x50, 0x20, 0x20, 0x0D, 0x0A, 0x87, 0x0A])
            || has([0xFF, 0x4F, 0xFF, 0x51]) { return .unsupported("JPEG 2000") }
        if has([0xFF, 0x0A]) || has([0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) {
            return .unsupported("JPEG XL")
        }
        if has("8BPS") { return .unsupported("PSD") }
        if has("%PDF-") { return .unsupported("PDF") }
        if has("PK\u{03}\u{04}") || has("PK\u{05}\u{06}") { return .unsupported("ZIP") }
        if has([0x1F, 0x8B]) { return .unsupported("gzip") }
        if has([0x1A, 0x45, 0xDF, 0xA3]) { return .unsupported("Matroska/WebM video") }
        if has([0x00, 0x00, 0x01, 0x00]) && b.count >= 22 && b[4] > 0 { return .unsupported("ICO") }
        if has([0x76, 0x2F, 0x31, 0x01]) { return .unsupported("OpenEXR") }
        if let markup = markup() { return .unsupported(markup) }
        if isText() { return .unsupported("text") }
        let hex = b.prefix(8).map { byte -> String in
            let digits = "0123456789abcdef".map { $0 }
            return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
        }.joined()
        return .unsupported("unknown (first bytes 0x\(hex))")
    }

    /// ISO base media: HEIF/AVIF stills, CR3 raws, MP4/QuickTime video, by brand.
    func isoMedia() -> SniffResult {
        let boxSize = b.count >= 4 ? Int(b[0]) << 24 | Int(b[1]) << 16 | Int(b[2]) << 8 | Int(b[3]) : 0
        guard let major = ascii(8, 4) else { return .unsupported("ISO media (truncated)") }
        var compatible: [String] = []
        var offset = 16
        let end = min(max(boxSize, 16), b.count, 16 + 4 * 64)
        while offset + 4 <= end, let brand = ascii(offset, 4) {
            compatible.append(brand)
            offset += 4
        }
        let brands = [major] + compatible
        let heic: Set = ["heic", "heix", "hevc", "hevx", "heim", "heis"]
        let heifGeneric: Set = ["mif1", "msf1"]
        let avif: Set = ["avif", "avis"]
        if brands.contains("crx ") { return .cameraRaw("CR3") }
        if heic.contains(major) { return .image(.heic) }
        if avif.contains(major) { return .image(.avif) }
        if heifGeneric.contains(major) {
            if compatible.contains(where: heic.contains) { return .image(.heic) }
            if compatible.contains(where: avif.contains) { return .image(.avif) }
            return .image(.heic)
        }
        if major == "qt  " { return .unsupported("QuickTime video") }
        if major == "jp2 " || major == "jpx " { return .unsupported("JPEG 2000") }
        if major == "jxl " { return .unsupported("JPEG XL") }
        if ["M4A ", "M4B ", "M4P "].contains(major) { return .unsupported("MP4 audio") }
        if major.hasPrefix("3g") { return .unsupported("3GP video") }
        // A still image that declares HEIF only among its compatible brands.
        if compatible.contains(where: heic.contains) { return .image(.heic) }
        if compatible.contains(where: avif.contains) { return .image(.avif) }
        let video: Set = ["isom", "iso2", "iso4", "iso5", "iso6", "mp41", "mp42", "avc1", "M4V ", "dash", "MSNV", "f4v "]
        if video.contains(major) || brands.contains(where: video.contains) { return .unsupported("MP4 video") }
        return .unsupported("ISO media (brand \(major.filter { $0.isASCII && !$0.isWhitespace }))")
    }

    /// TIFF containers: DNG and maker raws, or a plain TIFF.
    func tiff(littleEndian: Bool) -> SniffResult {
        if has("CR", at: 8) { return .cameraRaw("CR2") }
        let reader = TIFFReader(bytes: b, littleEndian: littleEndian)
        let tags = reader.ifd0()
        if tags.dngVersion { return .cameraRaw("DNG") }
        if let make = tags.make?.uppercased() {
            let makers: [(String, String)] = [
                ("NIKON", "NEF"), ("SONY", "ARW"), ("PENTAX", "PEF"), ("RICOH", "PEF"), ("CANON", "CR2"),
                ("OLYMPUS", "ORF"), ("OM DIGITAL", "ORF"), ("PANASONIC", "RW2"), ("LEICA", "camera raw"),
                ("FUJIFILM", "camera raw"), ("HASSELBLAD", "3FR"), ("PHASE ONE", "IIQ"), ("LEAF", "camera raw"),
                ("KODAK", "camera raw"), ("EASTMAN KODAK", "camera raw"), ("SAMSUNG", "SRW"), ("MAMIYA", "MEF"),
                ("SIGMA", "camera raw"), ("SEIKO EPSON", "ERF"), ("MINOLTA", "camera raw"), ("KONICA MINOLTA", "camera raw"),
            ]
            for (prefix, kind) in makers where make.hasPrefix(prefix) { return .cameraRaw(kind) }
        }
        return .unsupported("TIFF")
    }

    /// SVG, XML, HTML by their opening (after a BOM and white space).
    func markup() -> String? {
        var start = has([0xEF, 0xBB, 0xBF]) ? 3 : 0
        while start < b.count, [0x20, 0x09, 0x0A, 0x0D].contains(b[start]) { start += 1 }
        guard start < b.count, b[start] == UInt8(ascii: "<") else { return nil }
        let head = String(decoding: b[start..<min(b.count, start + 1024)], as: UTF8.self).lowercased()
        if head.hasPrefix("<svg") || (head.hasPrefix("<?xml") && head.contains("<svg")) { return "SVG" }
        if head.hasPrefix("<!doctype svg") { return "SVG" }
        if head.hasPrefix("<!doctype html") || head.hasPrefix("<html") { return "HTML" }
        if head.hasPrefix("<?xml") { return "XML" }
        return nil
    }

    /// Valid UTF-8 without control characters other than white space, in the first 4 KiB.
    func isText() -> Bool {
        var sample = Array(b.prefix(4096))
        // A cut in the middle of a multi-byte character at the end of the sample is fine.
        if b.count > 4096 { while let last = sample.last, last & 0xC0 == 0x80 { sample.removeLast() }; if let last = sample.last, last >= 0xC0 { sample.removeLast() } }
        guard String(validating: sample, as: UTF8.self) != nil else { return false }
        return !sample.contains { $0 < 0x20 && ![0x09, 0x0A, 0x0C, 0x0D].contains($0) || $0 == 0x7F }
    }
}

/// Reads IFD0 of a TIFF structure defensively: every offset is checked against the data.
struct TIFFReader {
    let bytes: [UInt8]
    let littleEndian: Bool

    struct IFD0 {
        var dngVersion = false
        var make: String?
    }

    func u16(_ offset: Int) -> Int? {
        guard offset >= 0, offset + 2 <= bytes.count else { return nil }
        let a = Int(bytes[offset]), b = Int(bytes[offset + 1])
        return littleEndian ? a | b << 8 : a << 8 | b
    }

    func u32(_ offset: Int) -> Int? {
        guard let lo = u16(littleEndian ? offset : offset + 2), let hi = u16(littleEndian ? offset + 2 : offset) else { return nil }
        return hi << 16 | lo
    }

    func ifd0() -> IFD0 {
        var result = IFD0()
        guard let start = u32(4), let count = u16(start) else { return result }
        for i in 0..<min(count, 1024) {
            let entry = start + 2 + 12 * i
            guard let tag = u16(entry), let type = u16(entry + 2), let n = u32(entry + 4) else { break }
            switch tag {
            case 0xC612: result.dngVersion = true
            case 0x010F where type == 2 && n > 0:
                let length = min(n, 64)
                let at = n <= 4 ? entry + 8 : (u32(entry + 8) ?? -1)
                guard at >= 0, at + length <= bytes.count else { continue }
                let text = String(decoding: bytes[at..<(at + length)].prefix { $0 != 0 }, as: UTF8.self)
                result.make = text.trimmingSpaces
            default: break
            }
        }
        return result
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return String(s)
    }
}
