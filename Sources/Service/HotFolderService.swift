import Batches
import Configuration
import Finishing
import Foundation
import System
import HotFolders
import JSON5
import Synchronization

/// What the service runs: the config's timing and limits, and each hot folder with its
/// validated template.
public struct ServiceSetup: Sendable {
    public var config: Config
    public var inboxes: [Inbox]

    public struct Inbox: Sendable {
        public var name: String
        public var layout: HotFolderLayout
        public var template: TemplateSnapshot
        public var order: Template.Order
        /// What to run or call after each of its batches (its own `onBatch`, else the config's).
        public var hooks: BatchHooks?

        public init(name: String, layout: HotFolderLayout, template: TemplateSnapshot, order: Template.Order,
                    hooks: BatchHooks? = nil) {
            self.name = name
            self.layout = layout
            self.template = template
            self.order = order
            self.hooks = hooks
        }
    }

    public init(config: Config, inboxes: [Inbox]) {
        self.config = config
        self.inboxes = inboxes
    }

    /// The setup of `photofinish daemon --config FILE`: the config and every template it names.
    /// - Throws: `JSON5Errors` with every problem, each naming file, line and key.
    public static func load(configPath: String) throws(JSON5Errors) -> ServiceSetup {
        let config = try Config.load(path: configPath)
        var inboxes: [Inbox] = []
        var errors: [JSON5Error] = []
        for inbox in config.inboxes {
            do {
                let (snapshot, template) = try TemplateSnapshot.load(path: config.templatePath(named: inbox.template))
                inboxes.append(Inbox(name: inbox.name, layout: HotFolderLayout(root: inbox.root), template: snapshot,
                                     order: template.order, hooks: inbox.onBatch ?? config.onBatch))
            } catch {
                errors += error.errors
            }
        }
        guard errors.isEmpty else { throw JSON5Errors(errors: errors) }
        return ServiceSetup(config: config, inboxes: inboxes)
    }

    var rules: BatchRules {
        BatchRules(settle: config.settle, quiet: config.quiet, maxWait: config.maxWait, maxBatch: config.maxBatch)
    }

    var limits: BatchLimits {
        var l = BatchLimits()
        l.maxPixels = config.maxPixels
        l.maxFileBytes = config.maxFileBytes
        l.itemTimeout = config.itemTimeout
        l.workers = config.workers
        return l
    }
}

/// The hot-folder service (`photofinish daemon`, `photofinish watch`): recovers `.work/`,
/// watches every `drop/`, claims closed batches and finishes them, one batch at a time per hot
/// folder and hot folders side by side; talks to systemd; reloads on SIGHUP; drains on SIGTERM.
///
/// Threads: one plain thread watches and claims (it blocks in `poll`, so it never holds a
/// Swift concurrency thread the photo workers need); each hot folder has a task finishing its
/// queue of claimed batches; signals arrive as events on another task.
public final class HotFolderService: Sendable {
    private let reload: @Sendable () throws(JSON5Errors) -> ServiceSetup
    private let log: Logger
    private let statusPath: String
    private let board: StatusBoard
    private let proofs: ProofKeeper
    private let stop = StopRequest()
    private let reloadRequested = Mutex(false)
    private let queues = Mutex<[String: AsyncStream<ClaimedBatch>.Continuation]>([:])
    private let workers = Mutex<[Task<Void, Never>]>([])
    /// The current limits (a reload changes them for the batches that start after it).
    private let limits = Mutex(BatchLimits())
    /// Each hot folder's `onBatch`, as of the last (re)load.
    private let hooks = Mutex<[String: BatchHooks]>([:])
    private let hookRunner: BatchHookRunner
    private let metrics = Metrics()
    /// Where the metrics file goes, as of the last (re)load, and whether a failure to write it
    /// was reported (once: it would otherwise fill the journal every few seconds).
    private let metricsFile = Mutex<(path: String?, warned: Bool)>((nil, false))
    /// The setup in force, as of the last (re)load (the web console reads it).
    private let inForce = Mutex<ServiceSetup?>(nil)

