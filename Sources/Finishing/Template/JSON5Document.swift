import Foundation

/// A JSON5 value as Foundation read it. Numbers are `Double` (every number in a template
/// or config fits exactly).
enum JSONValue: Decodable, Sendable, Equatable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        // The container probes throw a type mismatch for the other kinds; that only means
        // "not this kind", so trying the next one is the intended use, not a lost reason.
        if let container = try? decoder.container(keyedBy: AnyKey.self) {
            var members: [String: JSONValue] = [:]
            for key in container.allKeys {
                members[key.stringValue] = try container.decode(JSONValue.self, forKey: key)
            }
            self = .object(members)
        } else if var container = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            while !container.isAtEnd { elements.append(try container.decode(JSONValue.self)) }
            self = .array(elements)
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                self = .null
            } else if let bool = try? single.decode(Bool.self) {
                self = .bool(bool)
            } else if let number = try? single.decode(Double.self) {
                self = .number(number)
            } else {
                self = .string(try single.decode(String.self))
            }
        }
    }

    /// The value as an error message shows it after "got".
    var shown: String {
        switch self {
        case .object: "an object"
        case .array: "a list"
        case .string(let string): "\"\(string)\""
        case .number(let number): number.shown
        case .bool(let bool): "\(bool)"
        case .null: "null"
        }
    }
}

extension Double {
    /// `3` rather than `3.0`; other numbers as Swift prints them.
    var shown: String {
        if self == rounded(), abs(self) < 1e15 { return String(Int(self)) }
        return "\(self)"
    }
}

/// The range a number must fall in, and how to say it.
struct NumberRange {
    var lower: Double
    var lowerOpen = false
    var upper: Double?
    var upperOpen = false

    func contains(_ x: Double) -> Bool {
        guard x.isFinite else { return false }
        if lowerOpen ? x <= lower : x < lower { return false }
        if let upper, upperOpen ? x >= upper : x > upper { return false }
        return true
    }

    /// "between 0 and 0.5", "greater than 0 and at most 0.5", "at least 0", …
    var phrase: String {
        let low = lower.shown
        guard let upper else { return lowerOpen ? "greater than \(low)" : "at least \(low)" }
        let high = upper.shown
        switch (lowerOpen, upperOpen) {
        case (false, false): return "between \(low) and \(high)"
        case (true, false): return "greater than \(low) and at most \(high)"
        case (false, true): return "at least \(low) and less than \(high)"
        case (true, true): return "greater than \(low) and less than \(high)"
        }
    }
}

/// One JSON5 file being read and checked: the values from Foundation, the lines from
/// `JSON5Locator`, and every error found so far, each with file, line and key path.
///
/// The typed readers (`number`, `string`, `choice`, …) return `nil` after recording an
/// error, so validation carries on and the admin sees every problem at once.
struct JSON5Document {
    let file: String
    let locator: JSON5Locator
    /// The top-level object; `nil` when the text could not be read.
    private(set) var root: [String: JSONValue]?
    private(set) var errors: [TemplateError] = []

    init(text: String, file: String) {
        self.file = file
        locator = JSON5Locator(text: text)
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        do {
            // A byte order mark (some Windows editors write one) is not JSON5 to Foundation.
            let body = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
            let value = try decoder.decode(JSONValue.self, from: Data(body.utf8))
            guard case .object(let members) = value else {
                errors.append(TemplateError(file: file, line: 1, keyPath: "",
                                            message: "must be an object in braces { … }, got \(value.shown)"))
                return
            }
            root = members
        } catch {
            // Foundation's JSON5 reader says only "not valid JSON" on this platform; the
            // locator knows where, so its message is the one worth showing.
            if let syntax = locator.syntaxError {
                errors.append(TemplateError(file: file, line: syntax.line, keyPath: "",
                                            message: "syntax error: \(syntax.message)"))
            } else {
                errors.append(TemplateError(file: file, line: nil, keyPath: "",
                                            message: "not valid JSON5: \(Self.reason(error))"))
            }
            return
        }
        for duplicate in locator.duplicates {
            errors.append(TemplateError(file: file, line: duplicate.line, keyPath: duplicate.path.rendered,
                                        message: "key appears twice in the same object: keep only one"))
        }
    }

    private static func reason(_ error: any Error) -> String {
        if case DecodingError.dataCorrupted(let context) = error {
            return context.underlyingError.map { "\($0)" } ?? context.debugDescription
        }
        return "\(error)"
    }

    /// Records an error at `path` (its line, or the nearest enclosing key's line).
    mutating func fail(_ path: [KeyPathComponent], _ message: String) {
        errors.append(TemplateError(file: file, line: locator.line(of: path), keyPath: path.rendered,
                                    message: message))
    }

    /// Errors sorted by line, for reading top to bottom.
    var sortedErrors: [TemplateError] {
        errors.enumerated().sorted { lhs, rhs in
            let (l, r) = (lhs.element.line ?? 0, rhs.element.line ?? 0)
            return l != r ? l < r : lhs.offset < rhs.offset
        }.map(\.element)
    }

