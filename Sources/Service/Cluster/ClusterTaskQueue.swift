import Batches
import Cluster
import Configuration
import Foundation
import HotFolders
import Synchronization
import System

/// The open batches' photo tasks in the cluster's task table (reference: Photos as tasks and the
/// cluster): what a claim adds becomes rows every host's free workers take (`TaskFeed`: taken
/// ahead, completions off the worker's path), so the photos of one batch are finished by every host
/// with a worker free.
///
/// - A claim's photos are added after the claim made them durable (one statement). When the
///   database does not answer then, the batch stays this host's alone: its run finishes the
///   photos no task finished (said once in the journal).
/// - A task of a batch this host did not claim is finished all the same: EarlyWorkers opens the
///   batch from the share (its manifest and template), its outputs go to `.work/<id>/early/<n>/`
///   on the share and its item into the batch's `tasks` journal there, as on the claiming host.
/// - Closing a batch (on the claiming host) leaves its tasks to any host; `drained` returns once
///   every one of them is done (or the database no longer knows the batch), and the batch's run
///   takes what they made, as on one host.
/// - The batch's own outputs task (photo 0), held by the host that completed its last photo, is
///   completed at once: the claiming host makes the whole-set outputs and publishes, under its
///   lock on the share, exactly as without a cluster.
final class ClusterTaskQueue: PhotoTaskQueue {
    private let host: ClusterHost
    private let feed: TaskFeed
    /// Each hot folder's root on this host (its tasks' folders are `<root>/.work/<batch>`).
    private let roots: Mutex<[String: String]>
    private let state = Mutex(State())
    private let log: Logger
    /// Rung when this host recorded a batch's last photo done: `drained` looks at once instead
    /// of at its next poll (measured: the poll's 200 ms were most of the 0.19 s more a batch
    /// took from its last photo to its report with `cluster`, bench/cluster/run.sh).
    private let lastDone = Pulse()

    private struct State {
        /// The tasks handed out, by id (their tokens).
        var taken: [PhotoTaskID: PhotoTask] = [:]
        /// Batches the database does not have (their first add failed): finished here alone.
        var local: Set<String> = []
        var stopped = false
    }

    /// How long a worker waits after giving back a task it cannot finish here.
    static let unknownBackoff = Duration.seconds(1)

    init(host: ClusterHost, roots: [String: String], log: Logger) {
        self.host = host
        self.log = log
        self.roots = Mutex(roots)
        feed = TaskFeed(member: host.member, ahead: 1)
    }

    /// The hot folders' roots of the config in force (a reload adds, removes or moves folders:
    /// a task of a folder it does not know is given back).
    func setRoots(_ roots: [String: String]) { self.roots.withLock { $0 = roots } }

    /// Each hot folder's root, by name, as `setRoots` takes them.
    static func roots(of inboxes: [ServiceSetup.Inbox]) -> [String: String] {
        Dictionary(inboxes.map { ($0.name, $0.layout.root) }) { a, _ in a }
    }

    func add(_ tasks: [OpenPhotoTask]) throws(SystemError) {
        var byBatch: [PhotoTaskID.BatchKey: [OpenPhotoTask]] = [:]
        for task in tasks { byBatch[task.id.batchKey, default: []].append(task) }
        for (key, tasks) in byBatch {
            guard !state.withLock({ $0.local.contains(key.folder) }) else { continue }
            do throws(ClusterError) {
                // The name's bytes in `detail` (as a manifest stores them), its words in `source`.
                try host.member.add(tasks.map { task in
                    NewTask(photo: task.id.photo, source: task.source.escaped,
                            detail: (try? JSONEncoder().encode(task.source)).map { String(decoding: $0, as: UTF8.self) })
                }, inbox: key.inbox, batch: key.batch)
            } catch {
                state.withLock { _ = $0.local.insert(key.folder) }
                log.warning("cluster: cannot add the photos of batch \(key.batch) as tasks: \(error); this host finishes the batch alone",
                            ["INBOX": key.inbox, "BATCH": key.batch])
            }
        }
    }

