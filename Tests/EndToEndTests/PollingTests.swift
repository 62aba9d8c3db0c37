import Foundation
import Testing

/// With inotify's watches used up (`fs.inotify.max_user_watches` reached), the hot folders
/// beyond them are polled with full scans and their photos still finished; the journal says
/// so in one line for all of them (counts and the fix), and each polled folder's STATUS.txt
/// says why it is polled (reference: Many hot folders and the open-file limit).
@Suite struct PollingTests {
    @Test func withNoInotifyWatchLeftItPollsAndStillFinishes() throws {
        // A user namespace of our own has its own inotify limits: room for 3 hot folders' two
        // watches each. The budget reads the machine's limit (this namespace's is lower than it
        // says): the folders beyond are polled although the budget had room for them.
        let setLimit = "echo 6 > /proc/sys/user/max_inotify_watches"
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"),
              (try? Harness.exec("/usr/bin/unshare", ["-U", "-r", "sh", "-c", setLimit], deadline: .seconds(10)))?
                .status == 0 else {
            print("skipped: this machine cannot make a user namespace with its own inotify limits")
            return
        }
        let hot = try HotFolderFixture(settle: "200ms", quiet: "300ms", rescan: "1h")
        let names = (0..<12).map { String(format: "f%02d", $0) }
        let roots = names.map { "\(hot.dir)/many/\($0)" }
        let inboxes = zip(names, roots).map { "{ name: \"\($0)\", root: \"\($1)\", template: \"small\" }" }
        try Harness.write("""
            { templatesDir: "templates", inboxes: [\(inboxes.joined(separator: ", "))],
              settle: "200ms", quiet: "300ms", rescanInterval: "1h", pollInterval: "500ms", staleAfter: "24h", workers: 2 }
            """, to: hot.config)
        let daemon = try hot.start(wrapper: ["/usr/bin/unshare", "-U", "-r", "sh", "-c", setLimit + " && exec \"$@\"", "sh"])
        daemon.waitUntilReady(deadline: .seconds(60))
        // One line for the folders polled (those beyond the first three), not one each.
        var polled: [String] = []
        #expect(Poll.until(.seconds(30)) {
            let inboxes = ServiceCoreTests.inboxes(hot)
            polled = names.filter { inboxes[$0]?["polling"] as? Bool == true }
            return polled.count >= 9
        }, "\(ServiceCoreTests.inboxes(hot))")
        #expect(polled.count < 12)
        let said = daemon.log.split(separator: "\n").filter { $0.contains("polled instead of watched") }
        #expect(said.count == 1 && said[0].contains("\(polled.count) hot folders (") && said[0].contains("fs.inotify.max_user_watches"),
                "log:\n\(daemon.log)")
        #expect(!daemon.log.contains("polling drop/ instead"), "log:\n\(daemon.log)")
        // Arrives whole, by rename, as a copy tool would, in the last (polled) folder.
        let last = try #require(polled.last.map { roots[names.firstIndex(of: $0)!] })
        let photo = try Harness.jpeg(upright: Harness.marked(width: 120, height: 90))
        try Harness.write(photo, to: hot.dir + "/incoming.jpg")
        #expect(rename(hot.dir + "/incoming.jpg", last + "/drop/polled.jpg") == 0)
        let finished = Poll.until(.seconds(60)) {
            let batches = (try? FileManager.default.contentsOfDirectory(atPath: last + "/out")) ?? []
            return batches.count == 1 && FileManager.default.fileExists(atPath: last + "/out/" + batches[0] + "/report.json")
        }
        #expect(finished, "log:\n\(daemon.log)")
        if finished {
            let batch = try Harness.batchFolder(in: last + "/out")
            let item = try #require((try Harness.report(in: batch)["items"] as? [[String: Any]])?.first)
            #expect(item["source"] as? String == "polled.jpg" && item["status"] as? String == "ok")
        }
        // Its STATUS.txt says why it is polled and what fixes it; a watched one says nothing of it.
        let text = { (root: String) in (try? String(contentsOfFile: root + "/STATUS.txt", encoding: .utf8)) ?? "" }
        #expect(Poll.until(.seconds(10)) { text(last).contains("Why: inotify gave no watch for drop/") }, "\(text(last))")
        #expect(text(last).contains("To fix it: raise fs.inotify.max_user_watches"))
        let watched = try #require(names.first { !polled.contains($0) }.map { roots[names.firstIndex(of: $0)!] })
        #expect(Poll.until(.seconds(10)) { text(watched).contains("Idle") } && !text(watched).contains("Why:"), "\(text(watched))")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }
}
