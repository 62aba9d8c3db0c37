import Batches
import Foundation
import System

/// All hot folders' `drop/` watches on one inotify instance, and the clock their state
/// machines run on. An event goes to its folder through a dictionary of watch descriptors
/// (O(1), whatever the number of folders); a queue overflow asks every folder for a rescan.
///
/// Confined to the thread that drives it (the service's loop).
public final class DropWatcher {
    /// The folders watched, by inbox name.
    public private(set) var folders: [String: DropWatch] = [:]
    /// Which folder each watch descriptor belongs to (its drop/ and its root watch).
    private var byWatch: [Int32: DropWatch] = [:]
    private var registered: [ObjectIdentifier: [Int32]] = [:]
    public let inotify: Inotify.Instance?
    private let log: Logger
    private let clock = ContinuousClock()
    private let origin = ContinuousClock.now

    /// Monotonic time since this watcher started: the state machines' clock.
    public func now() -> Duration { clock.now - origin }

    public init(log: Logger) {
        self.log = log
        do {
            inotify = try Inotify.Instance()
        } catch {
            log.warning("\(error) — polling every drop/ folder instead")
            inotify = nil
        }
    }

    /// What the loop polls for events (`nil` without inotify: folders are polled).
    public var pollSource: Poll.Source? { inotify?.pollSource }

    /// Starts watching a hot folder: opens its `drop/` and adds its watches (its first turn
    /// scans what drop/ holds already).
    /// - Parameter logWords: say in the log how its drop/ is watched and how claims are made
    ///   there (once per file system is enough: 10,000 folders on one disk say it once).
    public func add(_ folder: DropWatch, now: Duration, logWords: Bool = true) {
        folder.attach(inotify, now: now, sayPolling: false)
        folders[folder.inbox] = folder
        reindex(folder)
        let words = folder.system.words(pollInterval: folder.pollInterval) + (folder.polling ? " (and polled: no inotify watch)" : "")
        log.log(logWords ? .notice : .debug, words, ["INBOX": folder.inbox])
        if let error = folder.watchError {
            unsaidPolling.count += 1
            unsaidPolling.first = unsaidPolling.first ?? (folder.inbox, error)
        }
    }

    /// Folders taken up that inotify gave no watch, not said yet: how many, and the first.
    private var unsaidPolling: (count: Int, first: (inbox: String, error: SystemError)?) = (0, nil)

    /// Says in one line the folders taken up since the last call that inotify gave no watch
    /// (they are polled): a line each flooded the journal at 10,000 hot folders. Nothing when
    /// `expected` of them were said already (the budget's line at the start: inotify's limit
    /// has room for fewer); `photofinish status` names each.
    /// - Parameters:
    ///   - expected: how many the budget said would be polled.
    ///   - fix: what fixes it for so many folders (the budget's).
    public func logPolling(expected: Int, fix: (Int) -> [String]) {
        defer { unsaidPolling = (0, nil) }
        guard let first = unsaidPolling.first, unsaidPolling.count > expected else { return }
        let n = unsaidPolling.count, fix = fix(n)
        let folders = n == 1 ? "hot folder \(first.inbox) is" : "\(n) hot folders (\(first.inbox) the first) are"
        log.warning("\(folders) polled instead of watched: inotify gave no watch for drop/ (\(first.error)); "
                    + "photofinish status names each"
                    + (fix.isEmpty ? "" : "; to fix it: " + fix.joined(separator: "; then ")))
    }

    /// Stops watching a hot folder (a reload removed it, or it is refused now).
    public func remove(inbox: String) {
        guard let folder = folders.removeValue(forKey: inbox) else { return }
        folder.close(inotify)
        reindex(folder)
        registered[ObjectIdentifier(folder)] = nil
    }

    /// Brings the watch index up to date after `folder`'s watches may have changed (it went
    /// away, came back, or was removed).
    public func reindex(_ folder: DropWatch) {
        let key = ObjectIdentifier(folder)
        let now = folders[folder.inbox] === folder ? [folder.watch, folder.rootWatch].compactMap { $0 } : []
        let before = registered[key] ?? []
        guard before != now else { return }
        for wd in before where byWatch[wd] === folder { byWatch[wd] = nil }
        for wd in now { byWatch[wd] = folder }
        registered[key] = now
    }

    /// Queue overflows not yet in the log, and when the last line about them was written.
    private var overflows: (unlogged: Int, logged: Duration?) = (0, nil)
    /// Overflows since the start (the benchmark reads them from the log's count).
    public private(set) var overflowCount = 0
    /// At most one line a minute about overflows (a flood of events overflows the queue again
    /// and again: one line each filled the journal), with how many there were.
    static let overflowLogInterval = Duration.seconds(60)

    /// Says the overflows not said yet: at most once a minute, or (`final`) at once — the last
    /// line when the loop stops, with how many there were since the start.
    public func logOverflows(now t: Duration, final: Bool = false) {
        guard overflows.unlogged > 0 else { return }
        if !final, let logged = overflows.logged, t - logged < Self.overflowLogInterval { return }
        let n = overflows.unlogged
        let since = overflows.logged == nil ? "" : " since the last such line"
        log.warning("inotify queue overflowed" + (n == 1 ? "" : " \(n) times") + since
                    + ": rescanning every drop/ folder (nothing is lost; at most one such line a minute)"
                    + (final ? "; \(overflowCount) since the start" : ""))
        overflows = (0, t)
    }

    /// Reads the events queued now (never waits) and hands each to its folder.
    /// - Returns: the folders that had events (each once): their deadlines may have moved.
    public func readEvents() -> [DropWatch] {
        guard let inotify else { return [] }
        let events = inotify.read(timeout: .zero)
        guard !events.isEmpty else { return [] }
        let t = now()
        var touched: [ObjectIdentifier: DropWatch] = [:]
        for event in events {
            if event.events.contains(.queueOverflow) {
                overflows.unlogged += 1
                overflowCount += 1
                for folder in folders.values {
                    folder.rescanSoon()
                    touched[ObjectIdentifier(folder)] = folder
                }
                continue
            }
            guard let folder = byWatch[event.watch] else { continue }
            folder.handle(event, now: t, inotify: inotify)
            touched[ObjectIdentifier(folder)] = folder
        }
        for folder in touched.values { reindex(folder) }
        logOverflows(now: t)
        return Array(touched.values)
    }
}

extension Inotify.Events {
    /// What a hot folder's root is watched for: `drop/` deleted or moved away, or the root
    /// itself gone. (Not creations: STATUS.txt is renamed in from `.work/`, so our own writes
    /// make no event here.)
    public static let dropParent: Inotify.Events = [.delete, .movedFrom, .deleteSelf, .moveSelf, .unmount,
                                                    .onlyDirectory, .dontFollow]
}
