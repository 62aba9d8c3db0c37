import Batches
import Codecs
import Foundation
@testable import HotFolders
import Pixels
import Synchronization
import System
import Testing

/// A published batch's clean-up on a share that answers EBUSY for a moment after a file is
/// closed (smbnetfs: SMB keeps the handle a while): the removal is tried again within a second;
/// when it still fails, the batch is finished and announced all the same, once, and recovery
/// removes what is left, saying so in one line — never announcing it again.
@Suite(.serialized) struct CleanUpTests {
    /// A removal that answers EBUSY for `name` the first `times` times, and records its waits.
    final class BusyShare: Sendable {
        let name: FileName
        let times: Int
        private let state = Locked<(tries: Int, waits: [Duration])>((0, []))

        /// Its locks (one service's), whose removals go through it.
        let locks: BatchLocks

        init(_ name: FileName, times: Int = .max) {
            self.name = name
            self.times = times
            let state = state
            locks = BatchLocks(removal: BatchLocks.Removal(remove: { folder, entry throws(SystemError) in
                if entry == name {
                    state.update { $0.tries += 1 }
                    if state.value.tries <= times { throw SystemError("remove", folder.path.appending(entry).description, errno: EBUSY) }
                }
                try folder.removeTree(entry)
            }, pause: { wait in state.update { $0.waits.append(wait) } }))
        }

        var waits: [Duration] { state.value.waits }
    }

