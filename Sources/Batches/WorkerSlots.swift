import Synchronization

/// A limit on photos in flight shared by several batches (the daemon's hot folders side by
/// side): each photo takes a slot before it starts and gives it back when done, first come
/// first served. A photo that must run alone takes every slot.
public final class WorkerSlots: Sendable {
    private struct Waiter {
        var count: Int
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var free: Int
        var waiting: [Waiter] = []
    }

    private let state: Mutex<State>
    /// Photos in flight at once, over all batches.
    public let capacity: Int

    /// - Parameter count: photos in flight at once, over all batches (at least 1).
    public init(_ count: Int) {
        capacity = max(1, count)
        state = Mutex(State(free: capacity))
    }

    /// Slots taken now: the photos in flight.
    public var inUse: Int { capacity - state.withLock { $0.free } }

    /// Waits for `count` free slots (at most `capacity`: all of them means running alone).
    /// Waiters are served in order: a request for every slot is not overtaken by later ones.
    public func acquire(_ count: Int = 1) async {
        let count = min(max(1, count), capacity)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { s -> Bool in
                if s.waiting.isEmpty && s.free >= count {
                    s.free -= count
                    return true
                }
                s.waiting.append(Waiter(count: count, continuation: continuation))
                return false
            }
            if granted { continuation.resume() }
        }
    }

    /// Gives `count` slots back, to the waiters in order as far as they go.
    public func release(_ count: Int = 1) {
        let count = min(max(1, count), capacity)
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.free += count
            var ready: [CheckedContinuation<Void, Never>] = []
            while let first = s.waiting.first, first.count <= s.free {
                s.free -= first.count
                ready.append(s.waiting.removeFirst().continuation)
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }
}
