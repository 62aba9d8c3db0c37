import Batches
import Configuration
import Foundation
import HotFolders
import Notifications
import Synchronization
import System

/// Finishing claimed batches: one task per hot folder, its batches one after another in
/// claim order, hot folders side by side — at most `batchSlots` batches at once over all
/// folders (each holds descriptors while it files and reports; photos are shared out by the
/// limits' worker slots). A folder's task is made with its first batch.
///
/// Tells the loop when a folder starts a batch (it may claim the next one then) and when one
/// ends; keeps the board's `queued`, `processing`, `parked` and `last`, the metrics, and runs
/// the hooks.
final class FolderWorkers: Sendable {
    /// What the loop hears.
    enum Event: Sendable {
        /// The folder's worker took a batch off its queue (its claim-ahead place is free).
        case started(inbox: String)
        /// A batch was given back: the share failed under it (left in .work/, no photo failed).
        case givenBack(inbox: String, SystemError)
        /// A batch's run ended (published, failed, or given back).
        case ended(inbox: String, batch: String)
        /// A finished batch's work folder could not be cleaned up: recovery's.
        case leftToRecovery(inbox: String)
    }

    private struct Queued: Sendable {
        var continuation: AsyncStream<ClaimedBatch>.Continuation
        var task: Task<Void, Never>
    }

    private let queues = Mutex<[String: Queued]>([:])
    /// The batches each hot folder has queued or running, and those they redo: what retention
    /// must not remove.
    private let held = Mutex<[String: [String: Set<String>]]>([:])
    private let board: StatusBoard
    private let metrics: Metrics
    private let log: Logger
    private let stop: StopRequest
    private let hookRunner: BatchHookRunner
    /// The deliveries of finished batches (each destination a lane of its own).
    let deliveries: BatchDeliveries
    /// The hot folders' `notify` targets, told of each batch (reference: Notifications).
    let notifier: Notifier
    /// The current limits (a reload changes them for the batches that start after it).
    let limits = Mutex(BatchLimits())
    /// Each hot folder's `onBatch`, as of the last (re)load.
    let hooks = Mutex<[String: BatchHooks]>([:])
    /// The photos finished by each hot folder with `duplicates: "skip"`, as of the last (re)load.
    private let finishedPhotos = Mutex<[String: FinishedPhotos]>([:])
    /// Batches being finished at once, over all hot folders (see `OpenFiles`).
    let slots: WorkerSlots
    /// The photos of the open batches, finished as they are claimed.
    let early: EarlyWorkers
    private let onEvent: @Sendable (Event) -> Void
    /// Called when a batch was finished (the metrics file is due).
    private let onFinished: @Sendable () -> Void

    /// - Parameter tasks: a cluster's task queue (its tasks come from every host's claims:
    ///   `workers` loops take them from the start); nil: in memory, this host's claims only.
    init(board: StatusBoard, metrics: Metrics, stop: StopRequest, log: Logger, batchSlots: Int,
         tasks: (queue: any PhotoTaskQueue, workers: Int)? = nil,
         onEvent: @escaping @Sendable (Event) -> Void, onFinished: @escaping @Sendable () -> Void) {
        self.board = board
        self.metrics = metrics
        self.stop = stop
        self.log = log
        hookRunner = BatchHookRunner(log: log, userAgent: "photofinish")
        notifier = Notifier(log: log)
        deliveries = BatchDeliveries(board: board, metrics: metrics, log: log, notifier: notifier)
        slots = WorkerSlots(batchSlots)
        let me = WeakWorkers()
        let tally: @Sendable (String, String, EarlyWorkers.Tally) -> Void = { inbox, batch, tally in
            me.value?.tallied(inbox: inbox, batch: batch, tally)
        }
        if let tasks {
            early = EarlyWorkers(queue: tasks.queue, stop: stop, log: log, workers: tasks.workers, onTally: tally) { manifest in
                // A batch another host claimed, finished here under this host's limits.
                guard let limits = me.value?.limits.withLock({ $0 }) else {
                    return .failure(EarlyWorkers.CannotOpen(why: "this host is stopping"))
                }
                do {
                    return .success(BatchRunner(template: try manifest.template.template(), limits: limits, inbox: manifest.inbox))
                } catch {
                    return .failure(EarlyWorkers.CannotOpen(why: "its template no longer validates here: \(error)"))
                }
            }
        } else {
            early = EarlyWorkers(stop: stop, log: log, onTally: tally)
        }
        self.onEvent = onEvent
        self.onFinished = onFinished
        me.value = self
    }

