import Batches
import Finishing
import Foundation
import System
import HotFolders
import Synchronization
import Testing

/// Claims and recovery on real temporary folders (no daemon, no photos decoded).
struct ClaimTests {
    /// The batch locks of this test, as one service holds them.
    let locks = BatchLocks()

    func hotFolder() throws -> HotFolderLayout {
        let root = TemporaryFolder.path("claim")
        let layout = HotFolderLayout(root: root)
        try layout.create()
        return layout
    }

    func write(_ text: String, _ path: String) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    }

    @Test func aClaimMovesTheFilesAndWritesADurableManifestInOrder() throws {
        let layout = try hotFolder()
        for name in ["IMG_10.jpg", "IMG_2.jpg", "IMG_1.jpg"] { try write(name, layout.drop + "/" + name) }
        let batch = try #require(try Claim.claim(["IMG_10.jpg", "IMG_2.jpg", "IMG_1.jpg", "gone.jpg"], layout: layout,
                                                 inbox: "shop", template: .builtIn, order: .name, locks: locks).batch)
        #expect(batch.manifest.items.map(\.name) == ["IMG_1.jpg", "IMG_2.jpg", "IMG_10.jpg"])
        #expect(batch.manifest.items[0].sha256 == SHA256.hex(of: Array("IMG_1.jpg".utf8)))
        #expect(batch.manifest.items[0].bytes == 9)
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.drop).isEmpty)
        #expect(try Manifest.read(fromFolder: batch.folder) == batch.manifest)
        #expect(BatchID.isValid(batch.id))
    }

    /// Where a renamed folder's files keep its old name (rclone mount), the batch folder is
    /// renamed into place with no file in it: its lock is made again after the rename, held,
    /// and says who holds it; no `.new-` folder is left.
    @Test func aClaimWhereFoldersAreRenamedEmptyHoldsItsLockAfterTheRename() throws {
        let layout = try hotFolder()
        try write("a", layout.drop + "/a.jpg")
        let mover = Mover(.renameChecked, renamesOpenFiles: false, renamesFullFolders: false)
        let batch = try #require(try Claim.claim(["a.jpg"], layout: layout, inbox: "shop", template: .builtIn,
                                                 order: .name, locks: locks, mover: mover).batch)
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.work) == [batch.id])
        let said = try String(contentsOfFile: batch.folder + "/lock", encoding: .utf8)
        #expect(said.hasPrefix("host="), "\(said)")
        #expect(locks.tryAcquire(batch.folder) == nil, "the claim holds its lock")
        #expect(batch.manifest.items.map(\.name) == ["a.jpg"])
    }

    @Test func theClaimTakesOnlyWhatTheTakeableRuleTakes() throws {
        let layout = try hotFolder()
        try write("a", layout.drop + "/a.jpg")
        try write("partial", layout.drop + "/b.jpg.part")
        try write("linked", layout.drop + "/c.jpg")
        try FileManager.default.linkItem(atPath: layout.drop + "/c.jpg", toPath: layout.root + "/c-elsewhere.jpg")
        let batch = try #require(try Claim.claim(["a.jpg", "b.jpg.part", "c.jpg"], layout: layout, inbox: "shop",
                                                 template: .builtIn, order: .name, locks: locks).batch)
        #expect(batch.manifest.items.map(\.name) == ["a.jpg"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.drop).sorted() == ["b.jpg.part", "c.jpg"])
        let st = try #require(try Files.status(FilePath(layout.drop).appending("c.jpg")))
        #expect(Takeable.refusal("c.jpg", st) == .hardLinked(links: 2))
        #expect(Takeable.refusal("b.jpg.part", st) == .ignoredName)
    }

    @Test func aFileClaimedByAnotherDaemonIsSkippedAndNothingLeftBehind() throws {
        let layout = try hotFolder()
        // Another daemon took it between our scan and our claim: the rename finds nothing.
        let outcome = try Claim.claim(["taken.jpg"], layout: layout, inbox: "shop", template: .builtIn, order: .name, locks: locks)
        #expect(outcome.batch == nil && outcome.refused.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.work).isEmpty)
    }

    @Test func recoveryLeavesALiveBatchAloneAndRollsBackAnUnfinishedClaim() throws {
        let layout = try hotFolder()
        try write("a", layout.drop + "/a.jpg")
        var owner: ClaimedBatch? = try Claim.claim(["a.jpg"], layout: layout, inbox: "shop", template: .builtIn, order: .name, locks: locks).batch
        let live = try #require(owner)
        let id = live.id
        do {
            // Its lock is held (by `live`): recovery must not take it.
            let first = Recovery.run(layout: layout, staleAfter: .seconds(86_400), locks: locks, log: .silent)
            #expect(first.resumable.isEmpty && first.returned.isEmpty)
            #expect(FileManager.default.fileExists(atPath: live.folder + "/src/a.jpg"))

            // A claim that crashed before its manifest: no lock holder, no manifest.
            let dead = layout.work + "/20261129-101010-dead"
            try FileManager.default.createDirectory(atPath: dead + "/src", withIntermediateDirectories: true)
            try write("b", dead + "/src/b.jpg")
            try write("c, dropped again since", layout.drop + "/b.jpg")
            let second = Recovery.run(layout: layout, staleAfter: .seconds(86_400), locks: locks, log: .silent)
            #expect(second.resumable.isEmpty)
            #expect(second.returned == ["b-recovered-1.jpg"])
            #expect(!FileManager.default.fileExists(atPath: dead))
            #expect(try String(contentsOfFile: layout.drop + "/b.jpg", encoding: .utf8) == "c, dropped again since")
            #expect(try String(contentsOfFile: layout.drop + "/b-recovered-1.jpg", encoding: .utf8) == "b")
        }
        // Once its owner lets go, the batch is resumable (it has a manifest).
        owner = nil
        _ = consume live
        let third = Recovery.run(layout: layout, staleAfter: .seconds(86_400), locks: locks, log: .silent)
        #expect(third.resumable.map(\.id) == [id])
    }

    /// `.work/shares/` (the share links' key and records) is the hot folder's own, however old:
    /// recovery never sweeps it as a leftover.
    @Test func recoveryKeepsTheShareLinks() throws {
        let layout = try hotFolder()
        let shares = layout.work + "/" + Recovery.shares
        try FileManager.default.createDirectory(atPath: shares, withIntermediateDirectories: true)
        try write("0123456789abcdef0123456789abcdef", shares + "/key")
        let old = Date(timeIntervalSinceNow: -30 * 86_400)
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: shares + "/key")
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: shares)
        let found = Recovery.run(layout: layout, staleAfter: .seconds(86_400), locks: locks, log: .silent)
        #expect(found.removed.isEmpty)
        #expect(FileManager.default.fileExists(atPath: shares + "/key"))
    }

    /// A manifest that is there but does not decode is the batch's data, not a system call's
    /// failure: the error names the file and what is wrong, and recovery leaves the batch where
    /// it is (as it always did), saying why.
    @Test func aManifestThatDoesNotDecodeIsADataErrorNamingTheFile() throws {
        let layout = try hotFolder()
        try write("a", layout.drop + "/a.jpg")
        let folder: String
        do {
            let batch = try #require(try Claim.claim(["a.jpg"], layout: layout, inbox: "shop", template: .builtIn,
                                                     order: .name, locks: locks).batch)
            folder = batch.folder
        }
        let path = folder + "/" + Manifest.fileName
        try write(#"{ "version": 1, "batch": 3 }"#, path)
        do {
            _ = try Manifest.read(fromFolder: folder)
            Issue.record("a manifest that does not decode was read")
        } catch {
            guard case .data(let data) = error else { Issue.record("not a data error: \(error)"); return }
            #expect(data.problem == .manifest)
            #expect(data.file == path)
            #expect(data.reason.hasPrefix("batch: "), "\(data.reason)")
            #expect(error.description.hasPrefix("cannot decode \(path): batch: "), "\(error)")
        }
        // Cut short (not JSON at all): the same, in the decoder's words.
        try write(#"{ "version": 1, "bat"#, path)
        #expect {
            _ = try Manifest.read(fromFolder: folder)
        } throws: { error in
            guard case .data(let data) = error as? BatchError else { return false }
            return data.problem == .manifest && data.file == path && !data.reason.isEmpty
        }
        let lines = Mutex<[String]>([])
        let log = Logger { _, message, _ in lines.withLock { $0.append(message) } }
        let found = Recovery.run(layout: layout, staleAfter: .seconds(86_400), locks: locks, log: log)
        #expect(found.resumable.isEmpty && found.returned.isEmpty)
        #expect(FileManager.default.fileExists(atPath: folder + "/src/a.jpg"))
        #expect(lines.withLock { $0 }.contains { $0.hasPrefix("cannot recover batch ") && $0.contains(path) }, "\(lines.withLock { $0 })")
    }

    /// The template stored with a batch that no longer validates is the batch's data too: the
    /// batch is not finished, the error names its manifest and the template's own error.
    @Test func aStoredTemplateThatNoLongerValidatesIsADataError() async throws {
        let layout = try hotFolder()
        try write("a", layout.drop + "/a.jpg")
        var batch = try #require(try Claim.claim(["a.jpg"], layout: layout, inbox: "shop", template: .builtIn,
                                                 order: .name, locks: locks).batch)
        batch.manifest.template.text = "{ version: 1, resize: { longSide: -3 } }"
        batch.manifest.template.file = nil
        do {
            _ = try await BatchWork.finish(batch, limits: BatchLimits(), stop: StopRequest(), log: .silent)
            Issue.record("a batch with a template that does not validate was finished")
        } catch {
            guard case .data(let data) = error else { Issue.record("not a data error: \(error)"); return }
            #expect(data.problem == .template)
            #expect(data.file == batch.folder + "/" + Manifest.fileName)
            #expect(data.reason.contains("longSide"), "\(data.reason)")
        }
        #expect(FileManager.default.fileExists(atPath: batch.folder + "/src/a.jpg"))
        #expect(!FileManager.default.fileExists(atPath: layout.out + "/" + batch.id))
    }

    /// A batch whose folder is being removed (it finished) while recovery runs over and over
    /// (every rescan; on a share every lease look) is never "rolled back": recovery cannot take
    /// its lock in the instant between letting it go and removing it, and a folder found with
    /// nothing in it is removed without a word.
    @Test func aFinishedBatchBeingRemovedIsNeverRolledBackByARecoveryRacingIt() throws {
        let layout = try hotFolder()
        let lines = Mutex<[String]>([])
        let log = Logger { _, message, _ in lines.withLock { $0.append(message) } }
        let done = Atomic<Bool>(false)
        let racer = Thread {
            while !done.load(ordering: .relaxed) {
                let found = Recovery.run(layout: layout, staleAfter: .seconds(86_400), locks: locks, log: log)
                #expect(found.returned.isEmpty && found.resumable.isEmpty)
            }
        }
        racer.start()
        for n in 0..<150 {
            try write("photo \(n)", layout.drop + "/\(n).jpg")
            let batch = try #require(try Claim.claim([FileName("\(n).jpg")!], layout: layout, inbox: "shop", template: .builtIn,
                                                     order: .name, locks: locks).batch)
            try FileManager.default.removeItem(atPath: batch.folder + "/src/\(n).jpg")
            try locks.removeFolder(batch.folder, lock: batch.lock)
        }
        done.store(true, ordering: .relaxed)
        while !racer.isFinished { usleep(1000) }
        #expect(lines.withLock { $0 }.filter { $0.contains("rolled back") }.isEmpty, "\(lines.withLock { $0 })")
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.work).isEmpty)
    }

    /// A lock held on a local disk (it reads through its descriptor) renews its lease by its own
    /// time alone: touched, and no lease file beside it.
    @Test func aLocalLockIsRenewedByItsOwnTimeWithNoLeaseFile() throws {
        let layout = try hotFolder()
        let path = layout.work + "/20261201-120000-aaaa"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let lock = try #require(locks.tryAcquire(path))
        var old = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path + "/lock", &old, 0) == 0)
        locks.renewLeases(now: .now + .seconds(11))
        let mtime = try #require(try FileManager.default.attributesOfItem(atPath: path + "/lock")[.modificationDate] as? Date)
        #expect(mtime.timeIntervalSince1970 > 1_000_000_000, "touched")
        #expect(try FileManager.default.contentsOfDirectory(atPath: path) == ["lock"])
        lock.release()
    }

    /// A lease held from another machine starts its timeout afresh when its lease file changes
    /// (where the holder renews it there: rclone mount without its file cache), not only when
    /// its lock does.
    @Test func aForeignLeaseIsRenewedByItsLeaseFile() throws {
        let layout = try hotFolder()
        let path = layout.work + "/20261201-120000-bbbb"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try write("host=elsewhere/0123\nboot=b00t\npid=7\n", path + "/lock")
        let first = try #require(locks.lookAgain(path))
        let same = try #require(locks.lookAgain(path))
        #expect(same.expires == first.expires, "unchanged: its timeout runs on")
        try write("host=elsewhere/0123\nboot=b00t\npid=7\nrenewed=1\n", path + "/lease")
        let renewed = try #require(locks.lookAgain(path))
        #expect(renewed.expires > first.expires, "renewed by its lease file")
        try write("host=elsewhere/0123\nboot=b00t\npid=7\nrenewed=22\n", path + "/lease")
        let again = try #require(locks.lookAgain(path))
        #expect(again.expires > renewed.expires, "renewed again")
        #expect(locks.tryAcquire(path) == nil, "held from another machine whose lease is renewed")
    }
}