    /// - Parameters:
    ///   - reload: reads and validates the setup again (SIGHUP).
    ///   - status: where this process's status file goes (`StatusFiles.target(for:)`).
    public init(reload: @escaping @Sendable () throws(JSON5Errors) -> ServiceSetup, log: Logger,
                status: StatusFiles.Target) {
        self.reload = reload
        self.log = log
        statusPath = status.path
        let board = StatusBoard(target: status)
        self.board = board
        proofs = ProofKeeper(log: log, busy: { board.isBusy })
        hookRunner = BatchHookRunner(log: log, userAgent: "photofinish")
    }

    /// The live status, as `photofinish status` would read it (a snapshot: cheap). For the web
    /// console; "stopping" once a stop was asked for.
    public func liveStatus() -> ServiceStatus {
        board.snapshot(state: stop.isRequested ? "stopping" : "running")
    }

    /// The setup in force (changes at a reload); nil before the first one is applied.
    public var setupInForce: ServiceSetup? { inForce.withLock { $0 } }

    /// Runs until SIGTERM or SIGINT, then drains and returns the exit code (0). Raises the
    /// open-file limit first (a hot folder holds descriptors for as long as it is watched).
    /// - Parameters:
    ///   - setup: the validated setup (the caller has reported errors and exited 2).
    ///   - signals: made by the caller as early as it can (an early SIGHUP must not kill us,
    ///     nor an early SIGTERM be lost).
    public func run(_ setup: ServiceSetup, signals: SignalEvents) async -> Int32 {
        defer { withExtendedLifetime(signals) {} }
        OpenFiles.raise(log: log)
        metrics.setInboxes(setup.inboxes.map(\.name))  // a scrape before the first scan sees every hot folder
        let endpoint = MetricsEndpoint(sockets: MetricsEndpoint.socketsFromSystemd(), log: log) { [self] in metricsText() }
        endpoint?.start()
        defer { endpoint?.stop() }
        signals.setHandler { [self] signal in
            switch signal {
            case .reload:
                reloadRequested.withLock { $0 = true }
            case .stop:
                if !stop.isRequested {
                    Notify.stopping()
                    log.notice("stopping: finishing the photos in flight; unfinished batches resume at the next start")
                }
                stop.request()
            }
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let thread = Thread { [self] in
                var current = setup
                let watcher = DropWatcher(log: log)
                apply(current, previous: nil, watcher: watcher)
                Notify.ready(status: board.snapshot(state: "running").summary)
                log.notice("ready: watching " + current.inboxes.map { "\($0.name) (\($0.layout.drop))" }.joined(separator: ", "))
                watchLoop(watcher: watcher, setup: &current)
                done.resume()
            }
            thread.name = "photofinish-watch"
            thread.start()
        }
        // Drain: no more claims; each worker finishes its photos in flight and returns.
        proofs.stop()
        for continuation in queues.withLock({ Array($0.values) }) { continuation.finish() }
        for task in workers.withLock({ $0 }) { await task.value }
        let stopped = board.snapshot(state: "stopped")
        writeStatus(stopped)
        writeMetrics()
        var statusText = StatusText.Writer()
        statusText.update(stopped, now: .zero, log: log)
        log.notice("stopped")
        return 0
    }

