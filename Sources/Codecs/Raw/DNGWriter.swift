/// Writes a small, real DNG for the demo's memory card (a RAW beside its JPEG) and for tests: a TIFF
/// whose first directory is the full-size JPEG preview a camera embeds (NewSubfileType 1,
/// compression 7) and whose SubIFD holds the raw sensor data (16-bit Bayer CFA, RGGB,
/// uncompressed, flat grey). LibRaw reads it as any camera's DNG: make, model, date,
/// orientation, the raw's size and the preview.
public enum DNGWriter {
    /// The DNG's facts.
    public struct Facts: Sendable {
        public var make = "Canon"
        public var model = "Canon EOS R5"
        /// EXIF form, `YYYY:MM:DD HH:MM:SS`.
        public var date = "2026:11:29 15:04:05"
        /// EXIF orientation of the raw (and so of its preview), 1–8.
        public var orientation = 1
        public init() {}
    }

    /// A DNG of `rawWidth` × `rawHeight` sensor pixels embedding `preview` (a baseline JPEG of
    /// `previewWidth` × `previewHeight`, stored orientation).
    public static func dng(preview: [UInt8], previewWidth: Int, previewHeight: Int, rawWidth: Int, rawHeight: Int,
                           facts: Facts = Facts()) -> [UInt8] {
        precondition(rawWidth > 0 && rawHeight > 0 && rawWidth % 2 == 0 && rawHeight % 2 == 0, "a Bayer raw has even sides")
        let raw = [UInt8](repeating: 0x08, count: rawWidth * rawHeight * 2)
        func ascii(_ s: String) -> [UInt8] { Array(s.utf8) + [0] }
        // Offsets are filled in after the layout: header, IFD0, its data, SubIFD, its data,
        // preview, raw.
        func ifd0(subIFD: Int, preview offset: Int) -> [Entry] {
            [
                Entry(0x00FE, .long, [1]),                                        // NewSubfileType: preview
                Entry(0x0100, .long, [previewWidth]), Entry(0x0101, .long, [previewHeight]),
                Entry(0x0102, .short, [8, 8, 8]), Entry(0x0103, .short, [7]),   // JPEG
                Entry(0x0106, .short, [6]),                                       // YCbCr
                Entry(0x010F, ascii(facts.make)), Entry(0x0110, ascii(facts.model)),
                Entry(0x0111, .long, [offset]), Entry(0x0112, .short, [facts.orientation]),
                Entry(0x0115, .short, [3]), Entry(0x0116, .long, [previewHeight]),
                Entry(0x0117, .long, [preview.count]),
                Entry(0x0132, ascii(facts.date)),
                Entry(0x014A, .long, [subIFD]),
                Entry(0xC612, .byte, [1, 4, 0, 0]),                               // DNGVersion 1.4
                Entry(0xC614, ascii(facts.model)),                                // UniqueCameraModel
            ]
        }
        func sub(raw offset: Int) -> [Entry] {
            [
                Entry(0x00FE, .long, [0]),
                Entry(0x0100, .long, [rawWidth]), Entry(0x0101, .long, [rawHeight]),
                Entry(0x0102, .short, [16]), Entry(0x0103, .short, [1]), Entry(0x0106, .short, [32803]),  // CFA
                Entry(0x0111, .long, [offset]), Entry(0x0115, .short, [1]), Entry(0x0116, .long, [rawHeight]),
                Entry(0x0117, .long, [raw.count]),
                Entry(0x828D, .short, [2, 2]), Entry(0x828E, .byte, [0, 1, 1, 2]),  // RGGB
                Entry(0xC61D, .long, [65535]),                                       // WhiteLevel
            ]
        }
        let first = 8
        let ifd0Size = directorySize(ifd0(subIFD: 0, preview: 0))
        let subAt = first + ifd0Size
        let subSize = directorySize(sub(raw: 0))
        let previewAt = subAt + subSize
        let rawAt = previewAt + preview.count + preview.count % 2
        var out: [UInt8] = [0x49, 0x49, 0x2A, 0x00] + le32(first)
        out += directory(ifd0(subIFD: subAt, preview: previewAt), at: first)
        out += directory(sub(raw: rawAt), at: subAt)
        out += preview + (preview.count % 2 == 1 ? [0] : [])
        out += raw
        return out
    }

    enum FieldType: Int { case byte = 1, ascii = 2, short = 3, long = 4
        var size: Int { self == .short ? 2 : self == .long ? 4 : 1 }
    }

    /// One IFD entry and its values.
    struct Entry {
        var tag: Int
        var type: FieldType
        var values: [Int]
        init(_ tag: Int, _ type: FieldType, _ values: [Int]) { self.tag = tag; self.type = type; self.values = values }
        init(_ tag: Int, _ text: [UInt8]) { self.init(tag, .ascii, text.map(Int.init)) }

        var bytes: [UInt8] {
            values.flatMap { v -> [UInt8] in
                switch type {
                case .byte, .ascii: [UInt8(v)]
                case .short: [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)]
                case .long: le32(v)
                }
            }
        }
    }

    /// The bytes a directory takes: entries, next-IFD link, and the values over 4 bytes.
    static func directorySize(_ entries: [Entry]) -> Int {
        2 + 12 * entries.count + 4 + entries.map { $0.bytes.count > 4 ? $0.bytes.count + $0.bytes.count % 2 : 0 }.reduce(0, +)
    }

    /// A directory written at `offset`, its long values right after it.
    static func directory(_ entries: [Entry], at offset: Int) -> [UInt8] {
        let sorted = entries.sorted { $0.tag < $1.tag }
        var head: [UInt8] = [UInt8(sorted.count & 0xFF), UInt8(sorted.count >> 8)]
        var data: [UInt8] = []
        let dataAt = offset + 2 + 12 * sorted.count + 4
        for e in sorted {
            let bytes = e.bytes
            head += [UInt8(e.tag & 0xFF), UInt8(e.tag >> 8), UInt8(e.type.rawValue), 0] + le32(e.values.count)
            if bytes.count <= 4 {
                head += bytes + [UInt8](repeating: 0, count: 4 - bytes.count)
            } else {
                head += le32(dataAt + data.count)
                data += bytes + (bytes.count % 2 == 1 ? [0] : [])
            }
        }
        return head + le32(0) + data
    }
}

private func le32(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0xFF)] }
