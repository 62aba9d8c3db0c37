import Batches
import Codecs
import Finishing
import Foundation
import HotFolders
import Pixels
import Synchronization
import System
import Testing

/// One bad file is one failed item; a changed source is never filed as the original; a photo
/// that stops the finisher twice is failed; claims work with every claim primitive (SPEC §7).
/// On real temporary folders, with real (small) photos.
@Suite(.serialized) struct DurabilityTests {
    /// The batch locks of this test, as one service holds them.
    let locks = BatchLocks()

    func hotFolder() throws -> HotFolderLayout {
        let layout = HotFolderLayout(root: TemporaryFolder.path("durable"))
        try layout.create()
        return layout
    }

    func photo(_ seed: Int) throws -> [UInt8] {
        let image = Canvas(width: 48 + seed, height: 32, channels: 3, fill: [UInt8(40 * seed % 256), 120, 200])
        return try encodeImage(image.finished(), options: EncodeOptions(format: .jpeg, quality: 80))
    }

    func drop(_ names: [String], into layout: HotFolderLayout) throws -> [String: [UInt8]] {
        var dropped: [String: [UInt8]] = [:]
        for (i, name) in names.enumerated() {
            dropped[name] = try photo(i)
            try Data(dropped[name]!).write(to: URL(fileURLWithPath: layout.drop + "/" + name))
        }
        return dropped
    }

    func claim(_ names: [FileName], _ layout: HotFolderLayout, mover: Mover = Mover(.renameNoReplace)) throws -> ClaimedBatch {
        try #require(try Claim.claim(names, layout: layout, inbox: "shop", template: .builtIn, order: .name, locks: locks, mover: mover).batch)
    }

