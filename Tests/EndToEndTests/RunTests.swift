import Codecs
import Foundation
import Pixels
import Testing

/// `photofinish run` on real files, checked by decoding what it wrote.
@Suite(.serialized) struct RunTests {
    static let webTemplate = """
        // a web export
        { version: 1, resize: { longSide: 400 }, output: { format: "jpeg", quality: 90 }, }
        """

    func setUp(_ template: String = webTemplate, name: String = #function) throws -> (dir: String, template: String) {
        let dir = try Harness.tempDir(name)
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        try Harness.write(template, to: dir + "/web.json5")
        return (dir, dir + "/web.json5")
    }

    @Test func everyOrientationComesOutUpright() throws {
        let (dir, template) = try setUp()
        let upright = Harness.marked(width: 600, height: 450)
        for o in 1...8 {
            try Harness.write(try Harness.jpeg(upright: upright, orientation: o), to: dir + "/in/o\(o).jpg")
        }
        let r = try Harness.run(["run", "--template", template, "--out", dir + "/out", dir + "/in"])
        #expect(r.status == 0, "\(r.stderr)")
        let batch = try Harness.batchFolder(in: dir + "/out")
        let report = try Harness.report(in: batch)
        let items = try #require(report["items"] as? [[String: Any]])
        #expect(items.map { $0["source"] as? String } == (1...8).map { "o\($0).jpg" })
        for o in 1...8 {
            let (image, info) = try Harness.decode(batch + "/o\(o).jpg")
            #expect(image.width == 400 && image.height == 300, "orientation \(o): \(image.width)×\(image.height)")
            #expect(Harness.isRed(image.pixel(10, 10)), "orientation \(o): top-left is \(image.pixel(10, 10))")
            #expect(Harness.isGreen(image.pixel(389, 10)), "orientation \(o): top-right is \(image.pixel(389, 10))")
            #expect(!Harness.isRed(image.pixel(10, 289)) && !Harness.isRed(image.pixel(389, 289)))
            #expect(info.orientation == 1, "outputs carry orientation 1")
            let item = items[o - 1]
            #expect(item["orientation"] as? Int == o)
            #expect(item["size"] as? [Int] == [600, 450])
        }
    }

