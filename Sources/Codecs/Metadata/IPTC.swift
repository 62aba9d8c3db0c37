/// IPTC IIM (Information Interchange Model) metadata: the datasets news and stock photo
/// tools write (By-line, CopyrightNotice, Credit, Keywords, City…), and the Photoshop image
/// resource block (JPEG APP13) that carries them.
///
/// Parsed here rather than through libiptcdata: its dataset reader adds an extended length
/// to an offset without an overflow check (a 4-byte length of 0xFFFFFFFF wraps past the
/// bounds test), and its last release is from 2018. Every length below is checked against
/// what is left before it is used.
public struct IPTC: Sendable, Equatable {
    /// One dataset: record:number and its bytes (text is UTF-8 when 1:90 says so, else
    /// usually Latin-1).
    public struct Dataset: Sendable, Equatable {
        public var record: UInt8
        public var number: UInt8
        public var value: [UInt8]

        public init(_ record: UInt8, _ number: UInt8, _ value: [UInt8]) {
            self.record = record; self.number = number; self.value = value
        }

        public init(_ record: UInt8, _ number: UInt8, text: String) {
            self.init(record, number, Array(text.utf8))
        }
    }

    public var datasets: [Dataset]

    public init(datasets: [Dataset] = []) { self.datasets = datasets }

    /// The dataset numbers PhotoFinish names (record 2 unless said).
    public enum Tag {
        /// 1:90, the coded character set; ESC % G means UTF-8.
        public static let codedCharacterSet: (UInt8, UInt8) = (1, 90)
        public static let recordVersion: (UInt8, UInt8) = (2, 0)
        public static let objectName: (UInt8, UInt8) = (2, 5)
        public static let keywords: (UInt8, UInt8) = (2, 25)
        public static let contentLocationCode: (UInt8, UInt8) = (2, 26)
        public static let contentLocationName: (UInt8, UInt8) = (2, 27)
        public static let specialInstructions: (UInt8, UInt8) = (2, 40)
        public static let byline: (UInt8, UInt8) = (2, 80)
        public static let bylineTitle: (UInt8, UInt8) = (2, 85)
        public static let city: (UInt8, UInt8) = (2, 90)
        public static let sublocation: (UInt8, UInt8) = (2, 92)
        public static let provinceState: (UInt8, UInt8) = (2, 95)
        public static let countryCode: (UInt8, UInt8) = (2, 100)
        public static let countryName: (UInt8, UInt8) = (2, 101)
        public static let transmissionReference: (UInt8, UInt8) = (2, 103)
        public static let headline: (UInt8, UInt8) = (2, 105)
        public static let credit: (UInt8, UInt8) = (2, 110)
        public static let source: (UInt8, UInt8) = (2, 115)
        public static let copyrightNotice: (UInt8, UInt8) = (2, 116)
        public static let caption: (UInt8, UInt8) = (2, 120)
        public static let writer: (UInt8, UInt8) = (2, 122)
    }

    /// The UTF-8 marker of 1:90.
    static let utf8Marker: [UInt8] = [0x1B, 0x25, 0x47]

    /// True when 1:90 declares UTF-8.
    public var isUTF8: Bool {
        datasets.contains { $0.record == 1 && $0.number == 90 && $0.value == Self.utf8Marker }
    }

    /// Every value of a dataset, as text (UTF-8, or Latin-1 when the block is not UTF-8 and the
    /// bytes are not valid UTF-8).
    public func strings(_ tag: (UInt8, UInt8)) -> [String] {
        datasets.filter { $0.record == tag.0 && $0.number == tag.1 }.map { text($0.value) }
    }

    func text(_ bytes: [UInt8]) -> String {
        if let utf8 = String(validating: bytes, as: UTF8.self) { return utf8 }
        return String(bytes.map { Character(Unicode.Scalar($0)) })
    }

    /// Replaces every value of a dataset by `values` (in place of the first, else at the end
    /// of its record), declaring UTF-8 when the text needs it: values already there that are
    /// not UTF-8 are converted from Latin-1 first, so the block stays in one encoding.
    public mutating func set(_ tag: (UInt8, UInt8), _ values: [String]) {
        if !isUTF8 && values.contains(where: { !$0.utf8.allSatisfy { $0 < 0x80 } }) { convertToUTF8() }
        let at = datasets.firstIndex { $0.record == tag.0 && $0.number == tag.1 }
            ?? datasets.lastIndex { $0.record <= tag.0 }.map { $0 + 1 } ?? datasets.count
        let before = datasets[..<at].filter { !($0.record == tag.0 && $0.number == tag.1) }
        let after = datasets[at...].filter { !($0.record == tag.0 && $0.number == tag.1) }
        datasets = before + values.map { Dataset(tag.0, tag.1, text: $0) } + after
    }

    /// Keeps only the datasets `keep` accepts.
    public mutating func filter(_ keep: (Dataset) -> Bool) {
        datasets = datasets.filter(keep)
    }

