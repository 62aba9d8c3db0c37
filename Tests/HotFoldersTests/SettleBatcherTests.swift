import HotFolders
import System
import Testing

/// The settle/batch rule of SPEC §2, driven with plain times: no files, no clock.
struct SettleBatcherTests {
    let rules = BatchRules(settle: .seconds(2), quiet: .seconds(5), maxWait: .seconds(120), maxBatch: 500)

    func stamp(_ size: Int64, _ mtime: Int64 = 1) -> FileStamp { FileStamp(size: size, mtimeNanoseconds: mtime) }
    func t(_ seconds: Double) -> Duration { .milliseconds(Int64((seconds * 1000).rounded())) }

    /// Runs `close(at:)` every 100 ms from `from` to `to`, returning the batches with their close time.
    func run(_ b: inout SettleBatcher<String>, from: Double, to: Double,
             each: (inout SettleBatcher<String>, Double) -> Void = { _, _ in }) -> [(Double, [String])] {
        var closed: [(Double, [String])] = []
        var now = from
        while now <= to + 1e-9 {
            each(&b, now)
            while let batch = b.close(at: t(now)) { closed.append((now, batch)) }
            now += 0.1
        }
        return closed
    }

    @Test func aBurstIsOneBatchClosedAfterQuiet() {
        var b = SettleBatcher<String>(rules: rules)
        for i in 0..<80 { b.observe("IMG_\(i).jpg", stamp(1000 + Int64(i)), at: t(Double(i) * 0.05)) }  // 4 s burst
        let closed = run(&b, from: 4, to: 20)
        #expect(closed.count == 1)
        #expect(closed.first?.1.count == 80)
        #expect(closed.first?.1.first == "IMG_0.jpg")
        // The last arrival was at 3.95 s: quiet (5 s) ends at 8.95 s.
        #expect(abs((closed.first?.0 ?? 0) - 9.0) < 0.11)
    }

    @Test func anAdoptedOpenBatchCountsItsPhotosAndClosesByQuietFromItsAdoption() {
        var b = SettleBatcher<String>(rules: BatchRules(settle: .seconds(2), quiet: .seconds(5), maxWait: .seconds(120), maxBatch: 6))
        // A dead claimer's batch of 5, adopted at 10 s: its quiet runs from then.
        b.adopt(5, at: t(10))
        #expect(b.closeBatch(at: t(14.9)) == nil)
        // Two photos dropped after: only one fits its maxBatch.
        b.observe("a.jpg", stamp(1), at: t(11))
        b.observe("b.jpg", stamp(2), at: t(11))
        b.settle(at: t(13))
        #expect(b.takeSettled(at: t(13)).map(\.name) == ["a.jpg"])
        // Full: it closes now, with nothing more (the other is the next batch's).
        #expect(b.closeBatch(at: t(13))?.isEmpty == true)
        #expect(b.openCount == 0 && b.pendingCount == 1)
        // Without photos after it, it closes once quiet has passed since the adoption.
        var c = SettleBatcher<String>(rules: rules)
        c.adopt(3, at: t(10))
        #expect(c.closeBatch(at: t(14.9)) == nil)
        #expect(c.closeBatch(at: t(15))?.isEmpty == true)
    }

    @Test func nothingClosesBeforeSettle() {
        var b = SettleBatcher<String>(rules: BatchRules(settle: .seconds(2), quiet: .milliseconds(500), maxWait: .seconds(120), maxBatch: 500))
        b.observe("a.jpg", stamp(10), at: t(0))
        #expect(b.close(at: t(1.9)) == nil)
        #expect(b.settlingCount == 1)
        #expect(b.close(at: t(2.0)) == ["a.jpg"])
    }

    @Test func aSlowWriterKeepsTheBatchOpenAndIsTakenWhole() {
        var b = SettleBatcher<String>(rules: BatchRules(settle: .seconds(2), quiet: .seconds(3), maxWait: .seconds(120), maxBatch: 500))
        b.observe("quick.jpg", stamp(100), at: t(0))
        // slow.jpg grows every 1.5 s (shorter than settle) until 12 s, then holds still.
        let closed = run(&b, from: 0, to: 30) { b, now in
            // Once claimed, it is gone from drop/ and no longer seen.
            guard now == 0 || b.trackedNames.contains("slow.jpg") else { return }
            let size = Int64(min(now, 12) / 1.5) * 100 + 100
            b.observe("slow.jpg", stamp(size, Int64(size)), at: t(now))
        }
        #expect(closed.count == 1)
        #expect(Set(closed.first?.1 ?? []) == ["quick.jpg", "slow.jpg"])
        // slow.jpg last changed at 12 s: it settles at 14 s, the batch closes 3 s after that change.
        #expect((closed.first?.0 ?? 0) >= 14.9)
    }

