import Batches
import Foundation
import System
import HotFolders

/// `<root>/STATUS.txt` (SPEC §8): a hot folder's state in words, for people who drop files over
/// a share and cannot run `photofinish status`. Plain ASCII with CRLF line ends, so it reads
/// the same in Notepad (any version), TextEdit, `cat` and a phone's file viewer.
public enum StatusText {
    public static let fileName = "STATUS.txt"
    /// At most this many never-taken items are listed (a share's thousand `.DS_Store`s).
    static let neverTakenShown = 20

    /// The text for one hot folder.
    /// - Parameters:
    ///   - inbox: its status.
    ///   - running: false once the daemon has stopped.
    ///   - updated: when (shown in local time with its offset from UTC).
    ///   - reloadFailed: the last reload failed (the process runs the configuration it had).
    public static func render(_ inbox: ServiceStatus.Inbox, running: Bool, updated: Date,
                              reloadFailed: ServiceStatus.ReloadFailure? = nil) -> String {
        var lines = ["PhotoFinish - hot folder \"\(inbox.name)\"", "Updated \(HumanTime.words(updated))", ""]
        if running, let failed = reloadFailed {
            lines.append("The configuration was changed, but the reload at \(HumanTime.words(isoUTC: failed.at)) failed:")
            lines += failed.errors.map { "- " + ascii($0) }
            lines.append("PhotoFinish still runs with the configuration it had (photofinish check says more).")
            lines.append("")
        }
        if !running {
            lines.append("PhotoFinish is stopped. Files dropped now wait in drop/ until it starts again.")
        } else if let p = inbox.processing {
            lines.append("Processing batch \(p.batch): \(p.done) of \(p.total) photo\(p.total == 1 ? "" : "s") done.")
        } else {
            lines.append("Idle: no batch is being processed.")
        }
        if inbox.queued > 0 {
            lines.append("\(inbox.queued) more batch\(inbox.queued == 1 ? "" : "es") waiting \(inbox.queued == 1 ? "its" : "their") turn.")
        }
        let waiting = inbox.settling + inbox.pending
        if waiting > 0 {
            var parts: [String] = []
            if inbox.settling > 0 { parts.append("\(inbox.settling) still arriving") }
            if inbox.pending > 0 { parts.append("\(inbox.pending) ready for the next batch") }
            lines.append("Pending in drop/: \(waiting) file\(waiting == 1 ? "" : "s") (\(parts.joined(separator: ", "))).")
        } else {
            lines.append("Pending in drop/: nothing.")
        }
        if let watching = inbox.watching, watching != "inotify" {
            lines.append("drop/ is checked by \(watching.replacingOccurrences(of: "inotify + ", with: "")): files written there are seen within that time.")
        } else if inbox.polling {
            lines.append("Note: drop/ is checked by polling (no inotify), so arrivals are seen a little later.")
        }
        let attention = (inbox.refused ?? []) + (inbox.unfiled ?? [:]).sorted { $0.key < $1.key }.flatMap(\.value)
        if !attention.isEmpty {
            lines.append("")
            lines.append("Needs attention (\(attention.count) file\(attention.count == 1 ? "" : "s")):")
            lines += attention.map { "- " + ascii($0) }
        }
        if let never = inbox.neverTaken, !never.isEmpty {
            lines.append("")
            lines.append("Never taken from drop/ (\(never.count) item\(never.count == 1 ? "" : "s")):")
            lines += never.prefix(neverTakenShown).map { "- " + ascii($0) }
            if never.count > neverTakenShown { lines.append("- and \(never.count - neverTakenShown) more (photofinish status lists them all)") }
        }
        lines.append("")
        if let last = inbox.last {
            let finished = HumanTime.words(isoUTC: last.finished)
            var line = "Last batch: \(last.batch), finished \(finished): \(last.ok) of \(last.items) photo\(last.items == 1 ? "" : "s") finished"
            line += last.failed > 0 ? ", \(last.failed) failed (see failed/\(last.batch)/)." : "."
            lines.append(line)
            lines.append("Its outputs and report: out/\(last.batch)/ (open report.html).")
        } else {
            lines.append("Last batch: none since PhotoFinish started.")
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// `text` in plain ASCII: every other byte of its UTF-8 as `\xHH` (file names in the
    /// file's words, which stay ASCII for every viewer).
    static func ascii(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if byte < 0x80 {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "\\x" + String(byte, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// Writes each hot folder's `STATUS.txt` when its state changes, at most about once a
    /// second per folder (a change within the second is written when the second is up). An
    /// unchanged hot folder costs one comparison: nothing is rendered for it (1,000 idle hot
    /// folders cost next to nothing). A
    /// write that failed (a full disk, a share gone away) is tried again every second until
    /// it succeeds, so the file is never left stale once the disk has room again.
    struct Writer {
        private var written: [String: (state: Written, at: Duration)] = [:]
        private var failed: [String: Duration] = [:]
        static let interval = Duration.seconds(1)

        /// - Parameter now: the monotonic clock (`.zero` with a final state: written at once).
        /// - Returns: true when a change is held back (written within the last second, or a
        ///   write that failed): call again within a second even if nothing else changes.
        @discardableResult
        mutating func update(_ status: ServiceStatus, now: Duration, log: Logger) -> Bool {
            let running = status.state == "running"
            var deferred = false
            for inbox in status.inboxes {
                // Only a change of state is a reason to write (not the time line).
                let state = Written(inbox: inbox, running: running, reloadFailed: status.reloadFailed)
                if let last = written[inbox.root], last.state == state { continue }
                if running, let last = written[inbox.root], now - last.at < Self.interval { deferred = true; continue }
                if running, let last = failed[inbox.root], now - last < Self.interval { deferred = true; continue }
                let path = inbox.root + "/" + StatusText.fileName
                if written[inbox.root] == nil { Self.removeLeftovers(in: inbox.root) }
                do throws(SystemError) {
                    try AtomicFile.write(Array(StatusText.render(inbox, running: running, updated: Date(),
                                                                         reloadFailed: status.reloadFailed).utf8), to: path)
                    written[inbox.root] = (state, now)
                    failed[inbox.root] = nil
                } catch {
                    if failed[inbox.root] == nil { log.warning("cannot write \(path): \(error); trying again every second", ["INBOX": inbox.name]) }
                    failed[inbox.root] = now
                    deferred = true
                }
            }
            return deferred
        }

        /// What a written file said: the hot folder's state, and whether the daemon ran.
        struct Written: Equatable {
            var inbox: ServiceStatus.Inbox
            var running: Bool
            var reloadFailed: ServiceStatus.ReloadFailure?
        }

        /// Removes the temporary `STATUS.txt` a crash in the middle of a write left in `root`
        /// (only ours: `.pf-tmp-STATUS.txt-*`, and only once a minute old: another daemon on
        /// the same hot folder may be writing one right now).
        static func removeLeftovers(in root: String) {
            let prefix = Array((AtomicFile.temporaryPrefix + StatusText.fileName + "-").utf8)
            guard let folder = try? Directory(root) else { return }
            let cutoff = Date().timeIntervalSince1970 - 60
            for name in (try? folder.names()) ?? [] where name.bytes.starts(with: prefix) {
                if let st = try? folder.status(of: name), st.modified < cutoff { try? folder.remove(name) }
            }
        }
    }
}
