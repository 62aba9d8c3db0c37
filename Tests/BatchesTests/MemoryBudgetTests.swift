import Batches
import Synchronization
import Testing

/// The memory budget's admission rule, with plain numbers.
struct MemoryBudgetTests {
    final class Ledger: Sendable {
        let state = Mutex((now: 0, most: 0, order: [Int]()))
        func enter(_ cost: Int, _ id: Int) { state.withLock { $0.now += cost; $0.most = max($0.most, $0.now); $0.order.append(id) } }
        func leave(_ cost: Int) { state.withLock { $0.now -= cost } }
    }

    @Test func admittedCostsStayUnderTheBudgetAndAnOversizedPhotoRunsAlone() async {
        let budget = MemoryBudget(bytes: 100)
        let ledger = Ledger()
        let costs = [40, 30, 50, 250, 20, 60, 10, 90, 40, 40]  // 250: over the whole budget
        await withTaskGroup(of: Void.self) { group in
            for (id, cost) in costs.enumerated() {
                group.addTask {
                    await budget.acquire(cost)
                    ledger.enter(cost, id)
                    for _ in 0..<3 { await Task.yield() }
                    ledger.leave(cost)
                    budget.release(cost)
                }
            }
        }
        let s = ledger.state.withLock { $0 }
        #expect(s.order.count == costs.count)
        // Over budget only when the oversized photo ran, and then it ran alone.
        #expect(s.most <= 100 || s.most == 250)
    }

    @Test func admissionIsFirstComeFirstServed() async {
        let budget = MemoryBudget(bytes: 100)
        await budget.acquire(90)
        let ledger = Ledger()
        let big = Task { await budget.acquire(80); ledger.enter(80, 1) }
        while budget.waitingCount < 1 { await Task.yield() }
        // 90 + 5 would fit, but the big photo asked first: the small one waits behind it.
        let small = Task { await budget.acquire(5); ledger.enter(5, 2) }
        while budget.waitingCount < 2 { await Task.yield() }
        #expect(ledger.state.withLock { $0.order }.isEmpty)
        budget.release(90)
        await big.value
        await small.value
        #expect(ledger.state.withLock { $0.order } == [1, 2])
    }

    @Test func autoIsHalfTheCgroupLimitOrHalfTheRAM() {
        #expect(MemoryBudget.automatic(memoryMax: "max\n", ram: 8 << 30) == 4 << 30)
        #expect(MemoryBudget.automatic(memoryMax: "2147483648\n", ram: 8 << 30) == 1 << 30)
        #expect(MemoryBudget.automatic(memoryMax: nil, ram: 1 << 30) == 512 << 20)
        #expect(MemoryBudget.automatic(memoryMax: String(64 << 30), ram: 8 << 30) == 4 << 30)
    }
}
