import Batches
import Cluster
import Foundation
import System
import HotFolders

/// `<root>/STATUS.txt` (reference: `STATUS.txt`): a hot folder's state in words, for people who
/// drop files over a share and cannot run `photofinish status`. Plain ASCII with CRLF line ends, so
/// it reads the same in Notepad (any version), TextEdit, `cat` and a phone's file viewer.
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
    ///   - cluster: this daemon as a host of a cluster (nil: it works alone).
    ///   - openFiles: what the limits allow the hot folders (why a folder is polled).
    public static func render(_ inbox: ServiceStatus.Inbox, running: Bool, updated: Date,
                              reloadFailed: ServiceStatus.ReloadFailure? = nil,
                              cluster: ServiceStatus.ClusterState? = nil, openFiles: ServiceStatus.OpenFiles? = nil) -> String {
        var lines = ["PhotoFinish - hot folder \"\(inbox.name)\"", "Updated \(updatedWords(updated))", ""]
        if running, let cluster {
            lines += clusterLines(cluster)
            lines.append("")
        }
        if running, let failed = reloadFailed {
            lines.append("The configuration was changed, but the reload at \(HumanTime.words(isoUTC: failed.at)) failed:")
            lines += failed.errors.map { "- " + ascii($0) }
            lines.append("PhotoFinish still runs with the configuration it had (photofinish check says more).")
            lines.append("")
        }
        if running, let state = inbox.state, let lead = state.textLead {
            lines.append(lead)
            lines += fixLines(state)
            if let tail = state.textTail { lines.append(tail) }
        }
        let refused = running && inbox.state?.isRefused == true
        if !running {
            lines.append("PhotoFinish is stopped. Files dropped now wait in drop/ until it starts again.")
        } else if refused {
            lines.append(waitingLine(inbox.waiting))
        } else if inbox.processing != nil || inbox.open != nil {
            if let p = inbox.processing { lines.append("Processing batch \(p.batch): \(photos(p)).") }
            if let o = inbox.open { lines.append("Batch \(o.batch) is open (more photos may join): \(photos(o)).") }
        } else {
            lines.append("Idle: no batch is being processed.")
        }
        if inbox.queued > 0 {
            lines.append("\(inbox.queued) more batch\(inbox.queued == 1 ? "" : "es") waiting \(inbox.queued == 1 ? "its" : "their") turn.")
        }
        let waiting = inbox.settling + inbox.pending
        if refused {
            // Not watched: its counts say nothing (the line above says what waits).
        } else if waiting > 0 {
            var parts: [String] = []
            if inbox.settling > 0 { parts.append("\(inbox.settling) still arriving") }
            if inbox.pending > 0 { parts.append("\(inbox.pending) ready for the next batch") }
            let held = running && inbox.state?.kind == .lowSpace ? ", not taken until there is room (see above)" : ""
            lines.append("Pending in drop/: \(waiting) file\(waiting == 1 ? "" : "s") (\(parts.joined(separator: ", ")))\(held).")
        } else {
            lines.append("Pending in drop/: nothing.")
        }
        if let parked = inbox.parked, parked > 0 {
            let photos = "\(parked) photo\(parked == 1 ? "" : "s")"
            lines.append(running
                ? "Claimed and waiting in .work/: \(photos), finished in turn."
                : "Claimed and waiting in .work/: \(photos), finished when PhotoFinish starts again.")
        }
        if let watching = inbox.watching, watching != "inotify" {
            lines.append("drop/ is checked by \(watching.replacingOccurrences(of: "inotify + ", with: "")): files written there are seen within that time.")
        } else if inbox.polling {
            lines.append("Note: drop/ is checked by polling (no inotify), so arrivals are seen a little later.")
        }
        if running { lines += pollingLines(inbox, openFiles).map(ascii) }
        if running, let claimer = inbox.claimer {
            let since = inbox.claimerSince.map { " since \(HumanTime.words(isoUTC: $0))" } ?? ""
            lines.append(ascii("New photos are claimed by host \"\(claimer)\"\(since) (one host of the cluster claims at a time)."))
        }
        for takeover in inbox.takeovers ?? [] { lines.append(ascii(takeover)) }
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
        if let proof = inbox.proof {
            lines.append("The proof of its template (what each output looks like) is \(ascii(proof)).")
        }
        if let held = inbox.held, !held.isEmpty {
            lines.append("")
            lines += held.map { ascii($0.textLine) }
        }
        if let deliveries = inbox.deliveries, !deliveries.isEmpty {
            lines.append("")
            lines.append("Deliveries not done (\(deliveries.count)):")
            lines += deliveries.map { "- " + ascii($0) }
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

    /// The time of writing, to the nearest second (cut down to the second, a file written at
    /// 16:04:05.9 said 16:04:05, and read a second later looked nearly 2 s old).
    static func updatedWords(_ date: Date) -> String {
        HumanTime.words(Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded()))
    }

    /// What a hot folder's STATUS.txt says of the cluster: the host's name, how many hosts are
    /// up, and whether the database answers (while it does not, this host works alone).
    static func clusterLines(_ cluster: ServiceStatus.ClusterState?) -> [String] {
        guard let cluster else { return [] }
        let host = "\"\(ascii(cluster.host))\""
        switch cluster.database {
        case ServiceStatus.ClusterState.unreachable:
            return ["The cluster's database does not answer (since \(HumanTime.words(isoUTC: cluster.since))): \(ascii(cluster.reason ?? "no answer")).",
                    "This host (\(host)) works alone meanwhile, as without a cluster: it claims and finishes photos itself, and spreads them again once the database answers."]
        case ServiceStatus.ClusterState.reachable:
            let lease = Duration.milliseconds(Int64(cluster.lease * 1000))
            let up = cluster.view?.hosts.filter { $0.isUp(lease: lease) }.count ?? 1
            return ["This is host \(host) of a cluster of \(up) host\(up == 1 ? "" : "s") up: photos are finished by whichever host is free."]
        default:
            return ["This is host \(host) of a cluster: its database has not answered yet."]
        }
    }

    /// Why a polled hot folder's drop/ is polled, and what fixes it: inotify's watches ran out
    /// (the sentence and fix `photofinish status` says under its summary, from the same
    /// budget: reference, Many hot folders and the open-file limit), or it is on a share, where
    /// inotify sees only this machine's writes. Nothing for a folder watched with inotify.
    static func pollingLines(_ inbox: ServiceStatus.Inbox, _ openFiles: ServiceStatus.OpenFiles?) -> [String] {
        if inbox.polling {
            guard let why = openFiles?.inotify else {
                // The budget had room: other programs of this user hold watches too.
                return ["Why: inotify gave no watch for drop/ (fs.inotify.max_user_watches is reached: other programs of this user watch files too).",
                        "To fix it: raise fs.inotify.max_user_watches (sysctl -w, and in /etc/sysctl.d/ to keep it after a reboot), then restart PhotoFinish."]
            }
            return ["Why: \(why)."] + ["To fix it:"] + (openFiles?.inotifyFix ?? []).map { "  " + $0 }
        }
        if let watching = inbox.watching, watching.hasPrefix("inotify + polling") {
            return ["Why: drop/ is on a share, and inotify sees only this machine's writes there (another machine's are seen by looking)."]
        }
        return []
    }

    /// "4 of 6 photos done, 2 in progress": `Progress.words` with the unit named once.
    static func photos(_ p: ServiceStatus.Progress) -> String {
        let words = p.words
        let lead = "\(p.done) of \(p.total) done"
        return "\(p.done) of \(p.total) photo\(p.total == 1 ? "" : "s") done" + words.dropFirst(lead.count)
    }

    /// What waits in a refused hot folder's `drop/`: nothing takes it until the folder can be used.
    static func waitingLine(_ waiting: Int?) -> String {
        switch waiting {
        case nil: "Not watched: nothing is taken from drop/ until this hot folder can be used."
        case 0?: "Waiting in drop/: nothing. Files dropped now wait there until this hot folder can be used."
        case let n?: "Waiting in drop/: \(n) file\(n == 1 ? "" : "s"), not taken until this hot folder can be used (see above)."
        }
    }

    /// "To fix it:" and the fixes, one a line (nothing when there are none).
    private static func fixLines(_ state: ServiceStatus.FolderState) -> [String] {
        guard let fix = state.fix, !fix.isEmpty else { return [] }
        return ["To fix it:"] + fix.map { "  " + ascii($0) }
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
    /// second per folder (a change within the second is written when the second is up). Only
    /// the folders said to have changed are looked at (`only`), plus those held back: one
    /// write per folder that changed, whatever the number of folders. A write that failed (a
    /// full disk, a share gone away, a root that cannot be written) is tried again a second
    /// later, then after 2, 4, 8 … seconds, at most every `maxRetryDelay`: never a loop that
    /// burns CPU on 10,000 folders it cannot write to.
    struct Writer {
        private var written: [String: (state: Written, at: Duration)] = [:]
        private var failed: [String: (at: Duration, delay: Duration)] = [:]
        /// Folders (by name) whose change waits for its second to be up, or for a retry.
        private var waiting: Set<String> = []
        static let interval = Duration.seconds(1)
        static let maxRetryDelay = Duration.seconds(300)

        /// - Parameters:
        ///   - only: the hot folders (names) that changed; `nil`: all of them.
        ///   - now: the monotonic clock (`.zero` with a final state: written at once).
        ///   - staging: where a folder's temporary file is made (its `.work/` while watched).
        /// - Returns: when to call again for a change held back or a retry (`nil`: nothing waits).
        @discardableResult
        mutating func update(_ status: ServiceStatus, only: Set<String>? = nil, now: Duration, log: Logger,
                             staging: (ServiceStatus.Inbox) -> String? = { _ in nil }) -> Duration? {
            let running = status.state == .running
            let look = only.map { $0.union(waiting) }
            var next: Duration?
            func later(_ t: Duration) { next = min(next ?? t, t) }
            for inbox in status.inboxes where look?.contains(inbox.name) ?? true {
                waiting.remove(inbox.name)
                // Only a change of state is a reason to write (not the time line).
                let state = Written(inbox: inbox, running: running, reloadFailed: status.reloadFailed,
                                    cluster: StatusText.clusterLines(status.cluster),
                                    polling: StatusText.pollingLines(inbox, status.openFiles))
                let last = written[inbox.root]
                if let last, last.state == state { failed[inbox.root] = nil; continue }
                if running, let last, now - last.at < Self.interval {
                    waiting.insert(inbox.name)
                    later(last.at + Self.interval)
                    continue
                }
                if running, let fail = failed[inbox.root], now - fail.at < fail.delay {
                    waiting.insert(inbox.name)
                    later(fail.at + fail.delay)
                    continue
                }
                let path = inbox.root + "/" + StatusText.fileName
                if last == nil { Self.removeLeftovers(in: inbox.root) }
                let text = Array(StatusText.render(inbox, running: running, updated: Date(), reloadFailed: status.reloadFailed,
                                                   cluster: status.cluster, openFiles: status.openFiles).utf8)
                do throws(SystemError) {
                    if let stage = staging(inbox) {
                        // .work/ may be gone or unwritable for a moment: the root will do.
                        do throws(SystemError) {
                            try PublishedFile.write(text, to: path, staging: stage)
                        } catch {
                            try PublishedFile.write(text, to: path)
                        }
                    } else {
                        try PublishedFile.write(text, to: path)
                    }
                    written[inbox.root] = (state, now)
                    failed[inbox.root] = nil
                } catch {
                    let delay = failed[inbox.root].map { min($0.delay * 2, Self.maxRetryDelay) } ?? Self.interval
                    // A folder refused (its root missing, not ours) says so itself: its STATUS.txt
                    // failing to be written is no news.
                    let refused = inbox.state?.isRefused == true
                    if failed[inbox.root] == nil {
                        log.log(refused ? .debug : .warning, "cannot write \(path): \(error); tried again after 1 s, 2 s, 4 s … (at most every 5 minutes)",
                                    ["INBOX": inbox.name])
                    }
                    failed[inbox.root] = (now, delay)
                    waiting.insert(inbox.name)
                    later(now + delay)
                }
            }
            return next
        }

        /// Forgets what was written for folders no longer shown (a reload removed them).
        mutating func keep(roots: Set<String>) {
            written = written.filter { roots.contains($0.key) }
            failed = failed.filter { roots.contains($0.key) }
        }

        /// What a written file said: the hot folder's state, and whether the daemon ran.
        struct Written: Equatable {
            var inbox: ServiceStatus.Inbox
            var running: Bool
            var reloadFailed: ServiceStatus.ReloadFailure?
            /// What it said of the cluster (`clusterLines`).
            var cluster: [String] = []
            /// Why its drop/ is polled (`pollingLines`).
            var polling: [String] = []
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
