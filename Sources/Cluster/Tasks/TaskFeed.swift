import Foundation
import Synchronization

/// A host's workers' way to the task table with the database kept off their path: a feeder
/// thread takes tasks ahead (as many as workers wait, plus `ahead`), so a worker done with a
/// photo has its next one at once; a completer thread sends completions (in the order given),
/// so a worker never waits for a commit — and while the database does not answer, holds them
/// and sends them when it answers again (the tasks stay this host's: the keeper renews their
/// leases first when the link is back). Measured: a statement waits 4–20 ms on a loaded
/// machine, take + complete in line was 12–28 % of a 12 MP photo's wall (bench/cluster).
///
/// A completion lost with a crash is one whose answer was lost: the task runs again after its
/// lease and writes the same outputs. While the database does not answer, nothing new is taken.
/// A stop is two steps: `stopTaking` (the workers get nil; those still finishing a photo
/// complete it after), then `stop` once they are done, before the member leaves.
public final class TaskFeed: Sendable {
    public let member: ClusterMember
    /// Tasks taken beyond the workers waiting.
    public let ahead: Int
    /// How long an idle feeder waits without a notification (`ClusterMember.idleWait`).
    public let poll: Duration
    private let state = Mutex(State())
    private let feederBell = Bell()
    private let completerBell = Bell()
    private let ended = DispatchGroup()

    private struct State {
        var buffered: [PhotoTask] = []
        var takers: [CheckedContinuation<PhotoTask?, Never>] = []
        var completions: [Pending] = []
        var sending = false
        /// No task handed out or taken any more (`stopTaking`).
        var stopped = false
        /// The stop's flush: the completer ends once none is left or this instant has passed.
        var finishBy: ContinuousClock.Instant?
    }

    private struct Pending: Sendable {
        var task: PhotoTask
        var item: String?
        var then: @Sendable (Completion) -> Void
    }

    public init(member: ClusterMember, ahead: Int = 1, poll: Duration = .seconds(5)) {
        self.member = member
        self.ahead = ahead
        self.poll = poll
        for name in ["photofinish-task-feed", "photofinish-completions"] {
            ended.enter()
            let thread = Thread { [self] in
                if name == "photofinish-task-feed" { feed() } else { completeAll() }
                ended.leave()
            }
            thread.name = name
            thread.start()
        }
    }

    /// The next task of this host's folders, waiting for one; nil once stopped.
    public func next() async -> PhotoTask? {
        await withCheckedContinuation { (taker: CheckedContinuation<PhotoTask?, Never>) in
            let (now, task) = state.withLock { s -> (Bool, PhotoTask?) in
                if s.stopped { return (true, nil) }
                if !s.buffered.isEmpty { return (true, s.buffered.removeFirst()) }
                s.takers.append(taker)
                return (false, nil)
            }
            feederBell.ring()  // one handed out, or one more waits: take again
            if now { taker.resume(returning: task) }
        }
    }

    /// Completes `task` with its report item (JSON) in the background; `then` hears how it
    /// ended (`.completed(outputs:)` — the outputs when this was the batch's last photo and the
    /// member took them — or `.stale`: another host took the task over), from the completer's
    /// thread. Sent again until the database answers.
    public func complete(_ task: PhotoTask, item: String?, then: @escaping @Sendable (Completion) -> Void = { _ in }) {
        state.withLock { $0.completions.append(Pending(task: task, item: item, then: then)) }
        completerBell.ring()
    }

    /// Completions given and not yet recorded (sending, or waiting for the database).
    public var pending: Int { state.withLock { $0.completions.count + ($0.sending ? 1 : 0) } }

    /// Tasks taken ahead that no worker has yet.
    public var buffered: Int { state.withLock { $0.buffered.count } }

    /// Gives a task back (not started after all: stopping, its share gone): ready for any host —
    /// off the caller's thread (a worker's, which a database that does not answer must not hold
    /// up: the task is no longer renewed either way, and the member's stop gives back the rest).
    public func giveBack(_ task: PhotoTask) {
        member.letLapse(task)
        let member = member
        DispatchQueue.global().async { _ = try? member.giveBack([task]) }
    }

    /// A task this host cannot finish (`ClusterMember.refuse`): given back counted, or done and
    /// left to its batch's run once started too often. The completion when it is done.
    @discardableResult
    public func refuse(_ task: PhotoTask, reason: String) -> Completion? {
        do throws(ClusterError) {
            return try member.refuse(task, reason: reason)
        } catch {
            // Not recorded (the database does not answer): no longer renewed, its lease runs out
            // and it is taken again — that start counted.
            member.letLapse(task)
            return nil
        }
    }

