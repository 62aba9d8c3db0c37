import Batches
import Cluster
import Foundation
import HotFolders
import System

/// What comes back to the loop — the work pool's answers, the workers' news, the cluster's —
/// handed to the concern it is for.
extension ServiceLoop {
    func handle(_ message: Message) {
        let now = now()
        switch message {
        case .takenUp(let name, let attempt, let result):
            takeUps -= 1
            if let folder = folders[name] { takenUp(folder, attempt: attempt, result, now: now) }
            announceReady()
        case .claimed(let name, let names, let result):
            claimsInFlight -= 1
            guard let folder = folders[name] else { return }
            claimed(folder, names, result, now: now)
        case .recovered(let name, let batches):
            guard let folder = folders[name], folder.watch != nil else { return }
            carryOut(folder.claims.handle(.queue(batches), now: now), folder)
            schedule(folder)
        case .started(let name):
            locksWaiting = max(0, locksWaiting - 1)
            // A lock was let go: folders that waited for room for theirs look again.
            let waiting = waitingForLocks
            waitingForLocks = []
            for other in waiting { if let f = folders[other] { schedule(f) } }
            guard let folder = folders[name] else { return }
            carryOut(folder.claims.handle(.started, now: now), folder)
            schedule(folder)
        case .reloaded(let result):
            reloaded(result)
        case .space(let name, let check):
            guard let folder = folders[name] else { return }
            setLowSpace(folder, check.low, now: now)
        case .swept(let name, let deferred):
            guard let folder = folders[name], folder.watch != nil else { return }
            carryOut(folder.housekeeping.handle(.swept(deferred: deferred), now: now), folder)
            schedule(folder)
        case .givenBack(let name, let error):
            guard let folder = folders[name], let watch = folder.watch else { return }
            watch.shareFailed(error, now: now)
            schedule(folder)
            show(folder)
        case .leases(let name, let due, let waiting):
            guard let folder = folders[name] else { return }
            let available = folder.watch?.health.isAvailable == true
            carryOut(folder.recovering.handle(.leasesLooked(due: due, waiting: waiting, stopping: stopping, available: available),
                                              now: now), folder)
        case .roles:
            for folder in folders.values {
                schedule(folder)
                show(folder)
            }
        case .holding(let event):
            holding(event, now: now)
        case .adopted(let key, let from, let result):
            claimsInFlight -= 1
            guard let folder = folders[key.inbox] else {
                roles?.adoptionEnded(key, adopted: false)
                return
            }
            let canOpen = folder.claims.open == nil && folder.watch != nil
            if let effects = folder.adopting?.handle(.adopted(key, from: from, result.map { $0 }, canOpen: canOpen), now: now) {
                carryOut(effects, folder)
            }
            schedule(folder)
            show(folder)
        case .closedOnShare(let name, let batch, let closed):
            claimsInFlight -= 1
            guard let folder = folders[name] else { return }
            if closed != nil { roles?.closed(batch.key) }
            carryOut(folder.claims.handle(.closedOnShare(closed ?? batch), now: now), folder)
            schedule(folder)
            show(folder)
        case .batchEnded(let name, let batch):
            roles?.letGo(ClaimerRoles.BatchKey(inbox: name, batch: batch))
        case .leftToRecovery(let name):
            guard let folder = folders[name], folder.watch != nil else { return }
            _ = folder.recovering.handle(.leftOver, now: now)
            schedule(folder)
        case .deadLook(let key, let from, let result):
            claimsInFlight -= 1
            guard let folder = folders[key.inbox] else { return }
            if let effects = folder.adopting?.handle(.deadLooked(key, from: from, result), now: now) { carryOut(effects, folder) }
            schedule(folder)
            show(folder)
        }
    }

    /// A take-up ended: the folder is watched now (its last batch shown, what its `.work/` held
    /// queued, its concerns started), or refused.
    func takenUp(_ folder: Folder, attempt: Int, _ result: Result<TakeUp.Ready, FolderProblem>, now: Duration) {
        let problem: FolderProblem? = if case .failure(let problem) = result { problem } else { nil }
        let effects = folder.takingUp.handle(.takenUp(attempt: attempt, problem: problem, stopping: stopping), now: now)
        guard !effects.isEmpty else { return }  // stale, or stopping
        if case .success(let ready) = result, effects.contains(.watch) { watch(folder, ready, now: now) }
        carryOut(effects, folder)
        schedule(folder)
        show(folder)
    }

