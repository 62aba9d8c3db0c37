import Foundation
import Testing

/// SIGKILL at random moments across many batches, then a restart: nothing dropped is lost,
/// nothing is finished twice, nothing half-written is visible (SPEC §1, §7).
struct CrashTests {
    /// Drops photos in small waves and kills the daemon(s) at random moments, `rounds` times;
    /// then runs one daemon (or two) until every photo is done and checks the invariants.
    func crashAndRecover(daemons: Int, rounds: Int, name: String = #function) throws {
        let hot = try HotFolderFixture(name: name, settle: "100ms", quiet: "150ms", maxBatch: 4, maxWait: "2s",
                                       rescan: "1s")
        var rng = SystemRandomNumberGenerator()
        var dropped: [String: [UInt8]] = [:]
        var next = 0
        var stages: [String] = []
        for round in 0..<rounds {
            let procs = try (0..<daemons).map { try hot.start(log: "daemon-\($0).log") }
            // Half the rounds kill during start-up and recovery, half once it is watching.
            if round % 2 == 1 { for p in procs { p.waitUntilReady() } }
            for _ in 0..<8 {
                let photo = try HotFolderFixture.photo(next, width: 640)
                let name = String(format: "P%03d.jpg", next)
                try hot.drop(photo, as: name)
                dropped[name] = photo
                next += 1
            }
            // The kill moment is the point of the test: anywhere from start-up to mid-batch.
            // A third of the rounds wait for a claimed batch and a third for a journaled photo
            // first, so the kill lands inside a batch whatever the machine's speed.
            let work = hot.root + "/.work"
            switch round % 3 {
            case 1: Poll.until(.seconds(5)) { hot.names(in: work).contains { !$0.hasPrefix(".") } }
            case 2: Poll.until(.seconds(5)) { hot.names(in: work).contains { FileManager.default.fileExists(atPath: work + "/" + $0 + "/journal") } }
            default: break
            }
            usleep(UInt32.random(in: 0...(round % 3 == 0 ? 500_000 : 100_000), using: &rng))
            let victims = daemons == 1 || round % 4 == 3 ? procs : [procs[Int.random(in: 0..<daemons, using: &rng)]]
            for p in victims { p.signal(SIGKILL) }
            for p in victims { p.wait() }
            // What the kill interrupted (printed: shows the test reaches every stage).
            for id in hot.names(in: hot.root + "/.work") {
                let stage = ["manifest.json", "out", "journal"].filter {
                    FileManager.default.fileExists(atPath: hot.root + "/.work/" + id + "/" + $0)
                }
                stages.append(stage.last ?? (id.hasPrefix(".new-") ? "making" : "claiming"))
            }
            if hot.names(in: hot.root + "/.work").isEmpty { stages.append(hot.names(in: hot.drop).isEmpty ? "idle" : "settling") }
            for p in procs where !victims.contains(where: { $0 === p }) {
                p.waitUntilReady()
                p.signal(SIGTERM)
                #expect(p.wait() == 0)
            }
        }
        print("\(name): kills interrupted these stages: \(Dictionary(stages.map { ($0, 1) }, uniquingKeysWith: +))")
        // Restart and let it finish everything.
        let final = try (0..<daemons).map { try hot.start(log: "final-\($0).log") }
        let done = Poll.until(.seconds(90)) {
            Set(hot.reportedSources()) == Set(dropped.keys) && hot.names(in: hot.root + "/.work").isEmpty
                && hot.names(in: hot.drop).isEmpty
        }
        for p in final { p.waitUntilReady() }
        for p in final { p.signal(SIGTERM) }
        for p in final { #expect(p.wait() == 0) }
        #expect(done, "not finished: drop \(hot.names(in: hot.drop)), .work \(hot.names(in: hot.root + "/.work")); log:\n\(final[0].log)")

        // Every photo in exactly one report, finished — or failed because the random kills
        // stopped the finisher twice while it was being finished (SPEC §7: such a photo is
        // failed, not tried forever; it is the only failure allowed here).
        let sources = hot.reportedSources()
        #expect(sources.count == dropped.count, "reported \(sources.count) items for \(dropped.count) photos")
        #expect(Set(sources) == Set(dropped.keys))
        var stoppedTwice: Set<String> = []
        for report in hot.reports().values {
            #expect(["complete", "partial", "failed"].contains(report["status"] as? String ?? "?"))
            for item in report["items"] as? [[String: Any]] ?? [] {
                let name = item["source"] as? String ?? ""
                #expect(item["sha256"] as? String == Fixtures.sha256Hex(dropped[name] ?? []), "\(name)")
                if item["status"] as? String != "ok" {
                    let message = (item["error"] as? [String: Any])?["message"] as? String ?? ""
                    #expect(message.hasPrefix("stopped the finisher twice"), "\(name): \(item)")
                    stoppedTwice.insert(name)
                }
                // Its original is where the report says, intact.
                let original = hot.root + "/" + (item["original"] as? String ?? "?")
                #expect((try? Harness.read(original)) == dropped[name], "\(name) at \(original)")
            }
        }
        if !stoppedTwice.isEmpty { print("\(name): killed twice while being finished, so failed: \(stoppedTwice.sorted())") }
        // Every original kept exactly once, intact, in originals/ (or failed/, see above).
        let originals = hot.allFiles(under: hot.root + "/originals")
        let names = originals.map { URL(fileURLWithPath: $0).lastPathComponent }
        #expect(names.sorted() == dropped.keys.filter { !stoppedTwice.contains($0) }.sorted(), "originals: \(names.sorted())")
        let failed = hot.allFiles(under: hot.root + "/failed").map { URL(fileURLWithPath: $0).lastPathComponent }
        #expect(failed.sorted() == stoppedTwice.sorted())
        // No temporary name visible in out/; every batch folder has its report and outputs.
        let outFiles = hot.allFiles(under: hot.root + "/out")
        #expect(!outFiles.contains { $0.contains(".pf-tmp-") }, "\(outFiles)")
        for (id, report) in hot.reports() {
            for item in report["items"] as? [[String: Any]] ?? [] {
                for output in item["outputs"] as? [[String: Any]] ?? [] {
                    #expect(FileManager.default.fileExists(atPath: hot.root + "/out/" + id + "/" + (output["file"] as? String ?? "?")))
                }
            }
        }
        #expect(Set(hot.names(in: hot.root + "/out")) == Set(hot.reports().keys), "every batch folder has a report")
    }

    @Test func oneDaemonKilledAtRandomMoments() throws {
        try crashAndRecover(daemons: 1, rounds: 18)
    }

    @Test func twoDaemonsOnOneHotFolderKilledAtRandomMoments() throws {
        try crashAndRecover(daemons: 2, rounds: 12)
    }
}
