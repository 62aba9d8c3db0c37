import Foundation
import Synchronization

/// The leases this host holds, renewed from a thread of their own every third of a lease — so a
/// photo that takes two minutes keeps its task, and a host that dies loses its tasks one lease
/// after its last renewal.
///
/// A holder cannot know the database's clock, only its own: a lease is *certain* until the
/// moment the renewal that gave it was sent, plus the lease, less a quarter of it for the
/// clocks' drift and the answer's way back. The database never lets another host take the task
/// before the lease it recorded ends, which is later. Past its certain end (the database did
/// not answer the renewals), a holder may still finish the photo — writing the same outputs
/// again is harmless — but does nothing only one host may do (publishing a batch) until a
/// renewal succeeds again; its completion tells whether the task was still its own.
final class LeaseKeeper: Sendable {
    let lease: Duration
    private let held = Mutex<[LeaseToken: Held]>([:])
    private let bell = Bell()
    private let stopping = Atomic<Bool>(false)
    private let running = Atomic<Bool>(false)
    private let ended = Bell()

    struct Held: Sendable {
        var task: PhotoTask
        var certainUntil: ContinuousClock.Instant
    }

    init(lease: Duration) {
        self.lease = lease
    }

    var renewal: Duration { lease / 3 }

    /// The end of certainty for a lease given (or renewed) by a statement sent at `sent`.
    func certainEnd(sent: ContinuousClock.Instant) -> ContinuousClock.Instant {
        sent + lease - lease / 4
    }

    /// Remembers tasks taken by a statement sent at `sent`.
    func hold(_ tasks: [PhotoTask], sent: ContinuousClock.Instant) {
        guard !tasks.isEmpty else { return }
        let until = certainEnd(sent: sent)
        held.withLock { all in
            for task in tasks { all[task.token] = Held(task: task, certainUntil: until) }
        }
    }

    func release(_ tokens: [LeaseToken]) {
        held.withLock { all in
            for token in tokens { all[token] = nil }
        }
    }

    /// Every task held now.
    var tasks: [PhotoTask] { held.withLock { $0.values.map(\.task) } }

    /// Whether the lease of `token` is certainly still this host's (see the type's comment).
    func isCertain(_ token: LeaseToken, now: ContinuousClock.Instant = .now) -> Bool {
        held.withLock { $0[token].map { now < $0.certainUntil } ?? false }
    }

    /// Renews every lease held, through `renew` (the board's statement, or one on a connection
    /// being prepared). Tasks whose token no longer holds are forgotten and returned.
    /// - Throws: what `renew` throws (the leases stay as they were: certain until their end).
    func renewAll(_ renew: ([LeaseToken]) throws(ClusterError) -> Set<LeaseToken>) throws(ClusterError) -> [PhotoTask] {
        let tokens = held.withLock { Array($0.keys) }
        let sent = ContinuousClock.now
        let kept = try renew(tokens)
        let until = certainEnd(sent: sent)
        return held.withLock { all in
            var lost: [PhotoTask] = []
            for token in tokens {
                if kept.contains(token) {
                    all[token]?.certainUntil = until
                } else if let gone = all.removeValue(forKey: token) {
                    lost.append(gone.task)
                }
            }
            return lost
        }
    }

    /// Starts the renewing thread: `tick` every third of a lease (sooner when `ringNow`).
    func start(_ tick: @escaping @Sendable () -> Void) {
        guard !running.exchange(true, ordering: .relaxed) else { return }
        let thread = Thread { [self] in
            defer { ended.ring() }
            while !stopping.load(ordering: .relaxed) {
                bell.wait(renewal)
                guard !stopping.load(ordering: .relaxed) else { break }
                tick()
            }
        }
        thread.name = "photofinish-leases"
        thread.start()
    }

    /// Asks for a renewal now.
    func ringNow() { bell.ring() }

    /// Stops renewing; waits at most `wait` for a renewal under way (it ends at its statement's
    /// timeout).
    func stop(waitingUpTo wait: Duration = .seconds(30)) {
        guard !stopping.exchange(true, ordering: .relaxed), running.load(ordering: .relaxed) else { return }
        bell.ring()
        ended.wait(wait)
    }
}