    /// Watches a folder just taken up.
    private func watch(_ folder: Folder, _ ready: TakeUp.Ready, now: Duration) {
        let name = folder.name
        folder.system = ready.system
        let watch = DropWatch(inbox: name, layout: folder.inbox.layout, rules: setup.rules, system: ready.system,
                              pollInterval: setup.config.pollInterval, clock: { [watcher] in watcher.now() }, log: log)
        watch.update(rules: setup.rules, pollInterval: setup.config.pollInterval, rescanInterval: setup.config.rescanInterval)
        watcher.add(watch, now: now, logWords: ready.firstOnFileSystem)
        folder.watch = watch
        folder.setState(.watching)
        publisher.staged.withLock { _ = $0.insert(name) }
        if let last = ready.last {
            board.update(name) { $0.last = $0.last ?? last }
            metrics.setLastBatch(name, finished: last.finished)
        }
        carryOut(folder.claims.handle(.queue(ready.resumable), now: now), folder)
        _ = folder.recovering.handle(.watching(shared: ready.system.isShared), now: now)
        _ = folder.housekeeping.handle(.watching, now: now)
        if readySent { log.notice("now watching \(folder.inbox.layout.drop)", ["INBOX": name]) }
    }

    /// A claim ended: what it could not take stays in drop/ (refused, said once), what it took
    /// is in the folder's open batch (its photos finished as they come) or in a batch of its own
    /// (queued); the open batch closes when the claim closed it.
    func claimed(_ folder: Folder, _ names: [FileName], _ result: ClaimResult, now: Duration) {
        let closes = folder.claims.claimCloses
        var taken: Set<FileName> = []
        var lookAgain = true
        var opened: ClaimedBatch?, whole: ClaimedBatch?
        var unreadable: [Claiming<ClaimedBatch>.Unreadable] = []
        switch result {
        case .outcome(let outcome):
            for (file, error) in outcome.refused { folder.watch?.refuse(file, because: error, now: now) }
            for warning in outcome.warnings { log.warning(warning, ["INBOX": folder.name]) }
            if let batch = outcome.batch {
                taken = Set(batch.manifest.items.map(\.name))
                whole = batch
                unreadable = Self.unreadable(batch.manifest.items, of: batch)
            }
        case .added(let outcome, let added, let first, let runner):
            for (file, error) in outcome.refused { folder.watch?.refuse(file, because: error, now: now) }
            for warning in outcome.warnings { log.warning(warning, ["INBOX": folder.name]) }
            if let batch = outcome.batch {
                taken = Set(added.map(\.name))
                opened = batch
                if let runner {
                    workers.early.opened(batch, runner: runner)
                    // In a cluster: held with this host's claimer session (adopted at once should it end).
                    roles?.hold(batch.key)
                }
                workers.early.add(batch, items: added, first: first)
                unreadable = Self.unreadable(added, of: batch)
            }
        case .failed(let error) where ShareHealth.isShareFailure(error, shared: folder.system?.isShared ?? false):
            // The files claimed so far wait in .work/ and go back to drop/ when the share answers.
            folder.watch?.shareFailed(error, now: now)
            lookAgain = false
        case .failed(let error):
            log.error("cannot claim a batch: \(error) (the files stay in drop/ and are tried again at the next full scan, or recovered)",
                      ["INBOX": folder.name])
            lookAgain = false
        case .lowSpace(let check):
            setLowSpace(folder, check.low, now: now)
        }
        folder.watch?.claimEnded(names, taken: taken, lookAgain: lookAgain, early: !closes, now: now)
        carryOut(folder.claims.handle(.claimed(opened: opened, whole: whole, unreadable: unreadable, stopping: stopping,
                                               hold: hold(of: opened ?? folder.claims.open)), now: now), folder)
        schedule(folder)
        show(folder)
    }

    /// The items of `batch` that could not be read at the claim.
    static func unreadable(_ items: [Manifest.Item], of batch: ClaimedBatch) -> [Claiming<ClaimedBatch>.Unreadable] {
        items.compactMap { item in item.error.map { .init(batch: batch.id, file: item.name.escaped, error: $0) } }
    }

    /// What the claimer roles found: a dead claimer's open batch to adopt, a dead holder's closed
    /// batch to take over (`Adopting`), or a batch of this host's that another adopted while its
    /// session was gone (`Claiming`).
    func holding(_ event: ClaimerRoles.Holding, now: Duration) {
        switch event {
        case .adopt(let key, _, _), .deadHolder(let key, _, _):
            guard let folder = folders[key.inbox], folder.adopting != nil else {
                if case .adopt = event { roles?.adoptionEnded(key, adopted: false) }
                return
            }
            let canAdopt = folder.watch != nil && folder.claims.open == nil && folder.system != nil && !stopping
            if let effects = folder.adopting?.handle(.holding(event, canAdopt: canAdopt), now: now) { carryOut(effects, folder) }
            schedule(folder)
        case .lost(let key, let by):
            guard let folder = folders[key.inbox] else { return }
            let effects = folder.claims.handle(.lost(id: key.batch, by: by), now: now)
            guard !effects.isEmpty else { return }
            carryOut(effects, folder)
            schedule(folder)
            show(folder)
        }
    }
}
