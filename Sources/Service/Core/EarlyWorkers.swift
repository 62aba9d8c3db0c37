import Batches
import Foundation
import HotFolders
import Synchronization
import System

/// The photos of the open batches, finished while the batches still fill (reference: From arrival
/// to batch): tasks taken from the folders' task queue (`PhotoTaskQueue`: in memory here, a
/// cluster's task table later) by a few tasks of their own — one per worker slot — each photo under
/// the same worker slots and memory budget as the batches being finished. A photo is journaled as
/// started and done in its batch's `tasks` (`EarlyJournal`), its outputs made in
/// `.work/<id>/early/<n>/`; the batch's run at close takes them (`BatchWork`).
final class EarlyWorkers: Sendable {
    /// What the tasks of one open batch are finished with.
    private struct Open: Sendable {
        var runner: BatchRunner
        /// Where its tasks are journaled (on the share, outside a cluster).
        var journals: BatchJournals
        var inbox: String
    }

    /// How far one open batch's photos are here, as the service shows it (`ServiceStatus.Progress`).
    struct Tally: Sendable, Equatable {
        /// Photos finished (or failed) while the batch was open.
        var done = 0
        var failed = 0
        /// Photos being finished now (each holds a worker slot).
        var inProgress = 0
        /// Files claimed that are no photo of their own (a sidecar): not counted as photos.
        var notPhotos = 0
    }

    let queue: any PhotoTaskQueue
    private let open = Mutex<[String: Open]>([:])
    /// By batch folder: the batch's inbox and id, and its tally.
    private let tallies = Mutex<[String: (inbox: String, batch: String, tally: Tally)]>([:])
    /// Told of each change of a tally (inbox, batch id, the tally).
    private let onTally: @Sendable (String, String, Tally) -> Void
    private let loops = Mutex<[Task<Void, Never>]>([])
    private let stop: StopRequest
    private let log: Logger

    /// In a cluster: opens a batch another host claimed, from the share (its runner, journal
    /// mode, inbox), for a task of it this host took; or says why it cannot.
    private let opener: (@Sendable (OpenPhotoTask) -> Result<Open, CannotOpen>)?

    /// Why a batch another host claimed cannot be opened here (its task is refused with it).
    struct CannotOpen: Error, Sendable {
        var why: String
    }

    init(queue: any PhotoTaskQueue = MemoryTaskQueue(), stop: StopRequest, log: Logger,
         onTally: @escaping @Sendable (String, String, Tally) -> Void = { _, _, _ in }) {
        self.queue = queue
        self.stop = stop
        self.log = log
        self.onTally = onTally
        opener = nil
    }

    /// Workers of the cluster's tasks: `workers` loops from the start (tasks come from every
    /// host's claims), each batch opened from the share as its first task comes (`runner`:
    /// this host's runner for a batch's template and inbox, or why it cannot be made).
    init(queue: any PhotoTaskQueue, stop: StopRequest, log: Logger, workers: Int,
         onTally: @escaping @Sendable (String, String, Tally) -> Void = { _, _, _ in },
         runner: @escaping @Sendable (_ manifest: Manifest) -> Result<BatchRunner, CannotOpen>) {
        self.queue = queue
        self.stop = stop
        self.log = log
        self.onTally = onTally
        let adopted = Mutex<[String: Open]>([:])
        opener = { task in
            if let known = adopted.withLock({ $0[task.folder] }) { return .success(known) }
            let manifest: Manifest
            do throws(BatchError) {
                guard let read = try Manifest.read(fromFolder: task.folder) else {
                    return .failure(CannotOpen(why: "its batch has no manifest in \(task.folder)"))
                }
                manifest = read
            } catch {
                return .failure(CannotOpen(why: "its batch's manifest cannot be read: \(error)"))
            }
            let made: BatchRunner
            switch runner(manifest) {
            case .success(let runner): made = runner
            case .failure(let cannot): return .failure(cannot)
            }
            guard made.finishesEarly else {
                return .failure(CannotOpen(why: "its template numbers the photos ({index} or {count}): they are finished when the batch closes"))
            }
            let batch = Open(runner: made, journals: BatchJournals(folder: task.folder), inbox: manifest.inbox)
            adopted.withLock { all in
                if all.count >= 16 { all.removeAll() }  // the batches of a while: made again if need be
                all[task.folder] = batch
            }
            return .success(batch)
        }
        loops.withLock { loops in
            while loops.count < workers { loops.append(Task { [self] in await work() }) }
        }
    }

