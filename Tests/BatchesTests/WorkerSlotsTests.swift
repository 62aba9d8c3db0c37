import Batches
import Synchronization
import Testing

/// The shared `workers` limit: never more holders than slots, and every waiter served.
struct WorkerSlotsTests {
    final class Gauge: Sendable {
        let state = Mutex((now: 0, most: 0, done: 0))
        func enter() { state.withLock { $0.now += 1; $0.most = max($0.most, $0.now) } }
        func leave() { state.withLock { $0.now -= 1; $0.done += 1 } }
    }

    @Test func neverMoreInFlightThanSlots() async {
        let slots = WorkerSlots(2)
        let gauge = Gauge()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    await slots.acquire()
                    gauge.enter()
                    for _ in 0..<5 { await Task.yield() }
                    gauge.leave()
                    slots.release()
                }
            }
        }
        let s = gauge.state.withLock { $0 }
        #expect(s.most <= 2)
        #expect(s.done == 40)
    }
}
