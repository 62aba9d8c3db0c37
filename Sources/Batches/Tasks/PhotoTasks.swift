import Synchronization
import System

/// A photo task of an open batch: 1, 2, … in the order the batch claimed its sources (the
/// claim order: the batch's own order is known only when it closes).
public struct PhotoTaskID: Hashable, Sendable, CustomStringConvertible {
    public var inbox: String
    public var batch: String
    public var photo: Int

    public init(inbox: String, batch: String, photo: Int) {
        precondition(photo > 0, "photo 0 is the batch's own outputs")
        self.inbox = inbox
        self.batch = batch
        self.photo = photo
    }

    public var description: String { "\(inbox) \(batch) photo \(photo)" }
}

/// One claimed source to finish while its batch is still open.
public struct OpenPhotoTask: Sendable, Equatable {
    public var id: PhotoTaskID
    /// Its name in the batch's `src/`.
    public var source: FileName
    /// The batch's work folder (`.work/<id>`).
    public var folder: String

    public init(id: PhotoTaskID, source: FileName, folder: String) {
        self.id = id
        self.source = source
        self.folder = folder
    }
}

/// A photo finished while its batch was open: its report item (numbered in the claim order)
/// and the stem its outputs were named with. The batch's run at close takes it as it is when
/// the batch's own order gives the photo the same stem, else finishes the photo again.
public struct EarlyItem: Codable, Sendable {
    public var stem: String
    public var item: Report.Item

    public init(stem: String, item: Report.Item) {
        self.stem = stem
        self.item = item
    }
}

/// A photo task of a batch as its run takes it (`PhotoTaskQueue.records`): what was finished
/// early, and how often its finisher stopped.
public struct PhotoTaskRecord: Sendable {
    public var photo: Int
    public var source: FileName
    /// Finished early: its item and stem (nil: not, or left to the run).
    public var early: EarlyItem?
    /// Its starts that stopped the finisher (a crash, a kill).
    public var crashes: Int

    public init(photo: Int, source: FileName, early: EarlyItem?, crashes: Int) {
        self.photo = photo
        self.source = source
        self.early = early
        self.crashes = crashes
    }
}

/// The photo tasks of the open batches: where the daemon's free workers take photos to finish
/// while their batches still fill, and where a cluster plugs in (its task table). A claim adds
/// each source it made durable; a worker takes one, finishes it into the batch's `early/`,
/// journals it and completes it; the batch's close waits for the tasks running, and the batch's
/// run (`BatchWork.finish`) makes the whole-set outputs, finishing what no task did.
public protocol PhotoTaskQueue: AnyObject, Sendable {
    /// Adds the sources a claim just made durable (a database: in the claim's transaction).
    /// A batch closed already takes none.
    func add(_ tasks: [OpenPhotoTask]) throws(SystemError)
    /// The next task of any open batch, waiting for one; nil once stopped.
    func take() async -> OpenPhotoTask?
    /// A taken task is done: its outputs are in place and `item` is journaled.
    func complete(_ task: OpenPhotoTask, item: EarlyItem)
    /// A taken task ended without an item (stopping, not a photo, the share failed): it is
    /// not running any more, and the batch's run finishes the photo.
    func giveBack(_ task: OpenPhotoTask)
    /// A taken task this host cannot finish early, for `reason` (its name unreadable here, its
    /// batch not to be opened here, not a photo): in memory as `giveBack` (the batch's run
    /// finishes it); in a cluster given back counted — another host may — and, once started
    /// too often, left to the batch's run.
    func refuse(_ task: OpenPhotoTask, reason: String)
    /// Closes the batch, at once: nothing more is added to it, and what is not taken yet is
    /// not started (in memory: withdrawn, the batch's run finishes those photos).
    func close(inbox: String, batch: String)
    /// Returns once none of the closed batch's tasks is running.
    func drained(inbox: String, batch: String) async
    /// No task is handed out any more; `take` returns nil.
    func stop()
    /// Whether each task's start and end are journaled in its batch's `tasks` on the share (one
    /// host); false: the queue keeps them (a cluster's database: several hosts appending to one
    /// file on NFS or SMB is not safe) and `records` gives them to the batch's run.
    var journalsOnShare: Bool { get }
    /// The batch's tasks as the queue recorded them (nil: it keeps none — the `tasks` journal
    /// says it all — or cannot say now).
    func records(inbox: String, batch: String) async -> [PhotoTaskRecord]?
}

extension PhotoTaskQueue {
    public var journalsOnShare: Bool { true }
    public func records(inbox: String, batch: String) async -> [PhotoTaskRecord]? { nil }
}

