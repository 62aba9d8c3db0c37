/// One step of a key path: an object key or an array index (0-based).
public enum KeyPathComponent: Hashable, Sendable, CustomStringConvertible {
    case key(String)
    case index(Int)

    public var description: String {
        switch self {
        case .key(let key): key
        case .index(let index): "[\(index)]"
        }
    }
}

extension [KeyPathComponent] {
    /// The path as a person reads it: `text.capHeight`, `crops[2].ratio`.
    public var rendered: String {
        var out = ""
        for component in self {
            switch component {
            case .key(let key): out += out.isEmpty ? key : ".\(key)"
            case .index(let index): out += "[\(index)]"
            }
        }
        return out
    }
}

/// Finds where things are in a JSON5 text: the 1-based line of every key path, keys that
/// appear twice, and the first syntax error.
///
/// Foundation's JSON5 reader gives the values but not where they were, and on a syntax
/// error says nothing about where it is; this scanner exists only so that errors can
/// name a line. It walks the text once: strings in both quote kinds with escapes, `//`
/// and `/* */` comments, unquoted identifier keys, nested objects and arrays, trailing
/// commas.
public struct JSON5Locator: Sendable {
    /// The line of each object member's key, and of each array element's first character.
    public private(set) var lines: [[KeyPathComponent]: Int] = [:]
    /// Keys that appear more than once in the same object, with the line of the repeat.
    public private(set) var duplicates: [(path: [KeyPathComponent], line: Int)] = []
    /// The first syntax error, if the text is not valid JSON5.
    public private(set) var syntaxError: (line: Int, message: String)?

    private let bytes: [UInt8]
    private var position = 0
    private var line = 1

    /// Deeper nesting than this is reported as an error rather than risking the stack.
    private static let maxDepth = 256

    /// Scans `text` once.
    public init(text: String) {
        bytes = Array(text.utf8)
        do throws(Stop) {
            skipSpace()
            try value(path: [], depth: 0)
            skipSpace()
            if position < bytes.count {
                throw Stop(message: "unexpected \(describeHere()) after the end of the document")
            }
        } catch {
            // An unclosed comment was already recorded where it starts; keep that one.
            if syntaxError == nil { syntaxError = (line, error.message) }
        }
    }

    /// The line of `path`, or of its nearest ancestor that has one.
    public func line(of path: [KeyPathComponent]) -> Int? {
        var path = path
        while !path.isEmpty {
            if let line = lines[path] { return line }
            path.removeLast()
        }
        return nil
    }

    private struct Stop: Error { var message: String }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func advance() {
        if bytes[position] == UInt8(ascii: "\n") { line += 1 }
        position += 1
    }

