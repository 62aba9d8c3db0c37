import Codecs
import Foundation
import Testing

/// Metadata templates through the real binary, every field read back by exiftool from JPEG,
/// HEIC, PNG and WebP outputs (reference: Metadata templates).
@Suite(.serialized) struct MetadataTemplateRunTests {
    static let exiftool = "/usr/bin/exiftool"
    static var hasExiftool: Bool { FileManager.default.isExecutableFile(atPath: exiftool) }
    static let noExiftool = "exiftool is missing (apt-get install libimage-exiftool-perl): outputs' metadata not read back"

    /// What exiftool reads in each file, tag names with their group (`IPTC:Keywords`,
    /// `XMP-dc:Subject`); list tags are JSON lists.
    static func read(_ paths: [String]) throws -> [String: [String: Any]] {
        let r = try Harness.exec(exiftool, ["-j", "-G1", "-a", "-charset", "UTF8", "-IPTC:all", "-XMP-dc:all",
                                            "-XMP-photoshop:all", "-XMP-xmpRights:all", "-XMP-iptcExt:all", "-GPS:all",
                                            "-IFD0:Artist", "-IFD0:Copyright"] + paths, deadline: .seconds(120))
        #expect(r.status == 0, "exiftool: \(r.stderr)")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        var byName: [String: [String: Any]] = [:]
        for tags in list { byName[((tags["SourceFile"] as? String ?? "") as NSString).lastPathComponent] = tags }
        return byName
    }

    static let roster = "// the Choo-Choos\n7\tAda Lovelace\tLovelace\n10\tJörg Öhman\tÖhman\n"

    static let template = """
        { version: 1, resize: { longSide: 160 },
          output: { format: "jpeg" },   // metadata: strip-location, the default
          metadata: { title: "Finale in Zürich — {date}", caption: "=7= passt zu =10=; =99= schaut zu",
                      keywords: ["=7#2=", "=10#2=", "Fußball"], creator: "Jörg Öhman", copyright: "© {year} Studio Nord",
                      usageTerms: "Nur redaktionell & <b>nicht</b> für Werbung", city: "Zürich", country: "Schweiz", event: "Cup-Finale",
                      codes: "roster.tsv" },
          variants: [ { name: "png", output: { format: "png" } }, { name: "webp", output: { format: "webp" } },
                      { name: "heic", output: { format: "heic" } }, { name: "agency", output: { metadata: "keep" } } ] }
        """

    @Test(.enabled(if: MetadataTemplateRunTests.hasExiftool, Comment(rawValue: noExiftool)))
    func everyFieldIsReadBackFromEveryFormat() throws {
        let dir = try Harness.tempDir()
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        let exif = ExifBuilder(make: "Canon", model: "Canon EOS R5", dateTimeOriginal: "2026:11:29 15:04:05", gps: (47.37, 8.54))
        for name in ["a", "b"] {
            try Harness.write(try Harness.jpeg(upright: Harness.marked(width: 320, height: 240), exif: exif), to: dir + "/in/\(name).jpg")
        }
        try Harness.write(Self.template, to: dir + "/t.json5")
        try Harness.write(Self.roster, to: dir + "/roster.tsv")

        // check: the code the file lacks and the place the default policy strips, at their lines.
        let check = try Harness.run(["check", dir + "/t.json5"])
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        #expect(check.stdout.contains("t.json5:3: metadata.caption: =99= is not in the codes file roster.tsv"), "\(check.stdout)")
        #expect(check.stdout.contains("t.json5:3: metadata: city and country are not written: output.metadata \"strip-location\""),
                "\(check.stdout)")

        // Outputs into a hot folder's out/, so explain finds them as it finds a daemon's.
        try FileManager.default.createDirectory(atPath: dir + "/hot/drop", withIntermediateDirectories: true)
        let r = try Harness.run(["run", "--template", dir + "/t.json5", "--out", dir + "/hot/out", dir + "/in"])
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        let batch = try Harness.batchFolder(in: dir + "/hot/out")
        let files = ["a.jpg", "a-png.png", "a-webp.webp", "a-heic.heic", "a-agency.jpg"]
        let read = try Self.read(files.map { batch + "/" + $0 })

        let caption = "Ada Lovelace passt zu Jörg Öhman; =99= schaut zu"
        for file in files {
            let tags = try #require(read[file], "\(file) not read: \(read.keys)")
            #expect(tags["XMP-dc:Title"] as? String == "Finale in Zürich — 2026-11-29", "\(file)")
            #expect(tags["XMP-dc:Description"] as? String == caption, "\(file)")
            #expect(tags["XMP-dc:Subject"] as? [String] == ["Lovelace", "Öhman", "Fußball"], "\(file): \(tags)")
            #expect(tags["XMP-dc:Creator"] as? String == "Jörg Öhman", "\(file)")
            #expect(tags["XMP-dc:Rights"] as? String == "© 2026 Studio Nord", "\(file)")
            #expect(tags["XMP-xmpRights:UsageTerms"] as? String == "Nur redaktionell & <b>nicht</b> für Werbung", "\(file)")
            #expect(tags["XMP-iptcExt:Event"] as? String == "Cup-Finale", "\(file)")
            #expect(tags["IFD0:Artist"] as? String == "Jörg Öhman", "\(file)")
            let kept = file == "a-agency.jpg"
            // strip-location (the default) keeps the place out, the template's words too; keep writes it.
            #expect((tags["XMP-photoshop:City"] as? String) == (kept ? "Zürich" : nil), "\(file)")
            #expect((tags["XMP-photoshop:Country"] as? String) == (kept ? "Schweiz" : nil), "\(file)")
            #expect((tags["GPS:GPSLatitude"] != nil) == kept, "\(file): GPS")
            if file.hasSuffix(".jpg") {
                #expect(tags["IPTC:CodedCharacterSet"] as? String == "UTF8", "\(file)")
                #expect(tags["IPTC:ObjectName"] as? String == "Finale in Zürich — 2026-11-29", "\(file)")
                #expect(tags["IPTC:Caption-Abstract"] as? String == caption, "\(file)")
                #expect(tags["IPTC:Keywords"] as? [String] == ["Lovelace", "Öhman", "Fußball"], "\(file)")
                #expect(tags["IPTC:By-line"] as? String == "Jörg Öhman", "\(file)")
                #expect(tags["IPTC:CopyrightNotice"] as? String == "© 2026 Studio Nord", "\(file)")
                #expect((tags["IPTC:City"] as? String) == (kept ? "Zürich" : nil), "\(file)")
                #expect((tags["IPTC:Country-PrimaryLocationName"] as? String) == (kept ? "Schweiz" : nil), "\(file)")
            } else {
                #expect(!tags.keys.contains { $0.hasPrefix("IPTC:") }, "\(file): no IIM outside JPEG")
            }
        }