    /// The members of an object value; each key not in `allowed` is an error (a typo must
    /// not silently do nothing), with a suggestion when one is close.
    mutating func object(_ value: JSONValue, at path: [KeyPathComponent], allowed: [String]) -> [String: JSONValue]? {
        guard case .object(let members) = value else {
            fail(path, "must be an object { … } with keys \(allowed.joined(separator: ", ")), got \(value.shown)")
            return nil
        }
        for key in members.keys.sorted() where !allowed.contains(key) {
            var message = "unknown key '\(key)'"
            if let suggestion = Suggest.closest(to: key, in: allowed) {
                message += " (did you mean '\(suggestion)'?)"
            } else {
                message += " (allowed here: \(allowed.joined(separator: ", ")))"
            }
            fail(path + [.key(key)], message)
        }
        return members
    }

    /// A number in `range`.
    mutating func number(_ value: JSONValue, at path: [KeyPathComponent], in range: NumberRange) -> Double? {
        guard case .number(let number) = value, range.contains(number) else {
            fail(path, "must be a number \(range.phrase), got \(value.shown)")
            return nil
        }
        return number
    }

    /// A whole number in `range`.
    mutating func integer(_ value: JSONValue, at path: [KeyPathComponent], in range: ClosedRange<Int>) -> Int? {
        let phrase = range.upperBound == Int.max
            ? "at least \(range.lowerBound)" : "between \(range.lowerBound) and \(range.upperBound)"
        guard case .number(let number) = value, number == number.rounded(),
              number >= Double(range.lowerBound), number <= Double(range.upperBound),
              abs(number) < 9e15 else {
            fail(path, "must be a whole number \(phrase), got \(value.shown)")
            return nil
        }
        return Int(number)
    }

    /// A string; with `nonEmpty`, also not blank.
    mutating func string(_ value: JSONValue, at path: [KeyPathComponent], nonEmpty: Bool = true) -> String? {
        guard case .string(let string) = value else {
            fail(path, "must be a string in quotes, got \(value.shown)")
            return nil
        }
        if nonEmpty, string.allSatisfy(\.isWhitespace) {
            fail(path, "must not be empty")
            return nil
        }
        return string
    }

    /// `true` or `false`.
    mutating func bool(_ value: JSONValue, at path: [KeyPathComponent]) -> Bool? {
        guard case .bool(let bool) = value else {
            fail(path, "must be true or false, got \(value.shown)")
            return nil
        }
        return bool
    }

    /// One of a fixed set of names.
    mutating func choice<Choice: RawRepresentable & CaseIterable>(
        _ value: JSONValue, at path: [KeyPathComponent], as: Choice.Type
    ) -> Choice? where Choice.RawValue == String {
        let names = Choice.allCases.map(\.rawValue)
        guard case .string(let string) = value, let choice = Choice(rawValue: string) else {
            var message = "must be one of \(names.map { "\"\($0)\"" }.joined(separator: ", ")), got \(value.shown)"
            if case .string(let string) = value, let suggestion = Suggest.closest(to: string, in: names) {
                message += " (did you mean \"\(suggestion)\"?)"
            }
            fail(path, message)
            return nil
        }
        return choice
    }

    /// A colour written `#rgb`, `#rrggbb` or `#rrggbbaa`.
    mutating func color(_ value: JSONValue, at path: [KeyPathComponent]) -> Template.Color? {
        guard case .string(let string) = value, let color = Template.Color(hex: string) else {
            fail(path, "must be a colour written \"#rgb\", \"#rrggbb\" or \"#rrggbbaa\", got \(value.shown)")
            return nil
        }
        return color
    }
}

extension Template.Color {
    /// Parses `#rgb`, `#rrggbb` or `#rrggbbaa` (hex digits in either case); `nil` otherwise.
    public init?(hex: String) {
        guard hex.hasPrefix("#") else { return nil }
        let digits = Array(hex.utf8.dropFirst())
        guard digits.count == 3 || digits.count == 6 || digits.count == 8 else { return nil }
        var values: [UInt8] = []
        for digit in digits {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(digit - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): values.append(digit - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): values.append(digit - UInt8(ascii: "A") + 10)
            default: return nil
            }
        }
        if values.count == 3 {
            // #abc means #aabbcc: each digit doubled, i.e. times 17.
            self.init(r: values[0] * 17, g: values[1] * 17, b: values[2] * 17)
        } else {
            var bytes: [UInt8] = []
            for i in stride(from: 0, to: values.count, by: 2) { bytes.append(values[i] << 4 | values[i + 1]) }
            self.init(r: bytes[0], g: bytes[1], b: bytes[2], a: bytes.count == 4 ? bytes[3] : 255)
        }
    }
}

/// "Did you mean …?" for misspelt keys and names.
enum Suggest {
    /// The candidate closest to `word` by edit distance (ignoring case), if close enough
    /// to be a likely typo.
    static func closest(to word: String, in candidates: [String]) -> String? {
        let lowered = Array(word.lowercased())
        var best: (String, Int)?
        for candidate in candidates {
            let distance = editDistance(lowered, Array(candidate.lowercased()))
            let allowed = max(1, min(3, candidate.count / 3))
            if distance <= allowed, distance < (best?.1 ?? .max) { best = (candidate, distance) }
        }
        return best?.0
    }

    /// Levenshtein distance, with a swap of two neighbours counting as one edit.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous2[j - 2] + 1)
                }
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}