    @Test func aSettledFileThatChangesAgainSettlesAnew() {
        var b = SettleBatcher<String>(rules: BatchRules(settle: .seconds(2), quiet: .seconds(10), maxWait: .seconds(120), maxBatch: 500))
        b.observe("a.jpg", stamp(10), at: t(0))
        #expect(b.close(at: t(2.5)) == nil)
        #expect(b.pendingCount == 1)
        b.observe("a.jpg", stamp(20, 2), at: t(3))  // reopened and appended (SMB)
        #expect(b.pendingCount == 0)
        #expect(b.settlingCount == 1)
    }

    @Test func maxWaitClosesAStreamThatNeverGoesQuiet() {
        var b = SettleBatcher<String>(rules: BatchRules(settle: .milliseconds(500), quiet: .seconds(5), maxWait: .seconds(30), maxBatch: 500))
        var n = 0
        // A new file every second, forever: quiet never comes.
        let closed = run(&b, from: 0, to: 70) { b, now in
            if abs(now - now.rounded()) < 0.01 {
                b.observe("f\(n).jpg", stamp(1), at: t(now))
                n += 1
            }
        }
        #expect(closed.count == 2)
        #expect(abs((closed.first?.0 ?? 0) - 30) < 0.11)
        #expect(closed.first?.1.first == "f0.jpg")
        #expect(closed.first?.1.count == 30)  // f0…f29 settled by 30 s; f30 still settling
        #expect(closed.allSatisfy { $0.1.count <= 31 })
    }

    @Test func maxBatchSplitsABigDropInArrivalOrder() {
        var b = SettleBatcher<String>(rules: BatchRules(settle: .seconds(1), quiet: .seconds(2), maxWait: .seconds(120), maxBatch: 50))
        for i in 0..<120 { b.observe(String(format: "IMG_%03d.jpg", i), stamp(1), at: t(Double(i) * 0.001)) }
        let closed = run(&b, from: 0, to: 10)
        #expect(closed.map(\.1.count) == [50, 50, 20])
        #expect(closed[0].1.first == "IMG_000.jpg")
        #expect(closed[1].1.first == "IMG_050.jpg")
        // The two full batches close as soon as their files settle, without waiting for quiet.
        #expect(closed[0].0 < 1.5 && closed[1].0 < 1.5)
        #expect(closed[2].0 >= 2.0)
    }

    @Test func aFileThatVanishesBeforeItSettlesIsNotInTheBatch() {
        var b = SettleBatcher<String>(rules: BatchRules(settle: .seconds(2), quiet: .seconds(3), maxWait: .seconds(120), maxBatch: 500))
        b.observe("keep.jpg", stamp(1), at: t(0))
        b.observe("gone.jpg", stamp(1), at: t(0.5))
        b.vanished("gone.jpg")
        b.observe("late-gone.jpg", stamp(1), at: t(1))
        let closed = run(&b, from: 1, to: 10) { b, now in
            if now > 2.5 { b.vanished("late-gone.jpg") }  // settled, then taken away before the close
        }
        #expect(closed.map(\.1) == [["keep.jpg"]])
        #expect(b.trackedNames.isEmpty)
    }

    @Test func aBatchClosesOnlyOnceItsFilesAreForgotten() {
        var b = SettleBatcher<String>(rules: BatchRules(settle: .seconds(1), quiet: .seconds(1), maxWait: .seconds(120), maxBatch: 500))
        b.observe("a.jpg", stamp(1), at: t(0))
        #expect(b.close(at: t(1.5)) == ["a.jpg"])
        #expect(b.close(at: t(5)) == nil)
        // The same name dropped again later is a new arrival and a new batch.
        b.observe("a.jpg", stamp(1), at: t(6))
        #expect(b.close(at: t(7.5)) == ["a.jpg"])
    }
}

/// What the service's loop asks of the batcher between events: when it next has something to
/// do, which files to look at again, and batches taken in arrival order at any size.
struct SettleDeadlineTests {
    func stamp(_ size: Int64) -> FileStamp { FileStamp(size: size, mtimeNanoseconds: size) }
    func t(_ seconds: Double) -> Duration { .milliseconds(Int64((seconds * 1000).rounded())) }

