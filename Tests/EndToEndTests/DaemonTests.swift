import Foundation
import Testing

/// `photofinish daemon` on real folders with the real inotify, playing systemd with a private
/// `NOTIFY_SOCKET`. Every wait is a condition with a deadline.
struct DaemonTests {
    @Test func filesPresentBeforeStartThenABurstAreTwoBatchesAndSystemdHearsItAll() throws {
        let hot = try HotFolderFixture()
        try hot.drop(try HotFolderFixture.photo(1), as: "early-1.jpg")
        try hot.drop(try HotFolderFixture.photo(2), as: "early-2.jpg")
        let notify = try NotifyListener()
        defer { notify.close() }
        // WatchdogSec=0.4s: systemd passes WATCHDOG_USEC.
        let daemon = try hot.start(notify: notify, environment: ["WATCHDOG_USEC": "400000"])
        #expect(Poll.until(.seconds(30)) { notify.lines.contains("READY=1") }, "no READY=1; log:\n\(daemon.log)")
        #expect(Poll.until(.seconds(30)) { hot.reports().count == 1 }, "log:\n\(daemon.log)")
        #expect(Poll.until(.seconds(10)) { notify.lines.filter { $0 == "WATCHDOG=1" }.count >= 2 })
        #expect(Set(hot.reportedSources()) == ["early-1.jpg", "early-2.jpg"])

        // A burst: 12 photos within a few milliseconds are one batch.
        let burst = (0..<12).map { "IMG_\($0).jpg" }
        for (i, name) in burst.enumerated() { try hot.drop(try HotFolderFixture.photo(10 + i), as: name) }
        #expect(Poll.until(.seconds(30)) { hot.reports().count == 2 }, "log:\n\(daemon.log)")
        let second = try #require(hot.reports().values.first { ($0["items"] as? [Any])?.count == 12 })
        let sources = (second["items"] as? [[String: Any]] ?? []).compactMap { $0["source"] as? String }
        // Natural order: IMG_2 before IMG_10.
        #expect(sources == (0..<12).map { "IMG_\($0).jpg" })
        #expect(second["inbox"] as? String == "shop")
        #expect(second["status"] as? String == "complete")
        #expect(hot.names(in: hot.drop).isEmpty)

        #expect(Poll.until(.seconds(10)) { notify.lines.contains { $0.hasPrefix("STATUS=shop: idle, last batch") } },
                "\(notify.lines)")
        // SIGHUP: RELOADING=1 with MONOTONIC_USEC, then READY=1 again.
        let before = notify.lines.count
        daemon.signal(SIGHUP)
        #expect(Poll.until(.seconds(20)) {
            let after = notify.lines.dropFirst(before)
            guard let r = after.firstIndex(of: "RELOADING=1") else { return false }
            return after[r...].contains("READY=1")
        }, "\(notify.lines)")
        #expect(notify.lines.contains { $0.hasPrefix("MONOTONIC_USEC=") })
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
        #expect(notify.lines.contains("STOPPING=1"))
        // The status file says it stopped, with the last batch.
        let status = try Harness.run(["status", "--config", hot.config], extraEnvironment: ["RUNTIME_DIRECTORY": hot.runtime])
        #expect(status.stdout.contains("not running"))
        #expect(status.stdout.contains("last batch"))
    }

    @Test func ignoredFilesStayUntouchedInDrop() throws {
        let hot = try HotFolderFixture()
        let photo = try HotFolderFixture.photo(3)
        try Harness.write(photo, to: hot.drop + "/.hidden.jpg")
        try Harness.write(photo, to: hot.drop + "/._IMG_1.jpg")
        try Harness.write(photo, to: hot.drop + "/Thumbs.db")
        try Harness.write(photo, to: hot.drop + "/~$draft.jpg")
        try Harness.write(photo, to: hot.drop + "/still.jpg.crdownload")
        try Harness.write(photo, to: hot.dir + "/outside.jpg")
        #expect(symlink(hot.dir + "/outside.jpg", hot.drop + "/link.jpg") == 0)
        #expect(mkfifo(hot.drop + "/pipe.jpg", 0o644) == 0)
        #expect(link(hot.dir + "/outside.jpg", hot.drop + "/hardlinked.jpg") == 0)
        try FileManager.default.createDirectory(atPath: hot.drop + "/folder.jpg", withIntermediateDirectories: false)
        try Harness.write(photo, to: hot.drop + "/folder.jpg/inner.jpg")
        let before = hot.names(in: hot.drop)
        let daemon = try hot.start()
        // A real photo next to them is processed: once its batch is out, the rest was seen too.
        try hot.drop(photo, as: "real.jpg")
        #expect(Poll.until(.seconds(30)) { hot.reports().count == 1 }, "log:\n\(daemon.log)")
        #expect(hot.reportedSources() == ["real.jpg"])
        #expect(hot.names(in: hot.drop) == before)
        #expect(try Harness.read(hot.drop + "/Thumbs.db") == photo)
        #expect(try Harness.read(hot.drop + "/folder.jpg/inner.jpg") == photo)
        var st = stat()
        #expect(lstat(hot.drop + "/link.jpg", &st) == 0 && (st.st_mode & S_IFMT) == S_IFLNK)
        #expect(stat(hot.drop + "/hardlinked.jpg", &st) == 0 && st.st_nlink == 2)
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    @Test func aPartialDownloadRenamedIsProcessedOnceAndASlowWriterWhole() throws {
        let hot = try HotFolderFixture(settle: "600ms", quiet: "700ms")
        let daemon = try hot.start()
        defer { if daemon.process.isRunning { daemon.signal(SIGKILL) } }
        // x.jpg.part, written in the folder, then renamed to x.jpg.
        let photo = try HotFolderFixture.photo(4)
        try Harness.write(photo, to: hot.drop + "/x.jpg.part")
        #expect(rename(hot.drop + "/x.jpg.part", hot.drop + "/x.jpg") == 0)
        #expect(Poll.until(.seconds(30)) { hot.reports().count == 1 }, "log:\n\(daemon.log)")
        #expect(hot.reportedSources() == ["x.jpg"])

        // A writer that closes and reopens to append, pausing less than settle each time.
        let big = try Harness.jpeg(upright: Harness.marked(width: 300, height: 200), quality: 95)
        let chunks = stride(from: 0, to: big.count, by: big.count / 5 + 1).map { Array(big[$0..<min(big.count, $0 + big.count / 5 + 1)]) }
        let path = hot.drop + "/slow.jpg"
        for (i, chunk) in chunks.enumerated() {
            let handle: FileHandle
            if i == 0 {
                _ = FileManager.default.createFile(atPath: path, contents: nil)
            }
            handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            handle.seekToEndOfFile()
            handle.write(Data(chunk))
            try handle.close()  // IN_CLOSE_WRITE after every chunk
            if i < chunks.count - 1 { usleep(300_000) }  // the writer's pause (half of settle), not a wait
        }
        #expect(Poll.until(.seconds(30)) { hot.reports().count == 2 }, "log:\n\(daemon.log)")
        let report = try #require(hot.reports().values.first { ($0["items"] as? [[String: Any]])?.first?["source"] as? String == "slow.jpg" })
        let item = try #require((report["items"] as? [[String: Any]])?.first)
        #expect(item["status"] as? String == "ok")
        #expect(item["bytes"] as? Int == big.count)
        #expect(item["sha256"] as? String == Fixtures.sha256Hex(big))
        #expect(hot.reportedSources().sorted() == ["slow.jpg", "x.jpg"])
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    @Test func aStaleStagingFolderIsSweptAndItsPhotoProcessed() throws {
        let hot = try HotFolderFixture()
        let photo = try HotFolderFixture.photo(5)
        // A two-day-old staging folder with a photo and a partial file…
        let stale = hot.root + "/.work/upload-20261127"
        try FileManager.default.createDirectory(atPath: stale, withIntermediateDirectories: true)
        try Harness.write(photo, to: stale + "/kept.jpg")
        try Harness.write(Array(photo.prefix(100)), to: stale + "/.pf-tmp-kept.jpg-1a2b")
        // …and a batch a crash left claimed but never started (no manifest).
        let claimed = hot.root + "/.work/20261127-101010-beef"
        try FileManager.default.createDirectory(atPath: claimed + "/src", withIntermediateDirectories: true)
        try Harness.write(try HotFolderFixture.photo(6), to: claimed + "/src/claimed.jpg")
        let twoDaysAgo = Date().addingTimeInterval(-2 * 86_400)
        for path in [stale + "/kept.jpg", stale + "/.pf-tmp-kept.jpg-1a2b", stale] {
            try FileManager.default.setAttributes([.modificationDate: twoDaysAgo], ofItemAtPath: path)
        }
        // A young folder may be another daemon's work in progress: left alone.
        try FileManager.default.createDirectory(atPath: hot.root + "/.work/young", withIntermediateDirectories: true)
        let daemon = try hot.start()
        #expect(Poll.until(.seconds(30)) {
            Set(hot.reportedSources()) == ["kept.jpg", "claimed.jpg"] && hot.names(in: hot.root + "/.work") == ["young"]
        }, "\(hot.reportedSources()); log:\n\(daemon.log)")
        #expect(hot.names(in: hot.root + "/.work") == ["young"])
        let originals = hot.allFiles(under: hot.root + "/originals").map { URL(fileURLWithPath: $0).lastPathComponent }
        #expect(originals.sorted() == ["claimed.jpg", "kept.jpg"])
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    @Test func anInvalidConfigOnReloadKeepsTheOldOne() throws {
        let hot = try HotFolderFixture()
        let notify = try NotifyListener()
        defer { notify.close() }
        let daemon = try hot.start(notify: notify)
        #expect(Poll.until(.seconds(30)) { notify.lines.contains("READY=1") })
        try Harness.write("{ settle: \"fast\" }", to: hot.config)
        daemon.signal(SIGHUP)
        #expect(Poll.until(.seconds(20)) { notify.lines.filter { $0 == "READY=1" }.count == 2 }, "\(notify.lines)")
        #expect(daemon.log.contains("keeping the old one"))
        #expect(daemon.log.contains("settle"))
        try hot.drop(try HotFolderFixture.photo(7), as: "after-reload.jpg")
        #expect(Poll.until(.seconds(30)) { hot.reportedSources() == ["after-reload.jpg"] }, "log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    @Test func originalsDeleteRemovesSourcesOnlyOnceTheReportIsOut() throws {
        let hot = try HotFolderFixture(template: """
            { version: 1, resize: { longSide: 32 }, originals: "delete" }
            """)
        try hot.drop(try HotFolderFixture.photo(30), as: "good.jpg")
        try hot.drop(Array("not a photo".utf8), as: "bad.jpg")
        let daemon = try hot.start()
        #expect(Poll.until(.seconds(30)) { hot.reports().count == 1 && hot.names(in: hot.root + "/.work").isEmpty },
                "log:\n\(daemon.log)")
        let report = try #require(hot.reports().values.first)
        let items = report["items"] as? [[String: Any]] ?? []
        #expect(items.map { $0["source"] as? String } == ["bad.jpg", "good.jpg"])
        // The finished source is gone (no `original`); the failed one is kept in failed/.
        #expect(items[1]["original"] == nil)
        #expect(items[0]["original"] as? String == "failed/\(report["batch"] as? String ?? "")/bad.jpg")
        #expect(hot.allFiles(under: hot.root + "/originals").isEmpty)
        #expect(hot.allFiles(under: hot.root + "/failed").map { URL(fileURLWithPath: $0).lastPathComponent } == ["bad.jpg"])
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    @Test func aBadConfigExitsTwoNamingTheKey() throws {
        let hot = try HotFolderFixture(extra: "colour: \"red\",")
        let r = try Harness.run(["daemon", "--config", hot.config])
        #expect(r.status == 2)
        #expect(r.stderr.contains("colour"), "\(r.stderr)")
    }
}

