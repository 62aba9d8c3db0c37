import Foundation
import Testing

/// Many hot folders and a low open-file limit (reference: Many hot folders and the open-file
/// limit): every place an administrator reads — the journal, `photofinish status`, each refused
/// folder's STATUS.txt, `photofinish check`, the metrics — says the same numbers and the same
/// fix, and the fix, applied, watches every folder.
@Suite struct OpenFileLimitTests {
    static let prlimit = "/usr/bin/prlimit"

    @Test func twoThousandFoldersUnderAHardLimitOf256SayOneNumberAndTheFixThatWatchesAll() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.prlimit) else {
            print("skipped: \(Self.prlimit) (util-linux) is not installed")
            return
        }
        let started = ContinuousClock.now
        func mark(_ what: String) { print("OpenFileLimitTests: \(what) after \(ContinuousClock.now - started)") }
        let hot = try HotFolderFixture(rescan: "1h")
        let names = (0..<2000).map { String(format: "f%04d", $0) }
        let roots = names.map { "\(hot.dir)/many/\($0)" }
        // The roots only: the daemon makes their folders as it takes them up.
        for root in roots { try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true) }
        // A photo waits in a folder the limit leaves unwatched.
        let last = roots[roots.count - 1]
        try FileManager.default.createDirectory(atPath: last + "/drop", withIntermediateDirectories: true)
        try Harness.write(try HotFolderFixture.photo(1), to: last + "/drop/waiting.jpg")
        let metricsFile = hot.dir + "/photofinish.prom"
        let inboxes = zip(names, roots).map { "{ name: \"\($0)\", root: \"\($1)\", template: \"small\" }" }
        try Harness.write("""
            { templatesDir: "templates", inboxes: [\(inboxes.joined(separator: ", "))], metricsFile: "\(metricsFile)",
              settle: "300ms", quiet: "400ms", rescanInterval: "1h", staleAfter: "24h", workers: 2 }
            """, to: hot.config)
        // As systemd runs it: the fix names the unit's drop-in.
        let asUnit = ["INVOCATION_ID": "0123456789abcdef0123456789abcdef"]
        let env = ["RUNTIME_DIRECTORY": hot.runtime]

        let daemon = try hot.start(environment: asUnit, wrapper: [Self.prlimit, "--nofile=256:256", "--"])
        daemon.waitUntilReady(deadline: .seconds(180))
        mark("ready under 256")
        // The status file: one computation, and every folder beyond it told its words.
        #expect(Poll.until(.seconds(60)) { ServiceCoreTests.inboxes(hot).count == 2000 && ServiceCoreTests.inboxes(hot).values.allSatisfy {
            ["watching", "refused"].contains(ServiceCoreTests.state($0)["kind"] as? String)
        } }, "log:\n\(daemon.log)")
        let said = try #require(ServiceCoreTests.status(hot)?["openFiles"] as? [String: Any], "\(ServiceCoreTests.status(hot) ?? [:])")
        let why = try #require(said["why"] as? String), fix = try #require(said["fix"] as? [String])
        let watched = try #require(said["watched"] as? Int), refused = try #require(said["refused"] as? Int)
        let wanted = try #require(said["wanted"] as? Int)
        #expect(said["limit"] as? Int == 256 && said["hotFolders"] as? Int == 2000 && watched + refused == 2000 && watched > 10)
        #expect(why.hasPrefix("the open-file limit (256) leaves room for \(watched) of 2000 hot folders"))
        #expect(fix == ["systemctl edit photofinish, and add: [Service] LimitNOFILE=\(wanted)",
                        "systemctl restart photofinish (a reload cannot raise the limit of a running process)"])
        let all = ServiceCoreTests.inboxes(hot)
        let kinds = names.map { ServiceCoreTests.state(all[$0])["kind"] as? String }
        #expect(kinds == Array(repeating: "watching", count: watched) + Array(repeating: "refused", count: refused),
                "the first ones in the config are watched")
        let told = Set(names.dropFirst(watched).map { name -> [String] in
            let state = ServiceCoreTests.state(all[name])
            return [state["why"] as? String ?? "", (state["fix"] as? [String] ?? []).joined(separator: "|")]
        })
        #expect(told == [[why, fix.joined(separator: "|")]], "every refused folder says the same")
        #expect(all["f1999"]?["waiting"] as? Int == 1, "\(all["f1999"] ?? [:])")
        // The watched ones work normally within the limit.
        let working = [roots[0], roots[watched - 1]]
        for (i, root) in working.enumerated() { try Harness.write(try HotFolderFixture.photo(i), to: root + "/drop/p\(i).jpg") }
        #expect(Poll.until(.seconds(120)) { working.allSatisfy { !hot.reports(in: $0).isEmpty } }, "log:\n\(daemon.log.suffix(3000))")
        let descriptors = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/fd")) ?? []).count
        #expect(descriptors > 0 && descriptors <= 256)

        // The report is written before the status says the batch ended (within the second):
        // the summary below counts busy folders.
        #expect(Poll.until(.seconds(30)) {
            let now = ServiceCoreTests.inboxes(hot)
            return [names[0], names[watched - 1]].allSatisfy { name in
                let inbox = now[name] ?? [:]
                return inbox["processing"] == nil && inbox["open"] == nil
                    && ["queued", "pending", "settling", "parked"].allSatisfy { (inbox[$0] as? Int ?? 0) == 0 }
            }
        })

        mark("photos finished")
        // The journal: one line for all of them, with the same numbers and the fix.
        let shortage = "\(why): \(refused) hot folders are not watched; to fix it: \(fix.joined(separator: "; then "))"
        #expect(daemon.log.components(separatedBy: shortage).count == 2, "said once; log:\n\(daemon.log.suffix(3000))")
        #expect(!daemon.log.contains("Too many open files") && !daemon.log.contains("systemctl reload"), "log:\n\(daemon.log.suffix(3000))")

        // `photofinish status`: a summary first, the fix said once, not 2,000 folders.
        let status = try Harness.run(["status"], extraEnvironment: env)
        #expect(status.status == 1, "a folder is refused")
        let lines = status.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("  2000 hot folders: \(watched) watching, \(refused) refused"), "\(status.stdout)")
        #expect(lines.contains("  \(refused) hot folders refused: \(why); to fix it:"), "\(status.stdout)")
        #expect(fix.allSatisfy { lines.contains("    " + $0) }, "\(status.stdout)")
        #expect(lines.count < 20 && !status.stdout.contains("systemctl reload"), "\(status.stdout)")
        let every = try Harness.run(["status", "--all"], extraEnvironment: env)
        let listed = Set(every.stdout.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) })
        #expect(listed.isSuperset(of: names), "--all lists every hot folder")
        // The summary first (the first line, the process's, names when its status was written).
        let summary = lines.dropFirst().prefix { !$0.hasPrefix("  (photofinish status --all") }
        #expect(Array(every.stdout.split(separator: "\n").map(String.init).dropFirst().prefix(summary.count)) == Array(summary), "\(every.stdout.prefix(2000))")

        mark("status and status --all")
        // STATUS.txt of the folder with a photo waiting: why, the fix, and what waits.
        let text = { (try? String(contentsOfFile: last + "/STATUS.txt", encoding: .utf8)) ?? "" }
        #expect(Poll.until(.seconds(60)) { text().contains("Waiting in drop/") }, "\(text())")
        let expected = ["PhotoFinish cannot use this hot folder: \(why).", "To fix it:"] + fix.map { "  " + $0 }
            + ["Waiting in drop/: 1 file, not taken until this hot folder can be used (see above)."]
        #expect(text().contains(expected.joined(separator: "\r\n")), "\(text())")
        #expect(!text().contains("Idle") && !text().contains("Pending in drop/"), "\(text())")

        mark("STATUS.txt")
        // `photofinish check`: the running daemon's numbers and fix.
        let check = try Harness.run(["check", "--config", hot.config], extraEnvironment: env)
        #expect(check.stdout.contains("open files (the limit of the running daemon, pid \(daemon.pid)): \(why): \(refused) hot folders are not watched; to fix it:\n"
                                      + fix.map { "  " + $0 }.joined(separator: "\n")), "\(check.stdout)")
        #expect(check.stdout.contains("LimitNOFILE=\(wanted) fits them all"), "\(check.stdout)")

        mark("check")
        // The metrics: the same numbers.
        let metrics = (try? String(contentsOfFile: metricsFile, encoding: .utf8)) ?? ""
        for line in ["photofinish_open_files_limit 256", "photofinish_open_files_wanted \(wanted)",
                     "photofinish_hot_folders_beyond_open_files_limit \(refused)"] {
            #expect(metrics.split(separator: "\n").contains { $0 == line }, "\(line) in:\n\(metrics.prefix(3000))")
        }
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
        mark("stopped")

        // The fix applied (a restart with the printed limit): every folder watched, the photo
        // that waited finished.
        let fixed = try hot.start(log: "fixed.log", environment: asUnit, wrapper: [Self.prlimit, "--nofile=\(wanted):\(wanted)", "--"])
        fixed.waitUntilReady(deadline: .seconds(180))
        mark("ready under \(wanted)")
        #expect(Poll.until(.seconds(60)) {
            let now = ServiceCoreTests.inboxes(hot)
            return now.count == 2000 && now.values.allSatisfy { ServiceCoreTests.state($0)["kind"] as? String == "watching" }
        }, "log:\n\(fixed.log.suffix(3000))")
        let after = try #require(ServiceCoreTests.status(hot)?["openFiles"] as? [String: Any])
        #expect(after["limit"] as? Int == wanted && after["refused"] as? Int == 0 && after["wanted"] as? Int == wanted,
                "the limit asked for is enough: nothing more is asked")
        #expect(!fixed.log.contains("not watched"), "log:\n\(fixed.log.suffix(3000))")
        #expect(Poll.until(.seconds(120)) { !hot.reports(in: last).isEmpty }, "log:\n\(fixed.log.suffix(3000))")
        let quiet = try Harness.run(["status"], extraEnvironment: env)
        #expect(quiet.status == 0 && quiet.stdout.contains("  2000 hot folders: 2000 watching"), "\(quiet.stdout)")
        mark("all watched, the waiting photo finished")
        fixed.signal(SIGTERM)
        #expect(fixed.wait() == 0)
        mark("2000 hot folders, \(watched) watched under 256, all under \(wanted); stopped")
    }
}

extension HotFolderFixture {
    /// The reports published in hot folder `root`'s out/.
    func reports(in root: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: root + "/out")) ?? []).filter {
            FileManager.default.fileExists(atPath: root + "/out/" + $0 + "/report.json")
        }
    }
}
