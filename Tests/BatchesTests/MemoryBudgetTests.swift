import Batches
import Finishing
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

    /// A PNG signature, an IHDR (8-bit RGB) with a right CRC and the start of an IDAT: a
    /// header libpng opens, no pixel data.
    static func pngHeader(width: UInt32, height: UInt32) -> [UInt8] {
        func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xff), UInt8((v >> 8) & 0xff), UInt8(v & 0xff)] }
        let ihdr: [UInt8] = Array("IHDR".utf8) + be(width) + be(height) + [8, 2, 0, 0, 0]
        var crc: UInt32 = 0xFFFF_FFFF
        for b in ihdr {
            crc ^= UInt32(b)
            for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 1 ? 0xEDB8_8320 : 0) }
        }
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + ihdr + be(~crc) + [0, 0, 0, 1] + Array("IDAT".utf8)
    }

    @Test func costOfAnyHeaderSizeIsANumberNotATrap() {
        // Over Int64 in width × height: not opened, it costs its bytes.
        let bomb = Self.pngHeader(width: 0xFFFF_FFFF, height: 0xFFFF_FFFF)
        let finisher = PhotoFinisher(template: Template(name: "plain"))
        #expect(MemoryBudget.cost(ofPhoto: bomb, finisher: finisher, maxFileBytes: 1 << 29) == bomb.count)
        // Opened (libpng takes sides up to 2^31 - 1) but × 4 bytes overflows: the largest cost.
        let huge = Self.pngHeader(width: 0x7FFF_FFFF, height: 0x7FFF_FFFF)
        #expect(MemoryBudget.cost(ofPhoto: huge, finisher: finisher, maxFileBytes: 1 << 29) == 1 << 52 + huge.count)
        let small = Self.pngHeader(width: 100, height: 50)
        // libpng's working memory (the whole picture at 4 bytes a pixel, the most a decoder
        // that holds it takes), the streamed output's bands and the preview.
        let cost = MemoryBudget.cost(ofPhoto: small, finisher: finisher, maxFileBytes: 1 << 29)
        #expect(cost >= 100 * 50 * 4 + small.count && cost < 1 << 20, "\(cost)")
    }
}