    @Test func hostileFilesFailWithTheRightCodeAndTheRestFinish() throws {
        let (dir, template) = try setUp()
        let good = try Harness.jpeg(upright: Harness.marked(width: 300, height: 200))
        try Harness.write(good, to: dir + "/in/a_good.jpg")
        let big = try Harness.jpeg(upright: Harness.marked(width: 1200, height: 900))
        try Harness.write(Array(big.prefix(big.count / 2)), to: dir + "/in/b_truncated.jpg")
        try Harness.write([UInt8](), to: dir + "/in/c_empty.jpg")
        try Harness.write(Array("this is not a photo\n".utf8), to: dir + "/in/d_text.jpg")
        try Harness.write(Fixtures.minimalDNG(), to: dir + "/in/e_camera.dng")
        try Harness.write(Fixtures.pngHeaderBomb(width: 100_000, height: 100_000), to: dir + "/in/f_bomb.png")
        try Harness.write(Array("GIF89a".utf8) + [1, 0, 1, 0, 0, 0, 0, 0x3B], to: dir + "/in/g_anim.gif")
        let r = try Harness.run(["run", "--template", template, "--out", dir + "/out", dir + "/in"])
        #expect(r.status == 1, "some items failed → exit 1")
        let batch = try Harness.batchFolder(in: dir + "/out")
        let report = try Harness.report(in: batch)
        #expect(report["status"] as? String == "partial")
        let items = try #require(report["items"] as? [[String: Any]])
        let codes = items.map { ($0["error"] as? [String: Any])?["code"] as? String }
        #expect(codes == [nil, "corrupt-image", "empty-file", "unsupported-format", "camera-raw", "too-large",
                          "unsupported-format"])
        let messages = items.map { ($0["error"] as? [String: Any])?["message"] as? String ?? "" }
        #expect(messages[1].contains("ends early"))
        #expect(messages[3].contains("text"))
        #expect(messages[4].contains("DNG"))
        #expect(messages[6].contains("GIF"))
        #expect(items[0]["status"] as? String == "ok")
        for item in items.dropFirst() { #expect(item["status"] as? String == "failed") }
        // Nothing half-written: only the good photo's output, its thumbnail and the reports.
        let files = try FileManager.default.contentsOfDirectory(atPath: batch).sorted()
        #expect(files == ["a_good.jpg", "report.html", "report.json", "thumbs"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: batch + "/thumbs") == ["a_good.jpg"])
        // Inputs untouched.
        #expect(try Harness.read(dir + "/in/a_good.jpg") == good)
    }

    @Test func gpsStrippedDateKeptProfileCarried() throws {
        let (dir, template) = try setUp()
        let exif = ExifBuilder(make: "Test", dateTimeOriginal: "2025:07:14 09:30:00", gps: (48.85, 2.29))
        let profile = ICC.sRGB
        try Harness.write(try Harness.jpeg(upright: Harness.marked(width: 800, height: 600), exif: exif, icc: profile),
                          to: dir + "/in/gps.jpg")
        #expect(Exif.summary(exif.bytes()).hasGPS, "the fixture has GPS")
        let r = try Harness.run(["run", "--template", template, "--out", dir + "/out", dir + "/in/gps.jpg"])
        #expect(r.status == 0, "\(r.stderr)")
        let batch = try Harness.batchFolder(in: dir + "/out")
        let (_, info) = try Harness.decode(batch + "/gps.jpg")
        let out = try #require(info.exif)
        let summary = Exif.summary(out)
        #expect(!summary.hasGPS)
        #expect(summary.dateTimeOriginal == "2025:07:14 09:30:00")
        #expect(summary.orientation == 1 || summary.orientation == nil)
        #expect(info.icc == profile)
        let item = try #require((try Harness.report(in: batch)["items"] as? [[String: Any]])?.first)
        let applied = try #require(((item["outputs"] as? [[String: Any]])?.first)?["applied"] as? [String: Any])
        #expect(applied["removed"] as? [String] == ["GPS"])
        #expect((applied["icc"] as? String)?.hasSuffix("(kept)") == true)
    }

    /// exempi writes the message of every error it raises to std::cerr: it belongs in the
    /// photo's report, not on stderr (the journal, for the daemon) as a line naming nothing.
    @Test func anUnreadableXMPPacketIsSaidInTheReportAndNotOnStderr() throws {
        let (dir, template) = try setUp()
        var options = EncodeOptions(format: .jpeg, quality: 90)
        options.xmp = Array(("<x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>"
            + "<rdf:Description rdf:about='' xmlns:dc='http://purl.org/dc/elements/1.1/' dc:format='a'>"
            + "<dc:format>b</dc:format></rdf:Description></rdf:RDF></x:xmpmeta>").utf8)
        try Harness.write(try encodeImage(Harness.marked(width: 400, height: 300), options: options), to: dir + "/in/dup.jpg")
        #expect((try decodeWhole(try Harness.read(dir + "/in/dup.jpg"))).1.xmp == options.xmp, "the fixture carries it")
        let r = try Harness.run(["run", "--template", template, "--out", dir + "/out", dir + "/in/dup.jpg"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stderr.contains("Duplicate property"), "\(r.stderr)")
        let batch = try Harness.batchFolder(in: dir + "/out")
        let (_, info) = try Harness.decode(batch + "/dup.jpg")
        #expect(info.xmp == nil)
        let item = try #require((try Harness.report(in: batch)["items"] as? [[String: Any]])?.first)
        let applied = try #require(((item["outputs"] as? [[String: Any]])?.first)?["applied"] as? [String: Any])
        #expect(applied["removed"] as? [String] == ["XMP (unreadable: Duplicate property or field node)"])
    }

    @Test func cropsNeverUpscaleAndSkipRule() throws {
        let (dir, template) = try setUp("""
            { version: 1, resize: { longSide: 1080 },
              crops: ["1:1", "4:5", { ratio: "16:9", skipIfCutOver: 0.5 }], output: { suffix: "-s" } }
            """)
        // A portrait phone photo (stored landscape, orientation 6) and a small square.
        try Harness.write(try Harness.jpeg(upright: Harness.marked(width: 1500, height: 2000), orientation: 6),
                          to: dir + "/in/IMG_10.jpg")
        try Harness.write(try Harness.jpeg(upright: Harness.marked(width: 500, height: 500)), to: dir + "/in/IMG_2.jpg")
        let r = try Harness.run(["run", "--template", template, "--out", dir + "/out", dir + "/in"])
        #expect(r.status == 0, "\(r.stderr)")
        let batch = try Harness.batchFolder(in: dir + "/out")
        let report = try Harness.report(in: batch)
        let items = try #require(report["items"] as? [[String: Any]])
        #expect(items.map { $0["source"] as? String } == ["IMG_2.jpg", "IMG_10.jpg"], "natural order")
        // The small square is never upscaled: 500×500 for 1:1, 400×500 for 4:5, 500×281 for 16:9.
        let small = try #require(items[0]["outputs"] as? [[String: Any]])
        #expect(small.map { $0["file"] as? String } == ["IMG_2-s-1x1.jpg", "IMG_2-s-4x5.jpg", "IMG_2-s-16x9.jpg"])
        #expect(small.map { $0["size"] as? [Int] } == [[500, 500], [400, 500], [500, 281]])
        // The portrait: 16:9 would cut 58 % → skipped and reported.
        let portrait = try #require(items[1]["outputs"] as? [[String: Any]])
        #expect(portrait.map { $0["size"] as? [Int] } == [[1080, 1080], [864, 1080]])
        let skipped = try #require(items[1]["skipped"] as? [[String: Any]])
        #expect(skipped.first?["ratio"] as? String == "16:9")
        #expect((report["counts"] as? [String: Any])?["skippedOutputs"] as? Int == 1)
        for output in small + portrait {
            let (image, _) = try Harness.decode(batch + "/" + (output["file"] as! String))
            #expect([image.width, image.height] == output["size"] as? [Int])
        }
        let crop = (portrait[1]["applied"] as? [String: Any])?["crop"] as? [String: Any]
        #expect(crop?["ratio"] as? String == "4:5")
        // Placed on the subject (the coloured blocks along the top edge), not centred (y 62).
        #expect(crop?["box"] as? [Int] == [0, 0, 1500, 1875])
        #expect(crop?["focus"] as? String == "subject")
    }

    @Test func reportHasEveryField() throws {
        let (dir, template) = try setUp()
        let bytes = try Harness.jpeg(upright: Harness.marked(width: 1000, height: 800))
        try Harness.write(bytes, to: dir + "/in/one.jpg")
        let r = try Harness.run(["run", "--template", template, "--out", dir + "/out", dir + "/in/one.jpg"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("report:"))
        let batch = try Harness.batchFolder(in: dir + "/out")
        let report = try Harness.report(in: batch)
        #expect(report["schema"] as? Int == 1)
        let id = try #require(report["batch"] as? String)
        #expect(batch.hasSuffix("/" + id))
        #expect(id.range(of: #"^\d{8}-\d{6}-[0-9a-f]{4}$"#, options: .regularExpression) != nil)
        #expect(report["inbox"] is NSNull)
        let t = try #require(report["template"] as? [String: Any])
        #expect(t["name"] as? String == "web")
        #expect((t["sha256"] as? String)?.count == 64)
        for key in ["started", "finished"] {
            let s = try #require(report[key] as? String)
            #expect(s.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#, options: .regularExpression) != nil)
        }
        #expect(report["status"] as? String == "complete")
        #expect(report["counts"] as? [String: Int] == ["items": 1, "ok": 1, "failed": 0, "skippedOutputs": 0])
        #expect((report["outputs"] as? [Any])?.isEmpty == true)
        let item = try #require((report["items"] as? [[String: Any]])?.first)
        #expect(item["index"] as? Int == 1)
        #expect(item["source"] as? String == "one.jpg")
        #expect(item["bytes"] as? Int == bytes.count)
        #expect(item["sha256"] as? String == Fixtures.sha256Hex(bytes))
        #expect(item["format"] as? String == "jpeg")
        #expect(item["size"] as? [Int] == [1000, 800])
        #expect(item["orientation"] as? Int == 1)
        #expect(item["status"] as? String == "ok")
        #expect((item["ms"] as? Int ?? -1) >= 0)
        #expect(item["host"] as? String == Harness.hostName, "the machine's host name: run is no cluster")
        #expect((item["original"] as? String)?.hasSuffix("/in/one.jpg") == true)
        let output = try #require((item["outputs"] as? [[String: Any]])?.first)
        #expect(output["file"] as? String == "one.jpg")
        #expect(output["size"] as? [Int] == [400, 320])
        let written = try Harness.read(batch + "/one.jpg")
        #expect(output["bytes"] as? Int == written.count)
        let applied = try #require(output["applied"] as? [String: Any])
        #expect(applied["decodeScale"] as? String == "1/2")
        #expect(applied["crop"] is NSNull)
        #expect(applied["resizedTo"] as? [Int] == [400, 320])
        #expect(applied["icc"] is NSNull)
        #expect(applied["removed"] as? [String] == [])
        // `photofinish report` prints it for a person.
        let printed = try Harness.run(["report", batch])
        #expect(printed.status == 0)
        #expect(printed.stdout.contains("one.jpg") && printed.stdout.contains("1 finished"))
    }

    @Test func usageAndTemplateErrorsExitTwo() throws {
        let (dir, _) = try setUp()
        try Harness.write("{ version: 1,\n  resise: { longSide: 10 } }", to: dir + "/bad.json5")
        let bad = try Harness.run(["run", "--template", dir + "/bad.json5", dir])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("bad.json5:2") && bad.stderr.contains("resise"))
        let check = try Harness.run(["check", dir + "/bad.json5"])
        #expect(check.status == 2)
        let good = try Harness.run(["check", dir + "/web.json5"])
        #expect(good.status == 0 && good.stdout.contains("configuration OK"))
        #expect(try Harness.run(["run", "--out", dir]).status == 2)
        #expect(try Harness.run(["frobnicate"]).status == 2)
    }

    @Test func interruptFinishesInFlightAndWritesTheReport() throws {
        let (dir, template) = try setUp()
        let photo = try Harness.jpeg(upright: Harness.marked(width: 2400, height: 1800))
        for i in 1...40 { try Harness.write(photo, to: dir + "/in/p\(i).jpg") }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Harness.binary)
        p.arguments = ["run", "--template", template, "--workers", "1", "--out", dir + "/out", dir + "/in"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        // Wait until the first output exists, then interrupt.
        let deadline = ContinuousClock.now + .seconds(120)
        var started = false
        while ContinuousClock.now < deadline && p.isRunning {
            if let batch = try? FileManager.default.contentsOfDirectory(atPath: dir + "/out").first,
               let files = try? FileManager.default.contentsOfDirectory(atPath: dir + "/out/" + batch),
               files.contains(where: { $0.hasSuffix(".jpg") && !$0.hasPrefix(".") }) {
                started = true
                break
            }
            usleep(10_000)
        }
        #expect(started)
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        #expect(p.terminationStatus == 1)
        let batch = try Harness.batchFolder(in: dir + "/out")
        let report = try Harness.report(in: batch)
        let items = try #require(report["items"] as? [[String: Any]])
        #expect(items.count == 40)
        let statuses = items.map { $0["status"] as? String ?? "" }
        // The signal came after the first photo; 39 more take far longer than that.
        let firstNotDone = try #require(statuses.firstIndex(of: "interrupted"))
        #expect(report["status"] as? String == "interrupted")
        // Done photos come first (in order), then the ones never started.
        #expect(firstNotDone >= 1)
        #expect(statuses[..<firstNotDone].allSatisfy { $0 == "ok" })
        #expect(statuses[firstNotDone...].allSatisfy { $0 == "interrupted" })
        // Every ok item's output is whole.
        for item in items where item["status"] as? String == "ok" {
            _ = try Harness.decode(batch + "/" + (item["source"] as! String))
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: batch).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty, "temporary names left behind: \(leftovers)")
    }

    /// Ctrl-C asks for a stop, which waits for the file in flight; when that never ends (here a
    /// FIFO nobody writes, as a hung share would hold a read), a second Ctrl-C ends the process
    /// at once.
    @Test func aSecondInterruptQuitsAtOnce() throws {
        let (dir, template) = try setUp()
        try Harness.write(try Harness.jpeg(upright: Harness.marked(width: 600, height: 450)), to: dir + "/in/a.jpg")
        #expect(mkfifo(dir + "/in/stuck.jpg", 0o644) == 0)
        let stderr = Pipe()
        let said = Locked(Data())
        stderr.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            said.update { $0 += data }
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Harness.binary)
        p.arguments = ["run", "--template", template, "--workers", "1", "--out", dir + "/out", dir + "/in/a.jpg", dir + "/in/stuck.jpg"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = stderr
        try p.run()
        // The batch runs (its signals are caught from before it starts) once a thread of the
        // process waits in the FIFO's open for a writer.
        let tasks = "/proc/\(p.processIdentifier)/task"
        #expect(Poll.until(.seconds(120)) {
            ((try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? []).contains {
                (try? String(contentsOfFile: tasks + "/" + $0 + "/wchan", encoding: .utf8)) == "wait_for_partner"
            }
        })
        kill(p.processIdentifier, SIGINT)
        #expect(Poll.until(.seconds(60)) { String(decoding: said.value, as: UTF8.self).contains("stopping:") })
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        stderr.fileHandleForReading.readabilityHandler = nil
        #expect(p.terminationReason == .exit && p.terminationStatus == 130, "\(String(decoding: said.value, as: UTF8.self))")
    }
}