    /// Lines the code under test logs.
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var logger: Logger { Logger { _, message, _ in self.lines.withLock { $0.append(message) } } }
        var all: [String] { lines.withLock { $0 } }
    }

    func hotFolder() throws -> HotFolderLayout {
        let layout = HotFolderLayout(root: TemporaryFolder.path("cleanup"))
        try layout.create()
        for n in 0..<2 {
            let image = Canvas(width: 40 + n, height: 30, channels: 3, fill: [90, 110, UInt8(140 + n)])
            try Data(try encodeImage(image.finished(), options: EncodeOptions(format: .jpeg, quality: 80)))
                .write(to: URL(fileURLWithPath: layout.drop + "/p\(n).jpg"))
        }
        return layout
    }

    /// `names` claimed from the hot folder's drop/ with the locks of `share`.
    func claim(_ names: [FileName], _ layout: HotFolderLayout, on share: BusyShare) throws -> ClaimedBatch {
        try #require(try Claim.claim(names, layout: layout, inbox: "shop", template: .builtIn, order: .name, locks: share.locks).batch)
    }

    func finish(_ batch: ClaimedBatch, announced: Locked<Int>, log: Logger = .silent) async throws -> BatchWork.Outcome {
        var limits = BatchLimits()
        limits.workers = 1
        return try await BatchWork.finish(batch, limits: limits, stop: StopRequest(), log: log, announce: { _ in
            announced.update { $0 += 1 }
        })
    }

    @Test func aLockTheShareHoldsForAMomentIsRemovedOnceItLetsGo() throws {
        let layout = try hotFolder()
        let share = BusyShare(BatchLock.fileName, times: 3)
        let locks = share.locks
        let batch = try claim(["p0.jpg"], layout, on: share)
        try locks.removeFolder(batch.folder, lock: batch.lock)
        #expect(!FileManager.default.fileExists(atPath: batch.folder))
        #expect(share.waits == [.milliseconds(10), .milliseconds(20), .milliseconds(40)])
    }

    @Test func aLockStillBusyAfterTheTriesIsLeftAndSaid() throws {
        let layout = try hotFolder()
        let share = BusyShare(BatchLock.fileName)
        let locks = share.locks
        let batch = try claim(["p0.jpg"], layout, on: share)
        #expect(throws: SystemError.self) { try locks.removeFolder(batch.folder, lock: batch.lock) }
        #expect(share.waits.count == 7 && share.waits.reduce(.zero, +) == .milliseconds(710), "bounded: \(share.waits)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: batch.folder) == ["lock"])
    }

    /// EBUSY on the lock for good: the batch is published and announced once; its work folder,
    /// left with its lock alone, is removed by recovery, which says so and announces nothing.
    @Test func aBatchWhoseLockStaysBusyIsAnnouncedOnceAndRecoveryRemovesItsFolder() async throws {
        let layout = try hotFolder()
        let share = BusyShare(BatchLock.fileName)
        let batch = try claim(["p0.jpg", "p1.jpg"], layout, on: share)
        let announced = Locked(0)
        guard case .finished(let report, let left, let cleanUp) = try await finish(batch, announced: announced) else {
            Issue.record("not finished")
            return
        }
        #expect(report.counts.ok == 2 && left.isEmpty)
        #expect(cleanUp?.code == EBUSY, "\(String(describing: cleanUp))")
        #expect(announced.value == 1)
        #expect(FileManager.default.fileExists(atPath: layout.out + "/" + batch.id + "/report.json"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: batch.folder) == ["lock"])

        let lines = Lines()
        let found = Recovery.run(layout: layout, staleAfter: .seconds(86_400), locks: BatchLocks(), log: lines.logger)
        #expect(found.resumable.isEmpty && found.removed.map(\.escaped) == [batch.id])
        #expect(!FileManager.default.fileExists(atPath: batch.folder))
        #expect(lines.all == ["\(batch.id): removed the work folder of batch \(batch.id), finished and announced, left when it could not be removed"]
                || lines.all == ["removed the work folder of batch \(batch.id), finished and announced, left when it could not be removed"],
                "\(lines.all)")
    }

    /// EBUSY on the journal for good (the manifest stays): recovery resumes the batch, which
    /// only cleans up — announced once in all, as its journal says; and a batch published but
    /// never announced (its journal without the line: a stop came in between) is announced by
    /// the run that finds it.
    @Test func aPublishedBatchIsAnnouncedExactlyOnceWhateverRunFindsIt() async throws {
        let layout = try hotFolder()
        let share = BusyShare(ProgressJournal.entryName)
        let batch = try claim(["p0.jpg", "p1.jpg"], layout, on: share)
        let announced = Locked(0)
        guard case .finished(_, _, let cleanUp) = try await finish(batch, announced: announced) else {
            Issue.record("not finished")
            return
        }
        #expect(cleanUp?.code == EBUSY && announced.value == 1)
        let journal = batch.folder + "/" + ProgressJournal.fileName
        #expect(try String(contentsOfFile: journal, encoding: .utf8).contains("{\"stage\":\"finished\"}"))

        // A second run (recovery's): cleans up, announces nothing.
        let locks = BatchLocks()
        let lines = Lines()
        let resumed = try #require(Recovery.run(layout: layout, staleAfter: .seconds(86_400), locks: locks, log: lines.logger).resumable.first)
        #expect(lines.all.contains { $0.hasSuffix("batch \(batch.id) is finished; cleaning up what its run could not (its sources' filing, its work folder)") },
                "\(lines.all)")
        guard case .filing(let left, nil) = try await finish(resumed, announced: announced) else {
            Issue.record("not cleaned up")
            return
        }
        #expect(left.isEmpty && announced.value == 1)
        #expect(!FileManager.default.fileExists(atPath: batch.folder))
    }

    @Test func aBatchPublishedButNotAnnouncedIsAnnouncedByTheRunThatFindsIt() async throws {
        let layout = try hotFolder()
        let share = BusyShare(ProgressJournal.entryName)
        let batch = try claim(["p0.jpg"], layout, on: share)
        let announced = Locked(0)
        _ = try await finish(batch, announced: announced)
        // As if the daemon had stopped between the publishing and the announcement.
        let journal = batch.folder + "/" + ProgressJournal.fileName
        let text = try String(contentsOfFile: journal, encoding: .utf8)
        try text.replacingOccurrences(of: "{\"stage\":\"finished\"}\n", with: "").write(toFile: journal, atomically: true, encoding: .utf8)
        batch.lock.release()
        let resumed = try #require(Recovery.run(layout: layout, staleAfter: .seconds(86_400), locks: BatchLocks(), log: .silent).resumable.first)
        guard case .finished(let report, _, nil) = try await finish(resumed, announced: announced) else {
            Issue.record("not announced")
            return
        }
        #expect(report.counts.ok == 1 && announced.value == 2)
        #expect(!FileManager.default.fileExists(atPath: batch.folder))
    }
}
