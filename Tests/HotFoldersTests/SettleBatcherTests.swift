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