    /// The workers, for the closures they give away (weak: they hold those closures).
    private final class WeakWorkers: @unchecked Sendable {
        weak var value: FolderWorkers?
    }

    /// Queues `batch` for its hot folder's worker (made now if it has none).
    func enqueue(_ batch: ClaimedBatch, to inbox: String) {
        held.withLock { $0[inbox, default: [:]][batch.id] = Set([batch.id] + (batch.manifest.redoes.map { [$0] } ?? [])) }
        board.update(inbox) {
            $0.queued += 1
            $0.parked = ($0.parked ?? 0) + batch.manifest.items.count
        }
        let queued = queues.withLock { all -> Queued in
            if let queued = all[inbox] { return queued }
            let (stream, continuation) = AsyncStream<ClaimedBatch>.makeStream()
            let task = Task { [self] in
                for await batch in stream {
                    // Stopping: left in .work/ (still shown as waiting), resumed next start.
                    if stop.isRequested { continue }
                    // Queued until a batch slot is free.
                    await slots.acquire()
                    if stop.isRequested {
                        slots.release()
                        continue
                    }
                    board.update(inbox) {
                        $0.queued -= 1
                        $0.parked = max(0, ($0.parked ?? 0) - batch.manifest.items.count)
                    }
                    onEvent(.started(inbox: inbox))
                    await process(batch, inbox: inbox, limits: limits.withLock { $0 })
                    slots.release()
                    held.withLock { _ = $0[inbox]?.removeValue(forKey: batch.id) }
                    onEvent(.ended(inbox: inbox, batch: batch.id))
                }
            }
            let made = Queued(continuation: continuation, task: task)
            all[inbox] = made
            return made
        }
        queued.continuation.yield(batch)
    }

    /// The files each open batch holds (by batch id): its photos as the status counts them,
    /// less the tally's files that are no photo.
    private let openFiles = Mutex<[String: Int]>([:])

    /// The folder's open batch now (`nil`: none is open): shown with what its photos' tally says.
    func showOpen(inbox: String, _ batch: ClaimedBatch?) {
        guard let batch else {
            board.update(inbox) { $0.open = nil }
            return
        }
        let files = batch.manifest.items.count
        openFiles.withLock { all in
            if all[batch.id] == nil, all.count >= 64 { all.removeAll() }
            all[batch.id] = files
        }
        let progress = Self.progress(batch.id, files: files, early.tally(batch), stage: .open)
        board.update(inbox) { $0.open = progress }
    }

    /// A tally changed: the open batch, or the closed one whose run has not begun (its files
    /// are still known here), shows it.
    private func tallied(inbox: String, batch: String, _ tally: EarlyWorkers.Tally) {
        guard let files = openFiles.withLock({ $0[batch] }) else { return }
        board.update(inbox) {
            if $0.open?.batch == batch {
                $0.open = Self.progress(batch, files: files, tally, stage: .open)
            } else if let p = $0.processing, p.batch == batch {
                $0.processing = Self.progress(batch, files: files, tally, stage: .photos)
            }
        }
    }

    static func progress(_ batch: String, files: Int, _ tally: EarlyWorkers.Tally, stage: ServiceStatus.Progress.Stage) -> ServiceStatus.Progress {
        ServiceStatus.Progress(batch: batch, done: tally.done, total: max(tally.done + tally.inProgress, files - tally.notPhotos),
                               inProgress: tally.inProgress, failed: tally.failed, stage: stage)
    }

