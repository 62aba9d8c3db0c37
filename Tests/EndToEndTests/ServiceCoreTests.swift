import Foundation
import Testing

/// The service core on events (issue 17): a hot folder refused at start is taken up by a
/// reload once it can be, signals are acted on at once, one folder's big claim does not hold
/// up another's, hot folders sharing a template share one proof file (a low open-file limit:
/// OpenFileLimitTests).
@Suite struct ServiceCoreTests {
    static let asNobody = ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]

    /// Why the daemon cannot run as `nobody` here, or nil when it can.
    static func nobodyUnavailable() throws -> String? {
        if getuid() != 0 { return "needs root (it runs the daemon as nobody)" }
        for p in ["/usr/bin/setpriv", "/bin/chown"] where !FileManager.default.isExecutableFile(atPath: p) {
            return "\(p) is not installed"
        }
        guard try Harness.exec(asNobody[0], Array(asNobody.dropFirst()) + [Harness.binary, "help"], deadline: .seconds(60)).status == 0 else {
            return "the user nobody cannot run \(Harness.binary) (a folder on its path is closed to others)"
        }
        return nil
    }

    /// The daemon's status file (one per process in the runtime folder).
    static func status(_ hot: HotFolderFixture) -> [String: Any]? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: hot.runtime)) ?? []
        for name in names where name.hasSuffix(".json") && !name.hasPrefix(".") {
            if let data = FileManager.default.contents(atPath: hot.runtime + "/" + name),
               let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any] { return json }
        }
        return nil
    }

    /// Each hot folder of the status file, by name.
    static func inboxes(_ hot: HotFolderFixture) -> [String: [String: Any]] {
        var out: [String: [String: Any]] = [:]
        for inbox in status(hot)?["inboxes"] as? [[String: Any]] ?? [] {
            if let name = inbox["name"] as? String { out[name] = inbox }
        }
        return out
    }

    static func state(_ inbox: [String: Any]?) -> [String: Any] { inbox?["state"] as? [String: Any] ?? [:] }

    // MARK: - Refused at start, taken up by a reload

    @Test func aFolderRefusedAtStartIsTakenUpByAReloadOnceItsRightsAreFixed() throws {
        if let reason = try Self.nobodyUnavailable() { print("skipped: \(reason)"); return }
        let hot = try HotFolderFixture(rescan: "1h")
        let good = hot.dir + "/good"
        try Harness.write("""
            { templatesDir: "templates",
              inboxes: [ { name: "shop", root: "\(hot.root)", template: "small" },
                         { name: "good", root: "\(good)", template: "small" } ],
              settle: "300ms", quiet: "400ms", rescanInterval: "1h", workers: 1 }
            """, to: hot.config)
        try FileManager.default.createDirectory(atPath: hot.runtime, withIntermediateDirectories: true)
        try Harness.exec("/bin/chown", ["-R", "nobody:nogroup", hot.dir], deadline: .seconds(60))
        // What `photofinish init` run as root leaves: a .work/ the service's user does not own.
        #expect(chown(hot.root + "/.work", 0, 0) == 0)
        let notify = try NotifyListener()
        defer { notify.close() }
        #expect(chmod(notify.path, 0o777) == 0, "nobody may send to it")
        let daemon = try hot.start(notify: notify, wrapper: Self.asNobody)
        #expect(Poll.until(.seconds(60)) { notify.lines.contains("READY=1") }, "log:\n\(daemon.log)")
        // The ready line names only what is watched, and the refused one apart.
        let ready = daemon.log.components(separatedBy: "\n").first { $0.contains("ready: watching") } ?? ""
        #expect(ready.contains("ready: watching good (\(good)/drop)") && !ready.contains("shop (\(hot.root)/drop)"), "\(ready)")
        #expect(ready.contains("refused") && ready.contains("shop"), "\(ready)")

        // The status file and STATUS.txt say why, and what fixes it.
        #expect(Poll.until(.seconds(20)) { Self.state(Self.inboxes(hot)["shop"])["kind"] as? String == "refused" },
                "\(Self.status(hot) ?? [:]); log:\n\(daemon.log)")
        let refused = Self.state(Self.inboxes(hot)["shop"])
        let why = refused["why"] as? String ?? ""
        #expect(why.contains(hot.root + "/.work") && why.contains("Operation not permitted"), "\(refused)")
        #expect((refused["fix"] as? [String] ?? []).contains("chown -R nobody:nogroup \(hot.root)"), "\(refused)")
        // (The file written with READY=1 may still be on its way.)
        #expect(Poll.until(.seconds(20)) { Self.state(Self.inboxes(hot)["good"])["kind"] as? String == "watching" },
                "\(Self.status(hot) ?? [:])")
        let text = { (try? String(contentsOfFile: hot.root + "/STATUS.txt", encoding: .utf8)) ?? "" }
        #expect(Poll.until(.seconds(20)) { text().contains("PhotoFinish cannot use this hot folder: ") }, "\(text())")
        #expect(text().contains("chown -R nobody:nogroup \(hot.root)"), "\(text())")
        let status = try Harness.run(["status", "--config", hot.config], extraEnvironment: ["RUNTIME_DIRECTORY": hot.runtime])
        // `status` says it too, with the fix, and exits 1 (a folder needs someone).
        #expect(status.status == 1, "\(status.stdout)")
        #expect(status.stdout.contains("shop  \(hot.root)\n  refused since "), "\(status.stdout)")
        #expect(status.stdout.contains("Operation not permitted") && status.stdout.contains("; to fix it:\n"), "\(status.stdout)")
        #expect(status.stdout.contains("\n    chown -R nobody:nogroup \(hot.root)\n"), "\(status.stdout)")
        #expect(status.stdout.contains("1 hot folder is refused"), "\(status.stdout)")
        #expect(!status.stdout.contains("good  \(good)\n  refused"), "\(status.stdout)")

        // A photo dropped meanwhile waits; the administrator fixes the rights and reloads.
        try hot.drop(try HotFolderFixture.photo(1), as: "waiting.jpg")
        #expect(chown(hot.root + "/.work", 65534, 65534) == 0)
        let before = notify.lines.count
        daemon.signal(SIGHUP)
        #expect(Poll.until(.seconds(30)) { notify.lines.dropFirst(before).contains("READY=1") }, "\(notify.lines)")
        #expect(Poll.until(.seconds(60)) { hot.reportedSources() == ["waiting.jpg"] }, "log:\n\(daemon.log)")
        #expect(Self.state(Self.inboxes(hot)["shop"])["kind"] as? String == "watching")
        #expect(Poll.until(.seconds(20)) { !text().contains("cannot use") }, "\(text())")
        #expect(daemon.log.contains("now watching \(hot.drop)"), "log:\n\(daemon.log)")
        let after = try Harness.run(["status", "--config", hot.config], extraEnvironment: ["RUNTIME_DIRECTORY": hot.runtime])
        #expect(after.status == 0 && !after.stdout.contains("refused"), "\(after.stdout)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    // MARK: - Signals at once

    /// The time from a signal to what systemd hears of it: three reloads, then a stop.
    @Test func stopAndReloadAreActedOnWithin100Milliseconds() throws {
        let hot = try HotFolderFixture()
        let notify = try NotifyListener()
        defer { notify.close() }
        let daemon = try hot.start(notify: notify)
        #expect(Poll.until(.seconds(60)) { notify.lines.contains("READY=1") }, "log:\n\(daemon.log)")
        func delay(after signal: Int32, until line: String) -> Duration? {
            let seen = notify.timedLines.count
            let sent = ContinuousClock.now
            daemon.signal(signal)
            let end = sent + .seconds(10)
            while ContinuousClock.now < end {
                if let hit = notify.timedLines.dropFirst(seen).first(where: { $0.line == line }) { return hit.at - sent }
                usleep(1000)
            }
            return nil
        }
        var reloads: [Duration] = []
        for _ in 0..<3 {
            let readies = notify.lines.filter { $0 == "READY=1" }.count
            if let d = delay(after: SIGHUP, until: "RELOADING=1") { reloads.append(d) }
            #expect(Poll.until(.seconds(20)) { notify.lines.filter { $0 == "READY=1" }.count > readies })
        }
        let stop = delay(after: SIGTERM, until: "STOPPING=1")
        #expect(daemon.wait() == 0)
        print("reload acted on after \(reloads.map { "\($0 / .microseconds(1)) µs" }), stop after \(stop.map { "\($0 / .microseconds(1)) µs" } ?? "never")")
        #expect(reloads.count == 3)
        // The loop wakes on the signal's descriptor; the old loop saw it at its next tick, up to
        // a second later. Generous bounds on a shared machine (a thread can wait for a core
        // there): the median of the four under 100 ms, each under half a second.
        let all = reloads + [stop ?? .seconds(10)]
        let sorted = all.sorted()
        #expect(sorted[(sorted.count - 1) / 2] < .milliseconds(100), "\(all)")
        for d in all { #expect(d < .milliseconds(500), "\(all)") }
    }

    // MARK: - Claims side by side

    /// 500 files claimed in one folder (each moved, hashed and fsynced) while one photo arrives
    /// in another: the other folder's batch is claimed first, not after the 500.
    @Test func aBigClaimInOneFolderDoesNotDelayABatchInAnother() throws {
        let hot = try HotFolderFixture()
        let other = hot.dir + "/other"
        try Harness.write("""
            { templatesDir: "templates",
              inboxes: [ { name: "big", root: "\(hot.root)", template: "small" },
                         { name: "small", root: "\(other)", template: "small" } ],
              settle: "300ms", quiet: "400ms", maxBatch: 500, rescanInterval: "1h", workers: 1 }
            """, to: hot.config)
        let daemon = try hot.start()
        daemon.waitUntilReady()
        // 500 files of 64 KiB (not photos: they fail fast; the claim is what is measured).
        let staging = hot.root + "/incoming"
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        var bytes = [UInt8](repeating: 0, count: 64 << 10)
        for i in 0..<500 {
            for j in stride(from: 0, to: bytes.count, by: 4096) { bytes[j] = UInt8(truncatingIfNeeded: i &+ j) }
            try Harness.write(bytes, to: staging + "/f\(i).bin")
        }
        for i in 0..<500 { #expect(rename(staging + "/f\(i).bin", hot.drop + "/f\(i).bin") == 0) }
        try Harness.write(try HotFolderFixture.photo(2), to: other + "/drop/one.jpg")
        func position(_ text: String) -> Int? {
            daemon.log.range(of: text).map { daemon.log.distance(from: daemon.log.startIndex, to: $0.lowerBound) }
        }
        #expect(Poll.until(.seconds(120)) { position("claimed batch of 500 photos") != nil && position("claimed batch of 1 photo") != nil },
                "log:\n\(daemon.log)")
        let big = try #require(position("claimed batch of 500 photos")), small = try #require(position("claimed batch of 1 photo"))
        #expect(small < big, "the small folder's claim waited for the big one; log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    // MARK: - Parked in .work/

    /// Stopped in the middle of a batch: STATUS.txt says the photos left in .work/ wait there,
    /// not "nothing pending"; the next start finishes them.
    @Test func photosLeftInWorkByAStopArePending() throws {
        let hot = try HotFolderFixture(template: """
            { version: 1, resize: { longSide: 1600 }, output: { format: "png" } }
            """)
        try Harness.write("""
            { templatesDir: "templates", inboxes: [ { name: "shop", root: "\(hot.root)", template: "small" } ],
              settle: "300ms", quiet: "400ms", rescanInterval: "1h", workers: 1 }
            """, to: hot.config)
        let daemon = try hot.start()
        daemon.waitUntilReady()
        for i in 0..<6 { try hot.drop(try Harness.jpeg(upright: Harness.marked(width: 2400 + i, height: 1800)), as: "big\(i).jpg") }
        let work = hot.root + "/.work"
        // Under way: a photo journaled in the batch's run, or finished while it was open.
        #expect(Poll.until(.seconds(60)) {
            hot.names(in: work).contains { id in
                ["journal", "tasks"].contains { FileManager.default.fileExists(atPath: work + "/" + id + "/" + $0) }
            }
        }, "log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
        let text = (try? String(contentsOfFile: hot.root + "/STATUS.txt", encoding: .utf8)) ?? ""
        let left = hot.reports().isEmpty
        if left {
            #expect(text.range(of: #"Claimed and waiting in \.work/: [1-6] photos?, finished when PhotoFinish starts again\."#,
                               options: .regularExpression) != nil, "\(text)")
        } else {
            print("skipped the parked check: the batch finished before the stop (a fast machine)")
        }
        let again = try hot.start(log: "again.log")
        #expect(Poll.until(.seconds(120)) { hot.reportedSources().count == 6 }, "log:\n\(again.log)")
        again.signal(SIGTERM)
        #expect(again.wait() == 0)
    }

    /// A restart takes up a hot folder whose private .work/ holds no batch folder without
    /// looking into it (reference: Start-up); what else it holds — a photo a claim cut short
    /// left there two days ago — is still swept back to drop/ right after READY=1, and finished.
    @Test func aWorkWithoutBatchesIsRecoveredRightAfterReady() throws {
        let hot = try HotFolderFixture(rescan: "1h")
        let work = hot.root + "/.work"
        #expect(chmod(work, 0o700) == 0)
        try Harness.write(try HotFolderFixture.photo(3), to: work + "/cut-short.jpg")
        let twoDaysAgo = Date().addingTimeInterval(-2 * 86_400)
        try FileManager.default.setAttributes([.modificationDate: twoDaysAgo], ofItemAtPath: work + "/cut-short.jpg")
        var st = stat()
        #expect(lstat(work, &st) == 0 && st.st_nlink == 2, "no folder in .work/: the take-up leaves it until READY=1")
        let daemon = try hot.start()
        daemon.waitUntilReady()
        #expect(Poll.until(.seconds(60)) { hot.reportedSources() == ["cut-short.jpg"] }, "log:\n\(daemon.log)")
        #expect(daemon.log.contains("swept stale cut-short.jpg from .work/"), "log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    // MARK: - Free space and retention

    /// A 16 MiB tmpfs with minFreeSpace 8 MiB: filled, nothing new is claimed (the folder says
    /// so, with the free space); emptied, the waiting photo is claimed and finished.
    @Test func belowMinFreeSpaceNothingIsClaimedUntilThereIsRoom() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/bin/mount") else {
            print("skipped: needs root and mount (a tmpfs of its own)")
            return
        }
        let hot = try HotFolderFixture()
        let disk = hot.dir + "/small"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        guard try Harness.exec("/bin/mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", disk], deadline: .seconds(30)).status == 0 else {
            print("skipped: cannot mount a tmpfs here")
            return
        }
        defer { _ = try? Harness.exec("/bin/umount", ["-l", disk], deadline: .seconds(30)) }
        let root = disk + "/hot"
        try Harness.write("""
            { templatesDir: "templates", inboxes: [ { name: "shop", root: "\(root)", template: "small", minFreeSpace: "8MiB" } ],
              settle: "300ms", quiet: "400ms", rescanInterval: "1h", workers: 1 }
            """, to: hot.config)
        let filler = disk + "/filler"
        try Harness.write([UInt8](repeating: 7, count: 10 << 20), to: filler)
        let daemon = try hot.start()
        daemon.waitUntilReady()
        try Harness.write(try HotFolderFixture.photo(1), to: root + "/drop/waiting.jpg")
        #expect(Poll.until(.seconds(30)) { Self.state(Self.inboxes(hot)["shop"])["kind"] as? String == "low-space" },
                "\(Self.status(hot) ?? [:]); log:\n\(daemon.log)")
        let why = Self.state(Self.inboxes(hot)["shop"])["why"] as? String ?? ""
        #expect(why.contains("free on the file system of \(root)") && why.contains("minFreeSpace"), "\(why)")
        let text = { (try? String(contentsOfFile: root + "/STATUS.txt", encoding: .utf8)) ?? "" }
        #expect(Poll.until(.seconds(20)) { text().contains("Nothing new is taken from drop/: only ") }, "\(text())")
        #expect(FileManager.default.fileExists(atPath: root + "/drop/waiting.jpg"), "left in drop/")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: root + "/out")) ?? []).isEmpty)
        // `status` says it with the free space; not a refusal: exit 0.
        let status = try Harness.run(["status", "--config", hot.config], extraEnvironment: ["RUNTIME_DIRECTORY": hot.runtime])
        #expect(status.status == 0 && status.stdout.contains("\n  low on space since ") && status.stdout.contains("minFreeSpace"),
                "\(status.stdout)")
        #expect(status.stdout.contains("1 pending"), "\(status.stdout)")
        // Room again: claimed and finished, the folder watching.
        try FileManager.default.removeItem(atPath: filler)
        let finished = {
            ((try? FileManager.default.contentsOfDirectory(atPath: root + "/out")) ?? []).contains {
                FileManager.default.fileExists(atPath: root + "/out/" + $0 + "/report.json")
            }
        }
        #expect(Poll.until(.seconds(60)) { finished() }, "log:\n\(daemon.log)")
        #expect(Poll.until(.seconds(20)) { Self.state(Self.inboxes(hot)["shop"])["kind"] as? String == "watching" })
        #expect(daemon.log.contains("claims resume"), "log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    /// `keep` at start: a batch older than it is removed, a younger one and one a batch in
    /// `.work/` redoes are kept.
    @Test func retentionAtStartRemovesOnlyWhatIsOlderThanKeepAndUnreferenced() throws {
        let hot = try HotFolderFixture(extra: "keep: { out: \"2d\", originals: \"2d\" },")
        func batch(daysAgo: Double, _ tag: String) -> String {
            let f = DateFormatter()
            f.dateFormat = "yyyyMMdd-HHmmss"
            f.timeZone = TimeZone(identifier: "UTC")
            return f.string(from: Date().addingTimeInterval(-daysAgo * 86_400)) + "-" + tag
        }
        let old = batch(daysAgo: 5, "0001"), redone = batch(daysAgo: 5, "0002"), young = batch(daysAgo: 1, "0003")
        for id in [old, redone, young] {
            for kind in ["out", "originals"] {
                try FileManager.default.createDirectory(atPath: hot.root + "/" + kind + "/" + id, withIntermediateDirectories: true)
            }
            try Harness.write("{}", to: hot.root + "/out/" + id + "/report.json")
            try Harness.write([1, 2, 3], to: hot.root + "/originals/" + id + "/a.jpg")
        }
        // A redo of `redone` in .work/ (its manifest names the batch it redoes), which stays
        // there: the template stored with it no longer validates.
        let work = hot.root + "/.work/" + batch(daysAgo: 0, "0004")
        try FileManager.default.createDirectory(atPath: work + "/src", withIntermediateDirectories: true)
        try Harness.write("""
            { "version": 1, "batch": "\((work as NSString).lastPathComponent)", "inbox": "shop", "claimed": "2026-11-29T12:00:00.000Z",
              "template": { "name": "small", "sha256": "00", "directory": ".", "text": "{ version: 1, resize: { longSide: -3 } }" },
              "redoes": "\(redone)", "items": [] }
            """, to: work + "/manifest.json")
        let daemon = try hot.start()
        daemon.waitUntilReady()
        // out/ first, then originals/ (one sweep, oldest batch first, kind by kind).
        #expect(Poll.until(.seconds(30)) {
            !FileManager.default.fileExists(atPath: hot.root + "/out/" + old)
                && !FileManager.default.fileExists(atPath: hot.root + "/originals/" + old)
        }, "log:\n\(daemon.log)")
        #expect(Poll.until(.seconds(10)) { daemon.log.contains("removed originals/\(old)/") }, "log:\n\(daemon.log)")
        for id in [redone, young] {
            #expect(FileManager.default.fileExists(atPath: hot.root + "/out/" + id + "/report.json"), "\(id); log:\n\(daemon.log)")
            #expect(FileManager.default.fileExists(atPath: hot.root + "/originals/" + id + "/a.jpg"), "\(id)")
        }
        #expect(daemon.log.contains("removed out/\(old)/"), "log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    // MARK: - One proof file

    @Test func aThousandFoldersSharingATemplateHoldOneProofFile() throws {
        let hot = try HotFolderFixture()
        let roots = (0..<1000).map { "\(hot.dir)/many/f\($0)" }
        let inboxes = roots.enumerated().map { "{ name: \"f\($0.offset)\", root: \"\($0.element)\", template: \"small\" }" }
        try Harness.write("""
            { templatesDir: "templates", inboxes: [\(inboxes.joined(separator: ", "))], workers: 2 }
            """, to: hot.config)
        let daemon = try hot.start()
        daemon.waitUntilReady(deadline: .seconds(120))
        func proof(_ root: String) -> String? {
            ((try? FileManager.default.contentsOfDirectory(atPath: root + "/proof")) ?? []).first { $0.hasSuffix(".png") }
                .map { root + "/proof/" + $0 }
        }
        #expect(Poll.until(.seconds(180)) { roots.allSatisfy { proof($0) != nil } }, "log:\n\(daemon.log)")
        var inodes: Set<UInt64> = [], links: Set<UInt64> = []
        for root in roots {
            var st = stat()
            guard let path = proof(root), stat(path, &st) == 0 else { continue }
            inodes.insert(UInt64(st.st_ino))
            links.insert(UInt64(st.st_nlink))
        }
        #expect(inodes.count == 1, "\(inodes.count) proof files")
        #expect(links == [1000])
        // Before READY only the root, drop/ and .work/ are made, and only the status file is
        // written; out/, originals/ and failed/ and every STATUS.txt follow it.
        var isDir: ObjCBool = false
        #expect(Poll.until(.seconds(60)) {
            roots.allSatisfy { root in
                ["out", "originals", "failed"].allSatisfy { FileManager.default.fileExists(atPath: root + "/" + $0, isDirectory: &isDir) && isDir.boolValue }
            }
        }, "log:\n\(daemon.log)")
        #expect(Poll.until(.seconds(60)) {
            roots.allSatisfy { ((try? String(contentsOfFile: $0 + "/STATUS.txt", encoding: .utf8)) ?? "").contains("Idle: no batch is being processed.") }
        })
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }
}
