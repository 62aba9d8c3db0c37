import Foundation

/// Values in PostgreSQL's text forms, for statement parameters (never pasted into SQL, but for
/// `LISTEN`'s channel, which takes no parameter).
enum PostgresText {
    /// `"name"`, doubled quotes inside: a quoted identifier.
    static func identifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// A `text[]` (or `uuid[]`) parameter: `{"a","b \"c\""}` — every element quoted, `"` and `\`
    /// escaped with a backslash (the array input syntax), so any text goes through whole.
    static func array(_ elements: [String]) -> String {
        "{" + elements.map { element in
            "\"" + element.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }.joined(separator: ",") + "}"
    }

    /// An `interval` parameter in milliseconds: `"2500 milliseconds"`.
    static func interval(_ duration: Duration) -> String {
        "\(Int64(duration / .milliseconds(1))) milliseconds"
    }

    /// A JSON parameter (`jsonb`) from an Encodable value.
    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(value)) ?? Data("null".utf8), as: UTF8.self)
    }
}
