import Foundation
import Testing

/// With no inotify watch to be had (`fs.inotify.max_user_watches` reached), the daemon warns
/// and polls `drop/` with full scans: photos are still finished (SPEC §2, issue 4).
@Suite struct PollingTests {
    @Test func withNoInotifyWatchLeftItPollsAndStillFinishes() throws {
        // A user namespace of our own has its own inotify limits: set its watch limit to 0.
        let setLimit = "echo 0 > /proc/sys/user/max_inotify_watches"
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"),
              (try? Harness.exec("/usr/bin/unshare", ["-U", "-r", "sh", "-c", setLimit], deadline: .seconds(10)))?
                .status == 0 else {
            print("skipped: this machine cannot make a user namespace with its own inotify limits")
            return
        }
        let dir = try Harness.tempDir()
        let root = dir + "/hot"
        try Harness.write("{ settle: \"200ms\", quiet: \"300ms\" }", to: dir + "/timing.json5")
        let logPath = dir + "/watch.log"
        FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        p.arguments = ["-U", "-r", "sh", "-c", setLimit + " && exec \"$0\" watch \"$1\" --config \"$2\"",
                       Harness.binary, root, dir + "/timing.json5"]
        var env = ProcessInfo.processInfo.environment
        env["RUNTIME_DIRECTORY"] = dir + "/run"
        env["PHOTOFINISH_PROOF_SHRINK"] = "16"
        env["NOTIFY_SOCKET"] = nil
        env["JOURNAL_STREAM"] = nil
        p.environment = env
        p.standardOutput = log
        p.standardError = log
        try p.run()
        func text() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
        #expect(Poll.until(.seconds(30)) { text().contains("polling drop/ instead") }, "log:\n\(text())")
        // Arrives whole, by rename, as a copy tool would.
        let photo = try Harness.jpeg(upright: Harness.marked(width: 120, height: 90))
        try Harness.write(photo, to: dir + "/incoming.jpg")
        #expect(rename(dir + "/incoming.jpg", root + "/drop/polled.jpg") == 0)
        let finished = Poll.until(.seconds(60)) {
            let batches = (try? FileManager.default.contentsOfDirectory(atPath: root + "/out")) ?? []
            return batches.count == 1 && FileManager.default.fileExists(atPath: root + "/out/" + batches[0] + "/report.json")
        }
        #expect(finished, "log:\n\(text())")
        kill(p.processIdentifier, SIGINT)
        let end = ContinuousClock.now + .seconds(60)
        while p.isRunning && ContinuousClock.now < end { usleep(20_000) }
        if p.isRunning { p.terminate() }
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        if finished {
            let batch = try Harness.batchFolder(in: root + "/out")
            let item = try #require((try Harness.report(in: batch)["items"] as? [[String: Any]])?.first)
            #expect(item["source"] as? String == "polled.jpg" && item["status"] as? String == "ok")
        }
    }
}
