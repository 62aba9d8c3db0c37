import Batches
import Foundation
import System

/// Watches one hot folder's `drop/` and feeds its settle/batch state machine (SPEC §2).
///
/// What is seen: inotify events for names, plus a full rescan at start, after
/// `IN_Q_OVERFLOW`, after `drop/` is deleted or moved and comes back, and every
/// `rescanInterval`. On a network or FUSE file system (`FolderSystem.isShared`: inotify sees
/// only this machine's writes there) and without inotify (the watch limit reached), it also
/// polls with a full scan every `pollInterval`. Every name is examined on an
/// `O_PATH | O_NOFOLLOW` descriptor (`Directory.status(of:)`): only regular files with one
/// link and a name the ignore rules allow are tracked (SPEC §1).
///
/// A name the claim could not move out of `drop/` (permissions, a share's lock) is *refused*:
/// not tracked again until it changes or the next `rescanInterval`, so it never blocks the
/// batches after it nor fills the log; `refusals` says why, for STATUS.txt.
///
/// Confined to the loop that drives it; not shared between tasks.
public final class DropWatch {
    public let inbox: String
    public let layout: HotFolderLayout
    /// What the hot folder's file system allows (found at start).
    public let system: FolderSystem
    public private(set) var batcher: SettleBatcher<FileName>
    /// The inotify watch, when there is one.
    public private(set) var watch: Int32?
    /// True when no inotify watch could be had: drop/ is only polled.
    public private(set) var polling = false
    /// How often drop/ is scanned in full when it is polled.
    public private(set) var pollInterval: Duration
    private var drop: Directory?
    private var needsFullScan = true
    /// When drop/ was last checked to be the folder opened (see `step`).
    private var lastStillCheck: Duration?
    /// How often an idle hot folder checks that drop/ was not deleted or replaced.
    static let stillCheckInterval = Duration.seconds(5)
    private var lastFullScan: Duration?
    private var refused: [FileName: (stamp: FileStamp?, reason: String, at: Duration)] = [:]
    /// Names in drop/ that are never taken, with why (`Explain.neverTaken`).
    private var ignored: [FileName: String] = [:]
    private var rescanInterval = Duration.seconds(300)
    private let log: Logger

    public init(inbox: String, layout: HotFolderLayout, rules: BatchRules, system: FolderSystem = .local,
                pollInterval: Duration = .seconds(2), log: Logger) {
        self.inbox = inbox
        self.layout = layout
        self.system = system
        self.batcher = SettleBatcher(rules: rules)
        self.pollInterval = pollInterval
        self.log = log
    }

    /// New batch rules and poll interval (a reload); what is pending stays pending.
    public func update(rules: BatchRules, pollInterval: Duration) {
        batcher.rules = rules
        self.pollInterval = pollInterval
    }

    /// True when drop/ is scanned every `pollInterval` (a share, or no inotify watch).
    public var isPolled: Bool { polling || system.isShared }

    /// How drop/ is watched, in words: `"inotify"`, `"inotify + polling every 2s (nfs)"`,
    /// `"polling every 2s (no inotify watch)"`.
    public var mode: String {
        if polling { return "polling every \(Explain.words(Explain.seconds(pollInterval))) (no inotify watch)" }
        if system.isShared { return "inotify + polling every \(Explain.words(Explain.seconds(pollInterval))) (\(system.type.name))" }
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
        batcher.vanished(name)
        generation += 1
    }

    /// Goes up whenever what this folder reports may have changed (a file looked at, a scan, a
    /// refusal, a batch closed, drop/ gone or back): the service looks at a folder again only
    /// then.
    public private(set) var generation = 0

    /// Files settling, and files settled waiting for their batch to close.
    public var counts: (settling: Int, pending: Int) { (batcher.settlingCount, batcher.pendingCount) }

