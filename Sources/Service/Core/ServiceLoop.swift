import Batches
import Configuration
import Foundation
import HotFolders
import JSON5
import Synchronization
import System

/// The service's one loop, on a thread of its own: it waits in `poll` on everything that can
/// happen — inotify, a timerfd armed to the next deadline, the signals' eventfd, and an eventfd the
/// other threads write when they hand work back — and only decides and hands off. No tick:
/// an idle service sleeps until its next timer (a rescan, the watchdog).
///
/// What it decides, each concern with its own trigger:
/// - **watching** (`DropWatcher`, `DropWatch`): inotify events, and each folder's own
///   deadline (a file's `settle`, a batch's `quiet`/`maxWait`, a poll, a rescan), kept in
///   one heap (`Deadlines`): a turn costs only the folders due;
/// - **taking up** a hot folder (`TakeUp`, on the work pool): at start, at every reload for
///   a folder refused, and every `rescanInterval` for one still refused; a folder's state
///   (starting, watching, refused with why and fix) is data the status shows;
/// - **claiming** (`Claim`, on the work pool, a strand per folder): one batch ahead of the one
///   being finished, never on this thread, so one folder's big claim never delays another's
///   nor the reading of inotify;
/// - **recovery** of `.work/` every `rescanInterval` (work pool);
/// - **retention** (`keep`) at take-up and hourly, **free space** (`minFreeSpace`) before each
///   claim and every `spaceRecheck` while below it (work pool);
/// - **finishing** (`FolderWorkers`: tasks), **publishing** status (`StatusPublisher`: its
///   thread), **proofs** (`ProofKeeper`: its thread), **hooks** (after each batch).
/// A reload reads the config on the work pool and applies what changed here.
///
/// Confined to its thread: made on the caller's, handed to the thread that runs it, read back
/// (`stoppedStatus`) only once `run` has returned.
final class ServiceLoop: @unchecked Sendable {
    /// What the other threads hand back.
    enum Message: Sendable {
        case takenUp(inbox: String, attempt: Int, Result<TakeUp.Ready, FolderProblem>)
        case claimed(inbox: String, names: [FileName], ClaimResult)
        case recovered(inbox: String, [ClaimedBatch])
        case started(inbox: String)
        case reloaded(Result<ServiceSetup, JSON5Errors>)
        case space(inbox: String, SpaceCheck)
        /// A retention sweep ended; `deferred`: a claim or redo was under way, so originals/
        /// and failed/ wait for the next one (soon).
        case swept(inbox: String, deferred: Bool)
    }

    enum ClaimResult: Sendable {
        case outcome(Claim.Outcome)
        case failed(SystemError)
        /// Below `minFreeSpace`: nothing was claimed.
        case lowSpace(SpaceCheck)
    }

    /// A free-space reading: `nil` words when there is enough.
    struct SpaceCheck: Sendable, Equatable {
        var low: String?
    }

    /// One hot folder as the loop sees it.
    final class Folder {
        var inbox: ServiceSetup.Inbox
        var watch: DropWatch?
        var system: FolderSystem?
        var state: ServiceStatus.FolderState
        var problem: FolderProblem?
        /// Take-ups started: a result of an older one is stale.
        var attempts = 0
        var takingUp = false
        /// Holds one of the places the open-file limit leaves for hot folders.
        var hasRoom = false
        var claiming = false
        /// Batches claimed (or recovered) that its worker has not started yet.
        var claimedAhead = 0
        var lowSpace: String?
        var nextRecovery: Duration?
        var nextRetry: Duration?
        var nextSpaceCheck: Duration?
        var nextSweep: Duration?
        var shownGeneration = -1
        var stateChanged = true
        var proofWanted = true

        init(_ inbox: ServiceSetup.Inbox, now: String) {
            self.inbox = inbox
            state = .init(kind: ServiceStatus.FolderState.starting, since: now)
        }
    }