    func take() async -> OpenPhotoTask? {
        while let task = await feed.next() {
            if task.key.photo == 0 {
                // Held by this host for completing the batch's last photo: its claimant makes them.
                feed.complete(task, item: nil)
                continue
            }
            // A folder this host does not know (yet: a reload under way), or a name it cannot
            // read: refused — given back counted, so a task no host can take is left to its
            // batch's run after the attempts limit instead of going round the hosts for ever —
            // and not taken again at once (the feed would hand it straight back: a busy loop).
            let root = roots.withLock { $0[task.key.inbox] }
            let name = task.detail.flatMap { try? JSONDecoder().decode(FileName.self, from: Data($0.utf8)) } ?? FileName(task.source)
            guard let root, let name else {
                refuse(task, reason: root == nil ? "hot folder \(task.key.inbox) is not in the config of host \(host.name)"
                                                 : "its name cannot be read on host \(host.name)")
                try? await Task.sleep(for: Self.unknownBackoff)
                continue
            }
            // A photo that stopped the finisher twice (two hosts killed, crashed or cut off while
            // finishing it) is not tried again: left to its batch's run, which fails it as on one host.
            if task.earlierAttempts >= PhotoTask.attemptsLimit {
                refuse(task, reason: "stopped the finisher twice")
                continue
            }
            let id = PhotoTaskID(inbox: task.key.inbox, batch: task.key.batch, photo: task.key.photo)
            state.withLock { $0.taken[id] = task }
            host.tasksChanged()
            return OpenPhotoTask(id: id, source: name, folder: root + "/.work/" + task.key.batch)
        }
        return nil
    }

    func complete(_ task: OpenPhotoTask, item: EarlyItem) {
        guard let held = state.withLock({ $0.taken.removeValue(forKey: task.id) }) else { return }
        let json = (try? JSONEncoder().encode(item)).map { String(decoding: $0, as: UTF8.self) }
        feed.complete(held, item: json) { [feed, host, lastDone] outcome in
            if case .completed(let outputs?) = outcome {
                feed.complete(outputs, item: nil)
                lastDone.ring()
            }
            host.tasksChanged()
        }
    }

    func giveBack(_ task: OpenPhotoTask) {
        guard let held = state.withLock({ $0.taken.removeValue(forKey: task.id) }) else { return }
        feed.giveBack(held)
    }

    func refuse(_ task: OpenPhotoTask, reason: String) {
        guard let held = state.withLock({ $0.taken.removeValue(forKey: task.id) }) else { return }
        refuse(held, reason: reason)
    }

    /// Refuses `task` (`TaskFeed.refuse`); said once it is left to its batch's run.
    private func refuse(_ task: PhotoTask, reason: String) {
        let outcome = feed.refuse(task, reason: reason)
        host.tasksChanged()
        guard case .completed(let outputs) = outcome else { return }
        log.warning("cluster: photo \(task.key.photo) (\(task.source)) of batch \(task.key.batch) was not finished by any host after \(PhotoTask.attemptsLimit) tries (last: \(reason)): the batch's run finishes it",
                    ["INBOX": task.key.inbox, "BATCH": task.key.batch])
        // Its batch's last photo: the outputs are its claimant's to make (as for a completion).
        if let outputs {
            feed.complete(outputs, item: nil)
            lastDone.ring()
        }
    }

    /// The tasks' starts and ends are the database's (take, completion, refusal): not journaled
    /// on the share, where several hosts would append to one file.
    var journalsOnShare: Bool { false }

    /// The batch's tasks as the database recorded them, for its run (asked for up to 10 s while
    /// it does not answer); nil when it does not know the batch (its tasks were never added:
    /// finished here alone) or did not answer — the run then finishes the photos not journaled.
    func records(inbox: String, batch: String) async -> [PhotoTaskRecord]? {
        let key = PhotoTaskID.BatchKey(inbox: inbox, batch: batch)
        guard !state.withLock({ $0.local.contains(key.folder) }) else { return nil }
        let until = ContinuousClock.now + .seconds(10)
        while true {
            do throws(ClusterError) {
                guard let records = try host.member.board.records(inbox: inbox, batch: batch) else { return nil }
                let decoder = JSONDecoder()
                return records.compactMap { record in
                    guard let name = record.detail.flatMap({ try? decoder.decode(FileName.self, from: Data($0.utf8)) })
                            ?? FileName(record.source) else { return nil }
                    let early = record.item.flatMap { try? decoder.decode(EarlyItem.self, from: Data($0.utf8)) }
                    return PhotoTaskRecord(photo: record.photo, source: name, early: early, crashes: record.crashes)
                }
            } catch {
                if ContinuousClock.now >= until {
                    log.warning("cluster: cannot read the tasks of batch \(batch): \(error); its run finishes again the photos finished while it was open",
                                ["INBOX": inbox, "BATCH": batch])
                    return nil
                }
            }
            try? await Task.sleep(for: .milliseconds(500))
        }
    }