    /// Lines the code under test logs, for checking what it said.
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var logger: Logger { Logger { _, message, _ in self.lines.withLock { $0.append(message) } } }
        var all: [String] { lines.withLock { $0 } }
    }

    func finish(_ batch: ClaimedBatch, log: Logger = .silent) async throws -> (Report?, [String]) {
        var limits = BatchLimits()
        limits.workers = 2
        switch try await BatchWork.finish(batch, limits: limits, stop: StopRequest(), log: log) {
        case .finished(let report, let left, let cleanUp): return (report, left + (cleanUp.map { ["clean-up: \($0)"] } ?? []))
        case .filing(let left, let cleanUp): return (nil, left + (cleanUp.map { ["clean-up: \($0)"] } ?? []))
        case .interrupted: return (nil, ["interrupted"])
        case .givenBack(let error): return (nil, ["given back: \(error)"])
        }
    }

    func outputs(_ layout: HotFolderLayout, _ id: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: layout.out + "/" + id)) ?? []).filter { $0.hasSuffix(".jpg") }.sorted()
    }

    @Test func aSourceChangedSinceItsClaimFailsAndIsNeverFiledAsTheOriginal() async throws {
        let layout = try hotFolder()
        let dropped = try drop(["a.jpg", "b.jpg"], into: layout)
        let batch = try claim(["a.jpg", "b.jpg"], layout)
        #expect(batch.manifest.items.map(\.bytes) == [dropped["a.jpg"]!.count, dropped["b.jpg"]!.count])
        // A power cut emptied b.jpg after the claim (as a client that never synced would see it).
        #expect(truncate(batch.folder + "/src/b.jpg", 0) == 0)
        let (report, left) = try await finish(batch)
        let items = try #require(report?.items)
        #expect(left.isEmpty)
        #expect(items[0].status == .ok && items[0].original == "originals/\(batch.id)/a.jpg")
        #expect(items[1].status == .failed && items[1].error?.code == "io-error")
        #expect(items[1].error?.message.contains("changed since it was claimed") == true, "\(items[1].error?.message ?? "")")
        #expect(items[1].original == "failed/\(batch.id)/b.jpg")
        #expect(!FileManager.default.fileExists(atPath: layout.originals + "/\(batch.id)/b.jpg"))
        #expect(FileManager.default.fileExists(atPath: layout.failed + "/\(batch.id)/b.jpg"))
        #expect(outputs(layout, batch.id) == ["a.jpg"], "a failed photo leaves no outputs")
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.work).isEmpty)
    }

    @Test func aPhotoThatStoppedTheFinisherTwiceIsFailedAndOneThatStoppedItOnceIsDoneAgain() async throws {
        let layout = try hotFolder()
        _ = try drop(["1.jpg", "2.jpg", "3.jpg"], into: layout)
        let batch = try claim(["1.jpg", "2.jpg", "3.jpg"], layout)
        // Two earlier runs were killed while photo 1 was being finished; photo 2 was in
        // flight beside it the second time.
        try ProgressJournal.started(1, to: batch.journals)
        try ProgressJournal.started(1, to: batch.journals)
        try ProgressJournal.started(2, to: batch.journals)
        let lines = Lines()
        let (report, _) = try await finish(batch, log: lines.logger)
        let items = try #require(report?.items)
        #expect(items[0].status == .failed && items[0].error?.code == "corrupt-image")
        #expect(items[0].error?.message.hasPrefix("stopped the finisher twice") == true)
        #expect(items[0].original == "failed/\(batch.id)/1.jpg")
        #expect(items[1].status == .ok && items[2].status == .ok)
        #expect(lines.all.contains { $0.contains("photo 2 was being finished when the daemon stopped: it is done again, alone") })
        #expect(outputs(layout, batch.id) == ["2.jpg", "3.jpg"])
    }

    @Test func aJournaledPhotoWhoseFilesAPowerCutTookIsDoneAgain() async throws {
        let layout = try hotFolder()
        _ = try drop(["a.jpg", "b.jpg", "c.jpg"], into: layout)
        let batch = try claim(["a.jpg", "b.jpg", "c.jpg"], layout)
        // A first run stopped once two photos were journaled as finished (one worker: the stop
        // asked after the first reaches the run as the second is journaled).
        var limits = BatchLimits()
        limits.workers = 1
        let stop = StopRequest()
        let first = try await BatchWork.finish(batch, limits: limits, stop: stop, log: .silent) { done, _ in
            if done == 1 { stop.request() }
        }
        guard case .interrupted = first else { Issue.record("not interrupted: \(first)"); return }
        let staged = batch.folder + "/out"
        let journal = try ProgressJournal.read(folder: batch.folder)
        let a = try #require(journal.finished[1]), b = try #require(journal.finished[2])
        // The power cut: their names were not synced (their bytes were); a's output is gone,
        // b's thumbnail too.
        let output = try #require(a.outputs?.first?.file), thumbnail = try #require(b.thumbnail)
        try Files.remove(staged + "/" + output)
        try Files.remove(staged + "/" + thumbnail)
        let lines = Lines()
        let (report, left) = try await finish(batch, log: lines.logger)
        let items = try #require(report?.items)
        #expect(left.isEmpty)
        #expect(items.map(\.status) == [.ok, .ok, .ok])
        for item in items {
            for out in item.outputs ?? [] {
                #expect(try Files.status(layout.out + "/\(batch.id)/" + out.file)?.size == Int64(out.bytes), "\(out.file)")
            }
            #expect(Files.exists(layout.out + "/\(batch.id)/" + (item.thumbnail ?? "none")), "\(item.source)")
        }
        #expect(lines.all.contains { $0.contains("photo 1's outputs are not all there") }, "\(lines.all)")
        #expect(lines.all.contains { $0.contains("photo 2's outputs are not all there") }, "\(lines.all)")
        // Not counted as a crash of the finisher: never "done again, alone".
        #expect(!lines.all.contains { $0.contains("alone") }, "\(lines.all)")
        #expect(outputs(layout, batch.id) == ["a.jpg", "b.jpg", "c.jpg"])
    }

    @Test func theJournalMarksEachPhotoStartedBeforeItsWork() async throws {
        let layout = try hotFolder()
        _ = try drop(["x.jpg", "y.jpg"], into: layout)
        let batch = try claim(["x.jpg", "y.jpg"], layout)
        // Keep the work folder's journal: a copy is taken before the batch is cleaned up.
        let journalPath = batch.folder + "/journal"
        let copied = Mutex<[UInt8]?>(nil)
        var limits = BatchLimits()
        limits.workers = 1
        _ = try await BatchWork.finish(batch, limits: limits, stop: StopRequest(), log: .silent) { done, total in
            if done == total { copied.withLock { $0 = try? Files.read(journalPath) } }
        }
        let text = String(decoding: try #require(copied.withLock { $0 }), as: UTF8.self)
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first == "{\"started\":1}", "\(lines)")
        #expect(lines.filter { $0.hasPrefix("{\"started\"") } == ["{\"started\":1}", "{\"started\":2}"])
        #expect(lines.count == 4)  // two starts, two items
    }

    @Test(arguments: [Mover.Method.renameNoReplace, .renameAndLink, .renameChecked])
    func everyClaimPrimitiveClaimsFinishesAndFiles(_ method: Mover.Method) async throws {
        let layout = try hotFolder()
        let dropped = try drop(["p.jpg", "q.jpg"], into: layout)
        let batch = try claim(["p.jpg", "q.jpg", "gone.jpg"], layout, mover: Mover(method))
        #expect(batch.manifest.items.map(\.name) == ["p.jpg", "q.jpg"])
        let (report, _) = try await finish(batch)
        #expect(report?.status == .complete)
        for name in ["p.jpg", "q.jpg"] {
            #expect(try Data(contentsOf: URL(fileURLWithPath: layout.originals + "/\(batch.id)/\(name)")) == Data(dropped[name]!))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.work).isEmpty)
    }

    @Test func recoveryFinishesAMoveALinkLeftHalfDoneAndRemovesHalfMadeClaims() throws {
        let layout = try hotFolder()
        // A rolled-back claim that died between link() and unlink(): b.jpg is in drop/ and in src/.
        let dead = layout.work + "/20261129-101010-dead"
        try FileManager.default.createDirectory(atPath: dead + "/src", withIntermediateDirectories: true)
        try Data("b".utf8).write(to: URL(fileURLWithPath: dead + "/src/b.jpg"))
        #expect(link(dead + "/src/b.jpg", layout.drop + "/b.jpg") == 0)
        // A batch folder whose making was cut short, an hour ago.
        let half = layout.work + "/.new-20261129-101011-beef"
        try FileManager.default.createDirectory(atPath: half, withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: half + "/lock"))
        var old = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, half, &old, 0) == 0)
        let result = Recovery.run(layout: layout, staleAfter: .seconds(86_400), locks: locks, mover: Mover(.renameAndLink), log: .silent)
        #expect(result.returned == ["b.jpg"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.drop) == ["b.jpg"])
        var st = stat()
        #expect(stat(layout.drop + "/b.jpg", &st) == 0 && st.st_nlink == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.work).isEmpty)
    }

    // MARK: - Files the daemon cannot move (chattr +i: refused even to root)

    func immutable(_ path: String, _ on: Bool) throws -> Bool {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
        p.arguments = [on ? "+i" : "-i", path]
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        return p.terminationStatus == 0
    }

    @Test func aFileThatCannotBeMovedOutOfDropIsRefusedAndTheOthersAreClaimed() throws {
        let layout = try hotFolder()
        _ = try drop(["stuck.jpg", "fine.jpg"], into: layout)
        guard getuid() == 0, try immutable(layout.drop + "/stuck.jpg", true) else {
            print("skipped: needs root and chattr on a file system with the immutable flag")
            return
        }
        defer { _ = try? immutable(layout.drop + "/stuck.jpg", false) }
        let outcome = try Claim.claim(["stuck.jpg", "fine.jpg"], layout: layout, inbox: "shop", template: .builtIn, order: .name, locks: locks)
        #expect(outcome.batch?.manifest.items.map(\.name) == ["fine.jpg"])
        #expect(outcome.refused.map(\.name) == ["stuck.jpg"])
        #expect(outcome.refused.first?.error.code == EPERM)
        #expect(FileManager.default.fileExists(atPath: layout.drop + "/stuck.jpg"))
    }

    @Test func anOriginalThatCannotBeFiledFailsItsPhotoAndWaitsUntilItCanBe() async throws {
        let layout = try hotFolder()
        _ = try drop(["k.jpg", "m.jpg"], into: layout)
        let batch = try claim(["k.jpg", "m.jpg"], layout)
        // originals/ and failed/ refuse new names (a broken share, permissions gone wrong).
        try FileManager.default.createDirectory(atPath: layout.originals + "/" + batch.id, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: layout.failed + "/" + batch.id, withIntermediateDirectories: true)
        guard getuid() == 0, try immutable(layout.originals + "/" + batch.id, true) else {
            print("skipped: needs root and chattr on a file system with the immutable flag")
            return
        }
        #expect(try immutable(layout.failed + "/" + batch.id, true))
        let (report, left) = try await finish(batch)
        let items = try #require(report?.items)
        for item in items {
            #expect(item.status == .failed && item.error?.code == "io-error", "\(item)")
            #expect(item.error?.message.contains("could not be filed in originals/") == true)
            #expect(item.original == ".work/\(batch.id)/src/\(item.source)")
        }
        #expect(left.count == 2)
        #expect(outputs(layout, batch.id).isEmpty, "the failed photos' outputs are removed")
        #expect(FileManager.default.fileExists(atPath: batch.folder + "/src/k.jpg"), "the source is kept")
        // Once the folders take names again, the next recovery files them and the batch is done.
        #expect(try immutable(layout.originals + "/" + batch.id, false))
        #expect(try immutable(layout.failed + "/" + batch.id, false))
        let id = batch.id
        _ = consume batch
        let again = Recovery.run(layout: layout, staleAfter: .seconds(86_400), locks: locks, log: .silent)
        let resumed = try #require(again.resumable.first)
        let (_, stillLeft) = try await finish(resumed)
        #expect(stillLeft.isEmpty)
        #expect(FileManager.default.fileExists(atPath: layout.failed + "/\(id)/k.jpg"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.work).isEmpty)
    }

    // MARK: - Locks that another machine holds (flock does not reach it on every share)

    /// A claimed batch, let go, whose lock file then says `owner` held it.
    func batch(heldBy owner: String, _ layout: HotFolderLayout) throws -> String {
        _ = try drop(["h.jpg"], into: layout)
        let folder = try claim(["h.jpg"], layout).folder  // the lock is let go with the value
        try Data(owner.utf8).write(to: URL(fileURLWithPath: folder + "/lock"))
        return folder
    }

    @Test func aBatchHeldFromAnotherMachineIsTakenOnlyOnceItsLeaseStopsBeingRenewed() throws {
        let layout = try hotFolder()
        let folder = try batch(heldBy: "host=elsewhere/0123\nboot=not-this-kernel\npid=42\n", layout)
        func recover() -> [ClaimedBatch] {
            Recovery.run(layout: layout, staleAfter: .seconds(86_400), locks: locks, leaseTimeout: .milliseconds(300), log: .silent).resumable
        }
        #expect(recover().isEmpty, "first seen: the other machine may be working on it")
        // The owner renews its lease (touches the file): still its.
        var later = [timespec(tv_sec: time(nil) + 5, tv_nsec: 0), timespec(tv_sec: time(nil) + 5, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, folder + "/lock", &later, 0) == 0)
        #expect(recover().isEmpty, "renewed: still held")
        // No renewal for the lease's time: the owner is gone; the batch is resumed here.
        var taken: [ClaimedBatch] = []
        #expect(Poll.until(.seconds(20)) { taken = recover(); return !taken.isEmpty })
        #expect(taken.first?.folder == folder)
        // And the lock file now names this machine.
        let text = try String(contentsOfFile: folder + "/lock", encoding: .utf8)
        #expect(text.contains("pid=\(getpid())") && !text.contains("elsewhere"))
    }

    /// The adoption of a dead cluster claimer's batch (`takeOver`) while another host's recovery
    /// holds the batch's `flock` for its instant's look (the CI failure of stop 31: the adoption
    /// was refused, and the photos dropped after the death went into a second batch).
    @Test func aTakeOverWaitsOutAnotherProcesssLookButNotAHolder() throws {
        let layout = try hotFolder()
        let dead = "host=elsewhere/0123\nboot=not-this-kernel\npid=42\n"
        let folder = try batch(heldBy: dead, layout)
        // Another open file description's lock, as another process's look takes it.
        func lockElsewhere() -> Int32 {
            let fd = open(folder + "/lock", O_RDWR | O_CLOEXEC)
            #expect(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
            return fd
        }
        // Held for good (a live holder): refused, once the wait for an instant is over.
        let held = lockElsewhere()
        let start = ContinuousClock.now
        #expect(locks.takeOver(folder, from: dead) == nil)
        #expect(ContinuousClock.now - start >= BatchLock.heldForAnInstant)
        close(held)
        // Not the dead holder's words (another took it over meanwhile): refused at once.
        #expect(locks.takeOver(folder, from: "host=other/1\nboot=b\npid=7\n") == nil)
        // Held for 300 ms by a look: taken once the look lets go.
        let look = lockElsewhere()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { close(look) }
        let lock = locks.takeOver(folder, from: dead)
        #expect(lock?.takenFrom == "elsewhere")
        let text = try String(contentsOfFile: folder + "/lock", encoding: .utf8)
        #expect(text.contains("pid=\(getpid())") && !text.contains("elsewhere"))
        lock?.release()
    }

    @Test func aBatchThisMachineHeldBeforeARebootIsTakenAtOnce() throws {
        let layout = try hotFolder()
        let folder = try batch(heldBy: "", layout)
        let ours = try String(contentsOfFile: folder + "/lock", encoding: .utf8)
        #expect(ours.isEmpty)
        // Written by this process when it claimed: host=<this machine>; make it an older boot.
        let host = BatchLockProbe.host()
        try Data("host=\(host)\nboot=an-earlier-boot\npid=1\n".utf8).write(to: URL(fileURLWithPath: folder + "/lock"))
        let resumed = Recovery.run(layout: layout, staleAfter: .seconds(86_400), locks: locks, log: .silent).resumable
        #expect(resumed.map(\.folder) == [folder])
    }
}

/// This machine's name as the lock file writes it (taken from a lock this test makes).
enum BatchLockProbe {
    static func host() -> String {
        let dir = TemporaryFolder.path("lockprobe")
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        guard let lock = BatchLocks().tryAcquire(dir) else { return "?" }
        let text = (try? String(contentsOfFile: dir + "/lock", encoding: .utf8)) ?? ""
        _ = lock
        let line = text.split(separator: "\n").first { $0.hasPrefix("host=") } ?? ""
        return String(line.dropFirst("host=".count))
    }
}

