import Batches
import Configuration
import Foundation
import Service
import System

/// `photofinish status [ROOT] [--config FILE]`: per hot folder what is pending and processing,
/// and the last batch's result, from the status files of the running daemons and watches
/// (each process writes its own, keyed by its config or its hot folder). Only processes that
/// run are listed; a hot folder that none of them watches any more is shown once, as the last
/// process that watched it left it (when the folder is still there). Each folder's state is
/// said when it is not simply watching (refused: why and the fix; low on space; share
/// unavailable; starting); exits 1 when a folder shown is refused, or nothing runs.
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
        func shown(_ inbox: ServiceStatus.Inbox) -> Bool {
            (names?.contains(inbox.name) ?? true) && (root.map { WatchCommand.absolute(inbox.root) == $0 } ?? true)
        }
        let running = found.filter(\.isRunning).sorted { $0.updated > $1.updated }
        let gone = StatusFiles.lastStates(of: found.filter { !$0.isRunning }, watchedBy: running)
            .filter { shown($0.inbox) && (root != nil || Files.existsFollowingLinks($0.inbox.root)) }
        guard !running.isEmpty || !gone.isEmpty else {
            print("photofinish is not running (no status in \(places))")
            return 1
        }
        var first = true
        var refused = 0
        func separate() {
            if !first { print("") }
            first = false
        }
        for status in running {
            separate()
            let what = "photofinish " + (status.command ?? "daemon")
            print("\(what): running (pid \(status.pid), status of \(HumanTime.words(isoUTC: status.updated)))")
            if let failed = status.reloadFailed {
                print("  the reload at \(HumanTime.words(isoUTC: failed.at)) failed; it runs the configuration it had:")
                for error in failed.errors { print("    \(error)") }
            }
            for inbox in status.inboxes where shown(inbox) {
                print(lines(inbox))
                if inbox.state?.isRefused == true { refused += 1 }
            }
            for name in names ?? [] where !status.inboxes.contains(where: { $0.name == name }) {
                print("\(name): not watched by the running daemon (reload it: systemctl reload photofinish)")
            }
        }
        for (inbox, status) in gone {
            separate()
            let what = "photofinish " + (status.command ?? "daemon")
            print("\(inbox.name)  \(inbox.root)\n  not watched: \(what) is not running (its last status \(HumanTime.words(isoUTC: status.updated)), pid \(status.pid))")
            if let l = inbox.last { print("  " + lastBatch(l)) }
        }
        if refused > 0 {
            print("\n\(refused) hot folder\(refused == 1 ? " is" : "s are") refused: fix \(refused == 1 ? "it" : "them") as said, then: systemctl reload photofinish")
        }
        return running.isEmpty || refused > 0 ? 1 : 0
    }

    static func lines(_ inbox: ServiceStatus.Inbox) -> String {
        var out = "\(inbox.name)  \(inbox.root)\n"
        if let state = inbox.state, let said = stateLine(state) {
            out += "  \(said)\n"
            for fix in state.fix ?? [] { out += "    \(fix)\n" }
            // A refused folder is not watched: its counts say nothing.
            if state.isRefused { return String(out.dropLast()) }
        }
        for line in inbox.takeovers ?? [] { out += "  \(line)\n" }
        if let p = inbox.processing {
            out += "  processing \(p.done) of \(p.total) (batch \(p.batch))\n"
        }
        if inbox.queued > 0 { out += "  \(inbox.queued) claimed batch\(inbox.queued == 1 ? "" : "es") waiting\n" }
        let parked = inbox.parked ?? 0
        out += "  \(inbox.pending + parked) pending" + (parked > 0 ? " (\(parked) of them claimed into .work/)" : "")
            + ", \(inbox.settling) still arriving in drop/\n"
        if let watching = inbox.watching {
            out += "  drop/ watched by \(watching)\n"
        } else if inbox.polling {
            out += "  watching by polling (no inotify watch available)\n"
        }
        let attention = (inbox.refused ?? []) + (inbox.unfiled ?? [:]).sorted { $0.key < $1.key }.flatMap(\.value)
        for line in attention { out += "  needs attention: \(line)\n" }
        for line in inbox.neverTaken ?? [] { out += "  \(line)\n" }
        if let l = inbox.last {
            out += "  " + lastBatch(l) + "\n"
        } else {
            out += "  no batch finished since the daemon started\n"
        }
        return String(out.dropLast())
    }

    /// The state in words when it is not plain watching: "refused since 01:02: why", with
    /// `nil` for watching (and for a kind this version does not know: said as it is).
    static func stateLine(_ state: ServiceStatus.FolderState) -> String? {
        typealias Kind = ServiceStatus.FolderState
        let since = state.since.map { " since \(HumanTime.words(isoUTC: $0))" } ?? ""
        let why = state.why.map { ": \($0)" } ?? ""
        switch state.kind {
        case Kind.watching: return nil
        case Kind.refused: return "refused\(since)\(why)" + (state.fix?.isEmpty == false ? "; to fix it:" : "")
        case Kind.lowSpace: return "low on space\(since)\(why)" + (state.fix?.isEmpty == false ? "; to fix it:" : "")
        case Kind.shareUnavailable: return "share unavailable\(since)\(why)" + (state.fix?.isEmpty == false ? "; to fix it:" : "")
        case Kind.starting: return "starting (being taken up)"
        default: return "\(state.kind)\(since)\(why)"
        }
    }

    /// "last batch 20261129-…: complete, 3 of 3 finished at …".
    static func lastBatch(_ l: ServiceStatus.Last) -> String {
        "last batch \(l.batch): \(l.status), \(l.ok) of \(l.items) finished"
            + (l.failed > 0 ? ", \(l.failed) failed" : "") + " at \(HumanTime.words(isoUTC: l.finished))"
    }
}
