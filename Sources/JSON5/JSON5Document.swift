import Foundation

/// One JSON5 file being read and checked: the values from Foundation, the lines from
/// `JSON5Locator`, and every error found so far, each with file, line and key path.
///
/// The typed readers (`number`, `string`, `choice`, …) return `nil` after recording an
/// error, so validation carries on and the admin sees every problem at once.
public struct JSON5Document {
    /// How errors name the file.
    public let file: String
    /// Where each key path is in the text.
    public let locator: JSON5Locator
    /// The top-level object; `nil` when the text could not be read.
    public private(set) var root: [String: JSON5Value]?
    public private(set) var errors: [JSON5Error] = []

    /// Reads `text`; syntax errors and repeated keys are recorded in `errors` at once.
    public init(text: String, file: String) {
        self.file = file
        locator = JSON5Locator(text: text)
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        do {
            // A byte order mark (some Windows editors write one) is not JSON5 to Foundation.
            let body = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
            let value = try decoder.decode(JSON5Value.self, from: Data(body.utf8))
            guard case .object(let members) = value else {
                errors.append(JSON5Error(file: file, line: 1, keyPath: "",
                                            message: "must be an object in braces { … }, got \(value.shown)"))
                return
            }
            root = members
        } catch {
            // Foundation's JSON5 reader says only "not valid JSON" on this platform; the
            // locator knows where, so its message is the one worth showing.
            if let syntax = locator.syntaxError {
                errors.append(JSON5Error(file: file, line: syntax.line, keyPath: "",
                                            message: "syntax error: \(syntax.message)"))
            } else {
                errors.append(JSON5Error(file: file, line: nil, keyPath: "",
                                            message: "not valid JSON5: \(Self.reason(error))"))
            }
            return
        }
        for duplicate in locator.duplicates {
            errors.append(JSON5Error(file: file, line: duplicate.line, keyPath: duplicate.path.rendered,
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
    public mutating func fail(_ path: [KeyPathComponent], _ message: String) {
        errors.append(JSON5Error(file: file, line: locator.line(of: path), keyPath: path.rendered,
                                    message: message))
    }

    /// Errors sorted by line, for reading top to bottom.
    public var sortedErrors: [JSON5Error] {
        errors.enumerated().sorted { lhs, rhs in
            let (l, r) = (lhs.element.line ?? 0, rhs.element.line ?? 0)
            return l != r ? l < r : lhs.offset < rhs.offset
        }.map(\.element)
    }

    /// The members of an object value; each key not in `allowed` is an error (a typo must
    /// not silently do nothing), with a suggestion when one is close.
    public mutating func object(_ value: JSON5Value, at path: [KeyPathComponent], allowed: [String]) -> [String: JSON5Value]? {
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
    public mutating func number(_ value: JSON5Value, at path: [KeyPathComponent], in range: NumberRange) -> Double? {
        guard case .number(let number) = value, range.contains(number) else {
            fail(path, "must be a number \(range.phrase), got \(value.shown)")
            return nil
        }
        return number
    }

    /// A whole number in `range`.
    public mutating func integer(_ value: JSON5Value, at path: [KeyPathComponent], in range: ClosedRange<Int>) -> Int? {
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
    public mutating func string(_ value: JSON5Value, at path: [KeyPathComponent], nonEmpty: Bool = true) -> String? {
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
    public mutating func bool(_ value: JSON5Value, at path: [KeyPathComponent]) -> Bool? {
        guard case .bool(let bool) = value else {
            fail(path, "must be true or false, got \(value.shown)")
            return nil
        }
        return bool
    }

    /// One of a fixed set of names.
    public mutating func choice<Choice: RawRepresentable & CaseIterable>(
        _ value: JSON5Value, at path: [KeyPathComponent], as: Choice.Type
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
}
