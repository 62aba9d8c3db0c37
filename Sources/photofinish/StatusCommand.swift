import Batches
import Cluster
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
/// unavailable; starting); a daemon that is a host of a cluster says so, with whether the
/// cluster's database answers and every host of the cluster, its workers and the tasks it holds
/// (as that daemon last read them). `--json`: the running processes' statuses as they wrote
/// them. Exits 1 when a folder shown is refused, or nothing runs.
enum StatusCommand {
    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        guard a.positional.count <= 1 else { throw UsageError("status takes at most one ROOT folder") }
        let places = StatusFiles.directories().joined(separator: ", ")
        var found = StatusFiles.removeLeftovers(StatusFiles.all()).map(\.status)
        var names: [String]?
        if let configPath = a[.config] {
            let absolute = WatchCommand.absolute(configPath)
            // The hot folders' names are all it needs (the whole load only for its errors).
            if let outline = Config.outline(path: configPath) {
                names = outline.inboxes.map(\.name)
            } else {
                do {
                    names = try Config.load(path: configPath).inboxes.map(\.name)
                } catch {
                    for e in error.errors { Terminal.note(e.description) }
                    return 2
                }
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
            var paths = StandardPaths()  // each parent resolved once, not each root's every folder
            found = found.filter { $0.inboxes.contains { paths.standardized($0.root) == absolute } }
            guard !found.isEmpty else {
                print("nothing watches \(absolute) (no photofinish status names it in \(places))")
                return 1
            }
        }
        var paths = StandardPaths()
        let named = names.map(Set.init)
        func shown(_ inbox: ServiceStatus.Inbox) -> Bool {
            (named?.contains(inbox.name) ?? true) && (root.map { paths.standardized(inbox.root) == $0 } ?? true)
        }
        let running = found.filter(\.isRunning).sorted { $0.updated > $1.updated }
        let gone = StatusFiles.lastStates(of: found.filter { !$0.isRunning }, watchedBy: running)
            .filter { shown($0.inbox) && (root != nil || Files.existsFollowingLinks($0.inbox.root)) }
        guard !running.isEmpty || !gone.isEmpty else {
            print("photofinish is not running (no status in \(places))")
            return 1
        }
        if a.has(.json) {
            var shownStatuses = running
            for i in shownStatuses.indices { shownStatuses[i].inboxes = shownStatuses[i].inboxes.filter(shown) }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: (try? encoder.encode(shownStatuses)) ?? Data("[]".utf8), as: UTF8.self))
            return running.isEmpty || running.contains { $0.inboxes.contains { shown($0) && $0.state?.isRefused == true } } ? 1 : 0
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
            if let cluster = status.cluster { print(clusterLines(cluster)) }
            let inboxes = status.inboxes.filter(shown)
            refused += inboxes.count { $0.state?.isRefused == true }
            print(folderLines(inboxes, every: a.has(.all) || root != nil || inboxes.count <= listedUpTo))
            if let openFiles = status.openFiles, let polled = openFiles.inotify {
                print("  \(polled); to fix it:" + (openFiles.inotifyFix ?? []).map { "\n    \($0)" }.joined())
            }
            let watched = Set(status.inboxes.map(\.name))
            for name in names ?? [] where !watched.contains(name) {
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
            print("\n\(refused) hot folder\(refused == 1 ? " is" : "s are") refused: each says why, and what fixes it")
        }
        return running.isEmpty || refused > 0 ? 1 : 0
    }

    /// Up to this many hot folders are listed one by one without `--all` (beyond it, the
    /// summary and up to this many of those busy or needing attention).
    static let listedUpTo = 20
    /// Up to this many names of folders refused alike are named in the summary.
    static let namedUpTo = 10

    /// A process's hot folders: the summary, then each one (`every`), or those that need
    /// attention and are not said in the summary, and those busy.
    static func folderLines(_ inboxes: [ServiceStatus.Inbox], every: Bool) -> String {
        let (summary, grouped) = summary(inboxes)
        guard !every else { return ([summary] + inboxes.map(lines)).joined(separator: "\n") }
        let listed = inboxes.filter {
            !grouped.contains($0.name) && (needsAttention($0) != nil || hasFilesNeedingAttention($0) || isBusy($0))
        }
        var out = [summary] + listed.prefix(listedUpTo).map(lines)
        if listed.count > listedUpTo { out.append("  and \(listed.count - listedUpTo) more busy or needing attention") }
        out.append("  (photofinish status --all lists every hot folder, photofinish status ROOT one of them)")
        return out.joined(separator: "\n")
    }

    /// "2000 hot folders: 140 watching, 1860 refused; 3 busy", then the folders refused alike
    /// (by the open-file limit, say) said once: why, the fix, their names.
    /// - Returns: the text, and the folders it said.
    static func summary(_ inboxes: [ServiceStatus.Inbox]) -> (String, Set<String>) {
        var counts: [String: Int] = [:], order: [String] = []
        for inbox in inboxes {
            let word = inbox.state?.kind.statusWords ?? "watching"
            if counts[word] == nil { order.append(word) }
            counts[word, default: 0] += 1
        }
        let busy = inboxes.count(where: isBusy)
        var out = "  \(inboxes.count) hot folder\(inboxes.count == 1 ? "" : "s"): "
            + order.map { "\(counts[$0]!) \($0)" }.joined(separator: ", ")
            + (busy > 0 ? "; \(busy) busy (processing, or files waiting)" : "")
        // Folders with one state, reason and fix: said once.
        var groups: [[String]: [String]] = [:], groupOrder: [[String]] = []
        for inbox in inboxes {
            guard let state = needsAttention(inbox) else { continue }
            let key = [state.kind.word, state.why ?? ""] + (state.fix ?? [])
            if groups[key] == nil { groupOrder.append(key) }
            groups[key, default: []].append(inbox.name)
        }
        var grouped: Set<String> = []
        for key in groupOrder {
            let names = groups[key]!
            guard names.count > 1, let state = inboxes.first(where: { $0.name == names[0] })?.state else { continue }
            grouped.formUnion(names)
            out += "\n  \(names.count) hot folders \(state.kind.statusWords): \(state.why ?? "")" + (state.fix?.isEmpty == false ? "; to fix it:" : "")
            for fix in state.fix ?? [] { out += "\n    \(fix)" }
            out += "\n    they are " + names.prefix(namedUpTo).joined(separator: ", ")
                + (names.count > namedUpTo ? " and \(names.count - namedUpTo) more" : "")
        }
        return (out, grouped)
    }

    /// Files in its drop/ that need someone (refused by the claim, not filed) or deliveries not done.
    static func hasFilesNeedingAttention(_ inbox: ServiceStatus.Inbox) -> Bool {
        inbox.refused?.isEmpty == false || inbox.unfiled?.isEmpty == false || inbox.deliveries?.isEmpty == false
    }

    /// A folder's state when it needs someone to act (refused, low on space, share unavailable).
    static func needsAttention(_ inbox: ServiceStatus.Inbox) -> ServiceStatus.FolderState? {
        guard let state = inbox.state else { return nil }
        switch state.kind {
        case .refused, .lowSpace, .shareUnavailable: return state
        default: return nil
        }
    }

    /// Whether a folder has work under way or waiting.
    static func isBusy(_ inbox: ServiceStatus.Inbox) -> Bool {
        inbox.processing != nil || inbox.open != nil || inbox.queued > 0 || inbox.pending + inbox.settling + (inbox.parked ?? 0) > 0
    }

    /// This daemon as a host of its cluster, and the cluster as it last read it.
    static func clusterLines(_ cluster: ServiceStatus.ClusterState) -> String {
        let since = HumanTime.words(isoUTC: cluster.since)
        let held = "holds \(cluster.held) task\(cluster.held == 1 ? "" : "s")"
        var out: String
        switch cluster.database {
        case ServiceStatus.ClusterState.reachable:
            out = "  cluster host \(cluster.host): the database answers (since \(since)); \(held)"
        case ServiceStatus.ClusterState.unreachable:
            out = "  cluster host \(cluster.host): the database does not answer (since \(since)): \(cluster.reason ?? "no answer")\n"
                + "    this host works alone until it answers (it claims and finishes photos itself); \(held)"
        default:
            out = "  cluster host \(cluster.host): joining (the database has not answered yet)"
        }
        if let view = cluster.view, let read = cluster.read {
            let lease = Duration.milliseconds(Int64(cluster.lease * 1000))
            let when = cluster.database == ServiceStatus.ClusterState.unreachable ? "as last read, at" : "as read at"
            out += "\n  the cluster \(when) \(HumanTime.words(isoUTC: read)):"
            for line in view.text(lease: lease).split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
                out += "\n    " + line
            }
        }
        return out
    }

    static func lines(_ inbox: ServiceStatus.Inbox) -> String {
        var out = "\(inbox.name)  \(inbox.root)\n"
        if let state = inbox.state, let said = state.statusLine {
            out += "  \(said)\n"
            for fix in state.fix ?? [] { out += "    \(fix)\n" }
            // A refused folder is not watched: its counts say nothing.
            if state.isRefused { return String(out.dropLast()) }
        }
        if let claimer = inbox.claimer {
            out += "  claimed by host \(claimer)" + (inbox.claimerSince.map { " since \(HumanTime.words(isoUTC: $0))" } ?? "") + "\n"
        }
        for line in inbox.takeovers ?? [] { out += "  \(line)\n" }
        if let p = inbox.processing {
            out += "  processing batch \(p.batch): \(p.words)\n"
        }
        if let o = inbox.open {
            out += "  open batch \(o.batch) (more photos may join): \(o.words)\n"
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
        for held in inbox.held ?? [] { out += "  \(held.statusLine)\n" }
        for line in inbox.deliveries ?? [] { out += "  delivery \(line)\n" }
        if let l = inbox.last {
            out += "  " + lastBatch(l) + "\n"
        } else {
            out += "  no batch finished since the daemon started\n"
        }
        return String(out.dropLast())
    }

    /// "last batch 20261129-…: complete, 3 of 3 finished at …".
    static func lastBatch(_ l: ServiceStatus.Last) -> String {
        "last batch \(l.batch): \(l.status), \(l.ok) of \(l.items) finished"
            + (l.failed > 0 ? ", \(l.failed) failed" : "") + " at \(HumanTime.words(isoUTC: l.finished))"
    }
}
