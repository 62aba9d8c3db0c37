import Batches
import Configuration
import Foundation
import Service

/// `photofinish status [ROOT] [--config FILE]`: per hot folder what is pending and processing,
/// and the last batch's result, from the status files of the running daemons and watches
/// (each process writes its own, keyed by its config or its hot folder).
enum StatusCommand {
    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        guard a.positional.count <= 1 else { throw UsageError("status takes at most one ROOT folder") }
        let places = StatusFiles.directories().joined(separator: ", ")
        var found = StatusFiles.all().map(\.status)
        var names: [String]?
        if let configPath = a.options["config"] {
            let absolute = WatchCommand.absolute(configPath)
            do {
                names = try Config.load(path: configPath).inboxes.map(\.name)
            } catch {
                for e in error.errors { Terminal.note(e.description) }
                return 2
            }
            found = found.filter { $0.config == absolute }
            guard !found.isEmpty else {
                print("no photofinish daemon runs \(absolute) (no status for it in \(places))")
                return 1
            }
        }
        var root: String?
        if let given = a.positional.first {
            let absolute = WatchCommand.absolute(given)
            root = absolute
            found = found.filter { $0.inboxes.contains { WatchCommand.absolute($0.root) == absolute } }
            guard !found.isEmpty else {
                print("nothing watches \(absolute) (no photofinish status names it in \(places))")
                return 1
            }
        }
        guard !found.isEmpty else {
            print("photofinish is not running (no status in \(places))")
            return 1
        }
        // Running processes first; of stopped ones, the newest first.
        found.sort { ($0.isRunning ? 0 : 1, $1.updated) < ($1.isRunning ? 0 : 1, $0.updated) }
        for (index, status) in found.enumerated() {
            if index > 0 { print("") }
            let what = "photofinish " + (status.command ?? "daemon")
            let when = HumanTime.words(isoUTC: status.updated)
            print(status.isRunning
                  ? "\(what): running (pid \(status.pid), status of \(when))"
                  : "\(what): not running (last status \(when), pid \(status.pid))")
            if status.isRunning, let failed = status.reloadFailed {
                print("  the reload at \(HumanTime.words(isoUTC: failed.at)) failed; it runs the configuration it had:")
                for error in failed.errors { print("    \(error)") }
            }
            for inbox in status.inboxes where (names?.contains(inbox.name) ?? true)
                && (root.map { WatchCommand.absolute(inbox.root) == $0 } ?? true) {
                print(lines(inbox))
            }
            for name in names ?? [] where !status.inboxes.contains(where: { $0.name == name }) {
                print("\(name): not watched by the running daemon (reload it: systemctl reload photofinish)")
            }
        }
        return found.contains(where: \.isRunning) ? 0 : 1
    }

    static func lines(_ inbox: ServiceStatus.Inbox) -> String {
        var out = "\(inbox.name)  \(inbox.root)\n"
        if let p = inbox.processing {
            out += "  processing \(p.done) of \(p.total) (batch \(p.batch))\n"
        }
        if inbox.queued > 0 { out += "  \(inbox.queued) claimed batch\(inbox.queued == 1 ? "" : "es") waiting\n" }
        out += "  \(inbox.pending) pending, \(inbox.settling) still arriving in drop/\n"
        if let watching = inbox.watching {
            out += "  drop/ watched by \(watching)\n"
        } else if inbox.polling {
            out += "  watching by polling (no inotify watch available)\n"
        }
        let attention = (inbox.refused ?? []) + (inbox.unfiled ?? [:]).sorted { $0.key < $1.key }.flatMap(\.value)
        for line in attention { out += "  needs attention: \(line)\n" }
        for line in inbox.neverTaken ?? [] { out += "  \(line)\n" }
        if let l = inbox.last {
            out += "  last batch \(l.batch): \(l.status), \(l.ok) of \(l.items) finished"
                + (l.failed > 0 ? ", \(l.failed) failed" : "") + " at \(HumanTime.words(isoUTC: l.finished))\n"
        } else {
            out += "  no batch finished since the daemon started\n"
        }
        return String(out.dropLast())
    }
}