    /// The watching loop: events, settle, claims, periodic recovery, status, watchdog, reloads.
    private func watchLoop(watcher: DropWatcher, setup: inout ServiceSetup) {
        let now = watcher.now
        let watchdog = Watchdog(interval: Notify.watchdogInterval, now: now)
        var lastRecovery = now()
        var lastStatus: ServiceStatus?
        var lastStatusWrite = Duration.zero
        var statusWriteFailed = false
        var statusText = StatusText.Writer()
        // Only what changed is looked at again: each folder's generation as last put on the
        // board, the board's version as last written (an idle tick costs next to nothing).
        var seen: [ObjectIdentifier: Int] = [:]
        var boardVersion = -1
        var busy = false, waiting = false, statusTextDeferred = false
        while !stop.isRequested {
            if reloadRequested.withLock({ let r = $0; $0 = false; return r }) {
                setup = reloaded(from: setup, watcher: watcher)
                seen = [:]
            }
            // Short ticks while anything is under way, also a STATUS.txt or status write held
            // back (it is due within the second).
            let tick = Self.tick(setup, waiting: busy || waiting || statusTextDeferred || statusWriteFailed)
            let closed = watcher.step(timeout: tick, rescanInterval: setup.config.rescanInterval)
            guard !stop.isRequested else { break }
            for (folder, names) in closed {
                guard let inbox = setup.inboxes.first(where: { $0.name == folder.inbox }) else { continue }
                claim(names, inbox: inbox, folder: folder, now: watcher.now()) {
                    watchdog.feed()
                    BatchLock.renewLeases()
                }
            }
            if now() - lastRecovery >= setup.config.rescanInterval {
                lastRecovery = now()
                for folder in watcher.folders {
                    guard let inbox = setup.inboxes.first(where: { $0.name == folder.inbox }) else { continue }
                    recover(inbox, system: folder.system, staleAfter: setup.config.staleAfter)
                }
            }
            for folder in watcher.folders where seen[ObjectIdentifier(folder)] != folder.generation {
                seen[ObjectIdentifier(folder)] = folder.generation
                let (settling, pending) = folder.counts
                let polling = folder.polling, mode = folder.mode, refusals = folder.refusals, never = folder.neverTaken
                board.update(folder.inbox) {
                    $0.settling = settling
                    $0.pending = pending
                    $0.polling = polling
                    $0.watching = mode
                    $0.refused = refusals.isEmpty ? nil : refusals
                    $0.neverTaken = never.isEmpty ? nil : never
                }
                metrics.setPending(folder.inbox, settling + pending)
            }
            // The status is written when something changed, and while busy a heartbeat every 5 s
            // (its `updated` moves); an idle daemon writes nothing. A write that failed (a full
            // disk) is tried again a second later; so is a STATUS.txt held back.
            let since = now() - lastStatusWrite
            let heartbeat = (busy && since >= .seconds(5)) || (statusWriteFailed && since >= .seconds(1))
            if board.version != boardVersion || heartbeat || statusTextDeferred {
                boardVersion = board.version
                let status = board.snapshot(state: "running")
                busy = status.inboxes.contains { $0.processing != nil || $0.queued > 0 }
                waiting = status.inboxes.contains { $0.settling + $0.pending > 0 }
                var comparable = status
                comparable.updated = lastStatus?.updated ?? ""
                if comparable != lastStatus || heartbeat {
                    if comparable.summary != lastStatus?.summary { Notify.status(status.summary) }
                    lastStatus = status
                    statusWriteFailed = !writeStatus(status)
                    lastStatusWrite = now()
                    writeMetrics()
                }
                statusTextDeferred = statusText.update(status, now: now(), log: log)
            }
            watchdog.feed()
            BatchLock.renewLeases()
        }
    }

    /// How long the loop waits for inotify before it steps every folder again: a fraction of
    /// settle/quiet while files wait in drop/ or a batch runs; otherwise a second (a new file
    /// wakes it at once; each step costs a little per hot folder, so 1,000 idle hot folders
    /// stepped 4 times a second cost 4 times as much). A stop or reload is seen within it.
    static func tick(_ setup: ServiceSetup, waiting: Bool) -> Duration {
        let rules = setup.rules
        if waiting { return max(.milliseconds(20), min(.milliseconds(250), min(rules.settle, rules.quiet) / 4)) }
        var idle = min(Duration.seconds(1), setup.config.pollInterval)
        if let watchdog = Notify.watchdogInterval { idle = min(idle, watchdog / 4) }
        return max(.milliseconds(20), idle)
    }

