import Foundation

/// What a statement returned, copied out of libpq's result (which is freed at once): column
/// names and text values, `nil` for SQL NULL.
public struct Rows: Sendable, Equatable {
    public var columns: [String]
    /// Row after row, each as many values as `columns`.
    public var values: [[String?]]
    /// Rows a command touched (`UPDATE`, `DELETE`: `PQcmdTuples`), or the rows returned.
    public var affected: Int

    public init(columns: [String] = [], values: [[String?]] = [], affected: Int = 0) {
        self.columns = columns
        self.values = values
        self.affected = affected
    }

    public var count: Int { values.count }
    public var isEmpty: Bool { values.isEmpty }

    /// One row, its values reached by column name.
    public struct Row: Sendable {
        let columns: [String]
        let values: [String?]

        /// The text of column `name`; nil for NULL (a column that is not there is a mistake
        /// in our own SQL).
        public subscript(_ name: String) -> String? {
            guard let i = columns.firstIndex(of: name) else {
                preconditionFailure("no column \(name) in \(columns)")
            }
            return values[i]
        }

        public func int(_ name: String) -> Int? { self[name].flatMap { Int($0) } }
        public func double(_ name: String) -> Double? { self[name].flatMap { Double($0) } }
        /// PostgreSQL's text form of a boolean is `t` or `f`.
        public func bool(_ name: String) -> Bool? { self[name].map { $0 == "t" } }
        /// A time our statements return as seconds since 1970 (`extract(epoch FROM …)`): no
        /// time zone or date style to parse.
        public func date(_ name: String) -> Date? { double(name).map { Date(timeIntervalSince1970: $0) } }
        /// A JSON array of strings (`to_json(text[])`), as our statements return arrays.
        public func strings(_ name: String) -> [String]? {
            self[name].flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) }
        }
    }

    public subscript(_ index: Int) -> Row { Row(columns: columns, values: values[index]) }

    /// Every row.
    public var rows: [Row] { values.map { Row(columns: columns, values: $0) } }
}
