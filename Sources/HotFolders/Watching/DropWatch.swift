import Batches
import Foundation
import Glibc
import System

/// Watches one hot folder's `drop/` and feeds its settle/batch state machine (reference: From
/// arrival to batch).
///
/// What is seen: inotify events for names, plus a full rescan at start, after
/// `IN_Q_OVERFLOW`, after `drop/` is deleted or moved and comes back, and every
/// `rescanInterval`. On a network or FUSE file system (`FolderSystem.isShared`: inotify sees
/// only this machine's writes there) and without inotify (the watch limit reached), it also
/// polls with a full scan every `pollInterval`. Every name is examined on an
/// `O_PATH | O_NOFOLLOW` descriptor (`Directory.status(of:)`): only regular files with one
/// link and a name the ignore rules allow are tracked (reference: File names).
///
/// Driven by deadlines, not a tick: the caller asks `nextDeadline` when this folder next has
/// something to do (a file's `settle` is up, its batch's `quiet` or `maxWait`, a scan) and
/// calls `turn` then; between deadlines only inotify events reach it (`handle`). A turn looks
/// again only at the files whose `settle` is up, and at each settled file once more as it is
/// handed to the claim, so a file costs a few `fstat`s however long it waits.
///
/// A name the claim could not move out of `drop/` (permissions, a share's lock) is *refused*:
/// not tracked again until it changes or the next `rescanInterval`, so it never blocks the
/// batches after it nor fills the log; `refusals` says why, for STATUS.txt. Names handed to a
/// claim are *claiming* until the claim says what became of them: left alone meanwhile.
///
/// Confined to the thread that drives it; not shared between threads.
public final class DropWatch {
    public let inbox: String
    public let layout: HotFolderLayout
    /// What the hot folder's file system allows (found at start).
    public let system: FolderSystem
    public private(set) var batcher: SettleBatcher<FileName>
    /// The inotify watch on drop/, when there is one.
    public private(set) var watch: Int32?
    /// The inotify watch on the root, which says when drop/ itself is deleted or moved away
    /// (our open descriptor keeps drop/'s own `IN_DELETE_SELF` from coming).
    public private(set) var rootWatch: Int32?
    /// True when no inotify watch could be had: drop/ is only polled.
    public private(set) var polling = false
    /// How often drop/ is scanned in full when it is polled.
    public private(set) var pollInterval: Duration
    private var drop: Directory?
    private var needsFullScan = true
    /// When drop/ was last checked to be the folder opened (only without a root watch).
    private var lastStillCheck: Duration?
    /// How often drop/ is checked to be the folder opened when no root watch says so.
    static let stillCheckInterval = Duration.seconds(5)
    /// How often a missing drop/ is looked for.
    static let reattachInterval = Duration.seconds(2)
    private var lastAttach: Duration?
    /// Files looked at again per turn, at most (the rest at the next turn, at once).
    static let checksPerTurn = 2000
    private var lastFullScan: Duration?
    private var refused: [FileName: (stamp: FileStamp?, reason: String, at: Duration)] = [:]
    /// Names in drop/ that are never taken, with why (`Explain.neverTaken`).
    private var ignored: [FileName: String] = [:]
    /// Names handed to a claim that has not said yet what became of them.
    public private(set) var claiming: Set<FileName> = []
    private var rescanInterval = Duration.seconds(300)
    private let log: Logger

    /// The time now on the caller's clock (the one its `now`s are read from), when it gives one:
    /// a look is dated when its answer came, not when the turn began. A turn on a slow share
    /// (each look a round trip, some seconds in all under load) would otherwise date a look
    /// made at the end of it seconds too early, and a file could "hold still" for `settle` over
    /// two looks a fraction of a second apart, between two writes of a writer still at work.
    private let clock: (() -> Duration)?