    /// Starts what a (new) setup needs: folders, recovery, watches and a worker per hot folder.
    private func apply(_ setup: ServiceSetup, previous: ServiceSetup?, watcher: DropWatcher) {
        // A hot folder whose root moved is a different hot folder: stop the old, start anew.
        func same(_ a: ServiceSetup.Inbox, _ b: ServiceSetup.Inbox) -> Bool { a.name == b.name && a.layout == b.layout }
        let old = previous?.inboxes ?? []
        let removed = old.filter { o in !setup.inboxes.contains { same($0, o) } }
        let added = setup.inboxes.filter { n in !old.contains { same($0, n) } }
        board.set(setup.inboxes.map { ($0.name, $0.layout.root) })
        inForce.withLock { $0 = setup }
        metrics.setInboxes(setup.inboxes.map(\.name))
        metricsFile.withLock { $0 = (setup.config.metricsFile, false) }
        hooks.withLock { current in
            current = [:]
            for inbox in setup.inboxes { current[inbox.name] = inbox.hooks }
        }
        if setup.inboxes.contains(where: { $0.hooks?.webhook != nil }), BatchHookRunner.networkIsPrivate {
            log.warning("onBatch.webhook is set, but this service has no network (the unit's PrivateNetwork=yes): install the drop-in /usr/share/doc/photofinish/examples/webhook-network.conf (see its first lines)")
        }
        limits.withLock { current in
            // One workers limit over all hot folders: the slots are made again only when it changes.
            var next = setup.limits
            next.sharedSlots = current.workers == next.workers && current.sharedSlots != nil
                ? current.sharedSlots : WorkerSlots(next.effectiveWorkers)
            let budget = switch setup.config.memoryBudget {
            case .auto: MemoryBudget.automaticForThisProcess()
            case .bytes(let n): n
            }
            next.memoryBudget = current.memoryBudget?.bytes == budget ? current.memoryBudget : MemoryBudget(bytes: budget)
            current = next
        }
        let l = limits.withLock { $0 }
        log.info("at most \(l.effectiveWorkers) photo\(l.effectiveWorkers == 1 ? "" : "s") in flight, memory budget \(ByteCount.words(l.memoryBudget?.bytes ?? 0))")
        for inbox in removed {
            watcher.remove(inbox: inbox.name)
            _ = queues.withLock { $0.removeValue(forKey: inbox.name) }?.finish()
            log.notice("no longer watching \(inbox.layout.root) (changed in the config)", ["INBOX": inbox.name])
        }
        for folder in watcher.folders { folder.update(rules: setup.rules, pollInterval: setup.config.pollInterval) }
        for inbox in added {
            let system: FolderSystem
            do throws(SystemError) {
                try inbox.layout.create()
                system = try FolderSystem.probe(inbox.layout)
            } catch {
                log.error("\(error): this hot folder is not watched until the next reload", ["INBOX": inbox.name])
                continue
            }
            startWorker(for: inbox.name)
            if let last = LastBatch.newest(in: inbox.layout) {
                board.update(inbox.name) { $0.last = $0.last ?? last }
                metrics.setLastBatch(inbox.name, finished: last.finished)
            }
            recover(inbox, system: system, staleAfter: setup.config.staleAfter)
            watcher.add(DropWatch(inbox: inbox.name, layout: inbox.layout, rules: setup.rules, system: system,
                                  pollInterval: setup.config.pollInterval, log: log))
        }
        OpenFiles.check(folders: watcher.folders.count, workers: limits.withLock { $0.effectiveWorkers }, log: log)
        // A proof for each hot folder whose template is new or changed (made if missing).
        for inbox in setup.inboxes where !old.contains(where: { same($0, inbox) && $0.template.sha256 == inbox.template.sha256 }) {
            proofs.request(.init(inbox: inbox.name, root: inbox.layout.root, template: inbox.template,
                                 maxPixels: setup.config.maxPixels))
        }
    }