    @Test func theNextDeadlineIsASettleTimeThenQuietThenMaxWait() {
        var b = SettleBatcher<String>(rules: BatchRules(settle: .seconds(2), quiet: .seconds(5), maxWait: .seconds(60), maxBatch: 500))
        #expect(b.nextDeadline() == nil, "nothing tracked: only an event wakes it")
        b.observe("a.jpg", stamp(1), at: t(0))
        b.observe("b.jpg", stamp(1), at: t(1))
        #expect(b.nextDeadline() == t(2))
        #expect(b.namesToCheck(at: t(1.5)).isEmpty)
        #expect(b.namesToCheck(at: t(2)) == ["a.jpg"])
        #expect(b.namesToCheck(at: t(3)) == ["a.jpg", "b.jpg"])
        b.settle(at: t(2))
        #expect(b.pendingCount == 1 && b.settlingCount == 1)
        // b.jpg still settling: its settle time first, quiet waits for it.
        #expect(b.nextDeadline() == t(3))
        b.settle(at: t(3))
        #expect(b.nextDeadline() == t(6), "quiet: 5 s after the last arrival")
        #expect(b.nextDeadline(includingClose: false) == nil, "with no claim possible, nothing is due")
        // A file that changes again moves back to settling, and its old time is forgotten.
        b.observe("a.jpg", stamp(2), at: t(4))
        #expect(b.pendingCount == 1 && b.settlingCount == 1)
        #expect(b.nextDeadline() == t(6))
        #expect(b.namesToCheck(at: t(5.9)).isEmpty)
        #expect(b.close(at: t(8.9)) == nil)
        #expect(b.close(at: t(9)) == ["a.jpg", "b.jpg"])
        #expect(b.nextDeadline() == nil)
    }

    @Test func aFullBatchIsDueAtOnceAndMaxWaitCountsFromTheOldest() {
        var b = SettleBatcher<String>(rules: BatchRules(settle: .seconds(1), quiet: .seconds(5), maxWait: .seconds(10), maxBatch: 2))
        b.observe("a.jpg", stamp(1), at: t(0))
        b.observe("b.jpg", stamp(1), at: t(0))
        b.observe("c.jpg", stamp(1), at: t(0.5))
        b.settle(at: t(1))
        #expect(b.nextDeadline() == .zero, "two settled files fill a batch")
        let closed = b.closeBatch(at: t(1))
        #expect(closed?.map(\.name) == ["a.jpg", "b.jpg"])
        #expect(closed?.map(\.stamp) == [stamp(1), stamp(1)], "with the stamps they settled with")
        b.settle(at: t(1.5))
        #expect(b.nextDeadline() == t(5.5), "quiet after c.jpg's arrival comes before maxWait")
        b.rules.maxBatch = 3
        b.observe("d.jpg", stamp(1), at: t(5))
        b.settle(at: t(6))
        #expect(b.nextDeadline() == t(10), "quiet after d.jpg (5 s), before c.jpg's maxWait (10.5 s)")
    }

    /// A 100,000-file drop closes in batches of maxBatch, each in arrival order, every file once.
    @Test func aHundredThousandFilesCloseAsBatchesInArrivalOrder() {
        var b = SettleBatcher<Int>(rules: BatchRules(settle: .seconds(1), quiet: .seconds(1), maxWait: .seconds(600), maxBatch: 500))
        // Seen over 10 s, in a shuffled order within each 100 ms.
        var order = Array(0..<100_000)
        var rng = SystemRandomNumberGenerator()
        for chunk in stride(from: 0, to: order.count, by: 1000) { order[chunk..<chunk + 1000].shuffle(using: &rng) }
        for (i, n) in order.enumerated() { b.observe(n, stamp(Int64(n)), at: t(Double(i / 1000) * 0.1)) }
        var batches: [[Int]] = []
        var now = 10.0
        while batches.count < 200 && now < 100 {
            b.settle(at: t(now))
            while let batch = b.close(at: t(now)) { batches.append(batch) }
            now += 0.5
        }
        #expect(batches.count == 200 && batches.allSatisfy { $0.count == 500 })
        let all = batches.flatMap { $0 }
        #expect(Set(all).count == 100_000)
        // Arrival order: by first seen, then name (here the number).
        let seen = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($0.element, $0.offset / 1000) })
        #expect(zip(all, all.dropFirst()).allSatisfy { (seen[$0]!, $0) < (seen[$1]!, $1) })
        #expect(b.pendingCount == 0 && b.settlingCount == 0 && b.trackedNames.isEmpty)
    }
}

