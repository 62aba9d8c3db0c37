import System

/// Context for a log line, as fields (`INBOX`, `BATCH`, `FILE`): the journal indexes them
/// (`journalctl INBOX=shop`). Callers never paste them into the text themselves: the `Logger`
/// leads the sentence with them (`Logger.text`), so every line a person reads names its
/// hot folder.
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
    /// Fields every line gets (`with`).
    private var context: LogFields = [:]

    /// - Parameter sink: receives every line: its priority, its text as people read it (led
    ///   by its hot folder, batch and file: `Logger.text`), and its fields.
    public init(_ sink: @escaping @Sendable (Priority, String, LogFields) -> Void) {
        self.sink = sink
    }

    /// A logger that drops everything.
    public static let silent = Logger { _, _, _ in }

    /// Logs `message`. Control characters in it and in the fields (a file's name, a login
    /// name, an address a client sent) are written escaped (`\x1B`, `\u{202E}`): nothing a
    /// client sends reaches a terminal or the journal as an escape sequence, a forged line
    /// or text shown backwards.
    public func log(_ priority: Priority, _ message: String, _ fields: LogFields = [:]) {
        var all = context.isEmpty ? fields : context.merging(fields) { _, line in line }
        for (key, value) in all where value.unicodeScalars.contains(where: ControlCharacters.contains) {
            all[key] = ControlCharacters.escaped(value)
        }
        sink(priority, Self.text(ControlCharacters.escaped(message), all), all)
    }

    /// A logger that adds `fields` to every line (a line's own fields win): hand one to the
    /// code of one hot folder (`log.with(["INBOX": name])`) and each of its lines names it,
    /// in the journal's fields and in its text.
    public func with(_ fields: LogFields) -> Logger {
        var copy = self
        copy.context.merge(fields) { _, new in new }
        return copy
    }

    /// The line as people read it (the journal's MESSAGE, a terminal): the hot folder leads,
    /// then the batch, then the file, each left out when the message names it already —
    /// `shop 20261129-164500-3f2a: IMG_1.jpg: empty-file: the file is empty (0 bytes)`,
    /// `shop: claimed batch of 2 photos`. A message without those fields is as written.
    public static func text(_ message: String, _ fields: LogFields) -> String {
        var context: [String] = []
        if let inbox = fields["INBOX"], !inbox.isEmpty, !message.hasPrefix(inbox + ":") {
            context.append(inbox)
        }
        if let batch = fields["BATCH"], !batch.isEmpty, !message.contains(batch) { context.append(batch) }
        var text = message
        if let file = fields["FILE"], !file.isEmpty, !message.contains(file) { text = file + ": " + text }
        return context.isEmpty ? text : context.joined(separator: " ") + ": " + text
    }

    public func error(_ message: String, _ fields: LogFields = [:]) { log(.error, message, fields) }
    public func warning(_ message: String, _ fields: LogFields = [:]) { log(.warning, message, fields) }
    public func notice(_ message: String, _ fields: LogFields = [:]) { log(.notice, message, fields) }
    public func info(_ message: String, _ fields: LogFields = [:]) { log(.info, message, fields) }
}
