import Foundation
import HotFolders
import Synchronization
import System

/// A few threads of their own for the slow, blocking work the loop hands off: taking up a hot
/// folder (making its folders, probing its file system, recovering its `.work/`), claims
/// (moving, hashing and fsyncing every file of a batch), recovery at rescans, retention, a
/// reload's reading of the config. The loop only decides and hands off (swift-nio's
/// `NIOThreadPool`); the results come back to it as messages.
///
/// Work is queued by *strand* (a hot folder's name): one strand's jobs run one at a time, in
/// order (a folder's claim never overlaps its recovery), while strands run side by side — so
/// one folder's big claim never delays another folder's (up to `threads` at once).
final class WorkPool: Sendable {
    private struct State {
        var jobs: [String: Queue<@Sendable () -> Void>] = [:]
        /// Strands with jobs and none running, in the order they became ready.
        var ready = Queue<String>()
        var running: Set<String> = []
        var stopping = false
        var live = 0
    }

    private let state = Mutex(State())
    private let condition = NSCondition()
    let threads: Int

    init(threads: Int, name: String = "pf-work") {
        self.threads = threads
        state.withLock { $0.live = threads }
        for n in 0..<threads {
            let thread = Thread { [self] in
                ProcessResources.nameThisThread("\(name)-\(n)")
                work()
            }
            thread.name = "photofinish-\(name)-\(n)"
            thread.start()
        }
    }

    /// Queues `job` on `strand`, after the strand's earlier jobs.
    func run(_ strand: String, _ job: @escaping @Sendable () -> Void) {
        let wake = state.withLock { s -> Bool in
            guard !s.stopping else { return false }
            let idle = s.jobs[strand] == nil && !s.running.contains(strand)
            s.jobs[strand, default: Queue()].append(job)
            if idle { s.ready.append(strand) }
            return idle
        }
        if wake {
            condition.lock()
            condition.signal()
            condition.unlock()
        }
    }

    /// Jobs queued or running on `strand`.
    func isBusy(_ strand: String) -> Bool {
        state.withLock { $0.jobs[strand] != nil || $0.running.contains(strand) }
    }

    /// Runs no job that has not started; returns once the jobs running have ended.
    func stop() {
        state.withLock { s in
            s.stopping = true
            s.jobs = [:]
            s.ready.removeAll()
        }
        condition.lock()
        condition.broadcast()
        while state.withLock({ $0.live > 0 }) { condition.wait() }
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            var taken: (String, @Sendable () -> Void)?
            while true {
                let (next, stopping) = state.withLock { s -> ((String, @Sendable () -> Void)?, Bool) in
                    if s.stopping { return (nil, true) }
                    guard let strand = s.ready.first else { return (nil, false) }
                    s.ready.removeFirst()
                    var queue = s.jobs.removeValue(forKey: strand)!
                    let job = queue.first!
                    queue.removeFirst()
                    if !queue.isEmpty { s.jobs[strand] = queue }
                    s.running.insert(strand)
                    return ((strand, job), false)
                }
                if stopping {
                    state.withLock { $0.live -= 1 }
                    condition.broadcast()
                    condition.unlock()
                    return
                }
                if let next { taken = next; break }
                condition.wait()
            }
            condition.unlock()
            let (strand, job) = taken!
            job()
            let more = state.withLock { s -> Bool in
                s.running.remove(strand)
                guard s.jobs[strand] != nil, !s.stopping else { return false }
                s.ready.append(strand)
                return true
            }
            if more {
                condition.lock()
                condition.signal()
                condition.unlock()
            }
        }
    }
}

/// Messages other threads hand to the loop: queued under a lock, and an eventfd write that
/// wakes its poll (many posts before it looks are one wake-up).
final class Mailbox<Message: Sendable>: Sendable {
    private let messages = Mutex<[Message]>([])
    let wakeup: Wakeup

    init() throws(SystemError) {
        wakeup = try Wakeup()
    }

    /// Wakes the loop only when nothing was waiting already: 10,000 take-ups ending in a burst
    /// are not 10,000 writes to the eventfd (whatever was posted before is taken with this).
    func post(_ message: Message) {
        let first = messages.withLock { all in
            defer { all.append(message) }
            return all.isEmpty
        }
        if first { wakeup.signal() }
    }

    /// Everything posted so far, in order; the wake-up is cleared first, so a post made
    /// meanwhile wakes the next poll.
    func take() -> [Message] {
        wakeup.reset()
        return messages.withLock { all in
            defer { all = [] }
            return all
        }
    }
}