    /// Takes no more: the workers waiting get nil, no task is handed out or taken, the ones
    /// taken ahead go back at once. The completions given — and those given after, by workers
    /// finishing the photos they had — are still sent, until `stop`. Again: nothing more.
    public func stopTaking() {
        let (takers, left) = state.withLock { s -> ([CheckedContinuation<PhotoTask?, Never>], [PhotoTask]) in
            s.stopped = true
            defer { s.takers = []; s.buffered = [] }
            return (s.takers, s.buffered)
        }
        for taker in takers { taker.resume(returning: nil) }
        feederBell.ring()
        if !left.isEmpty { _ = try? member.giveBack(left) }
    }

    /// Stops (`stopTaking` first, if not yet): the completions given are sent — waiting up to
    /// `flush` for a database that does not answer — then the threads end. Call it before the
    /// member stops: a completion not sent leaves its task held, given back by the member's stop
    /// and finished again by another host. Returns how many were left unsent (0: all recorded).
    /// Returns within `flush` and a second, whatever the database does (a thread waiting on a
    /// statement then ends at its timeout).
    @discardableResult
    public func stop(flush: Duration = .seconds(10)) -> Int {
        stopTaking()
        state.withLock { s in
            let by = ContinuousClock.now + flush
            s.finishBy = min(s.finishBy ?? by, by)
        }
        completerBell.ring()
        feederBell.ring()
        _ = ended.wait(timeout: .now() + .milliseconds(Int((flush + .seconds(1)) / .milliseconds(1))))
        return state.withLock { $0.completions.count + ($0.sending ? 1 : 0) }
    }

    // MARK: - The threads

    private func feed() {
        while true {
            let (stopped, want) = state.withLock { s in (s.stopped, s.takers.count + ahead - s.buffered.count) }
            if stopped { return }
            guard want > 0 else {
                feederBell.wait(poll)
                continue
            }
            guard member.health.isUp, let taken = try? member.take(limit: want), !taken.isEmpty else {
                // Nothing to take (or no database): a notification, the link back, a lease
                // running out or the poll brings the next look.
                let idle = member.health.isUp ? member.idleWait(poll: poll) : poll
                _ = waitEither(idle)
                continue
            }
            let (handed, late) = state.withLock { s -> ([(CheckedContinuation<PhotoTask?, Never>, PhotoTask)], [PhotoTask]) in
                if s.stopped { return ([], taken) }
                var tasks = taken[...]
                var handed: [(CheckedContinuation<PhotoTask?, Never>, PhotoTask)] = []
                while !s.takers.isEmpty, let task = tasks.popFirst() { handed.append((s.takers.removeFirst(), task)) }
                s.buffered += tasks
                return (handed, [])
            }
            for (taker, task) in handed { taker.resume(returning: task) }
            if !late.isEmpty { _ = try? member.giveBack(late) }
        }
    }

    /// Waits for work (the member's bell) or the feeder's own bell (a worker waiting, a stop).
    private func waitEither(_ timeout: Duration) -> Bool {
        let ready = Bell.poll([member.workDescriptor, feederBell.descriptor], timeout: timeout)
        if ready[0] { member.waitForWork(upTo: .zero) }
        if ready[1] { feederBell.clear() }
        return ready.contains(true)
    }

    private func completeAll() {
        var delay = Duration.milliseconds(50)
        while true {
            let (next, end) = state.withLock { s -> (Pending?, Bool) in
                if let by = s.finishBy, s.completions.isEmpty || ContinuousClock.now >= by { return (nil, true) }
                guard !s.completions.isEmpty else { return (nil, false) }
                s.sending = true
                return (s.completions.removeFirst(), false)
            }
            if end { return }
            guard let next else {
                completerBell.wait(.seconds(1))
                continue
            }
            do throws(ClusterError) {
                let outcome = try member.complete(next.task, item: next.item)
                state.withLock { $0.sending = false }
                delay = .milliseconds(50)
                next.then(outcome)
            } catch where error.kind == .unreachable || error.kind == .closed {
                // Kept, first in line, until the database answers again (or the stop's flush ends:
                // tried again until then; a member already stopped cannot send it at all).
                let finishBy = state.withLock { s -> ContinuousClock.Instant? in
                    s.completions.insert(next, at: 0)
                    s.sending = false
                    return s.finishBy
                }
                if finishBy != nil && error.kind == .closed { return }
                let wait = finishBy.map { min(delay, max(.zero, $0 - ContinuousClock.now)) } ?? delay
                completerBell.wait(wait)
                delay = min(delay * 2, .seconds(2))
            } catch {
                // A statement the database refused: the task is not this host's to complete.
                state.withLock { $0.sending = false }
                next.then(.stale)
            }
        }
    }
}