    /// The batch opened: its photos are finished with `runner` (its limits: the worker slots and
    /// memory budget shared with the batches) as they are claimed (`add`), unless the
    /// template makes a photo's outputs depend on the batch's order (`finishesEarly`).
    /// - Returns: whether its photos are finished early.
    @discardableResult
    func opened(_ batch: ClaimedBatch, runner: BatchRunner) -> Bool {
        guard runner.finishesEarly else { return false }
        open.withLock { $0[batch.folder] = Open(runner: runner, journals: batch.journals, inbox: batch.manifest.inbox) }
        let wanted = runner.limits.sharedSlots?.capacity ?? runner.limits.effectiveWorkers
        loops.withLock { loops in
            while loops.count < wanted { loops.append(Task { [self] in await work() }) }
        }
        return true
    }

    /// Tasks for `items`, the sources just claimed into `batch` (numbered from `first`, 1-based,
    /// in the claim order).
    func add(_ batch: ClaimedBatch, items: [Manifest.Item], first: Int) {
        guard open.withLock({ $0[batch.folder] != nil }), !items.isEmpty else { return }
        let tasks = items.enumerated().map { offset, item in
            OpenPhotoTask(id: PhotoTaskID(inbox: batch.manifest.inbox, batch: batch.id, photo: first + offset),
                          source: item.name, folder: batch.folder)
        }
        do throws(SystemError) {
            try queue.add(tasks)
        } catch {
            log.warning("cannot queue photos to finish while the batch is open: \(error); they are finished when it closes",
                        ["INBOX": batch.manifest.inbox, "BATCH": batch.id])
        }
    }

    /// The batch closed: nothing more starts for it (called on the loop's thread the moment it
    /// closes: the photos not started yet are left to the batch's run).
    func close(_ batch: ClaimedBatch) {
        queue.close(inbox: batch.manifest.inbox, batch: batch.id)
        _ = open.withLock { $0.removeValue(forKey: batch.folder) }
    }

    /// The batch is no longer this host's (adopted by another host of the cluster): its photos
    /// are taken as any other host's, nothing of it is closed from here.
    func forget(_ batch: ClaimedBatch) {
        _ = open.withLock { $0.removeValue(forKey: batch.folder) }
    }

    /// Returns once none of the closed batch's photos is in flight.
    func drained(_ batch: ClaimedBatch) async {
        await queue.drained(inbox: batch.manifest.inbox, batch: batch.id)
    }

    /// The batch's tasks as its queue recorded them (a cluster's database), for its run; nil
    /// when the queue keeps none (in memory: the `tasks` journal on the share says it all).
    func records(_ batch: ClaimedBatch) async -> EarlyJournal.Progress? {
        guard !queue.journalsOnShare, let records = await queue.records(inbox: batch.manifest.inbox, batch: batch.id) else { return nil }
        var progress = EarlyJournal.Progress()
        for record in records {
            if let early = record.early {
                progress.done[record.source] = (record.photo, early)
            } else if record.crashes > 0 {
                progress.starts[record.source] = record.crashes
            }
        }
        return progress
    }

    /// What this host did of the batch's photos while it was open (in a cluster: its share).
    func tally(_ batch: ClaimedBatch) -> Tally {
        tallies.withLock { $0[batch.folder]?.tally } ?? Tally()
    }

    /// The batch's run has begun (its own counts from now): its tally goes.
    func forgetTally(_ batch: ClaimedBatch) {
        _ = tallies.withLock { $0.removeValue(forKey: batch.folder) }
    }

    /// Changes the tally of `task`'s batch and says so.
    private func count(_ task: OpenPhotoTask, inbox: String, _ change: (inout Tally) -> Void) {
        let tally = tallies.withLock { all -> Tally in
            // Batches of other hosts (a cluster) are counted too, and forgotten in bulk.
            if all[task.folder] == nil, all.count >= 256 { all = all.filter { $0.value.tally.inProgress > 0 } }
            var entry = all[task.folder] ?? (inbox, task.id.batch, Tally())
            change(&entry.tally)
            all[task.folder] = entry
            return entry.tally
        }
        onTally(inbox, task.id.batch, tally)
    }