    public init(inbox: String, layout: HotFolderLayout, rules: BatchRules, system: FolderSystem = .local,
                pollInterval: Duration = .seconds(2), clock: (() -> Duration)? = nil, log: Logger) {
        self.clock = clock
        self.inbox = inbox
        self.layout = layout
        self.system = system
        self.batcher = SettleBatcher(rules: Self.effective(rules, system, pollInterval))
        self.pollInterval = pollInterval
        self.log = log
    }

    /// New batch rules and poll interval (a reload); what is pending stays pending.
    public func update(rules: BatchRules, pollInterval: Duration, rescanInterval: Duration) {
        batcher.rules = Self.effective(rules, system, pollInterval)
        self.pollInterval = pollInterval
        self.rescanInterval = rescanInterval
    }

    /// The rules as this folder's file system needs them. On a share, a file must hold still
    /// for at least a `pollInterval` (another machine's writes make no event: they are seen
    /// only by looking, and a writer that pauses between its writes for longer than `settle`
    /// would be taken half-written), then for what the share client's caches can hide
    /// (`FolderSystem.settleAllowance`).
    static func effective(_ rules: BatchRules, _ system: FolderSystem, _ pollInterval: Duration) -> BatchRules {
        var r = rules
        if system.isShared { r.settle = max(r.settle, pollInterval) }
        r.settle += system.settleAllowance(pollInterval: pollInterval)
        return r
    }

    /// True when drop/ is scanned every `pollInterval` (a share, or no inotify watch).
    public var isPolled: Bool { polling || system.isShared }

    /// True while drop/ is open and watched (or polled); false while it is missing.
    public var isAttached: Bool { drop != nil }

    /// Why drop/ could not be opened the last time it was looked for (`nil` once it is open):
    /// missing, not a folder, or no descriptor left — said apart in the status.
    public private(set) var attachError: SystemError?

    /// How drop/ is watched, in words: `"inotify"`, `"inotify + polling every 2s (nfs)"`,
    /// `"polling every 2s (no inotify watch)"`.
    public var mode: String {
        if polling { return "polling every \(Explain.words(Explain.seconds(pollInterval))) (no inotify watch)" }
        if system.isShared { return "inotify + polling every \(Explain.words(Explain.seconds(pollInterval))) (\(system.name))" }
        return "inotify"
    }

    /// Files in drop/ that are never taken (hidden or partial downloads, folders, hard-linked
    /// files), and why: one sentence each, sorted by name.
    public var neverTaken: [String] {
        ignored.sorted { $0.key < $1.key }.map { "\($0.key.escaped) in drop/ is never taken: \($0.value)" }
    }

    /// Files in drop/ the claim could not take, and why (one sentence each).
    public var refusals: [String] {
        refused.sorted { $0.key < $1.key }.map { "\($0.key.escaped) in drop/ cannot be taken: \($0.value.reason)" }
    }

    /// The claim could not move `name` out of drop/: leave it alone until it changes or the
    /// next full rescan (said in the log once, and again only when the reason changes).
    public func refuse(_ name: FileName, because error: SystemError, now: Duration) {
        let stamp = (try? drop?.status(of: name)).flatMap { $0 }.map { FileStamp($0) }
        if refused[name]?.reason != error.reason {
            log.warning("\(name.escaped) cannot be taken from drop/: \(error); it is left there and tried again at the next full scan",
                        ["INBOX": inbox, "FILE": name.escaped])
        }
        refused[name] = (stamp, error.reason, now)
        claiming.remove(name)
        batcher.vanished(name)
        generation += 1
    }

    /// The claim of `names` is over: `taken` are in the batch now, refused ones were given to
    /// `refuse`; any other name still in drop/ (skipped by the claim) is looked at again like
    /// any arrival — or, after a claim that failed as a whole (`lookAgain` false: no `.work/`,
    /// a full disk), only at the next full scan, so a failing claim is not retried every few
    /// seconds.
    /// - Parameter early: the names were taken into the open batch before it closed
    ///   (`turn`): those not taken leave its count.
    public func claimEnded(_ names: [FileName], taken: Set<FileName>, lookAgain: Bool = true, early: Bool = false,
                           now: Duration) {
        if early { batcher.untake(names.filter { !taken.contains($0) }.count) }
        for name in names where claiming.remove(name) != nil && lookAgain && !taken.contains(name) && refused[name] == nil {
            examine(name, now: now)
        }
        generation += 1
    }

