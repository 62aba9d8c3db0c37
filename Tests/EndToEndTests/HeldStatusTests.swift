import Foundation
import Testing
import TestSupport

/// A hot folder with `approve` and no delivery (docs/reference.md "Approval", "Status",
/// "STATUS.txt"): its finished batch is *held for approval* — said by STATUS.txt and `photofinish
/// status` with who approves it, since when and its link —, found held again after a restart
/// (from its report), and no longer once its report holds the approval.
struct HeldStatusTests {
    @Test(.timeLimit(.minutes(3))) func aBatchAwaitingItsApprovalIsSaidHeldWithWhoSinceAndItsLink() throws {
        let fixture = try HotFolderFixture(extra: #"approve: "owner", web: { publicURL: "https://photos.example.org/" },"#)
        var daemon = try fixture.start()
        defer { daemon.signal(SIGTERM); _ = daemon.wait() }
        #expect(daemon.waitUntilReady(), "\(daemon.log)")
        try fixture.drop(try HotFolderFixture.photo(1), as: "a.jpg")
        #expect(Poll.until(.seconds(60)) { fixture.reports().count == 1 }, "\(daemon.log)")
        let batch = try #require(fixture.reports().keys.first)
        let finished = try #require(try Harness.report(in: fixture.root + "/out/" + batch)["finished"] as? String)
        let statusText = fixture.root + "/STATUS.txt"
        func text() -> String { (try? String(contentsOfFile: statusText, encoding: .utf8)) ?? "" }
        let held = "Batch \(batch) is held for approval by the studio, on its page in the console, since "
        #expect(Poll.until(.seconds(30)) { text().contains(held) }, "\(text())\n\(daemon.log)")
        #expect(text().contains("; no link yet (make one on its console page or with photofinish share).\r\n"), "\(text())")
        func status() throws -> String {
            try Harness.run(["status", fixture.root], extraEnvironment: ["RUNTIME_DIRECTORY": fixture.runtime]).stdout
        }
        let first = try status()
        #expect(first.contains("  batch \(batch) held for approval by the studio, on its page in the console, since ")
                && first.contains("; no link yet\n"), "\(first)")
        // The status file says it as values: who, since when (the report's `finished`).
        let json = try Harness.run(["status", "--json"], extraEnvironment: ["RUNTIME_DIRECTORY": fixture.runtime]).stdout
        let said = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [[String: Any]]
        let inbox = (said?.first?["inboxes"] as? [[String: Any]])?.first
        #expect(inbox?["held"] as? [[String: String]] == [["batch": batch, "by": "owner", "since": finished]], "\(json)")

        // A link made while the daemon is stopped: held again after the start, with the link.
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
        let made = try Harness.run(["share", fixture.root, batch, "--config", fixture.config])
        let link = made.stdout.split(separator: "\n").first.map(String.init) ?? ""
        #expect(made.status == 0 && link.hasPrefix("https://photos.example.org/s/"), "\(made.stdout)\(made.stderr)")
        daemon = try fixture.start(log: "daemon-2.log")
        #expect(daemon.waitUntilReady(), "\(daemon.log)")
        #expect(Poll.until(.seconds(30)) { text().contains(held) && text().contains(": \(link).\r\n") }, "\(text())\n\(daemon.log)")
        let second = try status()
        #expect(second.contains("held for approval by the studio, on its page in the console, since ") && second.contains("; link \(link)\n"),
                "\(second)")

        // Approved (its report holds the approval): no longer held.
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
        let report = fixture.root + "/out/" + batch + "/report.json"
        var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        object["approval"] = ["by": "anna", "at": finished, "approved": ["a.jpg"], "rejected": [String](), "note": NSNull()] as [String: Any]
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: report))
        daemon = try fixture.start(log: "daemon-3.log")
        #expect(daemon.waitUntilReady(), "\(daemon.log)")
        #expect(Poll.until(.seconds(30)) { !text().contains("PhotoFinish is stopped") }, "\(text())")
        #expect(!text().contains("held for approval"), "\(text())")
        let third = try status()
        #expect(!third.contains("held for approval"), "\(third)")
    }
}
