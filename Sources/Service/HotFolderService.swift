import Batches
import Configuration
import Foundation
import HotFolders
import JSON5
import Synchronization
import System

/// The hot-folder service (`photofinish daemon`, `photofinish watch`): recovers `.work/`,
/// watches every `drop/`, claims closed batches and finishes them, one batch at a time per hot
/// folder and hot folders side by side; talks to systemd; reloads on SIGHUP; drains on SIGTERM.
///
/// Threads: one plain thread runs the loop (`ServiceLoop`: it waits in `poll` on inotify, a
/// timer, the signals and its mailbox, and never holds a Swift concurrency thread the photo
/// workers need); a small pool does the blocking work it hands off (claims, take-ups,
/// recovery, reloads); each hot folder with batches has a task finishing them
/// (`FolderWorkers`); the publisher writes status, STATUS.txt and metrics; the proof keeper
/// renders proofs when the service is idle.
public final class HotFolderService: Sendable {
    private let reload: @Sendable () throws(JSON5Errors) -> ServiceSetup
    private let log: Logger
    private let statusPath: String
    private let board: StatusBoard
    private let metrics = Metrics()
    private let stop = StopRequest()
    /// The batch locks this service holds (its own: never shared with another service in the process).
    private let locks = BatchLocks()
    /// The batch workers while the service runs (the metrics count their photos in flight).
    private let workers = Mutex<FolderWorkers?>(nil)
    /// Threads for claims, take-ups, recovery and reloads (see `OpenFiles` for what each holds).
    static let claimThreads = 4
    /// The setup in force, as of the last (re)load the loop applied (the web console reads it).
    private let inForce = Mutex<ServiceSetup?>(nil)
    /// The program's version (what the cluster's other hosts see of this one).
    private let version: String
    /// The loop's mailbox while the service runs (`submit`).
    private let mailbox = Mutex<Mailbox<ServiceLoop.Message>?>(nil)

    /// - Parameters:
    ///   - reload: reads and validates the setup again (SIGHUP).
    ///   - status: where this process's status file goes (`StatusFiles.target(for:)`).
    ///   - version: the program's version, shown to the cluster's other hosts.
    public init(reload: @escaping @Sendable () throws(JSON5Errors) -> ServiceSetup, log: Logger,
                status: StatusFiles.Target, version: String = "?") {
        self.reload = reload
        self.log = log
        self.version = version
        statusPath = status.path
        board = StatusBoard(target: status)
    }

    /// What the service knows now, per hot folder (state, pending, processing, last batch), as
    /// `photofinish status` would read it (a snapshot: cheap): for the web console. "stopping"
    /// once a stop was asked for.
    public func liveStatus() -> ServiceStatus {
        board.snapshot(state: stop.isRequested ? .stopping : .running)
    }

    /// The setup in force (changes at a reload); nil before the first one is applied.
    public var setupInForce: ServiceSetup? { inForce.withLock { $0 } }

    /// Finishes the published batch `id` of the hot folder `inbox` again, from its filed
    /// sources (`only`: just these — a failed photo tried again), with the template the folder
    /// uses now (as of the last start or reload: what a photo dropped now gets), as a new batch
    /// (`Redo.claim`) queued in turn like one claimed from drop/. The web console's retry and
    /// redo.
    /// - Returns: the new batch's id.
    /// - Throws: `Redo.Refusal` (no such folder or batch, nothing filed; the service stopping:
    ///   the new batch then waits in .work/ and is finished at the next start).
    public func redo(inbox name: String, batch id: String, only: Set<FileName>? = nil) throws(Redo.Refusal) -> String {
        guard let inbox = setupInForce?.inboxes.first(where: { $0.name == name }) else {
            throw Redo.Refusal(description: "the hot folder \(name) is not in the configuration any more")
        }
        let mover: Mover
        do throws(SystemError) {
            mover = try FolderSystem.probe(inbox.layout).mover
        } catch {
            throw Redo.Refusal(description: "\(inbox.layout.root) cannot be written: \(error)")
        }
        let batch = try Redo.claim(id, layout: inbox.layout, inbox: name, template: inbox.template, order: inbox.order,
                                   locks: locks, mover: mover, only: only)
        guard !stop.isRequested, let mailbox = mailbox.withLock({ $0 }) else {
            // Recovered at the next start (its lock let go now, so recovery may take it).
            batch.lock.release()
            throw Redo.Refusal(description: "PhotoFinish is stopping: batch \(batch.id) waits in .work/ and is finished at its next start")
        }
        mailbox.post(.recovered(inbox: name, [batch]))
        return batch.id
    }

    /// A batch of the hot folder `inbox` was approved, its approval written into its report
    /// (the client's share page, the console): its `when: "approved"` deliveries start and its
    /// `notify` targets hear of it (reference: Approval). Returns at once.
    public func approved(inbox: String, batch: String) {
        guard let workers = workers.withLock({ $0 }),
              let layout = setupInForce?.inboxes.first(where: { $0.name == inbox })?.layout else { return }
        // Planning reads the approved files: never on the caller's (a web request's) thread.
        DispatchQueue.global().async { workers.approved(inbox: inbox, batch: batch, folder: layout.out + "/" + batch) }
    }