    private mutating func convertToUTF8() {
        for i in datasets.indices where datasets[i].record == 2 {
            datasets[i].value = Array(text(datasets[i].value).utf8)
        }
        datasets.removeAll { $0.record == 1 && $0.number == 90 }
        let firstAfterEnvelope = datasets.firstIndex { $0.record > 1 } ?? datasets.count
        datasets.insert(Dataset(1, 90, Self.utf8Marker), at: firstAfterEnvelope)
    }

    /// Declares the block UTF-8 (1:90; text already there that is not UTF-8 is converted from
    /// Latin-1) and gives record 2 its version dataset (2:00, version 4) when it has none:
    /// what a block PhotoFinish writes text into always carries.
    public mutating func declareUTF8() {
        if !isUTF8 { convertToUTF8() }
        if !datasets.contains(where: { $0.record == 2 && $0.number == 0 }) {
            let firstOfRecord2 = datasets.firstIndex { $0.record >= 2 } ?? datasets.count
            datasets.insert(Dataset(2, 0, [0, 4]), at: firstOfRecord2)
        }
    }

    // MARK: IIM bytes

    /// Parses an IIM stream; nil when it is damaged (a length running past the end, a byte
    /// that is not a dataset marker). Trailing zero padding is allowed.
    public init?(iim bytes: [UInt8]) {
        var datasets: [Dataset] = []
        var i = 0
        while i < bytes.count {
            if bytes[i...].allSatisfy({ $0 == 0 }) { break }
            guard bytes[i] == 0x1C, bytes.count - i >= 5 else { return nil }
            let record = bytes[i + 1], number = bytes[i + 2]
            let short = Int(bytes[i + 3]) << 8 | Int(bytes[i + 4])
            i += 5
            var length = short
            if short & 0x8000 != 0 {
                // Extended dataset: the low 15 bits count the length bytes that follow.
                let count = short & 0x7FFF
                guard count >= 1, count <= 4, bytes.count - i >= count else { return nil }
                length = 0
                for b in bytes[i..<(i + count)] { length = length << 8 | Int(b) }
                i += count
            }
            guard length <= bytes.count - i else { return nil }
            datasets.append(Dataset(record, number, Array(bytes[i..<(i + length)])))
            i += length
        }
        self.datasets = datasets
    }

    /// The IIM stream: records in order (1 before 2), each dataset as written.
    public func iim() -> [UInt8] {
        var out: [UInt8] = []
        for d in datasets.enumerated().sorted(by: { ($0.element.record, $0.offset) < ($1.element.record, $1.offset) }) {
            let value = d.element.value
            out += [0x1C, d.element.record, d.element.number]
            if value.count < 0x8000 {
                out += [UInt8(value.count >> 8), UInt8(value.count & 0xFF)]
            } else {
                out += [0x80, 4] + (0..<4).reversed().map { UInt8((value.count >> (8 * $0)) & 0xFF) }
            }
            out += value
        }
        return out
    }

    // MARK: Photoshop image resources (JPEG APP13)

    /// The APP13 header of a Photoshop image resource block.
    static let photoshopHeader: [UInt8] = Array("Photoshop 3.0".utf8) + [0]
    private static let resourceType: [UInt8] = Array("8BIM".utf8)
    /// The image resource that holds the IIM stream.
    private static let iimResource = 0x0404

    /// The IIM stream inside a Photoshop image resource block (APP13 payloads, joined, with
    /// or without the "Photoshop 3.0" header); nil when there is none or it is damaged.
    public static func iim(fromPhotoshop block: [UInt8]) -> [UInt8]? {
        var i = block.starts(with: photoshopHeader) ? photoshopHeader.count : 0
        while block.count - i >= 12 {
            guard block[i..<(i + 4)].elementsEqual(resourceType) else { return nil }
            let id = Int(block[i + 4]) << 8 | Int(block[i + 5])
            // A Pascal string name, padded to an even length (length byte included).
            let nameLength = Int(block[i + 6]) + 1
            i += 6 + nameLength + (nameLength & 1)
            guard block.count - i >= 4 else { return nil }
            let size = block[i..<(i + 4)].reduce(0) { $0 << 8 | Int($1) }
            i += 4
            guard size <= block.count - i else { return nil }
            if id == iimResource { return Array(block[i..<(i + size)]) }
            i += size + (size & 1)
        }
        return nil
    }

    /// A Photoshop image resource block holding only this IIM stream, header included: the
    /// payload of one APP13 marker.
    public func photoshopBlock() -> [UInt8] {
        let stream = iim()
        var out = Self.photoshopHeader + Self.resourceType + [0x04, 0x04, 0, 0]
        out += (0..<4).reversed().map { UInt8((stream.count >> (8 * $0)) & 0xFF) }
        out += stream
        if stream.count & 1 == 1 { out.append(0) }
        return out
    }
}
