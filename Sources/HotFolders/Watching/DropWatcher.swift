import Batches
import Foundation
import System

/// All hot folders' `drop/` watches on one inotify instance.
public final class DropWatcher {
    public private(set) var folders: [DropWatch] = []
    private let inotify: Inotify.Instance?
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

    /// Starts watching a hot folder, and scans what its `drop/` holds already. Says once in
    /// the log how its drop/ is watched and how claims are made there.
    public func add(_ folder: DropWatch) {
        folder.attach(inotify)
        folder.fullScan(now: now())
        folders.append(folder)
        log.notice("\(folder.system.words(pollInterval: folder.pollInterval))" + (folder.polling ? " (and polled: no inotify watch)" : ""),
                   ["INBOX": folder.inbox])
    }

    /// Stops watching a hot folder (a reload removed it).
    public func remove(inbox: String) {
        for folder in folders where folder.inbox == inbox {
            if let wd = folder.watch { inotify?.removeWatch(wd) }
        }
        folders.removeAll { $0.inbox == inbox }
    }

    /// Queue overflows not yet in the log, and when the last line about them was written.
    private var overflows: (unlogged: Int, logged: Duration?) = (0, nil)
    /// At most one line a minute about overflows (a flood of events overflows the queue again
    /// and again: one line each filled the journal), with how many there were.
    static let overflowLogInterval = Duration.seconds(60)

    private func logOverflows(now t: Duration) {
        guard overflows.unlogged > 0 else { return }
        if let logged = overflows.logged, t - logged < Self.overflowLogInterval { return }
        let n = overflows.unlogged
        let since = overflows.logged == nil ? "" : " since the last such line"
        log.warning("inotify queue overflowed" + (n == 1 ? "" : " \(n) times") + since
                    + ": rescanning every drop/ folder (nothing is lost; at most one such line a minute)")
        overflows = (0, t)
    }

    /// Waits up to `timeout` for events, handles them, then steps every folder.
    /// - Returns: the batches that closed, per inbox name.
    public func step(timeout: Duration, rescanInterval: Duration) -> [(DropWatch, [FileName])] {
        if let inotify {
            let events = inotify.read(timeout: timeout)
            let t = now()
            for event in events {
                if event.events.contains(.queueOverflow) {
                    overflows.unlogged += 1
                    for folder in folders { folder.rescanSoon() }
                    continue
                }
                folders.first { $0.watch == event.watch }?.handle(event, now: t)
            }
        } else {
            Thread.sleep(forTimeInterval: Double(timeout / .milliseconds(1)) / 1000)
        }
        let t = now()
        logOverflows(now: t)
        var closed: [(DropWatch, [FileName])] = []
        for folder in folders {
            for batch in folder.step(now: t, rescanInterval: rescanInterval, inotify: inotify) {
                closed.append((folder, batch))
            }
        }
        return closed
    }
}
