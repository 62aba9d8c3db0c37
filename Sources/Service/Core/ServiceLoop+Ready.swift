import Batches
import Foundation
import HotFolders
import JSON5
import System

/// `READY=1` once every hot folder is taken up (watched) or refused, and the line that says so.
extension ServiceLoop {
    /// `READY=1` once every hot folder of the start (or of a reload) has been taken up or refused.
    func announceReady() {
        guard takeUps == 0 else { return }
        // The folders inotify gave no watch, in one line (the budget's line at the start or
        // reload said those it foresaw).
        let foreseen = !readySent || reloadAwaitsReady ? budget?.polled ?? 0 : 0
        watcher.logPolling(expected: foreseen) { budget?.inotifyFix(systemd: FolderProblem.underSystemd, polledNow: $0) ?? [] }
        if !readySent {
            readySent = true
            // Every hot folder's STATUS.txt, written from now on (before, only the status file),
            // and the proofs' links and looks held until now.
            publisher.ready()
            proofs.ready()
            // The line first: whoever waits for READY=1 finds it in the journal then.
            log.notice(readyLine())
            Notify.ready(status: board.snapshot(state: .running).summary)
            // What the hot folders taken up so far did not make or read before READY, on their
            // strands (before any claim queued after this; a batch makes a missing one itself
            // anyway).
            let staleAfter = setup.config.staleAfter
            for inbox in setup.inboxes {
                guard let hotFolder = hotFolders[inbox.name], hotFolder.watch != nil else { continue }
                let layout = inbox.layout, name = inbox.name
                let recover = hotFolder.recoverLater ? hotFolder.system.map { ($0, staleAfter, locks, mailbox) } : nil
                hotFolder.recoverLater = false
                pool.run(name) { [log, board, metrics] in
                    TakeUp.fileLater(layout, inbox: name, board: board, metrics: metrics, log: log, recover: recover)
                }
            }
            // Their first turns, held until now (`schedule`).
            for hotFolder in hotFolders.values where hotFolder.watch != nil { schedule(hotFolder) }
        } else if reloadAwaitsReady {
            reloadAwaitsReady = false
            publisher.publishNow()
            Notify.ready(status: board.snapshot(state: .running).summary)
        }
    }

    /// "ready: watching shop (/srv/shop/drop), studio (…); not watched: x (why)".
    func readyLine() -> String {
        let shown = 20
        let inboxes = setup.inboxes.compactMap { hotFolders[$0.name] }
        let watched = inboxes.filter { $0.watch != nil }, refused = inboxes.filter { $0.watch == nil }
        func list(_ items: [String]) -> String {
            items.prefix(shown).joined(separator: ", ") + (items.count > shown ? " and \(items.count - shown) more" : "")
        }
        var line = "ready: watching " + (watched.isEmpty ? "nothing" : list(watched.map { "\($0.settings.name) (\($0.settings.layout.drop))" }))
        if !refused.isEmpty {
            line += "; not watched (refused): " + list(refused.map { "\($0.settings.name) (\($0.takingUp.problem?.why ?? "not taken up"))" })
                + " — photofinish status says why and what fixes it"
        }
        return line
    }
}