    /// An open batch of `count` photos was taken over (a dead claimer's): it fills and closes
    /// by the folder's rules as if its photos had been taken here now.
    public func adopt(_ count: Int, now: Duration) {
        batcher.adopt(count, at: now)
        generation += 1
    }

    /// The open batch was let go (another host adopted it): its photos leave the count.
    public func abandonOpen() {
        batcher.untake(batcher.openCount)
        generation += 1
    }

    /// Whether the folder's file system answers and takes data. While it does not, nothing is
    /// claimed (no batch closes) and it is looked at again every `healthCheckInterval`; the
    /// moment it answers, the folder is taken up again (fresh descriptors and watches, a full
    /// scan) and `takeShareReturn()` says so once.
    public private(set) var health: ShareHealth = .available
    private var lastHealthCheck: Duration?
    private var returned = false
    /// How often a share that does not answer (or a full disk) is looked at again.
    static let healthCheckInterval = Duration.seconds(1)

    /// The share failed under this folder: seen here (`drop/` cannot be listed), or told by the
    /// service (a batch given back, a claim stopped). Said in the log once per outage.
    public func shareFailed(_ error: SystemError, now: Duration, at date: Date = Date()) {
        let full = ShareHealth.noSpaceErrors.contains(error.code) || (error.code == EIO && ShareHealth.check(layout).isFull)
        let next: ShareHealth = full ? .full(since: date, reason: error.description) : .unavailable(since: date, reason: error.description)
        lastHealthCheck = now
        switch (health, next) {
        case (.available, .full):
            log.warning("the disk of \(layout.root) is full (\(error)): nothing new is claimed until there is room; photos in flight wait, none fails for it",
                        ["INBOX": inbox])
        case (.available, _), (.full, .unavailable):
            log.warning("the share of \(layout.root) does not answer (\(error)): nothing is claimed until it does; batches in flight are left for recovery",
                        ["INBOX": inbox])
        default:
            return
        }
        health = next
        generation += 1
    }

    /// True once after the share answered again: the service resumes what it gave back.
    public func takeShareReturn() -> Bool {
        defer { returned = false }
        return returned
    }

    /// While the share does not answer: looks again (at most every `healthCheckInterval`).
    /// - Returns: true when it answers now.
    private func checkHealth(now: Duration, inotify: Inotify.Instance?) -> Bool {
        if health.isAvailable { return true }
        guard lastHealthCheck.map({ now - $0 >= Self.healthCheckInterval }) ?? true else { return false }
        lastHealthCheck = now
        let current = ShareHealth.check(layout)
        guard current.isAvailable else {
            switch (health, current) {
            case (.full, .unavailable):
                health = current
                generation += 1
            case (.unavailable, .full(_, let reason)):
                // Told apart only now: a client's free space can be a moment old (rclone mount
                // asks the server again after its --dir-cache-time), so its first EIO looked like
                // a share that fails. Said once; the return is then "has room again".
                log.warning("the disk of \(layout.root) is full (\(reason)): nothing new is claimed until there is room; photos in flight wait, none fails for it",
                            ["INBOX": inbox])
                health = current
                generation += 1
            default:
                break
            }
            return false
        }
        let was = health
        let since = was.since.map { Date().timeIntervalSince($0) } ?? 0
        let what: String = if case .full = was { "the disk of \(layout.root) has room again" } else { "the share of \(layout.root) answers again" }
        log.notice("\(what) (after \(Explain.words(since))): watching drop/ again and resuming what was left", ["INBOX": inbox])
        health = .available
        returned = true
        // Taken up afresh: the old descriptor and watches may be of a mount that is gone.
        close(inotify)
        lastAttach = nil
        needsFullScan = true
        generation += 1
        return true
    }

