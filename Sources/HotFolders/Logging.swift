/// Context for a log line, as fields (`INBOX`, `BATCH`, `FILE`), never pasted into the text:
/// the journal indexes them (`journalctl INBOX=shop`).
public typealias LogFields = [String: String]

extension LogFields {
    /// These fields plus one more.
    public func with(_ key: String, _ value: String) -> LogFields {
        var copy = self
        copy[key] = value
        return copy
    }
}

/// Where the hot-folder code sends what it has to say. The code below the command line
/// receives one; the service decides whether lines go to the journal or a terminal.
public struct Logger: Sendable {
    /// syslog priorities, as the journal stores them.
    public enum Priority: Int, Sendable, Comparable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7

        public static func < (a: Priority, b: Priority) -> Bool { a.rawValue < b.rawValue }
    }

    private let sink: @Sendable (Priority, String, LogFields) -> Void

    /// - Parameter sink: receives every line (priority, message, fields).
    public init(_ sink: @escaping @Sendable (Priority, String, LogFields) -> Void) {
        self.sink = sink
    }

    /// A logger that drops everything.
    public static let silent = Logger { _, _, _ in }

    public func log(_ priority: Priority, _ message: String, _ fields: LogFields = [:]) {
        sink(priority, message, fields)
    }

    public func error(_ message: String, _ fields: LogFields = [:]) { log(.error, message, fields) }
    public func warning(_ message: String, _ fields: LogFields = [:]) { log(.warning, message, fields) }
    public func notice(_ message: String, _ fields: LogFields = [:]) { log(.notice, message, fields) }
    public func info(_ message: String, _ fields: LogFields = [:]) { log(.info, message, fields) }
}