/// More than one hot folder in one daemon, and a `drop/` that is deleted and made again.
struct ManyHotFoldersTests {
    @Test func twoHotFoldersAreWatchedSideBySideAndARecreatedDropIsFoundAgain() throws {
        let hot = try HotFolderFixture()
        let second = hot.dir + "/studio"
        // A second inbox with its own root (created by the daemon), same template.
        try Harness.write("""
            { templatesDir: "templates",
              inboxes: [ { name: "shop", root: "\(hot.root)", template: "small" },
                         { name: "studio", root: "\(second)", template: "small" } ],
              settle: "300ms", quiet: "400ms", rescanInterval: "1s", workers: 1 }
            """, to: hot.config)
        let notify = try NotifyListener()
        defer { notify.close() }
        let daemon = try hot.start(notify: notify)
        #expect(Poll.until(.seconds(30)) { notify.lines.contains("READY=1") }, "log:\n\(daemon.log)")
        try hot.drop(try HotFolderFixture.photo(20), as: "shop.jpg")
        try Harness.write(try HotFolderFixture.photo(21), to: second + "/drop/studio.jpg")
        let studioReports = { hot.names(in: second + "/out").filter { FileManager.default.fileExists(atPath: second + "/out/" + $0 + "/report.json") } }
        #expect(Poll.until(.seconds(30)) { hot.reportedSources() == ["shop.jpg"] && studioReports().count == 1 },
                "log:\n\(daemon.log)")
        #expect(notify.lines.contains { $0.hasPrefix("STATUS=") && $0.contains("shop: ") && $0.contains("studio: ") })