    /// Opens `drop/` and adds its inotify watch (or falls back to polling, with a warning).
    /// Quiet when `drop/` is missing: the next step tries again.
    func attach(_ inotify: Inotify.Instance?) {
        guard let dir = try? Directory(layout.drop) else {
            drop = nil
            return
        }
        drop = dir
        needsFullScan = true
        generation += 1
        guard let inotify else {
            polling = true
            return
        }
        do {
            watch = try inotify.addWatch(layout.drop, events: .dropFolder)
            if polling { log.notice("watching \(layout.drop) with inotify again", ["INBOX": inbox]) }
            polling = false
        } catch {
            if !polling {
                log.warning("\(error) — polling drop/ instead (raise fs.inotify.max_user_watches)", ["INBOX": inbox])
            }
            polling = true
            watch = nil
        }
    }

    /// Handles one inotify event of this folder's watch.
    func handle(_ event: Inotify.Event, now: Duration) {
        if !event.events.isDisjoint(with: Inotify.Events.folderGone) {
            detach(nil)
            return
        }
        if let name = event.name { examine(name, now: now) }
    }

    /// Forgets `drop/` (deleted or moved away) until it comes back.
    private func detach(_ inotify: Inotify.Instance?) {
        guard drop != nil else { return }
        log.warning("\(layout.drop) went away; waiting for it to come back", ["INBOX": inbox])
        if let watch { inotify?.removeWatch(watch) }
        watch = nil
        drop = nil
        generation += 1
    }

    /// Asks for a full rescan at the next step (after a queue overflow).
    func rescanSoon() {
        needsFullScan = true
    }

    /// One turn: re-attach if needed, scan if due, re-examine what is tracked, and return the
    /// batches that closed (names in arrival order).
    func step(now: Duration, rescanInterval: Duration, inotify: Inotify.Instance?) -> [[FileName]] {
        self.rescanInterval = rescanInterval
        // inotify says IN_DELETE_SELF only once the last descriptor closes, and ours is open:
        // so check that the open folder is still the one at drop/ — every turn while files
        // are tracked, else every `stillCheckInterval` (a path lookup per hot folder per turn
        // was most of what 1,000 idle hot folders cost).
        let active = batcher.settlingCount + batcher.pendingCount > 0
        if let drop, active || lastStillCheck.map({ now - $0 >= Self.stillCheckInterval }) ?? true {
            lastStillCheck = now
            if !drop.isStill(at: FilePath(layout.drop)) { detach(inotify) }
        }
        if drop == nil { attach(inotify) }
        guard drop != nil else { return [] }
        let due = needsFullScan || lastFullScan.map { now - $0 >= (isPolled ? min(pollInterval, rescanInterval) : rescanInterval) } ?? true
        if due {
            fullScan(now: now)
        } else {
            for name in batcher.trackedNames { examine(name, now: now) }
        }
        var closed: [[FileName]] = []
        while let batch = batcher.close(at: now) { closed.append(batch) }
        if !closed.isEmpty { generation += 1 }
        return closed
    }

    /// Looks at one name in `drop/` and tells the state machine what it is.
    private func examine(_ name: FileName, now: Duration) {
        guard let drop else { return }
        generation += 1
        let status = try? drop.status(of: name)
        guard let st = status, !IgnoreRules.ignores(name.readable), st.isRegular, st.links == 1 else {
            batcher.vanished(name)
            refused[name] = nil
            ignored[name] = status.flatMap { Explain.neverTaken(name, $0) }
            return
        }
        ignored[name] = nil
        let stamp = FileStamp(st)
        // A refused file is left alone until it changes or the next full rescan tries it again;
        // it stays listed as refused (STATUS.txt, status, the log said once) until it is taken.
        if let refusal = refused[name], refusal.stamp == stamp, now - refusal.at < rescanInterval { return }
        batcher.observe(name, stamp, at: now)
    }

    func fullScan(now: Duration) {
        guard let drop else { return }
        guard let names = try? drop.names() else {
            // drop/ itself is unreadable or gone: find it again next turn.
            self.drop = nil
            return
        }
        let present = Set(names)
        for name in batcher.trackedNames where !present.contains(name) { batcher.vanished(name) }
        for name in refused.keys where !present.contains(name) { refused[name] = nil }
        for name in ignored.keys where !present.contains(name) { ignored[name] = nil }
        for name in names { examine(name, now: now) }
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