    /// Runs until SIGTERM or SIGINT, then drains and returns the exit code (0; 1 when the
    /// loop could not be started). Raises the open-file limit first.
    /// - Parameters:
    ///   - setup: the validated setup (the caller has reported errors and exited 2).
    ///   - signals: made by the caller as early as it can (an early SIGHUP must not kill us,
    ///     nor an early SIGTERM be lost).
    public func run(_ setup: ServiceSetup, signals: SignalEvents) async -> Int32 {
        let limit = OpenFiles.raise(log: log)
        // The setup in force: the first, then each one a reload read (the loop applies it next).
        inForce.withLock { $0 = setup }
        // In a cluster: this daemon as one of its hosts, from before the first scan to after the
        // drain (a change of `cluster` itself takes effect at the next start).
        let cluster = setup.config.cluster.map {
            ClusterHost(settings: $0, version: version, workers: setup.limits.effectiveWorkers,
                        inboxes: setup.inboxes.map(\.name), log: log, board: board, metrics: metrics)
        }
        // In a cluster the open batches' photos are tasks of the cluster's table.
        let stop = self.stop
        let clusterTasks = cluster.map {
            ClusterTaskQueue(host: $0, roots: ClusterTaskQueue.roots(of: setup.inboxes), log: log,
                             patience: $0.settings.lease, stopping: { stop.isRequested })
        }
        if let cluster, let clusterTasks {
            // The database answers (again): what was claimed without it is spread, what was
            // finished without it told; an open batch whose hold is not confirmed is taken back
            // on the share.
            cluster.onJoined { clusterTasks.rejoined() }
            cluster.roles.onFence { clusterTasks.fence($0, words: $1) }
        }
        let reload = { @Sendable [read = self.reload, self] () throws(JSON5Errors) -> ServiceSetup in
            let new = try read()
            self.inForce.withLock { $0 = new }
            // The folders a reload adds, removes or moves: their tasks found (or given back) from now.
            clusterTasks?.setRoots(ClusterTaskQueue.roots(of: new.inboxes))
            cluster?.setInboxes(new.inboxes.map(\.name))
            return new
        }
        metrics.setInboxes(setup.inboxes.map(\.name))  // a scrape before the first scan sees every hot folder
        let publisher = StatusPublisher(board: board, metrics: metrics, statusPath: statusPath, log: log) { [self] in metricsText() }
        let proofs = ProofKeeper(log: log) { [board] inbox, path in board.update(inbox) { $0.proof = path } }
        let busy = Mutex(false)
        board.setOnChange { [board] in
            publisher.changed()
            let now = board.isBusy
            if busy.withLock({ let changed = $0 != now; $0 = now; return changed }) { proofs.setBusy(now) }
        }
        cluster?.start()
        defer { cluster?.stop() }
        let pool = WorkPool(threads: Self.claimThreads)
        let mailbox: Mailbox<ServiceLoop.Message>
        let loop: ServiceLoop
        do throws(SystemError) {
            mailbox = try Mailbox()
            self.mailbox.withLock { [mailbox] in $0 = mailbox }
            defer { self.mailbox.withLock { $0 = nil } }
            let tasks = clusterTasks.map { queue -> (queue: any PhotoTaskQueue, workers: Int) in (queue, setup.limits.effectiveWorkers) }
            let workers = FolderWorkers(board: board, metrics: metrics, stop: stop, log: log,
                                        batchSlots: setup.limits.effectiveWorkers + 2, tasks: tasks,
                                        onEvent: { event in
                                            switch event {
                                            case .started(let inbox): mailbox.post(.started(inbox: inbox))
                                            case .givenBack(let inbox, let error): mailbox.post(.givenBack(inbox: inbox, error))
                                            case .ended(let inbox, let batch): mailbox.post(.batchEnded(inbox: inbox, batch: batch))
                                            case .leftToRecovery(let inbox): mailbox.post(.leftToRecovery(inbox: inbox))
                                            }
                                        }, onFinished: { publisher.poke() })
            self.workers.withLock { $0 = workers }
            loop = try ServiceLoop(setup: setup, reload: reload, log: log, board: board, metrics: metrics, proofs: proofs,
                                   workers: workers, publisher: publisher, pool: pool, mailbox: mailbox, signals: signals,
                                   stop: stop, openFileLimit: limit, locks: locks,
                                   roles: cluster?.roles)
            cluster?.onRolesChanged { mailbox.post(.roles) }
            cluster?.roles.onHolding { mailbox.post(.holding($0)) }
            let endpoint = MetricsEndpoint(sockets: MetricsEndpoint.socketsFromSystemd(), log: log) { [self] in metricsText() }
            endpoint?.start()
            defer { endpoint?.stop() }
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let thread = Thread {
                    ProcessResources.nameThisThread("pf-watch")
                    loop.run()
                    done.resume()
                }
                thread.name = "photofinish-watch"
                thread.start()
            }
            // Drain: no claim starts; those under way end (their batches stay in .work/ for the
            // next start); each worker finishes its photos in flight and returns.
            pool.stop()
            proofs.stop()
            await workers.finishAll()
            // A delivery under way stops where it is; its journal resumes it at the next start.
            workers.deliveries.stop()
            workers.notifier.stop()
            // The photos the workers completed recorded first (up to 3 s; 1 s for a database that
            // does not answer), then the member leaves (up to 3 s): what it still holds goes back,
            // or — the database not answering — is left to the leases. A stop is a stop.
            if let cluster, let clusterTasks {
                clusterTasks.finish(flush: cluster.member.health.isUp ? min(cluster.settings.lease, .seconds(3)) : .seconds(1))
                cluster.stop(waitingUpTo: .seconds(3))
            }
            publisher.stop(final: loop.stoppedStatus())
            log.notice("stopped")
            return 0
        } catch {
            log.error("cannot start the watching loop: \(error)")
            return 1
        }
    }

    /// The metrics now (photos in flight counted as they stand).
    private func metricsText() -> String {
        let slots = workers.withLock { $0?.limits.withLock { $0.sharedSlots } }
        metrics.setInFlight(slots?.inUse ?? 0)
        return metrics.text()
    }
}