    /// Batches a folder claims ahead of the one being finished.
    static let claimAhead = 1
    /// How often a folder below `minFreeSpace` looks again.
    static let spaceRecheck = Duration.seconds(5)
    /// How often retention sweeps a folder (and again soon when a claim held it back).
    static let sweepInterval = Duration.seconds(3600)
    static let deferredSweep = Duration.seconds(60)

    /// Below `minFreeSpace`, the words that say so (`nil`: enough, or no minimum).
    static func spaceCheck(_ inbox: ServiceSetup.Inbox) -> SpaceCheck {
        guard let minimum = inbox.minFreeSpace else { return SpaceCheck() }
        return SpaceCheck(low: FreeSpace.check(inbox.layout.root, minimum: minimum).words(inbox.layout.root))
    }

    private let log: Logger
    private let board: StatusBoard
    private let metrics: Metrics
    private let proofs: ProofKeeper
    private let workers: FolderWorkers
    private let publisher: StatusPublisher
    private let pool: WorkPool
    private let mailbox: Mailbox<Message>
    private let signals: SignalEvents
    private let timer: DeadlineTimer
    private let watcher: DropWatcher
    private let stop: StopRequest
    private let reload: @Sendable () throws(JSON5Errors) -> ServiceSetup
    private let freeSpace: @Sendable (ServiceSetup.Inbox) -> SpaceCheck
    private let probes = TakeUp.Probes()
    private let openFileLimit: UInt64?

    private(set) var setup: ServiceSetup
    private var folders: [String: Folder] = [:]
    private var deadlines = Deadlines<String>()
    private var takeUps = 0
    private var readySent = false
    private var reloading = false, reloadAgain = false, reloadAwaitsReady = false
    private var stopping = false
    private var room = Int.max, roomUsed = 0
    private var nextWatchdog: Duration?
    private let watchdogHalf: Duration? = Notify.watchdogInterval.map { $0 / 2 }
    private var nextLeaseRenewal: Duration?
    private var claimsInFlight = 0
    /// Batches claimed (or recovered) that wait for their worker: each holds its lock.
    private var locksWaiting = 0
    /// Folders with a batch to claim that wait for the open-file limit to have room for its lock.
    private var waitingForLocks: Set<String> = []

    init(setup: ServiceSetup, reload: @escaping @Sendable () throws(JSON5Errors) -> ServiceSetup,
         log: Logger, board: StatusBoard, metrics: Metrics, proofs: ProofKeeper, workers: FolderWorkers,
         publisher: StatusPublisher, pool: WorkPool, mailbox: Mailbox<Message>, signals: SignalEvents,
         stop: StopRequest, openFileLimit: UInt64?,
         freeSpace: @escaping @Sendable (ServiceSetup.Inbox) -> SpaceCheck = ServiceLoop.spaceCheck) throws(SystemError) {
        self.setup = setup
        self.reload = reload
        self.log = log
        self.board = board
        self.metrics = metrics
        self.proofs = proofs
        self.workers = workers
        self.publisher = publisher
        self.pool = pool
        self.mailbox = mailbox
        self.signals = signals
        self.stop = stop
        self.openFileLimit = openFileLimit
        self.freeSpace = freeSpace
        timer = try DeadlineTimer()
        watcher = DropWatcher(log: log)
    }

    private func now() -> Duration { watcher.now() }

    // MARK: - The loop

    /// Runs until a stop is asked for (SIGTERM, SIGINT).
    func run() {
        apply(setup, previous: nil)
        // Only now: a status written before the first setup was on the board would name no
        // hot folder.
        publisher.start()
        nextWatchdog = watchdogHalf.map { now() + $0 }
        var sources = [signals.pollSource, mailbox.wakeup.pollSource, timer.pollSource]
        if let inotify = watcher.pollSource { sources.append(inotify) }
        while !stopping {
            let t = now()
            timer.arm(after: nextWake(t).map { $0 - t })
            let ready: [Bool]
            do throws(SystemError) {
                ready = try Poll.wait(sources)
            } catch {
                log.error("the watching loop cannot wait: \(error); stopping")
                beginStop()
                break
            }
            if ready[0] { for kind in signals.read() { handle(kind) } }
            if ready[1] { for message in mailbox.take() { handle(message) } }
            if ready[2] { timer.reset() }
            if ready.count > 3, ready[3] { for watch in watcher.readEvents() { touched(watch.inbox) } }
            let now = now()
            for name in deadlines.due(at: now) { turn(name, now: now) }
            periodic(now: now)
        }
    }

