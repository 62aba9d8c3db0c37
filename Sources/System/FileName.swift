/// One file name as the file system holds it: any bytes but NUL and `/`, at most `NAME_MAX`
/// (255). Linux names are bytes, not text: a Samba share with a Latin-1 client, an old
/// camera card or `rsync` from another machine hands over names that are not UTF-8, and
/// such a name must be claimed, finished, filed and reported like any other. So the
/// bytes are the name; text is only how it is shown:
///
/// - `escaped` (reports, logs, `explain`): UTF-8 as is; every byte that is not part of valid
///   UTF-8, and every control character, as `\xHH`. `caf\xE9.jpg` is the Latin-1 `café.jpg`.
/// - `readable` (names of outputs, which must be valid UTF-8 for browsers and reports): UTF-8
///   as is; every other byte read as Windows-1252/Latin-1, the usual legacy charset of the
///   shares such names come from (`café.jpg`).
public struct FileName: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The name's bytes (no NUL, no `/`, never empty, `.` or `..`).
    public let bytes: [UInt8]

    /// The longest name Linux file systems take, in bytes (`NAME_MAX`).
    public static let maxLength = 255

    /// A name from the file system's bytes; `nil` for bytes no name can have (empty, NUL,
    /// `/`, `.`, `..`).
    public init?(bytes: some Collection<UInt8>) {
        let b = Array(bytes)
        guard !b.isEmpty, !b.contains(0), !b.contains(UInt8(ascii: "/")), b != [0x2E], b != [0x2E, 0x2E] else {
            return nil
        }
        self.bytes = b
    }

    /// The name spelled by `string` in UTF-8; `nil` when it cannot be a name.
    public init?(_ string: String) {
        self.init(bytes: Array(string.utf8))
    }

    /// The name as text when its bytes are valid UTF-8.
    public var string: String? { String(validating: bytes, as: UTF8.self) }

    /// The name for people: UTF-8 as is, every other byte (and every control character) as
    /// `\xHH`. A valid UTF-8 name without control characters is shown unchanged.
    public var escaped: String {
        var out = ""
        for piece in Self.pieces(bytes) {
            switch piece {
            case .scalar(let s) where s.value < 0x20 || s.value == 0x7F: out += Self.hex(UInt8(s.value))
            case .scalar(let s): out.unicodeScalars.append(s)
            case .byte(let b): out += Self.hex(b)
            }
        }
        return out
    }

    /// The name as valid UTF-8 for new files made from it: UTF-8 as is, every other byte
    /// read as Windows-1252 (Latin-1 beyond 0x9F); a byte Windows-1252 leaves undefined, and
    /// every control character, becomes `_`.
    public var readable: String {
        var out = ""
        for piece in Self.pieces(bytes) {
            switch piece {
            case .scalar(let s) where s.value < 0x20 || s.value == 0x7F: out += "_"
            case .scalar(let s): out.unicodeScalars.append(s)
            case .byte(let b) where b >= 0xA0: out.unicodeScalars.append(Unicode.Scalar(b))
            case .byte(let b): out.unicodeScalars.append(Self.windows1252[Int(b - 0x80)].flatMap(Unicode.Scalar.init) ?? "_")
            }
        }
        return out
    }

    public var description: String { escaped }

    /// The first bytes of `bytes`, at most `maxCount`, never cutting a UTF-8 character in
    /// two (a name shortened to fit `NAME_MAX` stays as readable as it was).
    public static func prefix(of bytes: some Collection<UInt8>, maxCount: Int) -> [UInt8] {
        var kept = Array(bytes.prefix(max(0, maxCount)))
        guard kept.count < bytes.count else { return kept }
        // Drop a character cut short: its continuation bytes, then its lead byte.
        var end = kept.count
        while end > 0 && kept[end - 1] & 0xC0 == 0x80 { end -= 1 }
        if end > 0 && kept[end - 1] >= 0xC0 {
            let lead = kept[end - 1]
            let length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2
            if kept.count - (end - 1) < length { kept.removeLast(kept.count - (end - 1)) }
        }
        return kept
    }

    /// True when the name's bytes are valid UTF-8 with no control character (shown as is).
    public var isPlainText: Bool { escaped.utf8.elementsEqual(bytes) }

    /// Byte order: the order `ls` shows in the C locale.
    public static func < (a: FileName, b: FileName) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }

    // MARK: - UTF-8 pieces

    enum Piece { case scalar(Unicode.Scalar), byte(UInt8) }

    /// `bytes` as valid scalars and the single bytes between them that are not UTF-8.
    static func pieces(_ bytes: [UInt8]) -> [Piece] {
        var out: [Piece] = []
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                out.append(.scalar(Unicode.UTF8.decode(encoded)))
                offset += encoded.count
            case .error(let length):
                for b in bytes[offset..<(offset + length)] { out.append(.byte(b)) }
                offset += length
            case .emptyInput:
                return out
            }
        }
    }

    static func hex(_ b: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return "\\x" + String(digits[Int(b >> 4)]) + String(digits[Int(b & 15)])
    }

    /// Windows-1252 for 0x80…0x9F (nil: undefined there).
    static let windows1252: [UInt32?] = [
        0x20AC, nil, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, nil, 0x017D, nil,
        nil, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, nil, 0x017E, 0x0178,
    ]
}

