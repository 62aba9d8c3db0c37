import Foundation
import Testing
import TestSupport

/// What delivery changes in what a hot folder keeps (README "Delivering finished photos"), on the
/// real daemon with a folder destination (no server needed): `keep.originals: "until-delivered"`
/// keeps a batch's originals — even where the template deletes them — through a kill -9 until
/// its destination has every file verified, then removes them; `duplicates: "skip"` lists a photo
/// dropped again as `duplicate` of the batch that finished it (found again after the restart,
/// from out/), and never delivers it twice; nor two photos with the same bytes dropped together
/// (the second is a duplicate of the first, in the same batch).
struct DeliveryKeepTests {
    @Test(.timeLimit(.minutes(3))) func originalsWaitForTheDeliveryAndADuplicateIsNotDeliveredTwice() throws {
        let dir = try Harness.tempDir()
        // The destination's folder is not there yet (a disk not mounted): the delivery fails
        // and is tried again until it is.
        let disk = dir + "/disk"
        let fixture = try HotFolderFixture(extra: """
            keep: { originals: "until-delivered" }, duplicates: "skip",
            deliver: [ { name: "outbox", to: "file://\(disk)/", retry: { first: "300ms", atMost: "1s" } } ],
            """, template: """
            { version: 1, resize: { longSide: 32 }, output: { format: "jpeg", quality: 80 }, originals: "delete" }
            """)
        var daemon = try fixture.start()
        defer { daemon.signal(SIGTERM); _ = daemon.wait() }
        #expect(daemon.waitUntilReady(), "\(daemon.log)")
        let a = try HotFolderFixture.photo(1), b = try HotFolderFixture.photo(2), c = try HotFolderFixture.photo(3)
        try fixture.drop(a, as: "a.jpg")
        try fixture.drop(b, as: "b.jpg")
        let first = try batch(holding: ["a.jpg", "b.jpg"], fixture)
        #expect(Poll.until(.seconds(30)) { receipt(first, fixture)?["status"] as? String == "failed" }, "\(daemon.log)")
        // The template deletes originals; until-delivered keeps them filed.
        #expect(fixture.names(in: fixture.root + "/originals/" + first) == ["a.jpg", "b.jpg"])
        #expect((try Harness.report(in: fixture.root + "/out/" + first)["items"] as? [[String: Any]])?
            .allSatisfy { ($0["original"] as? String)?.hasPrefix("originals/\(first)/") == true } == true)

        // Killed and started again: still kept, still not delivered.
        daemon.signal(SIGKILL)
        _ = daemon.wait()
        daemon = try fixture.start(log: "daemon-2.log")
        #expect(daemon.waitUntilReady(), "\(daemon.log)")
        #expect(fixture.names(in: fixture.root + "/originals/" + first) == ["a.jpg", "b.jpg"])