    /// SIGHUP: `RELOADING=1`, read and validate everything again, keep the old setup on any
    /// error, `READY=1`.
    private func reloaded(from old: ServiceSetup, watcher: DropWatcher) -> ServiceSetup {
        Notify.reloading()
        log.notice("reloading the configuration")
        var result = old
        do throws(JSON5Errors) {
            let new = try reload()
            apply(new, previous: old, watcher: watcher)
            result = new
            board.reload(failed: nil)
            log.notice("configuration reloaded")
        } catch {
            board.reload(failed: error.errors.map(\.description))
            for e in error.errors { log.error("reload: \(e.description)") }
            log.error("the new configuration has errors: keeping the old one")
        }
        Notify.ready(status: board.snapshot(state: "running").summary)
        return result
    }

    /// Claims a closed batch and queues it for its hot folder's worker. Files that cannot be
    /// moved out of drop/ are left there, refused until they change (STATUS.txt says why).
    private func claim(_ names: [FileName], inbox: ServiceSetup.Inbox, folder: DropWatch, now: Duration,
                       heartbeat: () -> Void) {
        let fields: LogFields = ["INBOX": inbox.name]
        do throws(SystemError) {
            let outcome = try Claim.claim(names, layout: inbox.layout, inbox: inbox.name, template: inbox.template,
                                          order: inbox.order, mover: folder.system.mover, heartbeat: heartbeat)
            for (name, error) in outcome.refused { folder.refuse(name, because: error, now: now) }
            guard let batch = outcome.batch else { return }
            log.info("claimed batch of \(batch.manifest.items.count) photo\(batch.manifest.items.count == 1 ? "" : "s")",
                     fields.with("BATCH", batch.id))
            for item in batch.manifest.items where item.error != nil {
                log.warning("\(item.error!): it is claimed and will fail as io-error unless it can be read by then",
                            fields.with("BATCH", batch.id).with("FILE", item.name.escaped))
            }
            enqueue(batch, to: inbox.name)
        } catch {
            log.error("cannot claim a batch: \(error) (the files stay in drop/ or are recovered later)", fields)
        }
    }

    private func recover(_ inbox: ServiceSetup.Inbox, system: FolderSystem, staleAfter: Duration) {
        let result = Recovery.run(layout: inbox.layout, staleAfter: staleAfter, mover: system.mover, log: log)
        // Queued by the hot folder it was found in (the config may have renamed the inbox).
        for batch in result.resumable { enqueue(batch, to: inbox.name) }
    }

    private func enqueue(_ batch: ClaimedBatch, to inbox: String) {
        guard let queue = queues.withLock({ $0[inbox] }) else {
            log.warning("batch of an inbox not in the config: left in .work/ for later", ["INBOX": inbox, "BATCH": batch.id])
            return
        }
        board.update(inbox) { $0.queued += 1 }
        queue.yield(batch)
    }

    /// One task per hot folder: its batches one after another, in claim order.
    private func startWorker(for inbox: String) {
        let (stream, continuation) = AsyncStream<ClaimedBatch>.makeStream()
        queues.withLock { $0[inbox] = continuation }
        let task = Task { [self] in
            for await batch in stream {
                board.update(inbox) { $0.queued -= 1 }
                guard !stop.isRequested else { continue }  // left in .work/, resumed next start
                await process(batch, inbox: inbox, limits: limits.withLock { $0 })
            }
        }
        workers.withLock { $0.append(task) }
    }