    /// The earliest thing to do: a folder's deadline, the watchdog, a lease renewal.
    private func nextWake(_ now: Duration) -> Duration? {
        var next = deadlines.next()
        for t in [nextWatchdog, nextLeaseRenewal].compactMap({ $0 }) { next = min(next ?? t, t) }
        return next
    }

    private func periodic(now: Duration) {
        if let due = nextWatchdog, now >= due, let half = watchdogHalf {
            Notify.watchdog()
            nextWatchdog = now + half
        }
        // Leases of held batches are renewed while there are any (claims renew their own).
        let holding = board.isBusy || claimsInFlight > 0
        if holding {
            if nextLeaseRenewal.map({ now >= $0 }) ?? true {
                BatchLock.renewLeases()
                nextLeaseRenewal = now + BatchLock.Lease.renewal
            }
        } else {
            nextLeaseRenewal = nil
        }
    }

    private func handle(_ kind: SignalEvents.Kind) {
        switch kind {
        case .reload:
            if reloading { reloadAgain = true } else { startReload() }
        case .stop:
            beginStop()
        }
    }

    private func beginStop() {
        guard !stopping else { return }
        stopping = true
        Notify.stopping()
        log.notice("stopping: finishing the photos in flight; unfinished batches resume at the next start")
        stop.request()
    }

    private func handle(_ message: Message) {
        let now = now()
        switch message {
        case .takenUp(let name, let attempt, let result):
            takeUps -= 1
            if let folder = folders[name], folder.attempts == attempt { takenUp(folder, result, now: now) }
            announceReady()
        case .claimed(let name, let names, let result):
            claimed(name, names, result, now: now)
        case .recovered(let name, let batches):
            guard let folder = folders[name], folder.watch != nil else { return }
            for batch in batches { enqueue(batch, folder) }
            schedule(folder)
        case .started(let name):
            locksWaiting = max(0, locksWaiting - 1)
            // A lock was let go: folders that waited for room for theirs look again.
            let waiting = waitingForLocks
            waitingForLocks = []
            for other in waiting { if let f = folders[other] { schedule(f) } }
            guard let folder = folders[name] else { return }
            folder.claimedAhead = max(0, folder.claimedAhead - 1)
            schedule(folder)
        case .reloaded(let result):
            reloaded(result)
        case .space(let name, let check):
            guard let folder = folders[name] else { return }
            setLowSpace(folder, check.low, now: now)
        case .swept(let name, let deferred):
            guard let folder = folders[name], folder.watch != nil, !folder.inbox.keep.isForever else { return }
            folder.nextSweep = now + (deferred ? Self.deferredSweep : Self.sweepInterval)
            schedule(folder)
        }
    }

    /// inotify events reached `name`'s folder: its deadline may have moved, its counts changed.
    private func touched(_ name: String) {
        guard let folder = folders[name] else { return }
        schedule(folder)
        show(folder)
    }

    /// A folder's deadline is up: its watch's turn (and a claim if a batch closes), its
    /// recovery, another take-up, a free-space check, whichever is due.
    private func turn(_ name: String, now: Duration) {
        guard let folder = folders[name] else { return }
        if let watch = folder.watch {
            if let names = watch.turn(now: now, canClose: canClaim(folder), inotify: watcher.inotify) {
                startClaim(folder, names)
            }
            watcher.reindex(watch)
            if let due = folder.nextRecovery, now >= due, !stopping {
                folder.nextRecovery = now + setup.config.rescanInterval
                startRecovery(folder)
            }
            if let due = folder.nextSweep, now >= due, !stopping {
                folder.nextSweep = nil
                startSweep(folder)
            }
            if let due = folder.nextSpaceCheck, now >= due {
                folder.nextSpaceCheck = nil
                let inbox = folder.inbox
                pool.run(name) { [mailbox, freeSpace] in mailbox.post(.space(inbox: name, freeSpace(inbox))) }
            }
        }
        if let due = folder.nextRetry, now >= due, !stopping {
            folder.nextRetry = nil
            startTakeUp(folder, now: now)
        }
        schedule(folder)
        show(folder)
    }