struct MinHeapTests {
    @Test func popsInOrderWhateverThePushOrder() {
        var heap = MinHeap<Int>()
        var rng = SystemRandomNumberGenerator()
        let values = (0..<1000).map { _ in Int.random(in: 0..<100, using: &rng) }
        for v in values { heap.push(v) }
        var out: [Int] = []
        while let v = heap.pop() { out.append(v) }
        #expect(out == values.sorted())
        #expect(heap.isEmpty && heap.first == nil)
    }
}

/// Photos taken into the open batch as they settle (`takeSettled`): the batch still closes by
/// quiet, maxWait and maxBatch, counting them.
struct OpenBatchSettleTests {
    let rules = BatchRules(settle: .seconds(2), quiet: .seconds(5), maxWait: .seconds(120), maxBatch: 500)

    func stamp(_ size: Int64) -> FileStamp { FileStamp(size: size, mtimeNanoseconds: 1) }
    func t(_ seconds: Double) -> Duration { .milliseconds(Int64((seconds * 1000).rounded())) }

    @Test func burstsFourSecondsApartAreTakenAsTheySettleAndCloseOnceQuiet() {
        var b = SettleBatcher<String>(rules: rules)
        var taken: [String] = []
        var closedAt: Double?
        var closing: [String]?
        for step in 0...300 {
            let now = Double(step) / 10
            if step % 40 == 0 && step < 120 {  // bursts at 0, 4, 8 s
                for i in 0..<4 { b.observe("IMG_\(Int(now))_\(i).jpg", stamp(100 + Int64(i)), at: t(now)) }
            }
            b.settle(at: t(now))
            if closedAt == nil, let batch = b.closeBatch(at: t(now)) {
                closedAt = now
                closing = batch.map(\.name)
            }
            taken += b.takeSettled(at: t(now)).map(\.name)
        }
        // Each burst was taken 2 s (settle) after it arrived; the batch closed 5 s (quiet) after
        // the last one, with nothing left to add.
        #expect(taken.count == 12)
        #expect(taken.prefix(4).allSatisfy { $0.hasPrefix("IMG_0_") })
        #expect(closing == [])
        #expect(abs((closedAt ?? 0) - 13.0) < 0.11, "closed at \(closedAt ?? -1)")
        #expect(b.openCount == 0 && b.pendingCount == 0)
        #expect(b.closeBatch(at: t(40)) == nil)
    }

    @Test func filesTakenEarlyCountForMaxBatchAndMaxWait() {
        var b = SettleBatcher<String>(rules: BatchRules(settle: .seconds(1), quiet: .seconds(5), maxWait: .seconds(10), maxBatch: 5))
        for i in 0..<4 { b.observe("a\(i)", stamp(1), at: t(0)) }
        b.settle(at: t(1))
        #expect(b.takeSettled(at: t(1)).count == 4)
        for i in 0..<3 { b.observe("b\(i)", stamp(1), at: t(1.5)) }
        b.settle(at: t(2.5))
        // Room for one more: the open batch is full, and closes at once with nothing more.
        #expect(b.takeSettled(at: t(2.5)).map(\.name) == ["b0"])
        #expect(b.nextDeadline() == .zero)
        #expect(b.closeBatch(at: t(2.5)).map { $0.map(\.name) } == [])
        // The rest start the next batch; maxWait counts from its first arrival (1.5 s).
        #expect(b.takeSettled(at: t(2.6)).count == 2)
        for i in 0..<20 { b.observe("c\(i)", stamp(1), at: t(3 + Double(i) * 0.5)) }
        #expect(b.closeBatch(at: t(11.4)) == nil)
        #expect(b.closeBatch(at: t(11.5)).map { $0.map(\.name) } != nil)
    }

    @Test func anUntakenFileLeavesTheOpenBatchsCount() {
        var b = SettleBatcher<String>(rules: rules)
        b.observe("a", stamp(1), at: t(0))
        b.settle(at: t(2))
        #expect(b.takeSettled(at: t(2)).count == 1)
        b.untake(1)
        #expect(b.openCount == 0)
        #expect(b.closeBatch(at: t(10)) == nil)
    }
}
