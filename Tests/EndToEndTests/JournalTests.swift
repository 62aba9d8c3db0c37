import Foundation
import Testing

/// Under systemd the daemon logs to the journal with priorities and fields (SPEC §7). The
/// test plays journald: it owns the native protocol socket and reads the entries.
@Suite(.serialized) struct JournalTests {
    static let socket = "/run/systemd/journal/socket"

    /// Entries as dictionaries (the native protocol: one datagram, `KEY=value` lines).
    static func entries(_ listener: NotifyListener) -> [[String: String]] {
        listener.received.map { datagram in
            var fields: [String: String] = [:]
            for line in datagram.split(separator: "\n") {
                guard let eq = line.firstIndex(of: "=") else { continue }
                fields[String(line[..<eq])] = String(line[line.index(after: eq)...])
            }
            return fields
        }
    }

    @Test func entriesCarryPriorityAndInboxBatchFileFields() throws {
        if FileManager.default.fileExists(atPath: Self.socket) {
            // A real journald owns the socket here: nothing to intercept.
            print("skipped: \(Self.socket) belongs to a running journald")
            return
        }
        guard (try? FileManager.default.createDirectory(atPath: "/run/systemd/journal",
                                                        withIntermediateDirectories: true)) != nil else {
            print("skipped: cannot create /run/systemd/journal (not root)")
            return
        }
        let journal = try NotifyListener(at: Self.socket)
        defer { journal.close() }
        let hot = try HotFolderFixture()
        let daemon = try hot.start(environment: ["JOURNAL_STREAM": "log"])
        try hot.drop(try HotFolderFixture.photo(1), as: "good.jpg")
        try hot.drop(Array("not a photo".utf8), as: "bad.jpg")
        let done = Poll.until(.seconds(60)) {
            Self.entries(journal).contains { $0["FILE"] == "bad.jpg" } && !hot.reports().isEmpty
        }
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
        #expect(done, "journal entries: \(Self.entries(journal))")
        let entries = Self.entries(journal)
        // Every entry is ours, with a message and a syslog priority.
        #expect(!entries.isEmpty)
        for e in entries {
            #expect(e["SYSLOG_IDENTIFIER"] == "photofinish")
            #expect(e["MESSAGE"]?.isEmpty == false)
            #expect(e["PRIORITY"].flatMap(Int.init).map { (0...7).contains($0) } == true, "\(e)")
        }
        // The batch's entries name the hot folder and the batch; the failed photo is a warning naming its file.
        let batch = try #require(hot.reports().keys.first)
        #expect(entries.contains { $0["INBOX"] == "shop" && $0["BATCH"] == batch })
        let failed = try #require(entries.first { $0["FILE"] == "bad.jpg" })
        #expect(failed["PRIORITY"] == "4")
        #expect(failed["INBOX"] == "shop" && failed["BATCH"] == batch)
        #expect(failed["MESSAGE"]?.contains("unsupported-format") == true)
        // People read MESSAGE: every line of a hot folder leads with its name (and batch, and
        // file), not only in the fields.
        for e in entries where e["INBOX"] != nil {
            #expect(e["MESSAGE"]?.hasPrefix(e["INBOX"]! + (e["BATCH"].map { " " + $0 } ?? "") + ":") == true
                    || e["MESSAGE"]?.hasPrefix(e["INBOX"]! + ":") == true, "\(e)")
        }
        #expect(failed["MESSAGE"]?.hasPrefix("shop \(batch): bad.jpg: unsupported-format") == true, "\(failed)")
        #expect(entries.contains { $0["MESSAGE"]?.hasPrefix("shop \(batch): claimed batch of ") == true }, "\(entries)")
        // Under the journal, stderr carries no duplicate plain lines.
        #expect(!daemon.log.contains("bad.jpg"), "stderr: \(daemon.log)")
    }
}