    private func process(_ batch: ClaimedBatch, inbox: String, limits: BatchLimits) async {
        let fields: LogFields = ["INBOX": inbox, "BATCH": batch.id]
        let total = batch.manifest.items.count
        board.update(inbox) { $0.processing = .init(batch: batch.id, done: 0, total: total) }
        defer { board.update(inbox) { $0.processing = nil } }
        do throws(SystemError) {
            let outcome = try await BatchWork.finish(batch, limits: limits, stop: stop, log: log) { [board] done, total in
                board.update(inbox) { $0.processing = .init(batch: batch.id, done: done, total: total) }
            }
            switch outcome {
            case .filing(let left):
                board.update(inbox) { $0.unfiled = Self.unfiled($0.unfiled, batch: batch.id, left) }
                if left.isEmpty { log.notice("every source of the batch is filed now", fields) }
            case .finished(let report, let left):
                board.update(inbox) { $0.unfiled = Self.unfiled($0.unfiled, batch: batch.id, left) }
                for line in left { log.error(line, fields) }
                let c = report.counts
                let line = "batch \(report.status.rawValue): \(c.ok) of \(c.items) finished"
                    + (c.failed > 0 ? ", \(c.failed) failed" : "") + " → out/\(batch.id)/"
                if c.failed > 0 { log.warning(line, fields) } else { log.notice(line, fields) }
                for item in report.items where item.status == .failed {
                    log.warning("\(item.error.map { "\($0.code): \($0.message)" } ?? "failed")", fields.with("FILE", item.source))
                }
                board.update(inbox) {
                    $0.last = .init(batch: batch.id, status: report.status.rawValue, items: c.items, ok: c.ok,
                                    failed: c.failed, finished: report.finished)
                }
                metrics.record(report, inbox: inbox, folder: batch.layout.out + "/" + batch.id)
                writeMetrics()
                if let hooks = hooks.withLock({ $0[inbox] }) {
                    hookRunner.run(hooks, for: FinishedBatch(inbox: inbox, batch: batch.id, status: report.status.rawValue,
                                                             folder: batch.layout.out + "/" + batch.id,
                                                             items: c.items, ok: c.ok, failed: c.failed))
                }
            case .interrupted:
                log.notice("batch stopped; it resumes at the next start", fields)
            }
        } catch {
            log.error("cannot finish the batch: \(error); it stays in .work/ and is retried", fields)
        }
    }

    /// The unfiled sources by batch, with `batch`'s replaced by `left`.
    static func unfiled(_ all: [String: [String]]?, batch: String, _ left: [String]) -> [String: [String]]? {
        var all = all ?? [:]
        all[batch] = left.isEmpty ? nil : left
        return all.isEmpty ? nil : all
    }

    /// The metrics now (photos in flight counted as they stand).
    private func metricsText() -> String {
        metrics.setInFlight(limits.withLock { $0.sharedSlots }?.inUse ?? 0)
        return metrics.text()
    }

    /// Writes `metricsFile` (atomically: node_exporter never reads half of it), if there is one.
    private func writeMetrics() {
        guard let path = metricsFile.withLock({ $0.path }) else { return }
        do {
            try AtomicFile.write(Array(metricsText().utf8), to: path)
            metricsFile.withLock { $0.warned = false }
        } catch {
            let first = metricsFile.withLock { state in
                defer { state.warned = true }
                return !state.warned
            }
            log.log(first ? .warning : .debug, "cannot write the metrics file: \(error) (the unit may write only where ReadWritePaths= allows: see the reference, Metrics)")
        }
    }

    @discardableResult
    private func writeStatus(_ status: ServiceStatus) -> Bool {
        do throws(SystemError) {
            try status.write(to: statusPath)
            return true
        } catch {
            log.log(.debug, "cannot write \(statusPath): \(error)")
            return false
        }
    }
}

/// `WATCHDOG=1` at half of `WATCHDOG_USEC`, fed from the loop that does the work (so a stuck
/// loop gets the service restarted).
private final class Watchdog {
    private let half: Duration?
    private let now: () -> Duration
    private var last: Duration

    init(interval: Duration?, now: @escaping () -> Duration) {
        half = interval.map { $0 / 2 }
        self.now = now
        last = now()
    }

    func feed() {
        guard let half, now() - last >= half else { return }
        Notify.watchdog()
        last = now()
    }
}