/// A name is stored in JSON (manifests, journals) as a string when its bytes are valid UTF-8,
/// else as `{ "bytes": "<hex>" }`: the bytes come back exactly either way.
extension FileName: Codable {
    private enum Keys: String, CodingKey { case bytes }

    public init(from decoder: any Decoder) throws {
        if let text = try? decoder.singleValueContainer().decode(String.self) {
            guard let name = FileName(text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a file name: \(text)"))
            }
            self = name
            return
        }
        let hex = try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .bytes)
        guard let bytes = Self.bytes(hex: hex), let name = FileName(bytes: bytes) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a file name: \(hex)"))
        }
        self = name
    }

    public func encode(to encoder: any Encoder) throws {
        if let text = string {
            var c = encoder.singleValueContainer()
            try c.encode(text)
        } else {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined(),
                         forKey: .bytes)
        }
    }

    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let b = UInt8(String(decoding: digits[i...i + 1], as: UTF8.self), radix: 16) else { return nil }
            out.append(b)
        }
        return out
    }
}

/// A path as the kernel takes it: bytes without NUL. Folders named in the config are text;
/// the names inside them (`FileName`) may be any bytes, so a path is built from both without
/// ever passing through a lossy `String`.
public struct FilePath: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let bytes: [UInt8]

    /// The path spelled by `string` (UTF-8).
    public init(_ string: String) {
        bytes = Array(string.utf8.prefix { $0 != 0 })
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    /// A path from raw bytes (the command line's, say); stops at a NUL.
    public init(bytes: some Sequence<UInt8>) {
        self.bytes = Array(bytes.prefix { $0 != 0 })
    }

    /// This path with `name` added as its last component.
    public func appending(_ name: FileName) -> FilePath {
        FilePath(bytes: bytes.last == UInt8(ascii: "/") || bytes.isEmpty ? bytes + name.bytes : bytes + [UInt8(ascii: "/")] + name.bytes)
    }

    /// This path with `component` (text, may hold `/`) added.
    public func appending(_ component: String) -> FilePath {
        FilePath(bytes: bytes.last == UInt8(ascii: "/") || bytes.isEmpty ? bytes + Array(component.utf8)
                 : bytes + [UInt8(ascii: "/")] + Array(component.utf8))
    }

    /// The last component (`nil` for `/` or an empty path).
    public var lastComponent: FileName? {
        var end = bytes.endIndex
        while end > bytes.startIndex && bytes[end - 1] == UInt8(ascii: "/") { end -= 1 }
        let start = bytes[..<end].lastIndex(of: UInt8(ascii: "/")).map { $0 + 1 } ?? bytes.startIndex
        return FileName(bytes: bytes[start..<end])
    }

    /// The folder holding the last component (`.` for a bare name).
    public var parent: FilePath {
        var end = bytes.endIndex
        while end > bytes.startIndex && bytes[end - 1] == UInt8(ascii: "/") { end -= 1 }
        guard let slash = bytes[..<end].lastIndex(of: UInt8(ascii: "/")) else { return "." }
        return slash == bytes.startIndex ? "/" : FilePath(bytes: bytes[..<slash])
    }

    /// The path for people: UTF-8 as is, other bytes as `\xHH` (see `FileName.escaped`).
    public var description: String {
        bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map { part in
            FileName(bytes: part)?.escaped ?? String(decoding: part, as: UTF8.self)
        }.joined(separator: "/")
    }

    /// The path as text when its bytes are valid UTF-8.
    public var string: String? { String(validating: bytes, as: UTF8.self) }

    /// Calls `body` with the path as a C string.
    public func withCString<R>(_ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        try (bytes + [0]).withUnsafeBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) }
        }
    }
}

extension FileName {
    /// Calls `body` with the name as a C string.
    public func withCString<R>(_ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        try (bytes + [0]).withUnsafeBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) }
        }
    }
}

/// A path given as text (a folder named in the config) or as bytes (`FilePath`): the calls of
/// this module take either.
public protocol FilePathRepresentable {
    var filePath: FilePath { get }
}

extension FilePath: FilePathRepresentable {
    public var filePath: FilePath { self }
}

extension String: FilePathRepresentable {
    public var filePath: FilePath { FilePath(self) }
}

/// A name written in the code (`"src"`, `"lock"`): a literal that cannot be a name is a
/// programmer's mistake.
extension FileName: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) {
        guard let name = FileName(value) else { preconditionFailure("not a file name: \(value)") }
        self = name
    }
}