        // drop/ deleted and made again: the daemon finds it and sees what arrives there.
        try FileManager.default.removeItem(atPath: hot.drop)
        #expect(Poll.until(.seconds(10)) { daemon.log.contains("went away") })
        try FileManager.default.createDirectory(atPath: hot.drop, withIntermediateDirectories: false)
        try Harness.write(try HotFolderFixture.photo(22), to: hot.drop + "/again.jpg")
        #expect(Poll.until(.seconds(30)) { Set(hot.reportedSources()) == ["shop.jpg", "again.jpg"] }, "log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }
}

/// `photofinish init` and `photofinish watch`: one hot folder with the built-in template.
struct WatchTests {
    @Test func initMakesTheLayoutAndWatchFinishesWithTheBuiltInTemplate() throws {
        let dir = try Harness.tempDir()
        let root = dir + "/new/studio"
        try FileManager.default.createDirectory(atPath: dir + "/templates", withIntermediateDirectories: true)
        try Harness.write("{ version: 1 }", to: dir + "/templates/shop.json5")
        try Harness.write("{ templatesDir: \"templates\", inboxes: [] }", to: dir + "/pf.json5")
        let made = try Harness.run(["init", root, "--template", "shop", "--config", dir + "/pf.json5"])
        #expect(made.status == 0)
        #expect(made.stdout.contains("name: \"studio\", root: \"\(root)\", template: \"shop\""), "\(made.stdout)")
        for sub in ["drop", "out", "originals", "failed", ".work"] {
            var isDir: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: root + "/" + sub, isDirectory: &isDir) && isDir.boolValue, "\(sub)")
        }
        var st = stat()
        #expect(stat(root + "/.work", &st) == 0 && st.st_mode & 0o777 == 0o700)

        try Harness.write("{ settle: \"200ms\", quiet: \"300ms\" }", to: dir + "/timing.json5")
        let big = try Harness.jpeg(upright: Harness.marked(width: 2100, height: 700))
        try Harness.write(big, to: root + "/drop/wide.jpg")
        let watch = try DaemonProcess(["watch", root, "--config", dir + "/timing.json5"], notify: nil,
                                      runtime: dir + "/run", logPath: dir + "/watch.log")
        #expect(Poll.until(.seconds(60)) { FileManager.default.fileExists(atPath: root + "/out") &&
            ((try? FileManager.default.contentsOfDirectory(atPath: root + "/out")) ?? []).count == 1 &&
            ((try? FileManager.default.contentsOfDirectory(atPath: root + "/.work")) ?? ["?"]).isEmpty }, "log:\n\(watch.log)")
        #expect(watch.log.contains("drop photos into:   \(root)/drop/"))
        let batch = try Harness.batchFolder(in: root + "/out")
        let report = try Harness.report(in: batch)
        #expect(report["inbox"] as? String == "studio")
        #expect((report["template"] as? [String: Any])?["name"] as? String == "default")
        let (image, _) = try Harness.decode(batch + "/wide.jpg")
        #expect(image.width == 2048 && image.height == 683)  // the built-in long side
        watch.waitUntilReady()
        watch.signal(SIGINT)
        #expect(watch.wait() == 0)
    }
}