    private func canClaim(_ folder: Folder) -> Bool {
        guard !stopping, !folder.claiming, folder.claimedAhead < Self.claimAhead, folder.lowSpace == nil else { return false }
        // One more lock must fit in the open-file limit (see `OpenFiles`).
        if let limit = openFileLimit, locksWaiting + claimsInFlight >= work.lockRoom(limit: limit, folders: roomUsed) {
            waitingForLocks.insert(folder.inbox.name)
            return false
        }
        return true
    }

    /// Sets the folder's one deadline: the earliest of what it waits for.
    private func schedule(_ folder: Folder) {
        var next: Duration?
        func consider(_ t: Duration?) { if let t { next = min(next ?? t, t) } }
        if let watch = folder.watch {
            consider(watch.nextDeadline(canClose: canClaim(folder)))
            consider(folder.nextRecovery)
            consider(folder.nextSpaceCheck)
            consider(folder.nextSweep)
        }
        consider(folder.nextRetry)
        deadlines.set(folder.inbox.name, at: next)
    }

    /// Puts what changed of the folder on the board (the publisher writes it).
    private func show(_ folder: Folder) {
        if let watch = folder.watch, folder.lowSpace == nil {
            // drop/ gone (deleted, moved away, unreadable): not watched until it is back.
            if let error = watch.attachError, !watch.isAttached {
                let problem = FolderProblem.refusal(error, layout: folder.inbox.layout)
                setState(folder, ServiceStatus.FolderState.refused, why: problem.why + " (drop/ is looked for every 2 s)",
                         fix: error.code == ENOENT ? ["mkdir \(folder.inbox.layout.drop) (or photofinish init \(folder.inbox.layout.root))"] : problem.fix)
            } else if watch.isAttached {
                setState(folder, ServiceStatus.FolderState.watching)
            }
        }
        let generation = folder.watch?.generation ?? -1
        guard generation != folder.shownGeneration || folder.stateChanged else { return }
        folder.shownGeneration = generation
        folder.stateChanged = false
        let state = folder.state
        if let watch = folder.watch {
            let (settling, pending) = watch.counts
            let polling = watch.polling, mode = watch.mode, refusals = watch.refusals, never = watch.neverTaken
            board.update(folder.inbox.name) {
                $0.settling = settling
                $0.pending = pending
                $0.polling = polling
                $0.watching = mode
                $0.refused = refusals.isEmpty ? nil : refusals
                $0.neverTaken = never.isEmpty ? nil : never
                $0.state = state
            }
            metrics.setPending(folder.inbox.name, settling + pending)
        } else {
            board.update(folder.inbox.name) {
                $0.settling = 0
                $0.pending = 0
                $0.watching = nil
                $0.refused = nil
                $0.neverTaken = nil
                $0.state = state
            }
        }
    }

    private func setState(_ folder: Folder, _ kind: String, why: String? = nil, fix: [String]? = nil) {
        let since = folder.state.kind == kind && folder.state.why == why ? folder.state.since : BatchID.timestamp(Date())
        let next = ServiceStatus.FolderState(kind: kind, why: why, fix: fix, since: since)
        guard next != folder.state else { return }
        folder.state = next
        folder.stateChanged = true
    }

    // MARK: - Taking up

    /// Asks the work pool to take the folder up (if the open-file limit leaves room for it).
    private func startTakeUp(_ folder: Folder, now: Duration) {
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
        let staleAfter = setup.config.staleAfter
        pool.run(name) { [mailbox, probes, log] in
            mailbox.post(.takenUp(inbox: name, attempt: attempt, TakeUp.run(inbox, staleAfter: staleAfter, probes: probes, log: log)))
        }
    }

