import Batches
import Foundation
import HotFolders
import Synchronization
import System
import Testing

/// Retention (`keep`) and free space (`minFreeSpace`) on real temporary folders.
struct RetentionTests {
    /// Log lines, in order.
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var logger: Logger { Logger { _, text, _ in self.lines.withLock { $0.append(text) } } }
        var all: [String] { lines.withLock { $0 } }
    }

    let now = Date(timeIntervalSince1970: 1_796_000_000)  // 2026-11-30 UTC
    let day: TimeInterval = 86_400

    func hotFolder() throws -> HotFolderLayout {
        let layout = HotFolderLayout(root: TemporaryFolder.path("retention"))
        try layout.create()
        return layout
    }

    /// A batch folder of `kind` claimed `daysAgo` days before `now`, with two files; its id.
    @discardableResult
    func batch(_ layout: HotFolderLayout, _ kinds: [String], daysAgo: Double, id: String? = nil) throws -> String {
        let id = id ?? BatchID.make(at: now.addingTimeInterval(-daysAgo * day))
        for kind in kinds {
            let folder = layout.root + "/" + kind + "/" + id
            try FileManager.default.createDirectory(atPath: folder + "/sub", withIntermediateDirectories: true)
            try Data(repeating: 7, count: 1000).write(to: URL(fileURLWithPath: folder + "/a.jpg"))
            try Data(repeating: 8, count: 24).write(to: URL(fileURLWithPath: folder + "/sub/b.txt"))
        }
        return id
    }

    /// A batch `id` claimed in `.work/` (with its manifest), redoing `redoes`.
    func claimed(_ layout: HotFolderLayout, _ id: String, redoes: String? = nil) throws {
        try FileManager.default.createDirectory(atPath: layout.workFolder(id) + "/src", withIntermediateDirectories: true)
        try """
            { "version": 1, "batch": "\(id)", "inbox": "shop", "claimed": "2026-11-30T00:00:00.000Z",
              \(redoes.map { "\"redoes\": \"\($0)\"," } ?? "")
              "template": { "name": "small", "sha256": "00", "directory": "." }, "items": [] }
            """.write(toFile: layout.workFolder(id) + "/manifest.json", atomically: true, encoding: .utf8)
    }

    func names(_ folder: String) -> Set<String> {
        Set(((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []))
    }

    @Test func onlyBatchesOlderThanKeepGoOldestFirstEachInTheLog() throws {
        let layout = try hotFolder()
        let old = try batch(layout, ["out", "originals", "failed"], daysAgo: 200)
        let middle = try batch(layout, ["out", "originals", "failed"], daysAgo: 100)
        let recent = try batch(layout, ["out", "originals", "failed"], daysAgo: 40)
        let fresh = try batch(layout, ["out", "originals", "failed"], daysAgo: 1)
        // Names that are no batch are never touched, however old the folder.
        try FileManager.default.createDirectory(atPath: layout.out + "/keep-me", withIntermediateDirectories: true)
        let lines = Lines()
        let keep = Retention.Keep(out: .seconds(30 * 86_400), originals: .seconds(90 * 86_400), failed: .seconds(180 * 86_400))
        let outcome = Retention.sweep(layout: layout, keep: keep, now: now, inbox: "shop", log: lines.logger)

        #expect(names(layout.out) == [fresh, "keep-me"])
        #expect(names(layout.originals) == [recent, fresh])
        #expect(names(layout.failed) == [middle, recent, fresh])
        let removed = outcome.removed.map { "\($0.kind.rawValue)/\($0.batch)" }
        #expect(removed == ["out/\(old)", "originals/\(old)", "failed/\(old)", "out/\(middle)", "originals/\(middle)", "out/\(recent)"])
        #expect(outcome.removed.allSatisfy { $0.files == 2 && $0.bytes == 1024 })
        #expect(outcome.kept.isEmpty && outcome.failures.isEmpty && !outcome.deferred)
        #expect(lines.all == [
            "shop: removed out/\(old)/ (2 files, 1.0 KiB): older than keep.out 30d",
            "shop: removed originals/\(old)/ (2 files, 1.0 KiB): older than keep.originals 90d",
            "shop: removed failed/\(old)/ (2 files, 1.0 KiB): older than keep.failed 180d",
            "shop: removed out/\(middle)/ (2 files, 1.0 KiB): older than keep.out 30d",
            "shop: removed originals/\(middle)/ (2 files, 1.0 KiB): older than keep.originals 90d",
            "shop: removed out/\(recent)/ (2 files, 1.0 KiB): older than keep.out 30d",
        ])
        // Nothing is left aside, and a second sweep has nothing to do.
        #expect(!names(layout.out).contains { $0.hasPrefix(".") })
        #expect(Retention.sweep(layout: layout, keep: keep, now: now, inbox: "shop", log: .silent).removed.isEmpty)
    }

    @Test func foreverKeepsEverything() throws {
        let layout = try hotFolder()
        let id = try batch(layout, ["out", "originals"], daysAgo: 3000)
        let partial = Retention.Keep(out: .seconds(86_400))
        let outcome = Retention.sweep(layout: layout, keep: partial, now: now, inbox: "shop", log: .silent)
        #expect(outcome.removed.map(\.kind) == [.out])
        #expect(names(layout.originals) == [id])
        #expect(Retention.sweep(layout: layout, keep: .forever, now: now, inbox: "shop", log: .silent) == Retention.Outcome())
        #expect(Retention.Keep.forever.isForever && !partial.isForever)
    }

    @Test func aBatchStillReferencedIsNeverRemoved() throws {
        let layout = try hotFolder()
        let running = try batch(layout, ["out", "originals"], daysAgo: 50)  // still in .work/ (finishing)
        let redone = try batch(layout, ["originals", "failed"], daysAgo: 60)  // a batch in .work/ redoes it
        let busy = try batch(layout, ["out"], daysAgo: 70)  // the caller says it works on it
        let free = try batch(layout, ["out", "originals", "failed"], daysAgo: 80)
        try claimed(layout, running)
        let redo = BatchID.make(at: now)
        try claimed(layout, redo, redoes: redone)
        let keep = Retention.Keep(out: .seconds(86_400), originals: .seconds(86_400), failed: .seconds(86_400))
        let outcome = Retention.sweep(layout: layout, keep: keep, now: now, inUse: [busy], inbox: "shop", log: .silent)

        #expect(Set(outcome.removed.map(\.batch)) == [free])
        #expect(names(layout.out) == [running, busy])
        #expect(names(layout.originals) == [running, redone])
        #expect(names(layout.failed) == [redone])
        #expect(outcome.kept.map { "\($0.kind.rawValue)/\($0.batch)" }
                == ["out/\(busy)", "originals/\(redone)", "failed/\(redone)", "out/\(running)", "originals/\(running)"])
        #expect(outcome.kept.first { $0.batch == redone }?.reason == "batch \(redo) in .work/ redoes it")
        #expect(!outcome.deferred)
    }

    /// A claim (or `redo`) under way has no manifest yet and may be hard-linking from any batch:
    /// originals/ and failed/ wait; an old leftover without a manifest holds nothing back.
    @Test func aClaimUnderWayHoldsBackOriginalsAndFailed() throws {
        let layout = try hotFolder()
        let old = try batch(layout, ["out", "originals", "failed"], daysAgo: 400)
        let claiming = layout.work + "/.new-" + BatchID.make(at: now)
        try FileManager.default.createDirectory(atPath: claiming, withIntermediateDirectories: true)
        let keep = Retention.Keep(out: .seconds(86_400), originals: .seconds(86_400), failed: .seconds(86_400))
        // `now` is the real time here: the folder was just made.
        var outcome = Retention.sweep(layout: layout, keep: keep, now: Date(), inbox: "shop", log: .silent)
        #expect(outcome.deferred)
        #expect(outcome.removed.map(\.kind) == [.out])
        #expect(names(layout.originals) == [old] && names(layout.failed) == [old])

        // An hour later it is a leftover (recovery's to roll back): no longer a reason to wait.
        outcome = Retention.sweep(layout: layout, keep: keep, now: Date().addingTimeInterval(2 * 3600), inbox: "shop", log: .silent)
        #expect(!outcome.deferred)
        #expect(Set(outcome.removed.map(\.kind)) == [.originals, .failed])
    }

    @Test func whatAnInterruptedSweepLeftIsFinished() throws {
        let layout = try hotFolder()
        let id = try batch(layout, ["out"], daysAgo: 10)
        try FileManager.default.moveItem(atPath: layout.out + "/" + id, toPath: layout.out + "/.removing-" + id)
        let lines = Lines()
        let outcome = Retention.sweep(layout: layout, keep: .init(out: .seconds(365 * 86_400)), now: now, inbox: "shop",
                                      log: lines.logger)
        #expect(names(layout.out).isEmpty)
        #expect(outcome.removed.isEmpty && outcome.failures.isEmpty)
        #expect(lines.all == ["shop: removed what an interrupted sweep left of out/\(id)/"])
    }

    @Test func aFolderThatCannotBeRemovedIsSaidAndTheRestGoOn() throws {
        guard geteuid() != 0 else {
            // Root may remove anything: the failure cannot be made here without another user.
            print("skipped: running as root, a folder cannot be made unremovable by permissions")
            return
        }
        let layout = try hotFolder()
        let stuck = try batch(layout, ["out"], daysAgo: 20)
        let gone = try batch(layout, ["out"], daysAgo: 10)
        #expect(chmod(layout.out + "/" + stuck + "/sub", 0o500) == 0)
        defer { _ = chmod(layout.out + "/" + stuck + "/sub", 0o700) }
        let outcome = Retention.sweep(layout: layout, keep: .init(out: .seconds(86_400)), now: now, inbox: "shop", log: .silent)
        #expect(outcome.removed.map(\.batch) == [gone])
        #expect(outcome.failures.count == 1)
    }

    @Test func freeSpaceIsMeasuredAndComparedWithTheMinimum() throws {
        let layout = try hotFolder()
        let free = try FreeSpace.available(at: layout.root)
        #expect(free > 0)
        #expect(!FreeSpace.check(layout.root, minimum: 1).isLow)
        let low = FreeSpace.check(layout.root, minimum: Int.max)
        #expect(low.isLow)
        guard case .low(let available, let minimum) = low else { return }
        #expect(minimum == Int64(Int.max) && available > 0)
        #expect(low.words("/srv/shop")?.hasPrefix("only ") == true)
        #expect(low.words("/srv/shop")?.contains("on the file system of /srv/shop, under minFreeSpace") == true)
        #expect(FreeSpace.Reading.enough(available: 5).words("/srv/shop") == nil)
        if case .unknown(let why) = FreeSpace.check(layout.root + "/no/such/folder", minimum: 1) {
            #expect(why.contains("no/such/folder"))
        } else {
            Issue.record("a folder that does not exist has no free space to read")
        }
    }

    @Test func untilDeliveredTakesTheOriginalsOfDeliveredBatchesOnlyWhateverTheirAge() throws {
        let layout = try hotFolder()
        let delivered = try batch(layout, ["out", "originals"], daysAgo: 0.01)
        let waiting = try batch(layout, ["out", "originals"], daysAgo: 900)
        let redone = try batch(layout, ["out", "originals"], daysAgo: 3)
        // A batch in .work/ redoes `redone`: its originals stay, delivered or not.
        try claimed(layout, BatchID.make(at: now), redoes: redone)
        let lines = Lines()
        let keep = Retention.Keep(originalsUntilDelivered: true)
        #expect(!keep.isForever)
        let outcome = Retention.sweep(layout: layout, keep: keep, now: now, inbox: "shop", log: lines.logger,
                                      delivered: { $0 == delivered || $0 == redone })
        #expect(names(layout.originals) == [waiting, redone])
        #expect(names(layout.out) == [delivered, waiting, redone])
        #expect(outcome.removed.map { "\($0.kind.rawValue)/\($0.batch)" } == ["originals/\(delivered)"])
        #expect(outcome.kept.map(\.batch) == [redone])
        #expect(lines.all == ["shop: removed originals/\(delivered)/ (2 files, 1.0 KiB): delivered to every destination (keep.originals until-delivered)"])
        // The daemon's own call as the last delivery ends: the same rule, one batch.
        #expect(Retention.removeDelivered(redone, layout: layout, inbox: "shop", log: .silent).kept.map(\.batch) == [redone])
        #expect(Retention.removeDelivered(waiting, layout: layout, inbox: "shop", log: .silent).removed.map(\.batch) == [waiting])
        #expect(Retention.removeDelivered(waiting, layout: layout, inbox: "shop", log: .silent).removed.isEmpty)
        #expect(names(layout.originals) == [redone])
    }
}