    func close(inbox: String, batch: String) {
        guard !state.withLock({ $0.local.contains(PhotoTaskID.BatchKey(inbox: inbox, batch: batch).folder) }) else { return }
        let member = host.member
        // Off the loop's thread: one statement (drained waits for the tasks, not for this).
        DispatchQueue.global().async { _ = try? member.close(inbox: inbox, batch: batch) }
    }

    func drained(inbox: String, batch: String) async {
        let key = PhotoTaskID.BatchKey(inbox: inbox, batch: batch)
        while !state.withLock({ $0.stopped || $0.local.contains(key.folder) }) {
            if host.member.health.isUp {
                do throws(ClusterError) {
                    // Not in the database (never added): the batch's run finishes it here.
                    guard let progress = try host.member.board.progress(inbox: inbox, batch: batch) else { return }
                    if progress.photos == progress.done { return }
                } catch {}
            }
            // Another host's last photo is seen at the next poll; this host's at once.
            await lastDone.wait(upTo: .milliseconds(200))
        }
    }

    /// No task is handed out any more (the workers waiting get nil; off the caller's thread: the
    /// tasks taken ahead go back in one statement). Those finishing a photo still complete it:
    /// `finish` sends what they completed.
    func stop() {
        state.withLock { $0.stopped = true }
        lastDone.ring()
        let feed = feed
        DispatchQueue.global().async { feed.stopTaking() }
    }

    /// After the workers are done, before the member leaves: the completions still queued are
    /// sent — waiting up to `flush` for a database that does not answer — else the member's stop
    /// would give their tasks back and another host finish those photos again.
    func finish(flush: Duration) {
        let left = feed.stop(flush: flush)
        if left > 0 {
            log.warning("cluster: \(left) photo\(left == 1 ? "" : "s") finished here not recorded as done (the database did not answer within \(Config.words(flush))): another host finishes \(left == 1 ? "it" : "them") again once this host's leases run out")
        }
    }
}

/// A wake-up for tasks that otherwise poll: `wait(upTo:)` returns when `ring` is called after
/// it began, or once the time has passed (a ring just before the wait is seen at its end).
final class Pulse: Sendable {
    private struct State {
        var next = 0
        /// Waits begun, their continuation not yet stored.
        var starting: Set<Int> = []
        var waiting: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    func ring() {
        let woken = state.withLock { s in
            defer { s.waiting = [:]; s.starting = [] }
            return Array(s.waiting.values)
        }
        for waiter in woken { waiter.resume() }
    }

    func wait(upTo timeout: Duration) async {
        let id = state.withLock { s in
            s.next += 1
            s.starting.insert(s.next)
            return s.next
        }
        let timer = Task { [self] in
            try? await Task.sleep(for: timeout)
            end(id)
        }
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s in
                guard s.starting.remove(id) != nil else { return true }  // rung or timed out already
                s.waiting[id] = waiter
                return false
            }
            if now { waiter.resume() }
        }
        timer.cancel()
    }

    private func end(_ id: Int) {
        let waiter = state.withLock { s in
            s.starting.remove(id)
            return s.waiting.removeValue(forKey: id)
        }
        waiter?.resume()
    }
}

extension PhotoTaskID {
    struct BatchKey: Hashable {
        var inbox: String
        var batch: String
        var folder: String { inbox + "/" + batch }
    }

    var batchKey: BatchKey { BatchKey(inbox: inbox, batch: batch) }
}
