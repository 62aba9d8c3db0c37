import Foundation
import Testing

/// `photofinish redo ROOT BATCH-ID` on a real hot folder, beside the running daemon.
@Suite struct RedoTests {
    @Test func aFinishedBatchRunsAgainWithTheCurrentTemplateAsANewBatch() throws {
        let hot = try HotFolderFixture()
        let daemon = try hot.start()
        let card = try CardTests.card()
        for (name, bytes) in card { try hot.drop(bytes, as: name) }
        #expect(Poll.until(.seconds(60)) { hot.reports().count == 1 }, "log:\n\(daemon.log)")
        let (first, firstReport) = try #require(hot.reports().first)
        let firstOut = hot.allFiles(under: hot.root + "/out/" + first)
        let firstOriginals = hot.names(in: hot.root + "/originals/" + first)

        // The template is fixed after the batch: outputs 48 px instead of 32, and a story.
        try Harness.write("""
            { version: 1, resize: { longSide: 48 }, output: { format: "jpeg", quality: 80 }, stitch: { width: 48 } }
            """, to: hot.dir + "/templates/small.json5")
        let r = try Harness.run(["redo", hot.root, first, "--config", hot.config])
        #expect(r.status == 1, "broken.jpg still fails → exit 1\n\(r.stdout)\(r.stderr)")
        let reports = hot.reports()
        #expect(reports.count == 2)
        let (second, report) = try #require(reports.first { $0.key != first })
        #expect(second != first)
        #expect(report["redoes"] as? String == first)
        #expect(report["inbox"] as? String == "shop")
        #expect(r.stdout.contains("out/\(second)/"), "\(r.stdout)")
        // The same photos, sorted the same way, finished with the new template.
        let items = try #require(report["items"] as? [[String: Any]])
        let before = try #require(firstReport["items"] as? [[String: Any]])
        #expect(items.map { $0["source"] as? String } == before.map { $0["source"] as? String })
        #expect(items.map { $0["status"] as? String } == ["failed", "ok", "ok", "ok"])
        #expect(items[1]["alternates"] as? [String] == ["IMG_0001.DNG"])
        let output = try #require((items[1]["outputs"] as? [[String: Any]])?.first)
        #expect(output["size"] as? [Int] == [48, 36])
        #expect((report["ignored"] as? [[String: String]])?.map { $0["source"]! } == ["IMG_0001.xmp", "LICENSE", "notes.txt"])
        #expect((report["outputs"] as? [[String: Any]])?.first?["items"] as? [Int] == [2, 3, 4])
        // The first batch is untouched; the new one has its own originals: the same files, linked.
        #expect(hot.allFiles(under: hot.root + "/out/" + first) == firstOut)
        #expect(hot.names(in: hot.root + "/originals/" + first) == firstOriginals)
        #expect(hot.names(in: hot.root + "/originals/" + second) == firstOriginals)
        #expect(hot.names(in: hot.root + "/failed/" + second) == ["broken.jpg"])
        for (name, bytes) in card {
            let kind = name == "broken.jpg" ? "failed" : "originals"
            #expect(try Harness.read(hot.root + "/\(kind)/\(second)/\(name)") == bytes, "\(name)")
            var a = stat(), b = stat()
            #expect(stat(hot.root + "/\(kind)/\(first)/\(name)", &a) == 0 && stat(hot.root + "/\(kind)/\(second)/\(name)", &b) == 0)
            #expect(a.st_ino == b.st_ino && a.st_nlink == 2, "\(name): one file under two names")
        }
        #expect(hot.names(in: hot.root + "/.work").filter { !$0.hasPrefix(".") }.isEmpty)
        #expect(hot.names(in: hot.drop).isEmpty)
        // The daemon beside it saw nothing to do.
        #expect(!daemon.log.contains(second), "\(daemon.log)")

        // What cannot be redone says why (exit 2).
        let unknown = try Harness.run(["redo", hot.root, "20200101-000000-abcd", "--config", hot.config])
        #expect(unknown.status == 2 && unknown.stderr.contains("no batch 20200101-000000-abcd"), "\(unknown.stderr)")
        let notAnID = try Harness.run(["redo", hot.root, "latest", "--config", hot.config])
        #expect(notAnID.status == 2 && notAnID.stderr.contains("not a batch id"), "\(notAnID.stderr)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }
}