        // The report: the texts as written, the missing code said once for the batch.
        let report = try Harness.report(in: batch)
        let items = try #require(report["items"] as? [[String: Any]])
        let outputs = try #require(items.first?["outputs"] as? [[String: Any]])
        let applied = try #require((outputs.first?["applied"] as? [String: Any])?["metadata"] as? [String: Any])
        #expect(applied["caption"] as? String == caption && applied["keywords"] as? [String] == ["Lovelace", "Öhman", "Fußball"])
        #expect(applied["city"] == nil && applied["unknownCodes"] as? [String] == ["=99="])
        #expect((outputs.first?["applied"] as? [String: Any])?["removed"] as? [String] == ["GPS", "metadata.city", "metadata.country"])
        let warnings = report["warnings"] as? [String] ?? []
        #expect(warnings.filter { $0.contains("=99=") } == ["metadata code =99= is not in the codes file roster.tsv: left as written in photos 1, 2"],
                "\(warnings)")
        #expect(!items.contains { ($0["warnings"] as? [String] ?? []).contains { $0.contains("=99=") } })

        // report.html shows each photo's texts, escaped: once for the outputs that share them,
        // apart for the variant that keeps the place.
        let html = try String(contentsOfFile: batch + "/report.html", encoding: .utf8)
        let shared = "<p class=\"dim\">Texts of a.jpg, a-png.png, a-webp.webp, a-heic.heic:</p><dl><dt>Title</dt><dd>Finale in Zürich — 2026-11-29</dd>"
            + "<dt>Caption</dt><dd>\(caption)</dd><dt>Keywords</dt><dd>Lovelace, Öhman, Fußball</dd><dt>Creator</dt><dd>Jörg Öhman</dd>"
            + "<dt>Copyright</dt><dd>© 2026 Studio Nord</dd><dt>Usage terms</dt><dd>Nur redaktionell &amp; &lt;b&gt;nicht&lt;/b&gt; für Werbung</dd>"
            + "<dt>Event</dt><dd>Cup-Finale</dd></dl><p class=\"warning\">Not in the codes file, left as written: =99=</p>"
        #expect(html.contains(shared), "\(html)")
        #expect(html.contains("<p class=\"dim\">Texts of a-agency.jpg:</p>") && html.contains("<dt>City</dt><dd>Zürich</dd><dt>Country</dt><dd>Schweiz</dd>"),
                "\(html)")
        #expect(!html.contains("<b>nicht</b>"))

        // explain names the texts as written.
        let explain = try Harness.run(["explain", "a.jpg", dir + "/hot"])
        #expect(explain.stdout.contains("caption \"\(caption)\""), "\(explain.stdout) \(explain.stderr)")
    }

    /// The console records who uploaded each photo: `{uploader}` is that user, and codes may
    /// turn the user name into a full name.
    @Test(.enabled(if: ConsoleFixture.canRun && MetadataTemplateRunTests.hasExiftool,
                   Comment(rawValue: "systemd-socket-activate or exiftool is missing: {uploader} is not tested")))
    func theUploaderIsWhoSentThePhotoThroughTheConsole() throws {
        let hot = try ConsoleFixture(template: """
            { version: 1, resize: { longSide: 32 },
              metadata: { caption: "sent by {uploader} to {hotFolder}", creator: "={uploader}=", codes: "users.tsv" } }
            """)
        try Harness.write("anna\tAnna Bell\n", to: hot.dir + "/templates/users.tsv")
        try hot.addUser("anna", "anna's password", inboxes: ["shop"])
        let daemon = try hot.start()
        let anna = ConsoleClient(port: hot.port)
        #expect(try anna.login("anna", "anna's password").status == 303, "\(daemon.log)")
        let token = try anna.csrf(on: "/inbox/shop/")
        daemon.waitUntilReady()
        #expect(try anna.upload("shop", [("IMG_1.jpg", try HotFolderFixture.photo(1))], csrf: token).status == 200)
        #expect(Poll.until(.seconds(120)) { hot.reports(hot.shop).count == 1 }, "\(daemon.log)")
        let id = try #require(hot.reports(hot.shop).keys.first)
        let tags = try #require(try Self.read([hot.shop + "/out/\(id)/IMG_1.jpg"])["IMG_1.jpg"])
        #expect(tags["XMP-dc:Description"] as? String == "sent by anna to shop", "\(tags)")
        #expect(tags["IPTC:By-line"] as? String == "Anna Bell", "\(tags)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }
}
