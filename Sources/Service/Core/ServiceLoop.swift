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
/// other threads write when they hand work back — hands each event to the concern it is for,
/// and carries out what the concern decides (docs/architecture.md, The service core). No tick:
/// an idle service sleeps until its next timer (a rescan, the watchdog).
///
/// Each hot folder (`HotFolder`) has its concerns, each a pure state machine with its own deadline:
/// taking it up (`TakingUp`), claiming what settles (`Claiming`, fed by its `DropWatch`),
/// housekeeping (`Housekeeping`: retention and free space), leases and recovery
/// (`Recovering`), and in a cluster the adoption of dead hosts' batches (`Adopting`). Their
/// deadlines are kept in one heap (`Deadlines`): a turn costs only the hot folders due. The slow
/// work they ask for runs on the work pool (`WorkPool`, a strand per folder: one hot folder's big
/// claim never delays another's nor the reading of inotify) and comes back as a `Message`;
/// batches are finished by `FolderWorkers`, status is written by `StatusPublisher`, proofs by
/// `ProofKeeper`, each on its own thread. A reload reads the config on the work pool and applies
/// what changed here.
///
/// This file holds the loop and a hot folder's turn; carrying out the concerns' effects
/// (ServiceLoop+Effects), the results of the work handed off (ServiceLoop+Results), taking up and
/// `READY=1` (ServiceLoop+Ready) and reloads (ServiceLoop+Reload) have files of their own.
///
/// Confined to its thread: made on the caller's, handed to the thread that runs it, read back
/// (`stoppedStatus`) only once `run` has returned.
final class ServiceLoop: @unchecked Sendable {
    /// What the other threads hand back.
    enum Message: Sendable {
        case takenUp(inbox: String, attempt: Int, Result<TakeUp.Ready, FolderProblem>)
        /// The take-ups of a setup's hot folders, a share of them a message (`takeUpTogether`).
        case takenUpTogether([(inbox: String, attempt: Int, result: Result<TakeUp.Ready, FolderProblem>)])
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
        /// The leases of a shared hot folder's batches held from other machines were looked at:
        /// `due` when one ran out or a batch lies unheld (recovery takes it now), `waiting` the
        /// sentences for the batches whose host stopped renewing.
        case leases(inbox: String, due: Bool, waiting: [String])
        /// In a cluster: a hot folder's claimer role was taken or lost (`ClaimerRoles`).
        case roles
        /// In a cluster: an open batch to adopt (its holder's session is gone), a closed one to
        /// take over, or one this host held that another host adopted (`ClaimerRoles.Holding`).
        case holding(ClaimerRoles.Holding)
        /// The adoption's look at the share: the batch open and its lock taken (with its runner), or why not.
        case adopted(ClaimerRoles.BatchKey, from: String, Result<AdoptedBatch, AdoptionRefused>)
        /// An open batch held in the database was closed on the share (nil: it could not be: the
        /// run closes it).
        case closedOnShare(inbox: String, ClaimedBatch, closed: ClaimedBatch?)
        /// A batch's run ended (its record in the cluster goes).
        case batchEnded(inbox: String, batch: String)
        /// A finished batch's work hot folder could not be cleaned up: recovery runs soon.
        case leftToRecovery(inbox: String)
        /// The look at a dead holder's closed batch.
        case deadLook(ClaimerRoles.BatchKey, from: String, Adopting<AdoptedBatch>.DeadLook)
    }

    /// A batch taken from a dead host of the cluster, and (an open one's) the runner of its
    /// photos.
    struct AdoptedBatch: FolderBatch {
        var batch: ClaimedBatch
        var runner: BatchRunner?

        var id: String { batch.id }
        var photoCount: Int { batch.photoCount }
    }

    enum ClaimResult: Sendable {
        case outcome(Claim.Outcome)
        /// Photos claimed into the hot folder's open batch as they settled (`added`, numbered from
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
    /// In a cluster: who may claim from a hot folder (its claimer role), the open batches this host
    /// holds recorded with its claimer session, and the roles let go when the daemon stops (the
    /// other hosts claim while it drains).
    let roles: ClaimerRoles?
    /// The batch locks this service holds, and what it knows of other machines' leases.
    let locks: BatchLocks

    var setup: ServiceSetup
    var hotFolders: [String: HotFolder] = [:]
    var deadlines = Deadlines<String>()
    var takeUps = 0
    /// While a setup is applied, its take-ups are held here and handed to the pool together
    /// (`takeUpTogether`); nil otherwise (each goes to its folder's strand).
    var heldTakeUps: [(name: String, attempt: Int, inbox: ServiceSetup.Inbox)]?
    var readySent = false
    var reloading = false, reloadAgain = false, reloadAwaitsReady = false
    var stopping = false
    /// The open-file places for hot folders, and how many are taken (`OpenFiles`).
    var room = Int.max, roomUsed = 0
    /// What the open-file limit allows this setup's hot folders (made at each apply).
    var budget: OpenFiles.Budget?
    var nextWatchdog: Duration?
    let watchdogHalf: Duration? = Notify.watchdogInterval.map { $0 / 2 }
    var nextLeaseRenewal: Duration?
    /// Jobs under way that a stop waits for: claims, closes on the share, adoption looks.
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