    /// Takes each hot folder's `duplicates` (at load and at each reload): a folder that skips
    /// them keeps its index of finished photos across reloads while its root stays.
    func configureDuplicates(_ config: Config) {
        finishedPhotos.withLock { all in
            var kept: [String: FinishedPhotos] = [:]
            for inbox in config.inboxes where inbox.duplicates == .skip {
                let layout = HotFolderLayout(root: inbox.root)
                kept[inbox.name] = all[inbox.name].flatMap { $0.out == layout.out ? $0 : nil } ?? FinishedPhotos(layout: layout)
            }
            all = kept
        }
    }

    /// The batch ids `inbox` works on (queued or running, and what they redo).
    func inUse(_ inbox: String) -> Set<String> {
        held.withLock { $0[inbox].map { $0.values.reduce(into: Set<String>()) { $0.formUnion($1) } } ?? [] }
    }

    /// The folder leaves the service: its worker finishes the batch it has and ends (queued
    /// batches stay in .work/ for the next start or recovery).
    func remove(inbox: String) {
        queues.withLock { $0.removeValue(forKey: inbox) }?.continuation.finish()
    }

    /// A batch of `inbox` was approved (its report holds the approval by now): its
    /// `when: "approved"` deliveries start, its `notify` targets hear of it (reference: Approval).
    func approved(inbox: String, batch: String, folder: String) {
        // Told first: a target hears `approved` before any `delivered` it brings.
        do throws(ReportError) {
            if let report = try ReportReader.read(batchFolder: folder) { notifier.notify(Notice(report, .approved, inbox: inbox, at: Date())) }
        } catch {
            log.warning("no approved notice: \(error)", ["INBOX": inbox, "BATCH": batch])
        }
        deliveries.approve(batch: batch, inbox: inbox)
    }

    /// Drain: no more batches; each worker finishes its photos in flight and returns.
    func finishAll() async {
        let all = queues.withLock { Array($0.values) }
        for queued in all { queued.continuation.finish() }
        for queued in all { await queued.task.value }
        await early.finishAll()
    }