    private func takenUp(_ folder: Folder, _ result: Result<TakeUp.Ready, FolderProblem>, now: Duration) {
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
                                  pollInterval: setup.config.pollInterval, log: log)
            watch.update(rules: setup.rules, pollInterval: setup.config.pollInterval, rescanInterval: setup.config.rescanInterval)
            watcher.add(watch, now: now, logWords: ready.firstOnFileSystem)
            folder.watch = watch
            setState(folder, ServiceStatus.FolderState.watching)
            publisher.staged.withLock { _ = $0.insert(name) }
            if let last = ready.last {
                board.update(name) { $0.last = $0.last ?? last }
                metrics.setLastBatch(name, finished: last.finished)
            }
            for batch in ready.resumable { enqueue(batch, folder) }
            folder.nextRecovery = now + setup.config.rescanInterval
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
    private func refuse(_ folder: Folder, _ problem: FolderProblem, now: Duration, logged: Bool) {
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
        setState(folder, ServiceStatus.FolderState.refused, why: problem.why, fix: problem.fix)
        publisher.staged.withLock { _ = $0.remove(name) }
        folder.nextRetry = now + setup.config.rescanInterval
        schedule(folder)
        show(folder)
    }

    /// `READY=1` once every folder of the start (or of a reload) has been taken up or refused.
    private func announceReady() {
        guard takeUps == 0 else { return }
        if !readySent {
            readySent = true
            publisher.publishNow()
            Notify.ready(status: board.snapshot(state: "running").summary)
            log.notice(readyLine())
        } else if reloadAwaitsReady {
            reloadAwaitsReady = false
            publisher.publishNow()
            Notify.ready(status: board.snapshot(state: "running").summary)
        }
    }