    /// Stopping: no task starts any more; returns once those in flight are done.
    func finishAll() async {
        queue.stop()
        for loop in loops.withLock({ $0 }) { await loop.value }
    }

    private func work() async {
        while let task = await queue.take() {
            guard !stop.isRequested else {
                queue.giveBack(task)
                continue
            }
            let batch: Open
            if let known = open.withLock({ $0[task.folder] }) {
                batch = known
            } else {
                switch opener?(task) {
                case .success(let opened): batch = opened
                case .failure(let cannot):
                    queue.refuse(task, reason: "its batch cannot be opened here: \(cannot.why)")
                    continue
                case nil:
                    queue.refuse(task, reason: "its batch is not open here (it closed)")
                    continue
                }
            }
            switch await finish(task, batch) {
            case .done(let early): queue.complete(task, item: early)
            case .left(let reason): queue.refuse(task, reason: reason)
            case .stopped: queue.giveBack(task)
            }
        }
    }

    /// How one task ended.
    private enum Finished {
        case done(EarlyItem)
        /// Left to the batch's run, and why (not a photo, an I/O error that may be the share's,
        /// a journal that cannot be written): in a cluster, another host may do it first.
        case left(String)
        /// Stopping: not started.
        case stopped
    }

    /// Finishes one task.
    private func finish(_ task: OpenPhotoTask, _ batch: Open) async -> Finished {
        let fields: LogFields = ["INBOX": batch.inbox, "BATCH": task.id.batch, "FILE": task.source.escaped]
        let source = BatchRunner.Source(path: FilePath(task.folder).appending("src").appending(task.source), file: task.source)
        // A sidecar, a text file: no photo of its own; the batch's contents decide at close.
        guard !BatchContents.read([source]).photos.isEmpty else {
            count(task, inbox: batch.inbox) { $0.notPhotos += 1 }
            return .left("not a photo of its own")
        }
        let folder = EarlyJournal.outputFolder(task.id.photo, batchFolder: task.folder)
        do throws(SystemError) {
            try Files.makeDirectories(folder)
        } catch {
            return .left("cannot make its folder: \(error)")
        }
        let runner = batch.runner, stop = stop
        let journaled = Mutex(true)
        // In a cluster the task's start and end are the database's (its take and completion):
        // several hosts appending to one file on a share is not safe.
        let onShare = queue.journalsOnShare
        let began = Mutex(false)
        defer { if began.withLock({ $0 }) { count(task, inbox: batch.inbox) { $0.inProgress -= 1 } } }
        let early = await runner.finishEarly(source, photo: task.id.photo, batch: task.id.batch, folder: folder) {
            began.withLock { $0 = true }
            count(task, inbox: batch.inbox) { $0.inProgress += 1 }
            guard !stop.isRequested, onShare else { return }
            do throws(SystemError) {
                try EarlyJournal.started(task.id.photo, source: task.source, to: batch.journals)
            } catch {
                journaled.withLock { $0 = false }
            }
        }
        // What failed for the disk or the share is not the photo's fault: the batch's run
        // sees to it (and gives the batch back if the share failed).
        guard journaled.withLock({ $0 }) else { return stop.isRequested ? .stopped : .left("cannot journal its start") }
        if let error = early.item.error, error.code == "io-error" { return .left(error.message) }
        do throws(SystemError) {
            if onShare {
                try EarlyJournal.done(task.id.photo, source: task.source, early: early, to: batch.journals)
            }
        } catch {
            log.warning("cannot journal \(task.source.escaped) finished early: \(error); it is finished again when the batch closes", fields)
            return .left("cannot journal it finished: \(error)")
        }
        // Done and no longer in progress in one change: the counts never add up to more.
        let failed = early.item.status == .failed, wasBegun = began.withLock { b in defer { b = false }; return b }
        count(task, inbox: batch.inbox) {
            $0.done += 1
            if failed { $0.failed += 1 }
            if wasBegun { $0.inProgress -= 1 }
        }
        return .done(early)
    }
}
