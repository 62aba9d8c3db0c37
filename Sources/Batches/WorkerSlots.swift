import Synchronization

/// A limit on photos in flight shared by several batches (the daemon's hot folders side by
/// side): each photo takes a slot before it starts and gives it back when done, first come
/// first served.
public final class WorkerSlots: Sendable {
    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    /// - Parameter count: photos in flight at once, over all batches (at least 1).
    public init(_ count: Int) {
        state = Mutex(State(free: max(1, count)))
    }

    /// Waits for a free slot.
    public func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { s -> Bool in
                if s.free > 0 {
                    s.free -= 1
                    return true
                }
                s.waiting.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    /// Gives a slot back (to the longest waiter, if any).
    public func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiting.isEmpty {
                s.free += 1
                return nil
            }
            return s.waiting.removeFirst()
        }
        next?.resume()
    }
}
