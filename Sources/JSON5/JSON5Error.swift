/// One problem in a JSON5 file (a template, a config): where it is and what is wrong.
///
/// Printed like a compiler message, so editors and people can jump to it:
/// `shop.json5:12: text.capHeight: must be a number between 0 and 0.5, got 3`.
public struct JSON5Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file as it was named when loading (a path, or a label for in-memory text).
    public var file: String
    /// 1-based line, when known.
    public var line: Int?
    /// The key path, e.g. `text.capHeight` or `crops[2].ratio`; empty for the whole file.
    public var keyPath: String
    /// What is wrong and what is allowed.
    public var message: String

    public init(file: String, line: Int?, keyPath: String, message: String) {
        self.file = file
        self.line = line
        self.keyPath = keyPath
        self.message = message
    }

    public var description: String {
        var out = file
        if let line { out += ":\(line)" }
        out += ": "
        if !keyPath.isEmpty { out += "\(keyPath): " }
        return out + message
    }
}

/// Every problem found in one or more template or config files (validation collects all
/// of them, not just the first).
public struct JSON5Errors: Error, Sendable, CustomStringConvertible {
    /// The problems, in file and line order.
    public var errors: [JSON5Error]

    public init(errors: [JSON5Error]) {
        self.errors = errors
    }

    /// One problem per line.
    public var description: String {
        errors.map(\.description).joined(separator: "\n")
    }
}
