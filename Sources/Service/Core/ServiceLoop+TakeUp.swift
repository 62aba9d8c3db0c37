import Batches
import Foundation
import HotFolders
import JSON5
import System

/// Taking hot folders up and what the status says of them: watching, or refused with why and
/// the fix; `READY=1` once every folder is one or the other.
extension ServiceLoop {

    /// Asks the work pool to take the folder up (if the open-file limit leaves room for it).
    func startTakeUp(_ folder: Folder, now: Duration) {
        guard !folder.takingUp, folder.watch == nil else { return }
        if !folder.hasRoom {
            guard roomUsed < room else {
                let total = folders.count
                refuse(folder, FolderProblem.openFiles(
                    why: "the open-file limit (\(openFileLimit ?? 0)) leaves room for \(room) of \(total) hot folders",
                    need: work.need(folders: total)), now: now, logged: false)
                return
            }
            roomUsed += 1
            folder.hasRoom = true
        }
        folder.takingUp = true
        folder.attempts += 1
        takeUps += 1
        let name = folder.inbox.name, attempt = folder.attempts, inbox = folder.inbox
        let staleAfter = setup.config.staleAfter, watchedOnly = !readySent
        pool.run(name) { [mailbox, probes, log, locks] in
            mailbox.post(.takenUp(inbox: name, attempt: attempt,
                                  TakeUp.run(inbox, staleAfter: staleAfter, probes: probes, watchedOnly: watchedOnly,
                                             locks: locks, log: log)))
        }
    }

    func takenUp(_ folder: Folder, _ result: Result<TakeUp.Ready, FolderProblem>, now: Duration) {
        folder.takingUp = false
        let name = folder.inbox.name
        switch result {
        case .failure(let problem):
            refuse(folder, problem, now: now, logged: true)
        case .success(let ready):
            if stopping { return }
            folder.system = ready.system
            folder.problem = nil
            let watch = DropWatch(inbox: name, layout: folder.inbox.layout, rules: setup.rules, system: ready.system,
                                  pollInterval: setup.config.pollInterval, clock: { [watcher] in watcher.now() }, log: log)
            watch.update(rules: setup.rules, pollInterval: setup.config.pollInterval, rescanInterval: setup.config.rescanInterval)
            watcher.add(watch, now: now, logWords: ready.firstOnFileSystem)
            folder.watch = watch
            setState(folder, .watching)
            publisher.staged.withLock { _ = $0.insert(name) }
            if let last = ready.last {
                board.update(name) { $0.last = $0.last ?? last }
                metrics.setLastBatch(name, finished: last.finished)
            }
            for batch in ready.resumable { enqueue(batch, folder) }
            folder.nextRecovery = now + setup.config.rescanInterval
            folder.nextLeaseLook = ready.system.isShared ? now + setup.config.pollInterval : nil
            folder.nextSweep = folder.inbox.keep.isForever ? nil : now
            if folder.proofWanted {
                folder.proofWanted = false
                proofs.request(.init(inbox: name, root: folder.inbox.layout.root, template: folder.inbox.template,
                                     maxPixels: setup.config.maxPixels))
            }
            if readySent { log.notice("now watching \(folder.inbox.layout.drop)", ["INBOX": name]) }
        }
        schedule(folder)
        show(folder)
    }

    /// The folder cannot be used: why and the fix on the board, said in the log once (with
    /// `logged`: the folders beyond the open-file limit are said in one line), tried again at
    /// the next reload or after `rescanInterval`.
    func refuse(_ folder: Folder, _ problem: FolderProblem, now: Duration, logged: Bool) {
        let name = folder.inbox.name
        if folder.hasRoom {
            folder.hasRoom = false
            roomUsed -= 1
        }
        if logged, folder.problem != problem {
            let every = Self.words(setup.config.rescanInterval)
            log.error("\(problem.why): this hot folder is not watched; it is tried again at every reload and every \(every)"
                      + (problem.fix.isEmpty ? "" : " (to fix it: \(problem.fix.joined(separator: "; then ")))"), ["INBOX": name])
        }
        folder.problem = problem
        setState(folder, .refused, why: problem.why, fix: problem.fix)
        publisher.staged.withLock { _ = $0.remove(name) }
        folder.nextRetry = now + setup.config.rescanInterval
        schedule(folder)
        show(folder)
    }

    /// `READY=1` once every folder of the start (or of a reload) has been taken up or refused.
    func announceReady() {
        guard takeUps == 0 else { return }
        if !readySent {
            readySent = true
            // Every folder's STATUS.txt, written from now on (before, only the status file).
            publisher.ready()
            // The line first: whoever waits for READY=1 finds it in the journal then.
            log.notice(readyLine())
            Notify.ready(status: board.snapshot(state: .running).summary)
            // What the folders taken up so far did not make before READY, on their strands
            // (before any claim queued after this; a batch makes a missing one itself anyway).
            for inbox in setup.inboxes where folders[inbox.name]?.watch != nil {
                let layout = inbox.layout, name = inbox.name
                pool.run(name) { [log] in TakeUp.fileLater(layout, inbox: name, log: log) }
            }
        } else if reloadAwaitsReady {
            reloadAwaitsReady = false
            publisher.publishNow()
            Notify.ready(status: board.snapshot(state: .running).summary)
        }
    }

    /// "ready: watching shop (/srv/shop/drop), studio (…); not watched: x (why)".
    func readyLine() -> String {
        let shown = 20
        let inboxes = setup.inboxes.compactMap { folders[$0.name] }
        let watched = inboxes.filter { $0.watch != nil }, refused = inboxes.filter { $0.watch == nil }
        func list(_ items: [String]) -> String {
            items.prefix(shown).joined(separator: ", ") + (items.count > shown ? " and \(items.count - shown) more" : "")
        }
        var line = "ready: watching " + (watched.isEmpty ? "nothing" : list(watched.map { "\($0.inbox.name) (\($0.inbox.layout.drop))" }))
        if !refused.isEmpty {
            line += "; not watched (refused): " + list(refused.map { "\($0.inbox.name) (\($0.problem?.why ?? "not taken up"))" })
                + " — photofinish status says why and what fixes it"
        }
        return line
    }
}