        // The disk is there: delivered, then the originals go.
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        #expect(Poll.until(.seconds(30)) { receipt(first, fixture)?["status"] as? String == "delivered" }, "\(daemon.log)")
        #expect(Poll.until(.seconds(30)) { !FileManager.default.fileExists(atPath: fixture.root + "/originals/" + first) }, "\(daemon.log)")
        // The journal line comes once the folder is gone.
        #expect(Poll.until(.seconds(10)) {
            daemon.log.contains("removed originals/\(first)/ (2 files,") && daemon.log.contains("delivered to every destination")
        }, "\(daemon.log)")
        let delivered = fixture.allFiles(under: disk + "/" + first)
        #expect(delivered.count == 2, "\(delivered)")

        // a.jpg's bytes again (another name), and a new photo twice: the first is a duplicate of
        // the batch that finished it, not finished and not delivered; the new photo is both,
        // once: its copy (d.jpg, after it in the batch) is a duplicate of it in the same batch.
        try fixture.drop(a, as: "a-again.jpg")
        try fixture.drop(c, as: "c.jpg")
        try fixture.drop(c, as: "d.jpg")
        let second = try batch(holding: ["a-again.jpg", "c.jpg", "d.jpg"], fixture)
        let report = try Harness.report(in: fixture.root + "/out/" + second)
        let items = report["items"] as? [[String: Any]] ?? []
        let again = items.first { $0["source"] as? String == "a-again.jpg" }
        #expect(again?["status"] as? String == "duplicate" && again?["outputs"] == nil, "\(items)")
        #expect(again?["duplicateOf"] as? [String: String] == ["batch": first, "source": "a.jpg"], "\(again ?? [:])")
        let copy = items.first { $0["source"] as? String == "d.jpg" }
        #expect(copy?["status"] as? String == "duplicate" && copy?["outputs"] == nil, "\(items)")
        #expect(copy?["duplicateOf"] as? [String: String] == ["batch": second, "source": "c.jpg"], "\(copy ?? [:])")
        #expect(items.first { $0["source"] as? String == "c.jpg" }?["status"] as? String == "ok", "\(items)")
        #expect((report["counts"] as? [String: Int])?["duplicates"] == 2 && report["status"] as? String == "complete", "\(report)")
        #expect(Poll.until(.seconds(30)) { receipt(second, fixture)?["status"] as? String == "delivered" }, "\(daemon.log)")
        #expect(receipt(second, fixture)?["files"] as? Int == 1)
        #expect(fixture.allFiles(under: disk + "/" + second).count == 1)
        #expect(Poll.until(.seconds(30)) { !FileManager.default.fileExists(atPath: fixture.root + "/originals/" + second) }, "\(daemon.log)")
        let said = try Harness.run(["report", fixture.root + "/out/" + second])
        #expect(said.stdout.contains("a-again.jpg = duplicate of a.jpg, finished in batch \(first)")
                && said.stdout.contains("d.jpg = duplicate of c.jpg, finished in batch \(second)"), "\(said.stdout)")
    }

    /// `photofinish deliver` by hand while the daemon holds the delivery's lock (the test holds it
    /// as the daemon does): held by an attempt that is over (its receipt says delivered) it waits
    /// for the lock, says so, and sends the batch again once it is let go (exit 0); held while the
    /// journal says the delivery is being sent, it is refused at once with the reason (exit 3),
    /// nothing sent.
    @Test(.timeLimit(.minutes(2))) func byHandWaitsForTheDaemonToEndItsAttemptAndIsRefusedWhileItSends() throws {
        let disk = try Harness.tempDir() + "/disk"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        let fixture = try HotFolderFixture(extra: """
            deliver: [ { name: "outbox", to: "file://\(disk)/" } ],
            """)
        let photos = fixture.dir + "/photos"
        try FileManager.default.createDirectory(atPath: photos, withIntermediateDirectories: true)
        for n in 1...2 { try Harness.write(try HotFolderFixture.photo(n), to: photos + "/p\(n).jpg") }
        let run = try Harness.run(["run", "--template", fixture.dir + "/templates/small.json5", "--out", fixture.root + "/out", photos])
        #expect(run.status == 0, "\(run.stderr)")
        let batch = try #require(fixture.reports().keys.first)
        let deliver = ["deliver", fixture.root, batch, "--config", fixture.config]
        let first = try Harness.run(deliver)
        #expect(first.status == 0 && first.stdout.contains("): delivered"), "\(first.stdout)\(first.stderr)")
        let journal = fixture.root + "/.work/deliveries/\(batch)/outbox.json"

        // The daemon between its receipt (delivered) and its return: waited for.
        var held = try Self.hold(journal + ".lock")
        let errors = fixture.dir + "/deliver.err"
        FileManager.default.createFile(atPath: errors, contents: nil)
        let byHand = Process()
        byHand.executableURL = URL(fileURLWithPath: Harness.binary)
        byHand.arguments = deliver
        byHand.environment = ProcessInfo.processInfo.environment.merging(["RUNTIME_DIRECTORY": fixture.runtime]) { $1 }
        let out = Pipe()
        byHand.standardOutput = out
        byHand.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        try byHand.run()
        let waiting = "outbox: the daemon is ending its attempt at batch \(batch) (its receipt says delivered); waiting for it"
        #expect(Poll.until(.seconds(60)) { (try? String(contentsOfFile: errors, encoding: .utf8))?.contains(waiting) == true },
                "\((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "")")
        #expect(byHand.isRunning, "it did not wait for the lock")
        close(held)
        #expect(Poll.until(.seconds(60)) { !byHand.isRunning })
        byHand.waitUntilExit()
        let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(byHand.terminationStatus == 0 && said.contains("): delivered"), "\(said)")
        #expect(((try Harness.report(in: fixture.root + "/out/" + batch)["deliveries"] as? [[String: Any]])?.first?["attempts"] as? Int) == 2)

        // The daemon in the middle of sending it: refused at once, nothing sent.
        let text = try String(contentsOfFile: journal, encoding: .utf8)
        try Harness.write(text.replacingOccurrences(of: "\"phase\" : \"delivered\"", with: "\"phase\" : \"sending\""), to: journal)
        held = try Self.hold(journal + ".lock")
        defer { close(held) }
        let refused = try Harness.run(deliver)
        #expect(refused.status == 3, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("outbox: the daemon is delivering batch \(batch) there now (2 of 2 files verified); nothing was sent"),
                "\(refused.stderr)")
        #expect(try String(contentsOfFile: journal, encoding: .utf8).contains("\"phase\" : \"sending\""), "the journal is left as it was")
    }

    /// The lock at `path` taken as another process takes it (its own open file, flock).
    static func hold(_ path: String) throws -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0, flock(fd, LOCK_EX | LOCK_NB) == 0 else { throw CocoaError(.fileLocking) }
        return fd
    }

    /// The id of the batch published with `sources` (one batch: they are dropped together).
    func batch(holding sources: Set<String>, _ fixture: HotFolderFixture) throws -> String {
        var id: String?
        _ = Poll.until(.seconds(60)) {
            id = fixture.reports().first { _, report in
                Set((report["items"] as? [[String: Any]] ?? []).compactMap { $0["source"] as? String }) == sources
            }?.key
            return id != nil
        }
        return try #require(id, "no batch of \(sources.sorted()) was finished")
    }

    func receipt(_ batch: String, _ fixture: HotFolderFixture) -> [String: Any]? {
        (fixture.reports()[batch]?["deliveries"] as? [[String: Any]])?.first { $0["name"] as? String == "outbox" }
    }
}