    /// "ready: watching shop (/srv/shop/drop), studio (…); not watched: x (why)".
    private func readyLine() -> String {
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

    // MARK: - Claims, recovery

    private func startClaim(_ folder: Folder, _ names: [FileName]) {
        guard let system = folder.system else { return }
        folder.claiming = true
        claimsInFlight += 1
        let name = folder.inbox.name, inbox = folder.inbox
        pool.run(name) { [mailbox, freeSpace] in
            let space = freeSpace(inbox)
            if space.low != nil {
                mailbox.post(.claimed(inbox: name, names: names, .lowSpace(space)))
                return
            }
            let result: ClaimResult
            do throws(SystemError) {
                result = .outcome(try Claim.claim(names, layout: inbox.layout, inbox: name, template: inbox.template,
                                                  order: inbox.order, mover: system.mover) { BatchLock.renewLeases() })
            } catch {
                result = .failed(error)
            }
            mailbox.post(.claimed(inbox: name, names: names, result))
        }
    }

    private func claimed(_ name: String, _ names: [FileName], _ result: ClaimResult, now: Duration) {
        claimsInFlight -= 1
        guard let folder = folders[name] else { return }
        folder.claiming = false
        let fields: LogFields = ["INBOX": name]
        var taken: Set<FileName> = []
        var lookAgain = true
        switch result {
        case .outcome(let outcome):
            for (file, error) in outcome.refused { folder.watch?.refuse(file, because: error, now: now) }
            if let batch = outcome.batch {
                taken = Set(batch.manifest.items.map(\.name))
                log.info("claimed batch of \(batch.manifest.items.count) photo\(batch.manifest.items.count == 1 ? "" : "s")",
                         fields.with("BATCH", batch.id))
                for item in batch.manifest.items where item.error != nil {
                    log.warning("\(item.error!): it is claimed and will fail as io-error unless it can be read by then",
                                fields.with("BATCH", batch.id).with("FILE", item.name.escaped))
                }
                enqueue(batch, folder)
            }
        case .failed(let error):
            log.error("cannot claim a batch: \(error) (the files stay in drop/ and are tried again at the next full scan, or recovered)", fields)
            lookAgain = false
        case .lowSpace(let check):
            setLowSpace(folder, check.low, now: now)
        }
        folder.watch?.claimEnded(names, taken: taken, lookAgain: lookAgain, now: now)
        schedule(folder)
        show(folder)
    }

    private func enqueue(_ batch: ClaimedBatch, _ folder: Folder) {
        folder.claimedAhead += 1
        locksWaiting += 1
        workers.enqueue(batch, to: folder.inbox.name)
    }

    private func startRecovery(_ folder: Folder) {
        guard let system = folder.system else { return }
        let name = folder.inbox.name, layout = folder.inbox.layout, staleAfter = setup.config.staleAfter
        pool.run(name) { [mailbox, log] in
            let batches = TakeUp.recover(layout, system: system, staleAfter: staleAfter, log: log)
            if !batches.isEmpty { mailbox.post(.recovered(inbox: name, batches)) }
        }
    }

    /// Retention (`keep`): batch folders older than it are removed, never one this folder works
    /// on (queued, running, or redone by one).
    private func startSweep(_ folder: Folder) {
        let name = folder.inbox.name, layout = folder.inbox.layout, keep = folder.inbox.keep
        let inUse = workers.inUse(name)
        pool.run(name) { [mailbox, log] in
            let outcome = Retention.sweep(layout: layout, keep: keep, inUse: inUse, inbox: name, log: log)
            mailbox.post(.swept(inbox: name, deferred: outcome.deferred))
        }
    }

    /// Below `minFreeSpace` (`low`: the words) nothing new is claimed; looked at again every
    /// `spaceRecheck` until there is room, then claims resume.
    private func setLowSpace(_ folder: Folder, _ low: String?, now: Duration) {
        guard folder.watch != nil else { return }
        if let low {
            if folder.lowSpace == nil { log.warning("\(low)", ["INBOX": folder.inbox.name]) }
            folder.lowSpace = low
            setState(folder, ServiceStatus.FolderState.lowSpace, why: low,
                     fix: ["free space on the disk of \(folder.inbox.layout.root), or lower minFreeSpace"])
            folder.nextSpaceCheck = now + Self.spaceRecheck
        } else if folder.lowSpace != nil {
            log.notice("there is room again: claims resume", ["INBOX": folder.inbox.name])
            folder.lowSpace = nil
            folder.nextSpaceCheck = nil
            setState(folder, ServiceStatus.FolderState.watching)
        }
        schedule(folder)
        show(folder)
    }

    // MARK: - Reloads

    private func startReload() {
        reloading = true
        Notify.reloading()
        log.notice("reloading the configuration")
        pool.run(" reload") { [mailbox, reload] in
            mailbox.post(.reloaded(Result { () throws(JSON5Errors) in try reload() }))
        }
    }

    private func reloaded(_ result: Result<ServiceSetup, JSON5Errors>) {
        reloading = false
        switch result {
        case .success(let new):
            let old = setup
            setup = new
            apply(new, previous: old)
            board.reload(failed: nil)
            log.notice("configuration reloaded")
            reloadAwaitsReady = true
            announceReady()
        case .failure(let error):
            board.reload(failed: error.errors.map(\.description))
            for e in error.errors { log.error("reload: \(e.description)") }
            log.error("the new configuration has errors: keeping the old one")
            Notify.ready(status: board.snapshot(state: "running").summary)
        }
        if reloadAgain {
            reloadAgain = false
            startReload()
        }
    }

    private var work: OpenFiles.Work {
        OpenFiles.Work(claimThreads: pool.threads, batchSlots: workers.slots.capacity,
                       workers: workers.limits.withLock { $0.effectiveWorkers })
    }

    /// Starts what a (new) setup needs and stops what it no longer has; a folder refused is
    /// tried again (the reload is what an administrator does after fixing it).
    private func apply(_ new: ServiceSetup, previous: ServiceSetup?) {
        let now = now()
        board.set(new.inboxes.map { ($0.name, $0.layout.root) })
        metrics.setInboxes(new.inboxes.map(\.name))
        publisher.metricsFile.withLock { $0 = new.config.metricsFile }
        workers.hooks.withLock { current in
            current = [:]
            for inbox in new.inboxes { current[inbox.name] = inbox.hooks }
        }
        if new.inboxes.contains(where: { $0.hooks?.webhook != nil }), BatchHookRunner.networkIsPrivate {
            log.warning("onBatch.webhook is set, but this service has no network (the unit's PrivateNetwork=yes): install the drop-in /usr/share/doc/photofinish/examples/webhook-network.conf (see its first lines)")
        }
        workers.limits.withLock { current in
            // One workers limit over all hot folders: the slots are made again only when it changes.
            var next = new.limits
            next.sharedSlots = current.workers == next.workers && current.sharedSlots != nil
                ? current.sharedSlots : WorkerSlots(next.effectiveWorkers)
            let budget = switch new.config.memoryBudget {
            case .auto: MemoryBudget.automaticForThisProcess()
            case .bytes(let n): n
            }
            next.memoryBudget = current.memoryBudget?.bytes == budget ? current.memoryBudget : MemoryBudget(bytes: budget)
            current = next
        }
        let l = workers.limits.withLock { $0 }
        log.info("at most \(l.effectiveWorkers) photo\(l.effectiveWorkers == 1 ? "" : "s") in flight, memory budget \(ByteCount.words(l.memoryBudget?.bytes ?? 0))")

        // A hot folder whose root moved is a different hot folder: stop the old, start anew.
        let wanted = Dictionary(new.inboxes.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for (name, folder) in folders where wanted[name]?.layout != folder.inbox.layout {
            if let watch = folder.watch {
                watch.close(watcher.inotify)
                watcher.remove(inbox: name)
                log.notice("no longer watching \(folder.inbox.layout.root) (changed in the config)", ["INBOX": name])
            }
            workers.remove(inbox: name)
            if folder.hasRoom { roomUsed -= 1 }
            folders[name] = nil
            deadlines.set(name, at: nil)
            publisher.staged.withLock { _ = $0.remove(name) }
        }
        if let limit = openFileLimit {
            room = work.room(limit: limit)
            if work.need(folders: new.inboxes.count) > limit {
                log.warning(OpenFiles.shortage(folders: new.inboxes.count, work: work, limit: limit))
            }
        }
        let stamp = BatchID.timestamp(Date())
        for inbox in new.inboxes {
            if let folder = folders[inbox.name] {
                let templateChanged = folder.inbox.template.sha256 != inbox.template.sha256
                if folder.watch != nil, inbox.keep != folder.inbox.keep {
                    folder.nextSweep = inbox.keep.isForever ? nil : now
                }
                folder.inbox = inbox
                folder.watch?.update(rules: new.rules, pollInterval: new.config.pollInterval,
                                     rescanInterval: new.config.rescanInterval)
                if templateChanged { folder.proofWanted = true }
                if folder.watch != nil, folder.proofWanted {
                    folder.proofWanted = false
                    proofs.request(.init(inbox: inbox.name, root: inbox.layout.root, template: inbox.template,
                                         maxPixels: new.config.maxPixels))
                }
                folder.stateChanged = true
                if folder.watch == nil { startTakeUp(folder, now: now) }
                schedule(folder)
                show(folder)
            } else {
                let folder = Folder(inbox, now: stamp)
                folders[inbox.name] = folder
                show(folder)
                startTakeUp(folder, now: now)
            }
        }
        announceReady()
    }

    /// "5 min", "90 s", "1 h": a duration as the log says it.
    static func words(_ d: Duration) -> String {
        let s = d.components.seconds
        if s >= 3600 && s % 3600 == 0 { return "\(s / 3600) h" }
        if s >= 60 && s % 60 == 0 { return "\(s / 60) min" }
        return "\(s) s"
    }

    // MARK: - Stopping

    /// What the status says once stopped: each folder `stopped`.
    func stoppedStatus() -> ServiceStatus {
        for name in folders.keys {
            board.update(name) { $0.state = .init(kind: ServiceStatus.FolderState.stopped, since: BatchID.timestamp(Date())) }
        }
        return board.snapshot(state: "stopped")
    }
}