/// The photo tasks in memory (one host, no cluster): first come first served over every open
/// batch. What a crash loses here the disk still holds (the manifest, the batch's `tasks`
/// journal), and recovery closes the batch.
public final class MemoryTaskQueue: PhotoTaskQueue {
    private struct BatchKey: Hashable {
        var inbox: String
        var batch: String
    }

    private struct State {
        var ready: [OpenPhotoTask] = []
        var head = 0
        var running: [BatchKey: Int] = [:]
        var closed: Set<BatchKey> = []
        var takers: [CheckedContinuation<OpenPhotoTask?, Never>] = []
        var closers: [BatchKey: [CheckedContinuation<Void, Never>]] = [:]
        var stopped = false
        var completed = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Tasks waiting to be taken.
    public var waiting: Int { state.withLock { $0.ready.count - $0.head } }
    /// Tasks completed since the start.
    public var completed: Int { state.withLock { $0.completed } }

    public func add(_ tasks: [OpenPhotoTask]) throws(SystemError) {
        let handed = state.withLock { s -> [(CheckedContinuation<OpenPhotoTask?, Never>, OpenPhotoTask)] in
            guard !s.stopped else { return [] }
            var handed: [(CheckedContinuation<OpenPhotoTask?, Never>, OpenPhotoTask)] = []
            for task in tasks where !s.closed.contains(BatchKey(inbox: task.id.inbox, batch: task.id.batch)) {
                if !s.takers.isEmpty {
                    s.running[BatchKey(inbox: task.id.inbox, batch: task.id.batch), default: 0] += 1
                    handed.append((s.takers.removeFirst(), task))
                } else {
                    s.ready.append(task)
                }
            }
            return handed
        }
        for (taker, task) in handed { taker.resume(returning: task) }
    }

    public func take() async -> OpenPhotoTask? {
        await withCheckedContinuation { (taker: CheckedContinuation<OpenPhotoTask?, Never>) in
            let (now, task) = state.withLock { s -> (Bool, OpenPhotoTask?) in
                if s.stopped { return (true, nil) }
                while s.head < s.ready.count {
                    let task = s.ready[s.head]
                    s.head += 1
                    if s.head == s.ready.count {
                        s.ready.removeAll(keepingCapacity: true)
                        s.head = 0
                    }
                    let key = BatchKey(inbox: task.id.inbox, batch: task.id.batch)
                    if s.closed.contains(key) { continue }
                    s.running[key, default: 0] += 1
                    return (true, task)
                }
                s.takers.append(taker)
                return (false, nil)
            }
            if now { taker.resume(returning: task) }
        }
    }

    public func complete(_ task: OpenPhotoTask, item: EarlyItem) {
        let key = BatchKey(inbox: task.id.inbox, batch: task.id.batch)
        let closers = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.completed += 1
            let left = (s.running[key] ?? 1) - 1
            s.running[key] = left > 0 ? left : nil
            guard left <= 0 else { return [] }
            return s.closers.removeValue(forKey: key) ?? []
        }
        for closer in closers { closer.resume() }
    }

    public func giveBack(_ task: OpenPhotoTask) {
        let key = BatchKey(inbox: task.id.inbox, batch: task.id.batch)
        let closers = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            let left = (s.running[key] ?? 1) - 1
            s.running[key] = left > 0 ? left : nil
            guard left <= 0 else { return [] }
            return s.closers.removeValue(forKey: key) ?? []
        }
        for closer in closers { closer.resume() }
    }

    public func refuse(_ task: OpenPhotoTask, reason: String) { giveBack(task) }

    public func close(inbox: String, batch: String) {
        state.withLock { s in
            s.closed.insert(BatchKey(inbox: inbox, batch: batch))
            s.ready = s.ready[s.head...].filter { $0.id.inbox != inbox || $0.id.batch != batch }
            s.head = 0
        }
    }

    public func drained(inbox: String, batch: String) async {
        let key = BatchKey(inbox: inbox, batch: batch)
        await withCheckedContinuation { (closer: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                guard (s.running[key] ?? 0) > 0 else { return true }
                s.closers[key, default: []].append(closer)
                return false
            }
            if now { closer.resume() }
        }
    }

    public func stop() {
        let (takers, closers) = state.withLock { s in
            s.stopped = true
            defer {
                s.takers = []
                s.closers = [:]
            }
            return (s.takers, s.closers.values.flatMap { $0 })
        }
        for taker in takers { taker.resume(returning: nil) }
        for closer in closers { closer.resume() }
    }
}
