import Foundation
import JSON5

/// `onBatch` (reference: Hearing about batches): what to run or call after each batch, globally or
/// for one hot folder (an inbox's own `onBatch` replaces the global one for that folder).
public struct BatchHooks: Sendable, Equatable {
    /// A program and its arguments, run without a shell; each `{report}`, `{batch}`,
    /// `{inbox}`, `{status}` in an argument is replaced.
    public var exec: [String]?
    /// The program is stopped (SIGTERM, then SIGKILL 5 s later) after this long.
    public var timeout: Duration = .seconds(60)
    public var webhook: Webhook?

    /// An HTTP POST of report.json.
    public struct Webhook: Sendable, Equatable {
        /// `http://` or `https://`.
        public var url: String
        /// Extra request headers (`Authorization`, …), sorted by name.
        public var headers: [Header] = []
        /// One attempt's time limit.
        public var timeout: Duration = .seconds(10)
        /// Attempts after the first, each after a doubled wait (1 s, 2 s, 4 s …, at most 5 min).
        public var retries: Int = 5

        public init(url: String) {
            self.url = url
        }
    }

    public struct Header: Sendable, Equatable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The words an `exec` argument may hold.
    public static let placeholders = ["report", "batch", "inbox", "status"]

    public init() {}

    /// `exec` with each placeholder replaced by its value.
    public func arguments(_ values: [String: String]) -> [String] {
        (exec ?? []).map { argument in
            var out = argument
            for (key, value) in values { out = out.replacingOccurrences(of: "{\(key)}", with: value) }
            return out
        }
    }
}

/// Reading `onBatch` from a config (reference: Hearing about batches).
enum BatchHooksRules {
    static let keys = ["exec", "timeout", "webhook"]
    static let webhookKeys = ["url", "headers", "timeout", "retries"]

    static func read(_ value: JSON5Value, at path: [KeyPathComponent], doc: inout JSON5Document) -> BatchHooks? {
        guard let members = doc.object(value, at: path, allowed: keys) else { return nil }
        var hooks = BatchHooks()
        var ok = true
        if let value = members["exec"] {
            hooks.exec = exec(value, at: path + [.key("exec")], doc: &doc)
            ok = ok && hooks.exec != nil
        }
        if let value = members["timeout"] {
            ok = ConfigRules.duration(value, at: path + [.key("timeout")], into: &hooks.timeout, doc: &doc) && ok
        }
        if let value = members["webhook"] {
            hooks.webhook = webhook(value, at: path + [.key("webhook")], doc: &doc)
            ok = ok && hooks.webhook != nil
        }
        if members["exec"] == nil && members["webhook"] == nil {
            doc.fail(path, "needs exec: [\"/path/to/program\", \"{report}\"] or webhook: { url: \"https://…\" } (or both)")
            return nil
        }
        return ok ? hooks : nil
    }

    private static func exec(_ value: JSON5Value, at path: [KeyPathComponent], doc: inout JSON5Document) -> [String]? {
        guard case .array(let words) = value, !words.isEmpty else {
            doc.fail(path, "must be a list: the program's absolute path, then its arguments, e.g. [\"/usr/local/bin/notify\", \"{report}\"], got \(value.shown)")
            return nil
        }
        var out: [String] = []
        for (index, word) in words.enumerated() {
            guard let text = doc.string(word, at: path + [.index(index)], nonEmpty: index == 0) else { return nil }
            if index == 0, !text.hasPrefix("/") {
                doc.fail(path + [.index(0)], "must be the program's absolute path (no shell runs it; for one, use [\"/bin/sh\", \"-c\", \"…\"]), got \"\(text)\"")
                return nil
            }
            for word in placeholderWords(in: text) where !BatchHooks.placeholders.contains(word) {
                let known = BatchHooks.placeholders.map { "{\($0)}" }.joined(separator: ", ")
                var message = "unknown placeholder {\(word)} (known: \(known))"
                if let suggestion = Suggest.closest(to: word, in: BatchHooks.placeholders) { message += " (did you mean {\(suggestion)}?)" }
                doc.fail(path + [.index(index)], message)
                return nil
            }
            out.append(text)
        }
        return out
    }

    /// The words between braces in `text`: `{report}` → `report`.
    static func placeholderWords(in text: String) -> [String] {
        var words: [String] = []
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            words.append(String(rest[rest.index(after: open)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        return words
    }

    private static func webhook(_ value: JSON5Value, at path: [KeyPathComponent], doc: inout JSON5Document) -> BatchHooks.Webhook? {
        guard let members = doc.object(value, at: path, allowed: webhookKeys) else { return nil }
        guard let urlValue = members["url"] else {
            doc.fail(path, "missing key 'url' (where report.json is POSTed, e.g. url: \"https://example.org/hook\")")
            return nil
        }
        guard let url = doc.string(urlValue, at: path + [.key("url")]) else { return nil }
        let lower = url.lowercased()
        guard (lower.hasPrefix("http://") || lower.hasPrefix("https://")), URL(string: url)?.host?.isEmpty == false else {
            doc.fail(path + [.key("url")], "must be an http:// or https:// URL with a host, got \"\(url)\"")
            return nil
        }
        var webhook = BatchHooks.Webhook(url: url)
        var ok = true
        if let value = members["headers"] {
            let headersPath = path + [.key("headers")]
            if case .object(let fields) = value {
                for name in fields.keys.sorted() {
                    let isToken = !name.isEmpty && name.unicodeScalars.allSatisfy {
                        $0.isASCII && $0.value > 0x20 && $0.value < 0x7F && !"()<>@,;:\\\"/[]?={}".unicodeScalars.contains($0)
                    }
                    guard isToken else {
                        doc.fail(headersPath + [.key(name)], "is not a valid HTTP header name")
                        ok = false
                        continue
                    }
                    guard let text = doc.string(fields[name]!, at: headersPath + [.key(name)], nonEmpty: false) else {
                        ok = false
                        continue
                    }
                    if text.contains("\r") || text.contains("\n") {
                        doc.fail(headersPath + [.key(name)], "must be one line")
                        ok = false
                        continue
                    }
                    webhook.headers.append(BatchHooks.Header(name: name, value: text))
                }
            } else {
                doc.fail(headersPath, "must be an object of header names and values, e.g. { Authorization: \"Bearer …\" }, got \(value.shown)")
                ok = false
            }
        }
        if let value = members["timeout"] {
            ok = ConfigRules.duration(value, at: path + [.key("timeout")], into: &webhook.timeout, doc: &doc) && ok
        }
        if let value = members["retries"] {
            if let n = doc.integer(value, at: path + [.key("retries")], in: 0...20) { webhook.retries = n } else { ok = false }
        }
        return ok ? webhook : nil
    }
}
