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
            if let hotFolder = hotFolders[name] { takenUp(hotFolder, attempt: attempt, result, now: now) }
            announceReady()
        case .takenUpTogether(let all):
            for (name, attempt, result) in all {
                takeUps -= 1
                if let hotFolder = hotFolders[name] { takenUp(hotFolder, attempt: attempt, result, now: now) }
            }
            announceReady()
        case .claimed(let name, let names, let result):
            claimsInFlight -= 1
            guard let hotFolder = hotFolders[name] else { return }
            claimed(hotFolder, names, result, now: now)
        case .recovered(let name, let batches):
            guard let hotFolder = hotFolders[name], hotFolder.watch != nil else { return }
            carryOut(hotFolder.claims.handle(.queue(batches), now: now), hotFolder)
            schedule(hotFolder)
        case .started(let name):
            locksWaiting = max(0, locksWaiting - 1)
            // A lock was let go: hot folders that waited for room for theirs look again.
            let waiting = waitingForLocks
            waitingForLocks = []
            for other in waiting { if let f = hotFolders[other] { schedule(f) } }
            guard let hotFolder = hotFolders[name] else { return }
            carryOut(hotFolder.claims.handle(.started, now: now), hotFolder)
            schedule(hotFolder)
        case .reloaded(let result):
            reloaded(result)
        case .space(let name, let check):
            guard let hotFolder = hotFolders[name] else { return }
            setLowSpace(hotFolder, check.low, now: now)
        case .swept(let name, let deferred):
            guard let hotFolder = hotFolders[name], hotFolder.watch != nil else { return }
            carryOut(hotFolder.housekeeping.handle(.swept(deferred: deferred), now: now), hotFolder)
            schedule(hotFolder)
        case .givenBack(let name, let error):
            guard let hotFolder = hotFolders[name], let watch = hotFolder.watch else { return }
            watch.shareFailed(error, now: now)
            schedule(hotFolder)
            show(hotFolder)
        case .leases(let name, let due, let waiting):
            guard let hotFolder = hotFolders[name] else { return }
            let available = hotFolder.watch?.health.isAvailable == true
            carryOut(hotFolder.recovering.handle(.leasesLooked(due: due, waiting: waiting, stopping: stopping, available: available),
                                              now: now), hotFolder)
        case .roles:
            for hotFolder in hotFolders.values {
                schedule(hotFolder)
                show(hotFolder)
            }
        case .holding(let event):
            holding(event, now: now)
        case .adopted(let key, let from, let result):
            claimsInFlight -= 1
            guard let hotFolder = hotFolders[key.inbox] else {
                roles?.adoptionEnded(key, adopted: false)
                return
            }
            let canOpen = hotFolder.claims.open == nil && hotFolder.watch != nil
            if let effects = hotFolder.adopting?.handle(.adopted(key, from: from, result.map { $0 }, canOpen: canOpen), now: now) {
                carryOut(effects, hotFolder)
            }
            schedule(hotFolder)
            show(hotFolder)
        case .closedOnShare(let name, let batch, let closed):
            claimsInFlight -= 1
            guard let hotFolder = hotFolders[name] else { return }
            if closed != nil { roles?.closed(batch.key) }
            carryOut(hotFolder.claims.handle(.closedOnShare(closed ?? batch), now: now), hotFolder)
            schedule(hotFolder)
            show(hotFolder)
        case .batchEnded(let name, let batch):
            roles?.letGo(ClaimerRoles.BatchKey(inbox: name, batch: batch))
        case .leftToRecovery(let name):
            guard let hotFolder = hotFolders[name], hotFolder.watch != nil else { return }
            _ = hotFolder.recovering.handle(.leftOver, now: now)
            schedule(hotFolder)
        case .deadLook(let key, let from, let result):
            claimsInFlight -= 1
            guard let hotFolder = hotFolders[key.inbox] else { return }
            if let effects = hotFolder.adopting?.handle(.deadLooked(key, from: from, result), now: now) { carryOut(effects, hotFolder) }
            schedule(hotFolder)
            show(hotFolder)
        }
    }

    /// A take-up ended: the hot folder is watched now (its last batch shown, what its `.work/` held
    /// queued, its concerns started), or refused.
    func takenUp(_ hotFolder: HotFolder, attempt: Int, _ result: Result<TakeUp.Ready, FolderProblem>, now: Duration) {
        let problem: FolderProblem? = if case .failure(let problem) = result { problem } else { nil }
        let effects = hotFolder.takingUp.handle(.takenUp(attempt: attempt, problem: problem, stopping: stopping), now: now)
        guard !effects.isEmpty else { return }  // stale, or stopping
        if case .success(let ready) = result, effects.contains(.watch) { watch(hotFolder, ready, now: now) }
        carryOut(effects, hotFolder)
        schedule(hotFolder)
        show(hotFolder)
    }

    /// Watches a hot folder just taken up.
    private func watch(_ hotFolder: HotFolder, _ ready: TakeUp.Ready, now: Duration) {
        let name = hotFolder.name
        hotFolder.system = ready.system
        let watch = DropWatch(inbox: name, layout: hotFolder.settings.layout, rules: setup.rules, system: ready.system,
                              pollInterval: setup.config.pollInterval, clock: { [watcher] in watcher.now() }, log: log)
        watch.update(rules: setup.rules, pollInterval: setup.config.pollInterval, rescanInterval: setup.config.rescanInterval)
        watcher.add(watch, now: now, logWords: ready.firstOnFileSystem)
        hotFolder.watch = watch
        hotFolder.setState(.watching)
        publisher.staged.withLock { _ = $0.insert(name) }
        if let last = ready.last {
            board.update(name) { $0.last = $0.last ?? last }
            metrics.setLastBatch(name, finished: last.finished)
        }
        carryOut(hotFolder.claims.handle(.queue(ready.resumable), now: now), hotFolder)
        hotFolder.recoverLater = ready.recoverLater
        _ = hotFolder.recovering.handle(.watching(shared: ready.system.isShared), now: now)
        _ = hotFolder.housekeeping.handle(.watching, now: now)
        if readySent { log.notice("now watching \(hotFolder.settings.layout.drop)", ["INBOX": name]) }
    }

    /// A claim ended: what it could not take stays in drop/ (refused, said once), what it took
    /// is in the hot folder's open batch (its photos finished as they come) or in a batch of its own
    /// (queued); the open batch closes when the claim closed it.
    func claimed(_ hotFolder: HotFolder, _ names: [FileName], _ result: ClaimResult, now: Duration) {
        let closes = hotFolder.claims.claimCloses
        var taken: Set<FileName> = []
        var lookAgain = true
        var opened: ClaimedBatch?, whole: ClaimedBatch?
        var unreadable: [Claiming<ClaimedBatch>.Unreadable] = []
        switch result {
        case .outcome(let outcome):
            for (file, error) in outcome.refused { hotFolder.watch?.refuse(file, because: error, now: now) }
            for warning in outcome.warnings { log.warning(warning, ["INBOX": hotFolder.name]) }
            if let batch = outcome.batch {
                taken = Set(batch.manifest.items.map(\.name))
                whole = batch
                unreadable = Self.unreadable(batch.manifest.items, of: batch)
            }
        case .added(let outcome, let added, let first, let runner):
            for (file, error) in outcome.refused { hotFolder.watch?.refuse(file, because: error, now: now) }
            for warning in outcome.warnings { log.warning(warning, ["INBOX": hotFolder.name]) }
            if let batch = outcome.batch {
                taken = Set(added.map(\.name))
                opened = batch
                if let runner {
                    workers.early.opened(batch, runner: runner)
                    // In a cluster: held with this host's claimer session (adopted at once should it end).
                    roles?.hold(batch.key)
                }
                workers.early.add(batch, items: added, first: first)
                workers.showOpen(inbox: hotFolder.name, batch)
                unreadable = Self.unreadable(added, of: batch)
            }
        case .failed(let error) where ShareHealth.isShareFailure(error, shared: hotFolder.system?.isShared ?? false):
            // The files claimed so far wait in .work/ and go back to drop/ when the share answers.
            hotFolder.watch?.shareFailed(error, now: now)
            lookAgain = false
        case .failed(let error):
            log.error("cannot claim a batch: \(error) (the files stay in drop/ and are tried again at the next full scan, or recovered)",
                      ["INBOX": hotFolder.name])
            lookAgain = false
        case .lowSpace(let check):
            setLowSpace(hotFolder, check.low, now: now)
        }
        hotFolder.watch?.claimEnded(names, taken: taken, lookAgain: lookAgain, early: !closes, now: now)
        carryOut(hotFolder.claims.handle(.claimed(opened: opened, whole: whole, unreadable: unreadable, stopping: stopping,
                                               hold: hold(of: opened ?? hotFolder.claims.open)), now: now), hotFolder)
        schedule(hotFolder)
        show(hotFolder)
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
            guard let hotFolder = hotFolders[key.inbox], hotFolder.adopting != nil else {
                if case .adopt = event { roles?.adoptionEnded(key, adopted: false) }
                return
            }
            let canAdopt = hotFolder.watch != nil && hotFolder.claims.open == nil && hotFolder.system != nil && !stopping
            if let effects = hotFolder.adopting?.handle(.holding(event, canAdopt: canAdopt), now: now) { carryOut(effects, hotFolder) }
            schedule(hotFolder)
        case .lost(let key, let by):
            guard let hotFolder = hotFolders[key.inbox] else { return }
            let effects = hotFolder.claims.handle(.lost(id: key.batch, by: by), now: now)
            guard !effects.isEmpty else { return }
            carryOut(effects, hotFolder)
            schedule(hotFolder)
            show(hotFolder)
        }
    }
}