    /// Why the open folder or the one at `path` cannot be looked at, if it cannot.
    private static func failure(of open: Directory, at path: String) -> SystemError? {
        do throws(SystemError) {
            _ = try open.status()
            _ = try Directory(path).names()
            return nil
        } catch {
            return error
        }
    }

    /// The share's error, when `error` is one (`ShareHealth.isShareFailure`).
    private func shareError(_ error: SystemError?) -> SystemError? {
        guard let error, ShareHealth.isShareFailure(error, shared: system.isShared) else { return nil }
        return error
    }

    /// The status of `name` in drop/ that decides settling: on a share asked of the server
    /// (what the client caches may be seconds old: sshfs 20 s), else `fstat`'s.
    private func currentStatus(of name: FileName, in drop: Directory) -> FileStatus? {
        guard system.isShared else { return (try? drop.status(of: name)) ?? nil }
        guard system.opensToLookAfresh else { return (try? drop.syncedStatus(of: name)) ?? nil }
        return (try? drop.freshStatus(of: name)) ?? nil
    }

    /// Goes up whenever what this folder reports may have changed (a file looked at, a scan, a
    /// refusal, a batch closed, drop/ gone or back): the service looks at a folder again only
    /// then.
    public private(set) var generation = 0

    /// Files settling, and files settled waiting for their batch (or being claimed: they are
    /// still in drop/ until the claim moves them). Files claimed into the open batch are no
    /// longer here: the service counts them as the open batch's.
    public var counts: (settling: Int, pending: Int) {
        (batcher.settlingCount, batcher.pendingCount + claiming.count)
    }

    /// Why inotify gave drop/ no watch the last time it was asked (nil while it is watched).
    public private(set) var watchError: SystemError?

    /// Opens `drop/` and adds its inotify watches (or falls back to polling, with a warning).
    /// Quiet when `drop/` is missing: it is looked for again every `reattachInterval`.
    /// - Parameter sayPolling: warn when it falls back to polling (the watcher says it once for
    ///   all the folders it takes up instead: `DropWatcher.logPolling`).
    /// - Returns: whether drop/ is open now.
    @discardableResult
    public func attach(_ inotify: Inotify.Instance?, now: Duration, sayPolling: Bool = true) -> Bool {
        lastAttach = now
        let dir: Directory
        do throws(SystemError) {
            dir = try Directory(layout.drop)
        } catch {
            drop = nil
            if attachError != error { generation += 1 }
            attachError = error
            if let failure = shareError(error) { shareFailed(failure, now: now) }
            return false
        }
        attachError = nil
        drop = dir
        needsFullScan = true
        lastStillCheck = now
        generation += 1
        guard let inotify else {
            polling = true
            return true
        }
        do {
            watch = try inotify.addWatch(layout.drop, events: .dropFolder)
            if polling { log.notice("watching \(layout.drop) with inotify again", ["INBOX": inbox]) }
            polling = false
            watchError = nil
        } catch {
            if !polling {
                log.log(sayPolling ? .warning : .debug, "\(error) — polling drop/ instead (raise fs.inotify.max_user_watches)", ["INBOX": inbox])
            }
            polling = true
            watch = nil
            watchError = error
        }
        // One more watch, on the root, for drop/ itself going away; without it drop/ is
        // checked every `stillCheckInterval`.
        if !polling, rootWatch == nil { rootWatch = try? inotify.addWatch(layout.root, events: .dropParent) }
        return true
    }

    /// Handles one inotify event of one of this folder's watches.
    public func handle(_ event: Inotify.Event, now: Duration, inotify: Inotify.Instance?) {
        if event.watch == rootWatch {
            if !event.events.isDisjoint(with: Inotify.Events.folderGone) {
                // The root itself went away (its watch is dead): drop/ with it.
                rootWatch = nil
                detach(inotify)
            } else if event.name == Self.dropName {
                detach(inotify)
            }
            return
        }
        if !event.events.isDisjoint(with: Inotify.Events.folderGone) {
            detach(inotify)
            return
        }
        if let name = event.name { examine(name, now: now) }
    }