    private func process(_ batch: ClaimedBatch, inbox: String, limits: BatchLimits) async {
        let fields: LogFields = ["INBOX": inbox, "BATCH": batch.id]
        let total = batch.manifest.items.count
        // What its run makes besides the report, for the words of its last stage.
        let template = try? batch.manifest.template.template()
        let makes = (template?.stitch != nil ? ["story"] : []) + (template?.colorCard == true ? ["colour card"] : [])
        // Until its run begins: its photos finished while it was open (some may still be in
        // flight), as the open batch showed them.
        openFiles.withLock { if $0[batch.id] == nil { $0[batch.id] = total } }
        let before = Self.progress(batch.id, files: total, early.tally(batch), stage: .photos)
        board.update(inbox) { $0.processing = before }
        var stoppedAt = 0
        defer {
            early.forgetTally(batch)
            _ = openFiles.withLock { $0.removeValue(forKey: batch.id) }
            board.update(inbox) {
                $0.processing = nil
                if stoppedAt > 0 { $0.parked = ($0.parked ?? 0) + stoppedAt }
            }
        }
        // Its photos finished while it was open: none is in flight any more.
        early.close(batch)
        await early.drained(batch)
        // In a cluster what its tasks did is in the database (not journaled on the share).
        let recorded = await early.records(batch)
        do throws(BatchError) {
            let progress = Mutex(0)
            let life = Mutex(BatchLife(id: batch.id, inbox: inbox, folder: batch.layout.out + "/" + batch.id))
            // This run's counts: photos done (from where it starts), begun, and its stage.
            let run = Mutex((first: Int?.none, begun: 0, total: total, outputs: false))
            let show: @Sendable () -> Void = { [board] in
                let r = run.withLock { $0 }
                let done = progress.withLock { $0 }
                let inProgress = max(0, r.begun - (done - (r.first ?? done)))
                board.update(inbox) {
                    $0.processing = ServiceStatus.Progress(batch: batch.id, done: done, total: r.total, inProgress: r.outputs ? 0 : inProgress,
                                                           stage: r.outputs ? .outputs : .photos, makes: makes)
                }
            }
            let outcome = try await BatchWork.finish(batch, limits: limits, stop: stop, log: log, early: recorded,
                                                     holdOriginals: deliveries.holdsOriginals(inbox),
                                                     duplicates: finishedPhotos.withLock { $0[inbox] }, progress: { [self] done, total in
                progress.withLock { $0 = done }
                let first = run.withLock { r -> Bool in
                    defer { r.total = total }
                    guard r.first == nil else { return false }
                    r.first = done
                    return true
                }
                // The run counts from here: the tally no longer shows.
                if first { _ = openFiles.withLock { $0.removeValue(forKey: batch.id) } }
                show()
            }, started: { index in
                run.withLock { if index == 0 { $0.outputs = true } else { $0.begun += 1 } }
                show()
            }, announce: { [self] report in
                carryOut(life.withLock { $0.handle(.published(report)) }, inbox: inbox)
            })
            switch outcome {
            case .filing(let left, let cleanUp):
                let wasUnfiled = board.inbox(inbox)?.unfiled?[batch.id] != nil
                board.update(inbox) { $0.unfiled = Self.unfiled($0.unfiled, batch: batch.id, left) }
                if left.isEmpty && wasUnfiled { log.notice("every source of the batch is filed now", fields) }
                if let cleanUp { leftToRecovery(batch, cleanUp, fields) }
            case .finished(_, let left, let cleanUp):
                board.update(inbox) { $0.unfiled = Self.unfiled($0.unfiled, batch: batch.id, left) }
                for line in left { log.error(line, fields) }
                if let cleanUp { leftToRecovery(batch, cleanUp, fields) }
                // Delivered before its work folder was cleaned up (a fast destination): its
                // originals were kept then (still referenced from .work/), and go now.
                if left.isEmpty, cleanUp == nil, deliveries.holdsOriginals(inbox), DeliveryReceipts.delivered(batch.id, layout: batch.layout) {
                    _ = Retention.removeDelivered(batch.id, layout: batch.layout, inbox: inbox, log: log)
                }
            case .interrupted:
                stoppedAt = max(1, total - progress.withLock { $0 })
                log.notice("batch stopped; it resumes at the next start", fields)
            case .givenBack(let error):
                stoppedAt = max(1, total - progress.withLock { $0 })
                log.notice("batch left for recovery: the share failed under it (\(error)); it resumes when the share answers, no photo failed for it",
                           fields)
                onEvent(.givenBack(inbox: inbox, error))
            }
        } catch {
            log.error("cannot finish the batch: \(error); it stays in .work/ and is retried", fields)
        }
    }

    /// Carries out what a batch's life decided (`BatchLife`): the journal line, the status, the
    /// metrics, the hooks.
    private func carryOut(_ effects: [BatchLife.Effect], inbox: String) {
        for effect in effects {
            switch effect {
            case .log(let line):
                log.log(line.priority, line.text, line.fields(inbox: inbox))
            case .showLast(let last):
                // Published: no longer on its way, in the same change that makes it the last.
                board.update(inbox) {
                    if $0.processing?.batch == last.batch { $0.processing = nil }
                    $0.last = last
                }
            case .count(let report, let folder):
                metrics.record(report, inbox: inbox, folder: folder)
            case .deliver(let report):
                deliveries.finished(report, inbox: inbox)
                notifier.published(report, inbox: inbox)
                onFinished()
            case .runHooks(let batch):
                if let hooks = hooks.withLock({ $0[inbox] }) { hookRunner.run(hooks, for: batch) }
            }
        }
    }

    /// A finished batch whose work folder could not be cleaned up: said once; recovery does it.
    private func leftToRecovery(_ batch: ClaimedBatch, _ error: SystemError, _ fields: LogFields) {
        log.warning("\(error): the batch is finished; its work folder .work/\(batch.id)/ is cleaned up by recovery (within \(words(Recovering.leftOverDelay)))",
                    fields)
        onEvent(.leftToRecovery(inbox: batch.manifest.inbox))
    }

    /// The unfiled sources by batch, with `batch`'s replaced by `left`.
    static func unfiled(_ all: [String: [String]]?, batch: String, _ left: [String]) -> [String: [String]]? {
        var all = all ?? [:]
        all[batch] = left.isEmpty ? nil : left
        return all.isEmpty ? nil : all
    }
}
