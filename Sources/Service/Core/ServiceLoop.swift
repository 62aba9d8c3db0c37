import Batches
import Cluster
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
/// - **claiming** (`Claim`, on the work pool, a strand per folder): each settled photo into the
///   folder's open batch, whose photos are finished as they come (`EarlyWorkers`) until it
///   closes; one batch ahead of the one being finished, never on this thread, so one folder's
///   big claim never delays another's nor the reading of inotify;
/// - **recovery** of `.work/` every `rescanInterval` (work pool);
/// - **retention** (`keep`) at take-up and hourly, **free space** (`minFreeSpace`) before each
///   claim and every `spaceRecheck` while below it (work pool);
/// - **finishing** (`FolderWorkers`: tasks), **publishing** status (`StatusPublisher`: its
///   thread), **proofs** (`ProofKeeper`: its thread), **hooks** (after each batch).
/// A reload reads the config on the work pool and applies what changed here.
///
/// This file holds the loop itself and a folder's turn; taking up (ServiceLoop+TakeUp), claims
/// and housekeeping (ServiceLoop+Claims) and reloads (ServiceLoop+Reload) have files of their own.
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
        /// A batch was given back: the share failed under it (`BatchWork.Outcome.givenBack`).
        case givenBack(inbox: String, SystemError)
        /// The leases of a shared folder's batches held from other machines were looked at:
        /// `due` when one ran out or a batch lies unheld (recovery takes it now), `waiting` the
        /// sentences for the batches whose host stopped renewing.
        case leases(inbox: String, due: Bool, waiting: [String])
        /// In a cluster: a folder's claimer role was taken or lost (`ClaimerRoles`).
        case roles
        /// In a cluster: an open batch to adopt (its holder's session is gone), or one this host
        /// held that another host adopted (`ClaimerRoles.Holding`).
        case holding(ClaimerRoles.Holding)
        /// The adoption's look at the share: the batch open and its lock taken (with its runner), or why not.
        case adopted(ClaimerRoles.BatchKey, from: String, Result<AdoptedBatch, AdoptionRefused>)
        /// An open batch held in the database was closed on the share (nil: it could not be: the
        /// run closes it).
        case closedOnShare(inbox: String, ClaimedBatch, closed: ClaimedBatch?)
        /// A batch's run ended (its record in the cluster goes).
        case batchEnded(inbox: String, batch: String)
        /// The look at a dead holder's closed batch: taken over (its lock unrenewed for
        /// `ClaimerRoles.deadLease`), not yet (`nil`), or not to be (why).
        case deadLook(ClaimerRoles.BatchKey, from: String, Result<ClaimedBatch?, AdoptionRefused>)
    }

    /// A closed batch whose holder's database session is gone: taken over once its lock on the
    /// share has gone unrenewed for `ClaimerRoles.deadLease`.
    struct DeadHeld {
        var from: String
        var lock: String
        var looking = false
    }

    struct AdoptedBatch: Sendable {
        var batch: ClaimedBatch
        var runner: BatchRunner?
    }

    struct AdoptionRefused: Error, Sendable {
        var why: String
    }

    enum ClaimResult: Sendable {
        case outcome(Claim.Outcome)
        /// Photos claimed into the folder's open batch as they settled (`added`, numbered from
        /// `first` in the claim order); `runner`: the batch opened with them.
        case added(Claim.Outcome, added: [Manifest.Item], first: Int, runner: BatchRunner?)
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
        /// The claim under way closes the open batch with its photos (`DropWatch.turn`).
        var claimCloses = false
        /// The batch its photos are claimed into as they settle, until it closes.
        var open: ClaimedBatch?
        /// In a cluster: the open batch is due to close but may not be written now (its hold on
        /// the database not confirmed lately): tried again at `closeCheck`.
        var closeDue = false
        var closeCheck: Duration?
        /// In a cluster: closed batches of holders gone, by id, and when they are next looked at.
        var deadHeld: [String: DeadHeld] = [:]
        var nextDeadLook: Duration?
        /// Batches claimed (or recovered) that its worker has not started yet.
        var claimedAhead = 0
        var lowSpace: String?
        var nextRecovery: Duration?
        var nextRetry: Duration?
        var nextSpaceCheck: Duration?
        var nextSweep: Duration?
        /// On a share: when the leases of batches held from other machines are next looked at
        /// (every `pollInterval`), and whether a look is under way.
        var nextLeaseLook: Duration?
        var leaseLooking = false
        var shownGeneration = -1
        var stateChanged = true
        var proofWanted = true

        init(_ inbox: ServiceSetup.Inbox, now: String) {
            self.inbox = inbox
            state = .init(kind: .starting, since: now)
        }
    }

    /// Batches a folder claims ahead of the one being finished.
    static let claimAhead = 1
    /// How often a folder below `minFreeSpace` looks again.
    static let spaceRecheck = Duration.seconds(5)
    /// How often retention sweeps a folder (and again soon when a claim held it back).
    static let sweepInterval = Duration.seconds(3600)
    static let deferredSweep = Duration.seconds(60)


    let log: Logger
    let board: StatusBoard
    let metrics: Metrics
    let proofs: ProofKeeper
    let workers: FolderWorkers
    let publisher: StatusPublisher
    let pool: WorkPool
    let mailbox: Mailbox<Message>
    let signals: SignalEvents
    let timer: DeadlineTimer
    let watcher: DropWatcher
    let stop: StopRequest
    let reload: @Sendable () throws(JSON5Errors) -> ServiceSetup
    let freeSpace: @Sendable (ServiceSetup.Inbox) -> SpaceCheck
    let probes = TakeUp.Probes()
    let openFileLimit: UInt64?
    /// In a cluster: who may claim from a folder (its claimer role), the open batches this host
    /// holds recorded with its claimer session, and the roles let go when the daemon stops (the
    /// other hosts claim while it drains).
    let roles: ClaimerRoles?
    /// The batch locks this service holds, and what it knows of other machines' leases.
    let locks: BatchLocks

    var setup: ServiceSetup
    var folders: [String: Folder] = [:]
    var deadlines = Deadlines<String>()
    var takeUps = 0
    var readySent = false
    var reloading = false, reloadAgain = false, reloadAwaitsReady = false
    var stopping = false
    var room = Int.max, roomUsed = 0
    var nextWatchdog: Duration?
    let watchdogHalf: Duration? = Notify.watchdogInterval.map { $0 / 2 }
    var nextLeaseRenewal: Duration?
    var claimsInFlight = 0
    /// Batches claimed (or recovered) that wait for their worker: each holds its lock.
    var locksWaiting = 0
    /// Folders with a batch to claim that wait for the open-file limit to have room for its lock.
    var waitingForLocks: Set<String> = []

    init(setup: ServiceSetup, reload: @escaping @Sendable () throws(JSON5Errors) -> ServiceSetup,
         log: Logger, board: StatusBoard, metrics: Metrics, proofs: ProofKeeper, workers: FolderWorkers,
         publisher: StatusPublisher, pool: WorkPool, mailbox: Mailbox<Message>, signals: SignalEvents,
         stop: StopRequest, openFileLimit: UInt64?, locks: BatchLocks, roles: ClaimerRoles? = nil,
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
        self.roles = roles
        self.locks = locks
        self.freeSpace = freeSpace
        timer = try DeadlineTimer()
        watcher = DropWatcher(log: log)
    }

    func now() -> Duration { watcher.now() }

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
        finishClaims()
        watcher.logOverflows(now: now(), final: true)
    }

    /// Stopping: the claims under way end first and their results are handled, so the files
    /// they moved into an open batch close it into the queue (shown as waiting in .work/, not
    /// as still in drop/) — a claim's few renames, never a photo's finishing, are waited for.
    func finishClaims() {
        while claimsInFlight > 0 {
            do throws(SystemError) {
                _ = try Poll.wait([mailbox.wakeup.pollSource])
            } catch {
                log.error("the watching loop cannot wait for the claims under way: \(error)")
                return
            }
            for message in mailbox.take() { handle(message) }
        }
    }

    /// The earliest thing to do: a folder's deadline, the watchdog, a lease renewal.
    func nextWake(_ now: Duration) -> Duration? {
        var next = deadlines.next()
        for t in [nextWatchdog, nextLeaseRenewal].compactMap({ $0 }) { next = min(next ?? t, t) }
        return next
    }

    func periodic(now: Duration) {
        if let due = nextWatchdog, now >= due, let half = watchdogHalf {
            Notify.watchdog()
            nextWatchdog = now + half
        }
        // Leases of held batches are renewed while there are any (claims renew their own).
        let holding = board.isBusy || claimsInFlight > 0
        if holding {
            if nextLeaseRenewal.map({ now >= $0 }) ?? true {
                locks.renewLeases()
                nextLeaseRenewal = now + BatchLock.Lease.renewal
            }
        } else {
            nextLeaseRenewal = nil
        }
    }

    func handle(_ kind: SignalEvents.Kind) {
        switch kind {
        case .reload:
            if reloading { reloadAgain = true } else { startReload() }
        case .stop:
            beginStop()
        }
    }

    func beginStop() {
        guard !stopping else { return }
        stopping = true
        Notify.stopping()
        log.notice("stopping: finishing the photos in flight; unfinished batches resume at the next start")
        stop.request()
        // The claimer roles go (the others claim the new photos while this host drains); their
        // connection stays until the end, for the open batches still held (the others would
        // adopt them the moment it closed). Done on the roles' thread: nothing waits here.
        roles?.letGoRoles()
        // The open batches close: left in .work/ (shown as waiting there) for the next start.
        for folder in folders.values where !folder.claiming { closeOpen(folder) }
    }

    func handle(_ message: Message) {
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
        case .givenBack(let name, let error):
            guard let folder = folders[name], let watch = folder.watch else { return }
            watch.shareFailed(error, now: now)
            schedule(folder)
            show(folder)
        case .leases(let name, let due, let waiting):
            guard let folder = folders[name] else { return }
            folder.leaseLooking = false
            board.update(name) { $0.takeovers = waiting.isEmpty ? nil : waiting }
            if due, folder.watch?.health.isAvailable == true, !stopping { startRecovery(folder) }
        case .roles:
            for folder in folders.values {
                schedule(folder)
                show(folder)
            }
        case .holding(let event):
            holding(event, now: now)
        case .adopted(let key, let from, let result):
            adopted(key, from: from, result, now: now)
        case .closedOnShare(let name, let batch, let closed):
            claimsInFlight -= 1
            guard let folder = folders[name] else { return }
            folder.claiming = false
            if closed != nil { roles?.closed(batch.key) }
            enqueue(closed ?? batch, folder)
            schedule(folder)
            show(folder)
        case .batchEnded(let name, let batch):
            roles?.letGo(ClaimerRoles.BatchKey(inbox: name, batch: batch))
        case .deadLook(let key, let from, let result):
            deadLooked(key, from: from, result, now: now)
        case .swept(let name, let deferred):
            guard let folder = folders[name], folder.watch != nil, !folder.inbox.keep.isForever else { return }
            folder.nextSweep = now + (deferred ? Self.deferredSweep : Self.sweepInterval)
            schedule(folder)
        }
    }

    /// inotify events reached `name`'s folder: its deadline may have moved, its counts changed.
    func touched(_ name: String) {
        guard let folder = folders[name] else { return }
        schedule(folder)
        show(folder)
    }

    /// A folder's deadline is up: its watch's turn (and a claim if a batch closes), its
    /// recovery, another take-up, a free-space check, whichever is due.
    func turn(_ name: String, now: Duration) {
        guard let folder = folders[name] else { return }
        if let watch = folder.watch {
            // Settled photos another host's role keeps from this one: is the role free now (its
            // holder gone)? The answer comes as `.roles`.
            if let roles, folder.open == nil, watch.counts.pending > 0, !roles.mayClaim(name) { roles.tryNow() }
            if let claimable = watch.turn(now: now, canClaim: canClaim(folder), inotify: watcher.inotify) {
                startClaim(folder, claimable.names, closes: claimable.closes)
            }
            watcher.reindex(watch)
            // The share answers again: what was given back when it failed resumes at once.
            if watch.takeShareReturn(), !stopping { startRecovery(folder) }
            if let due = folder.nextLeaseLook, now >= due, !stopping {
                folder.nextLeaseLook = now + setup.config.pollInterval
                if watch.health.isAvailable, !folder.leaseLooking { startLeaseLook(folder) }
            }
            if let due = folder.nextRecovery, now >= due, !stopping {
                folder.nextRecovery = now + setup.config.rescanInterval
                startRecovery(folder)
            }
            if let due = folder.nextDeadLook, now >= due {
                folder.nextDeadLook = folder.deadHeld.isEmpty ? nil : now + Self.deadLookEvery
                if !stopping { lookAtDeadHeld(folder) }
            }
            if folder.closeDue, let due = folder.closeCheck, now >= due {
                folder.closeCheck = nil
                closeOpen(folder)
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

    /// Sets the folder's one deadline: the earliest of what it waits for.
    func schedule(_ folder: Folder) {
        var next: Duration?
        func consider(_ t: Duration?) { if let t { next = min(next ?? t, t) } }
        if let watch = folder.watch {
            consider(watch.nextDeadline(canClose: canClaim(folder)))
            consider(folder.nextRecovery)
            consider(folder.nextSpaceCheck)
            consider(folder.nextSweep)
            consider(folder.nextLeaseLook)
            consider(folder.closeCheck)
            consider(folder.nextDeadLook)
        }
        consider(folder.nextRetry)
        deadlines.set(folder.inbox.name, at: next)
    }

    /// Puts what changed of the folder on the board (the publisher writes it).
    func show(_ folder: Folder) {
        if let watch = folder.watch, !watch.health.isAvailable {
            // The share does not answer (or its disk is full): one state until it does.
            let words = watch.health.words
            if case .full = watch.health {
                setState(folder, .lowSpace, why: words,
                         fix: ["free space on the server's disk of \(folder.inbox.layout.root)"])
            } else {
                setState(folder, .shareUnavailable, why: words,
                         fix: ["mount the share of \(folder.inbox.layout.root) again, or bring its server back"])
            }
        } else if let watch = folder.watch, folder.lowSpace == nil {
            // drop/ gone (deleted, moved away, unreadable): not watched until it is back.
            if let error = watch.attachError, !watch.isAttached {
                let problem = FolderProblem.refusal(error, layout: folder.inbox.layout)
                setState(folder, .refused, why: problem.why + " (drop/ is looked for every 2 s)",
                         fix: error.code == ENOENT ? ["mkdir \(folder.inbox.layout.drop) (or photofinish init \(folder.inbox.layout.root))"] : problem.fix)
            } else if watch.isAttached {
                setState(folder, .watching)
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
            let share = watch.health.isAvailable ? nil : watch.health.words
            metrics.setShareAvailable(folder.inbox.name, share == nil)
            board.update(folder.inbox.name) {
                $0.share = share
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

    func setState(_ folder: Folder, _ kind: ServiceStatus.FolderState.Kind, why: String? = nil, fix: [String]? = nil) {
        let since = folder.state.kind == kind && folder.state.why == why ? folder.state.since : BatchID.timestamp(Date())
        let next = ServiceStatus.FolderState(kind: kind, why: why, fix: fix, since: since)
        guard next != folder.state else { return }
        folder.state = next
        folder.stateChanged = true
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
            board.update(name) {
                $0.state = .init(kind: .stopped, since: BatchID.timestamp(Date()))
                $0.claimer = nil  // its roles were let go
            }
        }
        return board.snapshot(state: .stopped)
    }
}