    static let dropName: FileName = "drop"

    /// Forgets `drop/` (deleted or moved away) until it comes back.
    private func detach(_ inotify: Inotify.Instance?) {
        guard drop != nil else { return }
        log.warning("\(layout.drop) went away; waiting for it to come back", ["INBOX": inbox])
        if let watch { inotify?.removeWatch(watch) }
        watch = nil
        drop = nil
        generation += 1
    }

    /// Stops watching (the hot folder leaves the service): both watches removed.
    public func close(_ inotify: Inotify.Instance?) {
        if let watch { inotify?.removeWatch(watch) }
        if let rootWatch { inotify?.removeWatch(rootWatch) }
        watch = nil
        rootWatch = nil
        drop = nil
    }

    /// Asks for a full rescan at the next turn (after a queue overflow).
    public func rescanSoon() {
        needsFullScan = true
    }

    /// When this folder next has something to do (`turn`), or `nil` when only an event can
    /// give it some.
    /// - Parameter canClose: whether a batch may close now (the service has room to claim it).
    public func nextDeadline(canClose: Bool) -> Duration? {
        guard health.isAvailable else { return (lastHealthCheck ?? .zero) + Self.healthCheckInterval }
        guard drop != nil else { return (lastAttach ?? .zero) + Self.reattachInterval }
        var next: Duration? = nil
        func consider(_ t: Duration?) { if let t { next = min(next ?? t, t) } }
        if needsFullScan { return .zero }
        let scanEvery = isPolled ? min(pollInterval, rescanInterval) : rescanInterval
        consider((lastFullScan ?? .zero) + scanEvery)
        if rootWatch == nil { consider((lastStillCheck ?? .zero) + Self.stillCheckInterval) }
        consider(batcher.nextDeadline(includingClose: canClose))
        // Photos start as they settle: a settled file waits for no deadline.
        if canClose && batcher.pendingCount > 0 { return .zero }
        return next
    }

    /// What a turn hands to the claim.
    public struct Claimable: Sendable, Equatable {
        /// Settled files to claim into the open batch, now *claiming*.
        public var names: [FileName]
        /// The open batch closes with them (`quiet`, `maxWait`, `maxBatch`): maybe none.
        public var closes: Bool
    }

    /// One turn, at a deadline: find drop/ again if it was missing, scan if due, look again at
    /// the files whose `settle` is up; then (with `canClaim`) hand each settled file to the
    /// claim at once (photos start as they settle: into the folder's open batch), or — when the
    /// batch closes by its rules (`quiet`, `maxWait`, `maxBatch`, counting the files handed
    /// over) — the last settled files with `closes`. The names returned are *claiming*, checked
    /// on disk once more: a file that changed since it settled is not among them.
    public func turn(now: Duration, canClaim: Bool, inotify: Inotify.Instance?) -> Claimable? {
        guard look(now: now, inotify: inotify), canClaim else { return nil }
        if let batch = batcher.closeBatch(at: now) {
            generation += 1
            let kept = stillSettled(batch, now: now)
            claiming.formUnion(kept)
            return Claimable(names: kept, closes: true)
        }
        let settled = batcher.takeSettled(at: now, limit: Self.checksPerTurn)
        guard !settled.isEmpty else { return nil }
        generation += 1
        let kept = stillSettled(settled, now: now)
        batcher.untake(settled.count - kept.count)
        guard !kept.isEmpty else { return nil }
        claiming.formUnion(kept)
        return Claimable(names: kept, closes: false)
    }

    /// Once more on disk: a file written again since it settled (by a writer that keeps it
    /// open: no event) is left out and settles anew.
    private func stillSettled(_ batch: [(name: FileName, stamp: FileStamp)], now: Duration) -> [FileName] {
        var kept: [FileName] = []
        for (name, settled) in batch {
            let current = drop.flatMap { currentStatus(of: name, in: $0) }.map { FileStamp($0) }
            if current == settled { kept.append(name) } else { examine(name, now: now) }
        }
        return kept
    }