    /// The earliest thing to do: a hot folder's deadline, the watchdog, a lease renewal.
    func nextWake(_ now: Duration) -> Duration? {
        earliest(deadlines.next(), nextWatchdog, nextLeaseRenewal)
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
                for (hotFolder, error) in locks.renewLeases() {
                    let batch = FilePath(hotFolder).lastComponent?.escaped ?? hotFolder
                    log.warning("cannot renew the lease of batch \(batch): \(error) (unrenewed for \(words(BatchLock.Lease.timeout)), another machine may take the batch over; said once until it works again)",
                                ["BATCH": batch])
                }
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
        for hotFolder in hotFolders.values {
            carryOut(hotFolder.claims.handle(.stop(hold: hold(of: hotFolder.claims.open)), now: now()), hotFolder)
        }
    }

    /// inotify events reached `name`'s folder: its deadline may have moved, its counts changed.
    func touched(_ name: String) {
        guard let hotFolder = hotFolders[name] else { return }
        schedule(hotFolder)
        show(hotFolder)
    }

    /// A hot folder's deadline is up: each of its concerns looks at what is due — its watch's turn
    /// (and a claim of what settled), a retry of its take-up, recovery, a look at the leases or
    /// the dead holders' batches, a close put off, a sweep, a look at the free space — and the
    /// jobs they ask for are queued on its strand in that order.
    func turn(_ name: String, now: Duration) {
        guard let hotFolder = hotFolders[name] else { return }
        if let watch = hotFolder.watch {
            // Settled photos another host's role keeps from this one: is the role free now (its
            // holder gone)? The answer comes as `.roles`.
            if let roles, hotFolder.claims.open == nil, watch.counts.pending > 0, !roles.mayClaim(name) { roles.tryNow() }
            if let claimable = watch.turn(now: now, canClaim: canClaim(hotFolder), inotify: watcher.inotify) {
                carryOut(hotFolder.claims.handle(.settled(claimable.names, closes: claimable.closes, stopping: stopping,
                                                       hold: hold(of: hotFolder.claims.open)), now: now), hotFolder)
            }
            watcher.reindex(watch)
            let available = watch.health.isAvailable
            carryOut(hotFolder.recovering.handle(.due(stopping: stopping, available: available,
                                                   shareReturned: watch.takeShareReturn()), now: now), hotFolder)
            if let effects = hotFolder.adopting?.handle(.due(stopping: stopping, available: available && hotFolder.system != nil), now: now) {
                carryOut(effects, hotFolder)
            }
            carryOut(hotFolder.claims.handle(.due(hold: hold(of: hotFolder.claims.open)), now: now), hotFolder)
            carryOut(hotFolder.housekeeping.handle(.due(stopping: stopping), now: now), hotFolder)
        }
        carryOut(hotFolder.takingUp.handle(.due(stopping: stopping, noRoom: noRoom(for: hotFolder)), now: now), hotFolder)
        schedule(hotFolder)
        show(hotFolder)
    }

    /// Sets the hot folder's one deadline: the earliest of what it waits for. Until READY=1 a
    /// watched folder has none: its first turn (the full scan of what its drop/ holds, its
    /// housekeeping) comes after READY=1 (`announceReady` schedules every folder), so the
    /// start-up's take-ups are not slowed by 10,000 scans; what waits in drop/ meanwhile is
    /// found by that scan.
    func schedule(_ hotFolder: HotFolder) {
        guard readySent || hotFolder.watch == nil else {
            deadlines.set(hotFolder.name, at: nil)
            return
        }
        deadlines.set(hotFolder.name, at: hotFolder.nextDeadline(canClose: hotFolder.watch != nil && canClaim(hotFolder)))
    }

    /// Puts what changed of the hot folder on the board (the publisher writes it).
    func show(_ hotFolder: HotFolder) {
        hotFolder.showWatchState()
        let generation = hotFolder.watch?.generation ?? -1
        guard generation != hotFolder.shownGeneration || hotFolder.stateChanged else { return }
        hotFolder.shownGeneration = generation
        hotFolder.stateChanged = false
        let state = hotFolder.state
        if let watch = hotFolder.watch {
            let (settling, pending) = watch.counts
            let polling = watch.polling, mode = watch.mode, refusals = watch.refusals, never = watch.neverTaken
            let share = watch.health.isAvailable ? nil : watch.health.words
            metrics.setShareAvailable(hotFolder.name, share == nil)
            board.update(hotFolder.name) {
                $0.share = share
                $0.settling = settling
                $0.pending = pending
                $0.polling = polling
                $0.watching = mode
                $0.refused = refusals.isEmpty ? nil : refusals
                $0.neverTaken = never.isEmpty ? nil : never
                $0.waiting = nil
                $0.state = state
            }
            metrics.setPending(hotFolder.name, settling + pending)
        } else {
            board.update(hotFolder.name) {
                $0.settling = 0
                $0.pending = 0
                $0.watching = nil
                $0.refused = nil
                $0.neverTaken = nil
                $0.state = state
            }
        }
    }

    // MARK: - Stopping

    /// What the status says once stopped: each hot folder `stopped`.
    func stoppedStatus() -> ServiceStatus {
        for name in hotFolders.keys {
            board.update(name) {
                $0.state = .init(kind: .stopped, since: BatchID.timestamp(Date()))
                $0.claimer = nil  // its roles were let go
                // Stopped, it no longer looks at the other hosts' leases: what it last saw may
                // be stale within seconds (the batch published by a host that took it over).
                $0.takeovers = nil
            }
        }
        return board.snapshot(state: .stopped)
    }
}
