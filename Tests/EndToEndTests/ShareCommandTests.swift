import Foundation
import Testing

/// `photofinish share`, `share list`, `share revoke` on a real hot folder with a finished batch.
@Suite struct ShareCommandTests {
    @Test func aLinkIsMadeListedAndRevoked() throws {
        let folder = try TemporaryFolder.make("share-command")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let root = folder + "/shop"
        try Harness.run(["init", root])
        let batch = "20261129-150405-3f2a"
        try FileManager.default.createDirectory(atPath: root + "/out/" + batch, withIntermediateDirectories: true)
        let config = folder + "/photofinish.json5"
        try """
            { templatesDir: "\(folder)", web: { publicURL: "https://photos.example.com/studio/" }, shareExpires: "3d",
              inboxes: [ { name: "shop", root: "\(root)", template: "shop" } ] }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        try "{ version: 1 }".write(toFile: folder + "/shop.json5", atomically: true, encoding: .utf8)

        let made = try Harness.run(["share", root, batch, "--config", config])
        #expect(made.status == 0, "\(made.stderr)")
        let link = made.stdout.trimmingCharacters(in: .newlines)
        #expect(link.hasPrefix("https://photos.example.com/studio/s/") && link.hasSuffix("/"))
        let token = String(link.dropFirst("https://photos.example.com/studio/s/".count).dropLast())
        #expect(token.count == 48)
        #expect(made.stderr.contains("batch \(batch), until ") && made.stderr.contains("share revoke \(token)"))

        // A password from standard input is kept as a yescrypt hash, never as typed.
        let locked = try Harness.exec("/bin/sh", ["-c", "printf 'correct horse\\n' | '\(Harness.binary)' share '\(root)' \(batch) --password-stdin --expires 12h --config '\(config)'"],
                                      deadline: .seconds(60))
        #expect(locked.status == 0, "\(locked.stderr)")
        let records = try FileManager.default.contentsOfDirectory(atPath: root + "/.work/shares").filter { $0.hasSuffix(".json") }
        let texts = try records.map { try String(contentsOfFile: root + "/.work/shares/" + $0, encoding: .utf8) }
        #expect(texts.count == 2 && texts.contains { $0.contains("\"password\" : \"$y$") })
        #expect(!texts.contains { $0.contains("correct horse") })
        let short = try Harness.exec("/bin/sh", ["-c", "printf 'short\\n' | '\(Harness.binary)' share '\(root)' \(batch) --password-stdin --config '\(config)'"],
                                     deadline: .seconds(60))
        #expect(short.status == 2 && short.stderr.contains("at least 8 characters"))

        let listed = try Harness.run(["share", "list", "--config", config])
        #expect(listed.status == 0)
        #expect(listed.stdout.contains(link) && listed.stdout.contains("shop") && listed.stdout.contains(", password"))
        #expect(listed.stdout.split(separator: "\n").count == 3)

        let revoked = try Harness.run(["share", "revoke", link, "--config", config])
        #expect(revoked.status == 0 && revoked.stdout.contains("revoked the link to batch \(batch) of shop"))
        #expect(try Harness.run(["share", "list", "--config", config]).stdout.contains("revoked "))
        let again = try Harness.run(["share", "revoke", token, "--config", config])
        #expect(again.status == 0 && again.stdout.contains("was revoked already"))

        let unknown = try Harness.run(["share", "revoke", String(token.reversed()), "--config", config])
        #expect(unknown.status == 2 && unknown.stderr.contains("no hot folder of the config made this link"))
        let notFinished = try Harness.run(["share", root, "20261129-150405-0000", "--config", config])
        #expect(notFinished.status == 2 && notFinished.stderr.contains("no finished batch 20261129-150405-0000"))
        let badExpiry = try Harness.run(["share", root, batch, "--expires", "forever", "--config", config])
        #expect(badExpiry.status == 2 && badExpiry.stderr.contains("--expires must be a duration"))
    }
}

/// A batch's link in its report: report.html shows it with a QR code a scanner reads as exactly
/// the link (a real browser's rendering, read back with zbarimg); revoked, it is gone again.
@Suite struct ReportLinkTests {
    @Test(.enabled(if: Chromium.path != nil, "chromium is not installed (scripts/bootstrap --browser installs it; scripts/test does)"))
    func reportHTMLShowsTheLinkAsAQRCode() throws {
        if let reason = QRScanner.unavailable { print("skipped: \(reason)"); return }
        let dir = try Harness.tempDir()
        let root = dir + "/shop"
        try Harness.run(["init", root])
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        for name in ["a", "b"] {
            try Harness.write(try Harness.jpeg(upright: Harness.marked(width: 300, height: 200)), to: dir + "/in/\(name).jpg")
        }
        try Harness.write("{ version: 1, resize: { longSide: 200 } }", to: dir + "/t.json5")
        try Harness.write(#"{ templatesDir: "\#(dir)", web: { publicURL: "https://photos.example.com/" }, inboxes: [] }"#,
                          to: dir + "/pf.json5")
        #expect(try Harness.run(["run", "--template", dir + "/t.json5", "--out", root + "/out", dir + "/in"]).status == 0)
        let batch = try Harness.batchFolder(in: root + "/out")
        let id = (batch as NSString).lastPathComponent
        let made = try Harness.run(["share", root, id, "--config", dir + "/pf.json5"])
        let link = made.stdout.trimmingCharacters(in: .newlines)
        #expect(made.status == 0 && link.hasPrefix("https://photos.example.com/s/"), "\(made.stderr)")
        #expect(try Harness.report(in: batch)["link"] as? String == link)

        let chromium = try #require(Chromium.path)
        let shot = dir + "/shot.png"
        let s = try Harness.exec(chromium, Chromium.flags(profile: dir + "/profile")
                                 + ["--window-size=412,900", "--force-device-scale-factor=2", "--screenshot=" + shot,
                                    URL(fileURLWithPath: batch + "/report.html").absoluteString], deadline: .seconds(120))
        #expect(s.status == 0, "\(s.stderr)")
        #expect(try QRScanner.texts(inFile: shot) == [link])

        // Revoked: the report shows no link (the batch has no other that works).
        #expect(try Harness.run(["share", "revoke", root, link, "--config", dir + "/pf.json5"]).status == 0)
        #expect(try Harness.report(in: batch)["link"] == nil)
        #expect(!(try String(contentsOfFile: batch + "/report.html", encoding: .utf8)).contains("photos.example.com"))
    }
}

/// A hot folder whose template prints `{shareURL}` as a QR code: every finished photo carries
/// the batch's own link, which a scanner reads exactly, and which the report names.
@Suite struct BatchLinkTests {
    @Test func everyFinishedPhotoCarriesTheBatchsLink() throws {
        if let reason = QRScanner.unavailable { print("skipped: \(reason)"); return }
        let hot = try HotFolderFixture(extra: #"web: { publicURL: "https://photos.example.com/booth" }, shareExpires: "2d","#,
                                       template: """
                                           { version: 1, resize: { longSide: 900 }, qr: { width: 0.25, position: "bottom-right" },
                                             text: { text: "Scan me", position: "top-left" } }
                                           """)
        let daemon = try hot.start()
        daemon.waitUntilReady()
        for n in 1...2 { try hot.drop(try HotFolderFixture.photo(n, width: 1200), as: "booth-\(n).jpg") }
        #expect(Poll.until(.seconds(120)) { hot.reports().values.first?["items"] as? [Any] != nil }, "log:\n\(daemon.log)")
        let (batch, report) = try #require(hot.reports().first)
        let link = try #require(report["link"] as? String)
        #expect(link.hasPrefix("https://photos.example.com/booth/s/") && link.count == "https://photos.example.com/booth/s/".count + 49)
        for item in try #require(report["items"] as? [[String: Any]]) {
            let output = try #require((item["outputs"] as? [[String: Any]])?.first)
            let applied = try #require(output["applied"] as? [String: Any])
            #expect((applied["qr"] as? [String: Any])?["text"] as? String == link)
            let file = hot.root + "/out/" + batch + "/" + (output["file"] as! String)
            #expect(try QRScanner.texts(inFile: file) == [link], "\(file)")
        }
        // The link is the batch's, in the hot folder's store, made by the template's mark and
        // ending two days after the batch was claimed.
        let records = try FileManager.default.contentsOfDirectory(atPath: hot.root + "/.work/shares").filter { $0.hasSuffix(".json") }
        #expect(records.count == 1)
        let record = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: hot.root + "/.work/shares/" + records[0])))
                                  as? [String: Any])
        #expect(record["batch"] as? String == batch && record["by"] as? String == "the template's qr mark")
        let listed = try Harness.run(["share", "list", "--config", hot.config])
        #expect(listed.stdout.contains(link), "\(listed.stdout)\(listed.stderr)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }
}