    /// The part of a turn before anything closes: health, drop/ found again, a scan if due,
    /// the files whose `settle` is up looked at and settled. False: nothing may close now.
    private func look(now: Duration, inotify: Inotify.Instance?) -> Bool {
        guard checkHealth(now: now, inotify: inotify) else { return false }
        if let drop, rootWatch == nil, now - (lastStillCheck ?? .zero) >= Self.stillCheckInterval {
            lastStillCheck = now
            if !drop.isStill(at: FilePath(layout.drop)) {
                // Gone, or the share under it failed (a dead FUSE client: ENOTCONN)?
                if let failure = shareError(Self.failure(of: drop, at: layout.drop)) {
                    close(inotify)
                    shareFailed(failure, now: now)
                    return false
                }
                detach(inotify)
            }
        }
        if drop == nil {
            guard now - (lastAttach ?? .zero) >= Self.reattachInterval || lastAttach == nil,
                  attach(inotify, now: now) else { return false }
        }
        let scanEvery = isPolled ? min(pollInterval, rescanInterval) : rescanInterval
        if needsFullScan || now - (lastFullScan ?? .zero) >= scanEvery { fullScan(now: now) }
        guard health.isAvailable else { return false }
        // A few thousand at a time: the loop reads inotify between turns (a 100,000-file drop
        // must not overflow its queue while the first files settle).
        let due = batcher.namesToCheck(at: now, limit: Self.checksPerTurn)
        for name in due { examine(name, now: now) }
        batcher.settle(due, at: now)
        return true
    }

    /// Looks at one name in `drop/` and tells the state machine what it is.
    private func examine(_ name: FileName, now: Duration) {
        guard let drop, !claiming.contains(name) else { return }
        generation += 1
        let status = try? drop.status(of: name)
        // On a share, the size and time that decide settling are asked of the server.
        guard let st = status, Takeable.accepts(name, st),
              let fresh = system.isShared ? currentStatus(of: name, in: drop) : st, Takeable.accepts(name, fresh) else {
            batcher.vanished(name)
            refused[name] = nil
            ignored[name] = status.flatMap { Explain.neverTaken(name, $0) }
            return
        }
        ignored[name] = nil
        let stamp = FileStamp(fresh)
        // Dated when the answer came (`clock`): it may be well after the turn's `now`.
        let seen = clock.map { max(now, $0()) } ?? now
        // A refused file is left alone until it changes or the next full rescan tries it again;
        // it stays listed as refused (STATUS.txt, status, the log said once) until it is taken.
        if let refusal = refused[name], refusal.stamp == stamp, now - refusal.at < rescanInterval { return }
        batcher.observe(name, stamp, at: seen)
    }

    /// Lists drop/ and looks at every name in it (what is tracked but gone is forgotten).
    public func fullScan(now: Duration) {
        guard let drop else { return }
        let names: [FileName]
        do throws(SystemError) {
            names = try drop.names()
        } catch {
            // drop/ itself is unreadable or gone: find it again next turn (or the share failed).
            self.drop = nil
            if let failure = shareError(error) { shareFailed(failure, now: now) }
            return
        }
        let present = Set(names)
        for name in batcher.trackedNames where !present.contains(name) { batcher.vanished(name) }
        for name in refused.keys where !present.contains(name) { refused[name] = nil }
        for name in ignored.keys where !present.contains(name) { ignored[name] = nil }
        // In name order: files seen in one scan arrive in that order.
        for name in names.sorted() { examine(name, now: now) }
        needsFullScan = false
        lastFullScan = now
        generation += 1
    }
}

extension FileStamp {
    /// The stamp of what `fstat` said.
    init(_ status: FileStatus) {
        self.init(size: status.size, mtimeNanoseconds: status.modifiedNanoseconds, device: status.device, inode: status.inode)
    }
}