    private mutating func skipSpace() {
        while let c = current {
            switch c {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), 0x0b, 0x0c:
                advance()
            case UInt8(ascii: "/") where position + 1 < bytes.count && bytes[position + 1] == UInt8(ascii: "/"):
                while let c = current, c != UInt8(ascii: "\n") { advance() }
            case UInt8(ascii: "/") where position + 1 < bytes.count && bytes[position + 1] == UInt8(ascii: "*"):
                let startLine = line
                advance(); advance()
                while true {
                    guard let c = current else {
                        // Reported at the opening line: that is where the mistake is.
                        line = startLine
                        syntaxError = (startLine, "comment '/*' is never closed")
                        position = bytes.count
                        return
                    }
                    if c == UInt8(ascii: "*"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "/") {
                        advance(); advance()
                        break
                    }
                    advance()
                }
            case 0xEF where position + 2 < bytes.count && bytes[position + 1] == 0xBB && bytes[position + 2] == 0xBF:
                position += 3  // byte order mark
            case 0xC2 where position + 1 < bytes.count && bytes[position + 1] == 0xA0:
                position += 2  // no-break space
            default:
                return
            }
        }
    }

    private func describeHere() -> String {
        guard current != nil else { return "end of file" }
        var end = position
        while end < bytes.count, end - position < 20, !Self.isDelimiter(bytes[end]) { end += 1 }
        if end == position { end += 1 }
        return "'\(String(decoding: bytes[position..<end], as: UTF8.self))'"
    }

    private static func isDelimiter(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"),
             UInt8(ascii: ","), UInt8(ascii: ":"), UInt8(ascii: "{"), UInt8(ascii: "}"),
             UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "/"), UInt8(ascii: "\""), UInt8(ascii: "'"):
            true
        default:
            false
        }
    }

    private mutating func value(path: [KeyPathComponent], depth: Int) throws(Stop) {
        if syntaxError != nil { throw Stop(message: syntaxError!.message) }
        guard depth < Self.maxDepth else { throw Stop(message: "nested more than \(Self.maxDepth) levels deep") }
        guard let c = current else { throw Stop(message: "a value is missing at the end of the file") }
        switch c {
        case UInt8(ascii: "{"): try object(path: path, depth: depth)
        case UInt8(ascii: "["): try array(path: path, depth: depth)
        case UInt8(ascii: "\""), UInt8(ascii: "'"): _ = try string()
        default: try literal()
        }
    }

    private mutating func object(path: [KeyPathComponent], depth: Int) throws(Stop) {
        advance()  // {
        var seen: Set<String> = []
        while true {
            skipSpace()
            guard let c = current else { throw Stop(message: "'{' is never closed: expected '}' before the end of the file") }
            if c == UInt8(ascii: "}") { advance(); return }
            let keyLine = line
            let key = try self.key()
            let keyPath = path + [.key(key)]
            if seen.insert(key).inserted {
                lines[keyPath] = keyLine
            } else {
                duplicates.append((keyPath, keyLine))
            }
            skipSpace()
            guard current == UInt8(ascii: ":") else {
                throw Stop(message: "expected ':' after key '\(key)', found \(describeHere())")
            }
            advance()
            skipSpace()
            try value(path: keyPath, depth: depth + 1)
            skipSpace()
            switch current {
            case UInt8(ascii: ","): advance()
            case UInt8(ascii: "}"): advance(); return
            case nil: throw Stop(message: "'{' is never closed: expected '}' before the end of the file")
            default: throw Stop(message: "expected ',' or '}' after the value of '\(key)', found \(describeHere())")
            }
        }
    }

    private mutating func array(path: [KeyPathComponent], depth: Int) throws(Stop) {
        advance()  // [
        var index = 0
        while true {
            skipSpace()
            guard let c = current else { throw Stop(message: "'[' is never closed: expected ']' before the end of the file") }
            if c == UInt8(ascii: "]") { advance(); return }
            lines[path + [.index(index)]] = line
            try value(path: path + [.index(index)], depth: depth + 1)
            index += 1
            skipSpace()
            switch current {
            case UInt8(ascii: ","): advance()
            case UInt8(ascii: "]"): advance(); return
            case nil: throw Stop(message: "'[' is never closed: expected ']' before the end of the file")
            default: throw Stop(message: "expected ',' or ']' after an array element, found \(describeHere())")
            }
        }
    }

    private mutating func key() throws(Stop) -> String {
        guard let c = current else { throw Stop(message: "expected a key before the end of the file") }
        if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") { return try string() }
        let start = position
        while let c = current, Self.isIdentifierByte(c, first: position == start) { advance() }
        guard position > start else {
            throw Stop(message: "expected a key (a name or a quoted string), found \(describeHere())")
        }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    private static func isIdentifierByte(_ c: UInt8, first: Bool) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "_"), UInt8(ascii: "$"), 0x80...0xFF:
            true
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
            !first
        default:
            false
        }
    }

    /// A quoted string; returns its content with simple escapes resolved (enough for keys).
    private mutating func string() throws(Stop) -> String {
        let quote = bytes[position]
        let startLine = line
        advance()
        var out: [UInt8] = []
        while true {
            guard let c = current else {
                line = startLine
                throw Stop(message: "string is never closed (missing \(quote == UInt8(ascii: "\"") ? "\"" : "'"))")
            }
            if c == quote { advance(); break }
            if c == UInt8(ascii: "\n") {
                line = startLine
                throw Stop(message: "string is not closed on its line (missing \(quote == UInt8(ascii: "\"") ? "\"" : "'"))")
            }
            if c == UInt8(ascii: "\\") {
                advance()
                guard let escaped = current else { continue }
                switch escaped {
                case UInt8(ascii: "n"): out.append(UInt8(ascii: "\n"))
                case UInt8(ascii: "t"): out.append(UInt8(ascii: "\t"))
                case UInt8(ascii: "r"): out.append(UInt8(ascii: "\r"))
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0c)
                case UInt8(ascii: "v"): out.append(0x0b)
                case UInt8(ascii: "0"): out.append(0)
                case UInt8(ascii: "\r"), UInt8(ascii: "\n"): break  // line continuation
                case UInt8(ascii: "u"), UInt8(ascii: "x"):
                    // Decoded so that a key written "\u0061" is found as "a", as Foundation reads it.
                    advance()
                    if let scalar = hexScalar(digits: escaped == UInt8(ascii: "u") ? 4 : 2) {
                        out.append(contentsOf: Array(String(Character(scalar)).utf8))
                    }
                    continue
                default: out.append(escaped)
                }
                advance()
                continue
            }
            out.append(c)
            advance()
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Reads `digits` hex digits (and, for a UTF-16 high surrogate, the `\uXXXX` low half
    /// that follows). `nil` when they are not there; the scanner then goes on as if nothing
    /// was escaped, and Foundation reports the real error.
    private mutating func hexScalar(digits: Int) -> Unicode.Scalar? {
        func read(_ count: Int) -> UInt32? {
            guard position + count <= bytes.count,
                  let value = UInt32(String(decoding: bytes[position..<position + count], as: UTF8.self), radix: 16)
            else { return nil }
            position += count
            return value
        }
        guard let first = read(digits) else { return nil }
        if (0xD800..<0xDC00).contains(first), position + 6 <= bytes.count,
           bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") {
            let saved = position
            position += 2
            if let second = read(4), (0xDC00..<0xE000).contains(second) {
                return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
            }
            position = saved
        }
        return Unicode.Scalar(first)
    }

    /// A bare literal: a number (decimal, hex, leading/trailing dot, sign), `true`, `false`,
    /// `null`, `Infinity`, `NaN`.
    private mutating func literal() throws(Stop) {
        let start = position
        while let c = current, !Self.isDelimiter(c) { advance() }
        guard position > start else { throw Stop(message: "expected a value, found \(describeHere())") }
        let word = String(decoding: bytes[start..<position], as: UTF8.self)
        guard Self.isLiteral(word) else {
            position = start
            throw Stop(message: "'\(word)' is not a value (strings need quotes; literals are true, false, null, numbers)")
        }
    }

    private static func isLiteral(_ word: String) -> Bool {
        if ["true", "false", "null"].contains(word) { return true }
        var body = Substring(word)
        if body.first == "+" || body.first == "-" { body = body.dropFirst() }
        if body == "Infinity" || body == "NaN" { return true }
        if body.hasPrefix("0x") || body.hasPrefix("0X") {
            let digits = body.dropFirst(2)
            return !digits.isEmpty && digits.allSatisfy(\.isHexDigit)
        }
        // digits [. digits] [e [+-] digits], with at least one digit before or after the dot
        var chars = body[...]
        let intPart = chars.prefix(while: \.isASCIIDigit)
        chars = chars.dropFirst(intPart.count)
        var fracPart: Substring = ""
        if chars.first == "." {
            chars = chars.dropFirst()
            fracPart = chars.prefix(while: \.isASCIIDigit)
            chars = chars.dropFirst(fracPart.count)
        }
        guard !intPart.isEmpty || !fracPart.isEmpty else { return false }
        if chars.first == "e" || chars.first == "E" {
            chars = chars.dropFirst()
            if chars.first == "+" || chars.first == "-" { chars = chars.dropFirst() }
            let exponent = chars.prefix(while: \.isASCIIDigit)
            guard !exponent.isEmpty else { return false }
            chars = chars.dropFirst(exponent.count)
        }
        return chars.isEmpty
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
