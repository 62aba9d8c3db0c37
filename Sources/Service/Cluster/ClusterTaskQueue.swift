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
///   database does not answer then, the batch is this host's alone meanwhile (said once in the
///   journal) — and spread again once it answers: every photo of its manifest added as a task,
///   while it is open or when its run begins (the database only spreads the work: the share's
///   claims say what the batch holds).
/// - A batch's run does not wait for a database that does not answer: a batch the database
///   never had (claimed while it did not answer, or closed at its claim) runs at once, one it
///   had waits up to `cluster.lease` for it (the photos other hosts finish meanwhile) and then
///   runs alone, finishing every photo itself; when the database answers again such a batch is
///   marked published there and its tasks not started withdrawn, so no host takes them.
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
        /// Batches whose photos the database does not all have (an add failed), their run not
        /// begun: spread when it answers.
        var local: Set<PhotoTaskID.BatchKey> = []
        /// Batches whose run began without the database: told when it answers (`finishedAlone`).
        var alone: Set<PhotoTaskID.BatchKey> = []
        var stopped = false
    }

    /// Whether the daemon is stopping (a batch's run then waits for nothing).
    private let stopping: @Sendable () -> Bool
    /// How long a batch's run waits for a database that does not answer when other hosts may be
    /// finishing its photos (`cluster.lease`).
    private let patience: Duration

    /// How long a claim's photos may take to be added as tasks: past it, the batch is this
    /// host's alone until the database answers (a claim, and so a stop, is not held up by a
    /// database that does not answer).
    static let addLimit = Duration.seconds(3)

    /// How long a worker waits after giving back a task it cannot finish here.
    static let unknownBackoff = Duration.seconds(1)

    /// - Parameters:
    ///   - stopping: whether the daemon is stopping.
    ///   - patience: how long a batch's run waits for a database that does not answer.
    init(host: ClusterHost, roots: [String: String], log: Logger, patience: Duration,
         stopping: @escaping @Sendable () -> Bool) {
        self.host = host
        self.log = log
        self.roots = Mutex(roots)
        self.patience = patience
        self.stopping = stopping
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
            if state.withLock({ $0.local.contains(key) }) {
                // Its earlier photos are not tasks: all of them go on once the database answers.
                if host.member.health.isUp { spread(key, closing: false) }
                continue
            }
            do throws(ClusterError) {
                try host.member.add(tasks.map { Self.newTask($0.id.photo, $0.source) }, inbox: key.inbox, batch: key.batch,
                                    within: Self.addLimit)
            } catch {
                state.withLock { _ = $0.local.insert(key) }
                log.warning("cluster: cannot add the photos of batch \(key.batch) as tasks: \(error); this host finishes them alone until the database answers",
                            ["INBOX": key.inbox, "BATCH": key.batch])
            }
        }
    }

    /// A photo as a task: the name's bytes in `detail` (as a manifest stores them), its words
    /// in `source`.
    private static func newTask(_ photo: Int, _ source: FileName) -> NewTask {
        NewTask(photo: photo, source: source.escaped,
                detail: (try? JSONEncoder().encode(source)).map { String(decoding: $0, as: UTF8.self) })
    }

    /// The batch `key` claimed while the database did not answer (or whose add it missed) is
    /// spread now it answers: every photo its manifest lists becomes a task (those already
    /// there stay as they are), and — `closing`, its run about to begin — the batch is closed
    /// there too. Returns whether the database has it all now (or another thread is seeing to
    /// it: a batch is spread once at a time).
    @discardableResult
    private func spread(_ key: PhotoTaskID.BatchKey, closing: Bool) -> Bool {
        guard state.withLock({ $0.local.remove(key) != nil }) else { return true }
        guard let root = roots.withLock({ $0[key.inbox] }),
              let manifest = try? Manifest.read(fromFolder: root + "/.work/" + key.batch) else {
            // Gone (published, taken over) or not readable here: its run sees to it.
            return false
        }
        let fields: LogFields = ["INBOX": key.inbox, "BATCH": key.batch]
        do throws(ClusterError) {
            let tasks = manifest.items.enumerated().map { Self.newTask($0.offset + 1, $0.element.name) }
            let added = try host.member.add(tasks, inbox: key.inbox, batch: key.batch, within: Self.addLimit)
            if closing || manifest.open != true { _ = try host.member.close(inbox: key.inbox, batch: key.batch) }
            log.notice("cluster: batch \(key.batch), claimed while the database did not answer, is spread again: \(added) of its \(tasks.count) photos added as tasks",
                       fields)
            return true
        } catch {
            state.withLock { _ = $0.local.insert(key) }
            return false
        }
    }

    /// The database answers again (after an outage, or for the first time): the batches claimed
    /// meanwhile are spread, and those finished alone are told.
    func rejoined() {
        let (local, alone) = state.withLock { ($0.local, $0.alone) }
        for key in local.sorted(by: { $0.folder < $1.folder }) where host.member.health.isUp { spread(key, closing: false) }
        for key in alone.sorted(by: { $0.folder < $1.folder }) where host.member.health.isUp {
            do throws(ClusterError) {
                try host.member.board.finishedAlone(inbox: key.inbox, batch: key.batch)
                state.withLock { _ = $0.alone.remove(key) }
            } catch {}
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
            // Its batch gone from the share (published by a claimant that ran it alone while the
            // database did not answer, or taken over): nothing to finish — and its folder must not
            // be made again by finishing into it.
            let folder = root + "/.work/" + task.key.batch
            guard FileManager.default.fileExists(atPath: folder) else {
                refuse(task, reason: "its batch is no longer in .work/ on host \(host.name)")
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
            return OpenPhotoTask(id: id, source: name, folder: folder)
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
        // Run alone (the database did not answer when it began), or stopping: nothing to ask.
        guard !state.withLock({ $0.alone.contains(key) }), !stopping() else { return nil }
        let until = ContinuousClock.now + .seconds(10)
        while !stopping() {
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
        return nil
    }

    func close(inbox: String, batch: String) {
        guard !state.withLock({ $0.local.contains(PhotoTaskID.BatchKey(inbox: inbox, batch: batch)) }) else { return }
        let member = host.member
        // Off the loop's thread: one statement (drained waits for the tasks, not for this).
        DispatchQueue.global().async { _ = try? member.close(inbox: inbox, batch: batch) }
    }

    /// Returns once every task of the batch is done by some host — its run begins. A batch the
    /// database does not have all of is spread first while it answers; while it does not, the
    /// run waits for nothing it cannot have (see the type's comment), nor while stopping.
    func drained(inbox: String, batch: String) async {
        let key = PhotoTaskID.BatchKey(inbox: inbox, batch: batch)
        var downSince: ContinuousClock.Instant?
        while !state.withLock({ $0.stopped }) && !stopping() {
            if state.withLock({ $0.local.contains(key) }) {
                guard host.member.health.isUp, spread(key, closing: true) else {
                    runsAlone(key, "the database does not answer")
                    return
                }
            }
            if host.member.health.isUp {
                downSince = nil
                do throws(ClusterError) {
                    // Not in the database (never added): the batch's run finishes it here.
                    guard let progress = try host.member.board.progress(inbox: inbox, batch: batch) else { return }
                    if progress.photos == progress.done { return }
                } catch {}
            } else {
                let since = downSince ?? .now
                downSince = since
                // No photo of it begun anywhere (none has a folder in early/): nothing to wait for.
                let early = roots.withLock { $0[inbox] }.map { $0 + "/.work/" + batch + "/early" }
                if early.map({ !FileManager.default.fileExists(atPath: $0) }) ?? true {
                    runsAlone(key, "the database does not answer")
                    return
                }
                if ContinuousClock.now - since >= patience {
                    runsAlone(key, "the database has not answered for \(Config.words(patience))")
                    return
                }
            }
            // Another host's last photo is seen at the next poll; this host's at once.
            await lastDone.wait(upTo: .milliseconds(200))
        }
    }

    /// The batch's run begins without the database: it finishes every photo not known done
    /// (said once); the database is told when it answers again.
    private func runsAlone(_ key: PhotoTaskID.BatchKey, _ why: String) {
        let first = state.withLock { s -> Bool in
            s.local.remove(key)
            return s.alone.insert(key).inserted
        }
        if first {
            log.notice("cluster: this host finishes batch \(key.batch) alone, as without a cluster (\(why))",
                       ["INBOX": key.inbox, "BATCH": key.batch])
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
    /// would give their tasks back and another host finish those photos again. Returns within
    /// `flush` and a second, whatever the database does.
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

extension ClusterTaskQueue {
    /// Takes the open batch `key` back on the share (`ClaimerRoles.onFence`): its lock file
    /// written again with this process's words and a fence line, if it still says `words`.
    func fence(_ key: ClaimerRoles.BatchKey, words: String) -> ClaimerRoles.Fence {
        guard let root = roots.withLock({ $0[key.inbox] }) else { return .failed }
        switch BatchLock.fence(root + "/.work/" + key.batch, from: words) {
        case .written(let words):
            log.notice("cluster: this host's database session is not confirmed: it takes its open batch \(key.batch) back on the share and goes on alone",
                       ["INBOX": key.inbox, "BATCH": key.batch])
            return .taken(words: words)
        case .saysAnother:
            return .adopted
        case .failed:
            return .failed
        }
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
