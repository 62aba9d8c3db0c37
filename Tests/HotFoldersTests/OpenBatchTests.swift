import Batches
import Codecs
import Finishing
import Foundation
import HotFolders
import Pixels
import Synchronization
import System
import Testing

/// A batch whose photos are claimed and finished as they settle (SPEC §2): claims into the open
/// batch, its close, and its run taking the photos finished early. Real folders, small photos.
@Suite(.serialized) struct OpenBatchTests {
    /// The batch locks of this test, as one service holds them.
    let locks = BatchLocks()

    func hotFolder() throws -> HotFolderLayout {
        let layout = HotFolderLayout(root: NSTemporaryDirectory() + "pf-open-\(UInt32.random(in: 0...UInt32.max))")
        try layout.create()
        return layout
    }

    func photo(_ seed: Int, format: ImageFormat = .jpeg) throws -> [UInt8] {
        let image = Canvas(width: 48 + seed, height: 32, channels: 3, fill: [UInt8(40 * seed % 256), 120, 200])
        return try encodeImage(image.finished(), options: EncodeOptions(format: format, quality: 80))
    }

    func drop(_ names: [String], into layout: HotFolderLayout, seed: Int = 0) throws {
        for (i, name) in names.enumerated() {
            let bytes = try photo(seed + i, format: name.hasSuffix(".png") ? .png : .jpeg)
            try Data(bytes).write(to: URL(fileURLWithPath: layout.drop + "/" + name))
        }
    }

    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var logger: Logger { Logger { _, message, _ in self.lines.withLock { $0.append(message) } } }
        var all: [String] { lines.withLock { $0 } }
    }

    var limits: BatchLimits {
        var limits = BatchLimits()
        limits.workers = 2
        return limits
    }

    func finish(_ batch: ClaimedBatch, log: Logger = .silent) async throws -> Report {
        guard case .finished(let report, _, _) = try await BatchWork.finish(batch, limits: limits, stop: StopRequest(), log: log) else {
            throw SystemError("finish", batch.folder, errno: EIO)
        }
        return report
    }

    /// What the daemon's early workers do for one task: finish it into `early/<n>/`, journaled.
    func finishEarly(_ batch: ClaimedBatch, _ name: FileName, photo: Int) async throws -> EarlyItem {
        let runner = BatchRunner(template: try batch.manifest.template.template(), limits: limits, inbox: "shop")
        return try await Self.finishEarly(batch, name, photo: photo, runner: runner)
    }

    /// The same with a runner of the caller's (one for all of a batch's tasks).
    static func finishEarly(_ batch: ClaimedBatch, _ name: FileName, photo: Int, runner: BatchRunner) async throws -> EarlyItem {
        let folder = EarlyJournal.outputFolder(photo, batchFolder: batch.folder)
        try Files.makeDirectories(folder)
        let source = BatchRunner.Source(path: FilePath(batch.folder).appending("src").appending(name), file: name)
        try EarlyJournal.started(photo, source: name, to: batch.journals)
        let early = await runner.finishEarly(source, photo: photo, batch: batch.id, folder: folder)
        try EarlyJournal.done(photo, source: name, early: early, to: batch.journals)
        return early
    }

    func outputs(_ layout: HotFolderLayout, _ id: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: layout.out + "/" + id)) ?? []).filter { $0.hasSuffix(".jpg") }.sorted()
    }

    /// Each output's bytes, by name.
    func outputBytes(_ layout: HotFolderLayout, _ id: String) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in outputs(layout, id) { out[name] = try #require(try Files.read(layout.out + "/" + id + "/" + name)) }
        return out
    }

    @Test func anOpenBatchClosesToTheManifestOneClaimOfTheSameFilesWrites() throws {
        let layout = try hotFolder()
        try drop(["IMG_10.jpg"], into: layout)
        let opened = try #require(try Claim.claim(["IMG_10.jpg"], layout: layout, inbox: "shop", template: .builtIn,
                                                  order: .name, locks: locks, open: true).batch)
        #expect(opened.manifest.open == true)
        try drop(["IMG_2.jpg", "IMG_1.jpg"], into: layout, seed: 1)
        let (outcome, added) = try Claim.add(["IMG_2.jpg", "IMG_1.jpg"], to: opened)
        let grown = try #require(outcome.batch)
        #expect(added.map(\.name) == ["IMG_2.jpg", "IMG_1.jpg"])
        #expect(grown.manifest.items.map(\.name) == ["IMG_10.jpg", "IMG_2.jpg", "IMG_1.jpg"], "claim order while open")
        #expect(try Manifest.read(fromFolder: grown.folder) == grown.manifest)
        // An add a crash cut short: moved into src/, never listed.
        try drop(["IMG_3.jpg"], into: layout, seed: 3)
        #expect(rename(layout.drop + "/IMG_3.jpg", grown.folder + "/src/IMG_3.jpg") == 0)
        let closed = try Claim.close(grown, order: .name)
        #expect(closed.manifest.open == nil)
        #expect(closed.manifest.items.map(\.name) == ["IMG_1.jpg", "IMG_2.jpg", "IMG_3.jpg", "IMG_10.jpg"])
        #expect(closed.manifest.items.allSatisfy { $0.sha256 != nil })
        #expect(try Manifest.read(fromFolder: closed.folder) == closed.manifest)
    }

    @Test func anAddThatMayNoLongerWriteStopsAndLeavesWhatItMovedForTheClose() throws {
        let layout = try hotFolder()
        try drop(["a.jpg"], into: layout)
        let opened = try #require(try Claim.claim(["a.jpg"], layout: layout, inbox: "shop", template: .builtIn,
                                                  order: .name, locks: locks, open: true).batch)
        try drop(["b.jpg", "c.jpg", "d.jpg"], into: layout, seed: 1)
        // In a cluster its hold is no longer certain after the second file: nothing more is
        // moved, and the manifest is not written (another host may be adopting the batch).
        let asked = Mutex(0)
        let (outcome, added) = try Claim.add(["b.jpg", "c.jpg", "d.jpg"], to: opened, mayWrite: {
            asked.withLock { n in n += 1; return n <= 2 }
        })
        #expect(added.isEmpty)
        #expect(outcome.batch?.manifest == opened.manifest)
        #expect(try Manifest.read(fromFolder: opened.folder) == opened.manifest)
        #expect(FileManager.default.fileExists(atPath: layout.drop + "/d.jpg"), "not moved")
        // What it moved is listed by the close, whoever closes.
        let closed = try Claim.close(opened, order: .name)
        #expect(closed.manifest.items.map(\.name) == ["a.jpg", "b.jpg", "c.jpg"])
    }

    @Test func photosFinishedWhileOpenAsADatabaseRecordedThemAreTakenWithoutATasksJournal() async throws {
        let layout = try hotFolder()
        try drop(["c.jpg", "a.jpg"], into: layout)
        let opened = try #require(try Claim.claim(["c.jpg", "a.jpg"], layout: layout, inbox: "shop", template: .builtIn,
                                                  order: .name, locks: locks, open: true).batch)
        // Finished into early/1/ as a cluster's host does: nothing journaled on the share.
        let runner = BatchRunner(template: try opened.manifest.template.template(), limits: limits, inbox: "shop")
        let folder = EarlyJournal.outputFolder(1, batchFolder: opened.folder)
        try Files.makeDirectories(folder)
        let source = BatchRunner.Source(path: FilePath(opened.folder).appending("src").appending("c.jpg"), file: "c.jpg")
        let early = await runner.finishEarly(source, photo: 1, batch: opened.id, folder: folder)
        #expect(!FileManager.default.fileExists(atPath: opened.folder + "/" + EarlyJournal.fileName))
        var recorded = EarlyJournal.Progress()
        recorded.done["c.jpg"] = (1, early)
        let lines = Lines()
        guard case .finished(let report, _, _) = try await BatchWork.finish(opened, limits: limits, stop: StopRequest(), log: lines.logger,
                                                                          early: recorded) else {
            Issue.record("not finished")
            return
        }
        #expect(lines.all.contains { $0.hasSuffix("1 of 2 photos were finished while the batch was open") }, "\(lines.all)")
        #expect(report.items.map(\.source) == ["a.jpg", "c.jpg"])
        #expect(report.items.allSatisfy { $0.status == .ok })
        #expect(report.items[1].ms == early.item.ms, "taken as it was finished, not finished again")
    }

    @Test func photosFinishedWhileOpenAreTakenAtCloseAsTheyAreAndTheReportIsAsOneClaimsOwn() async throws {
        let names: [FileName] = ["c.jpg", "a.jpg", "b.jpg"]
        // Today's way: one claim of the three, finished at once.
        let whole = try hotFolder()
        try drop(names.map(\.readable), into: whole)
        let once = try #require(try Claim.claim(names, layout: whole, inbox: "shop", template: .builtIn, order: .name, locks: locks).batch)
        let expected = try await finish(once)

        // Claimed as they settle: c, then a and b; c and a finished while the batch is open.
        let layout = try hotFolder()
        try drop(names.map(\.readable), into: layout)
        let opened = try #require(try Claim.claim(["c.jpg"], layout: layout, inbox: "shop", template: .builtIn,
                                                  order: .name, locks: locks, open: true).batch)
        let earlyC = try await finishEarly(opened, "c.jpg", photo: 1)
        let (outcome, _) = try Claim.add(["a.jpg", "b.jpg"], to: opened)
        let grown = try #require(outcome.batch)
        let earlyA = try await finishEarly(grown, "a.jpg", photo: 2)
        #expect(FileManager.default.fileExists(atPath: grown.folder + "/early/1/c.jpg"), "finished before the batch closed")
        let lines = Lines()
        let report = try await finish(grown, log: lines.logger)
        #expect(lines.all.contains { $0.hasSuffix("2 of 3 photos were finished while the batch was open") }, "\(lines.all)")
        #expect(report.items.map(\.source) == ["a.jpg", "b.jpg", "c.jpg"])
        #expect(report.items.map(\.index) == [1, 2, 3])
        #expect(report.items.allSatisfy { $0.status == .ok })
        // Taken as they were finished, not finished again (the same item, its own time).
        #expect(report.items[0].ms == earlyA.item.ms && report.items[2].ms == earlyC.item.ms)
        // The same items and outputs as one claim's (but for the times and where originals are).
        func plain(_ item: Report.Item) -> String {
            var item = item
            item.ms = 0
            item.original = item.original.map { String($0.prefix { $0 != "/" }) }
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return String(decoding: (try? encoder.encode(item)) ?? Data(), as: UTF8.self)
        }
        #expect(report.items.map(plain) == expected.items.map(plain))
        #expect(try outputBytes(layout, grown.id) == outputBytes(whole, once.id))
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.work).isEmpty)
    }

    @Test func aPhotoWhoseStemTheBatchsOrderChangesIsFinishedAgainAtClose() async throws {
        let layout = try hotFolder()
        // Two JPEGs of one stem are two photos: finished early as IMG_1 each; in the batch's
        // order the second is IMG_1-2.
        try drop(["IMG_1.JPG", "IMG_1.jpg"], into: layout)
        let opened = try #require(try Claim.claim(["IMG_1.JPG", "IMG_1.jpg"], layout: layout, inbox: "shop",
                                                  template: .builtIn, order: .name, locks: locks, open: true).batch)
        _ = try await finishEarly(opened, "IMG_1.JPG", photo: 1)
        _ = try await finishEarly(opened, "IMG_1.jpg", photo: 2)
        let lines = Lines()
        let report = try await finish(opened, log: lines.logger)
        #expect(lines.all.contains { $0.hasSuffix("1 of 2 photos were finished while the batch was open") }, "\(lines.all)")
        #expect(Set(report.items.map(\.source)) == ["IMG_1.jpg", "IMG_1.JPG"])
        #expect(report.items.flatMap { $0.outputs?.map(\.file) ?? [] } == ["IMG_1.jpg", "IMG_1-2.jpg"])
        #expect(outputs(layout, opened.id) == ["IMG_1-2.jpg", "IMG_1.jpg"])
        #expect(report.items.allSatisfy { $0.status == .ok })
    }

    @Test func aTaskStartedAndNeverDoneCountsAsAStartOfItsPhoto() async throws {
        let layout = try hotFolder()
        try drop(["1.jpg", "2.jpg", "3.jpg"], into: layout)
        let opened = try #require(try Claim.claim(["1.jpg", "2.jpg", "3.jpg"], layout: layout, inbox: "shop",
                                                  template: .builtIn, order: .name, locks: locks, open: true).batch)
        // Two daemons were killed while 1.jpg was finished early, one while 2.jpg was.
        try EarlyJournal.started(1, source: "1.jpg", to: opened.journals)
        try EarlyJournal.started(1, source: "1.jpg", to: opened.journals)
        try EarlyJournal.started(2, source: "2.jpg", to: opened.journals)
        let lines = Lines()
        let report = try await finish(opened, log: lines.logger)
        #expect(report.items[0].status == .failed && report.items[0].error?.message.hasPrefix("stopped the finisher twice") == true)
        #expect(report.items[1].status == .ok && report.items[2].status == .ok)
        #expect(lines.all.contains { $0.contains("photo 2 was being finished when the daemon stopped: it is done again, alone") })
    }

    @Test func theTaskQueueHandsEachTaskOnceAndAClosedBatchWaitsForItsRunningTasks() async throws {
        let queue = MemoryTaskQueue()
        let tasks = (1...3).map { OpenPhotoTask(id: PhotoTaskID(inbox: "shop", batch: "b", photo: $0), source: FileName("\($0).jpg")!,
                                                folder: "/x") }
        try queue.add(tasks)
        let first = await queue.take()
        #expect(first?.id.photo == 1)
        let closed = Atomic<Bool>(false)
        queue.close(inbox: "shop", batch: "b")
        let closer = Task {
            await queue.drained(inbox: "shop", batch: "b")
            closed.store(true, ordering: .relaxed)
        }
        // The untaken tasks are withdrawn; the close waits for the one running.
        for _ in 0..<200 { await Task.yield() }
        let early = closed.load(ordering: .relaxed)
        #expect(!early)
        queue.complete(first!, item: EarlyItem(stem: "1", item: Report.Item(index: 1, source: "1.jpg", status: .ok)))
        await closer.value
        let late = closed.load(ordering: .relaxed)
        #expect(late)
        try queue.add([OpenPhotoTask(id: PhotoTaskID(inbox: "shop", batch: "b", photo: 4), source: "4.jpg", folder: "/x")])
        #expect(queue.waiting == 0, "a closed batch takes no task")
        let taker = Task { await queue.take() }
        queue.stop()
        #expect(await taker.value == nil)
    }
}
