import Codecs
import Finishing
import Foundation
import Pixels
import Testing

/// What a memory card (or a real folder) holds, dropped as it is: a RAW+JPEG pair with its
/// XMP sidecar, a LICENSE, a text file, one broken JPEG, one tiny photo. One item per photo,
/// the rest ignored with a reason, only the broken one failed, the story at full width without
/// it, every file filed, nothing left in drop/.
@Suite struct CardTests {
    /// The card's files, by name.
    static func card() throws -> [(String, [UInt8])] {
        let pair = try Harness.jpeg(upright: Harness.marked(width: 800, height: 600), quality: 85)
        let preview = try Harness.jpeg(upright: Harness.marked(width: 400, height: 300), quality: 80)
        let raw = DNGWriter.dng(preview: preview, previewWidth: 400, previewHeight: 300, rawWidth: 400, rawHeight: 300)
        let broken = try Harness.jpeg(upright: Harness.marked(width: 600, height: 400), quality: 90)
        return [
            ("IMG_0001.DNG", raw),
            ("IMG_0001.JPG", pair),
            ("IMG_0001.xmp", Array("""
                <x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
                <rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmp:Rating="4"/></rdf:RDF></x:xmpmeta>
                """.utf8)),
            ("IMG_0002.jpg", try Harness.jpeg(upright: Harness.marked(width: 1200, height: 900), quality: 85)),
            ("LICENSE", Array("Photos © Studio Nord. All rights reserved.\n".utf8)),
            ("notes.txt", Array("shoot 29 Nov: beach, 3 rolls\n".utf8)),
            ("broken.jpg", Array(broken.prefix(broken.count / 3))),
            ("tiny.jpg", try Harness.jpeg(upright: Harness.marked(width: 49, height: 37), quality: 90)),
        ]
    }

    static let template = """
        { version: 1, resize: { longSide: 400 }, output: { quality: 85 },
          stitch: { width: 400, spacing: 10, background: "#ffffff", marks: false } }
        """

    @Test func aCardDroppedIntoAHotFolderIsSortedFinishedAndFiledWhole() throws {
        let hot = try HotFolderFixture(template: Self.template)
        let card = try Self.card()
        let daemon = try hot.start()
        for (name, bytes) in card { try hot.drop(bytes, as: name) }
        #expect(Poll.until(.seconds(60)) { hot.reports().count == 1 }, "log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
        let (id, report) = try #require(hot.reports().first)

        // One item per photo, in name order; only the broken one failed.
        let items = try #require(report["items"] as? [[String: Any]])
        #expect(items.map { $0["source"] as? String } == ["broken.jpg", "IMG_0001.JPG", "IMG_0002.jpg", "tiny.jpg"])
        #expect(items.map { $0["status"] as? String } == ["failed", "ok", "ok", "ok"])
        #expect((items[0]["error"] as? [String: Any])?["code"] as? String == "corrupt-image")
        #expect(report["status"] as? String == "partial")
        #expect(report["counts"] as? [String: Int] == ["items": 4, "ok": 3, "failed": 1, "skippedOutputs": 0])
        // The pair: the JPEG finished, the RAW its alternate.
        #expect(items[1]["alternates"] as? [String] == ["IMG_0001.DNG"])
        #expect(items[1]["original"] as? String == "originals/\(id)/IMG_0001.JPG")
        #expect(items.filter { $0["alternates"] != nil }.count == 1)
        // Ignored, each with its reason and where it went.
        let ignored = try #require(report["ignored"] as? [[String: String]])
        #expect(ignored == [
            ["source": "IMG_0001.xmp", "reason": "sidecar of IMG_0001.JPG", "original": "originals/\(id)/IMG_0001.xmp"],
            ["source": "LICENSE", "reason": "text, not a photo", "original": "originals/\(id)/LICENSE"],
            ["source": "notes.txt", "reason": "text, not a photo", "original": "originals/\(id)/notes.txt"],
        ])

        // The story: full width (a 49 px photo does not shrink it), without the broken photo.
        let outputs = try #require(report["outputs"] as? [[String: Any]])
        let story = try #require(outputs.first { ($0["file"] as? String)?.contains("-story-") == true })
        #expect(story["file"] as? String == "\(id)-story-1-of-1.jpg")
        #expect(story["items"] as? [Int] == [2, 3, 4])
        #expect(story["leftOut"] as? [Int] == [1])
        #expect(story["size"] as? [Int] == [400, 300 + 10 + 300 + 10 + 37])
        let warnings = report["warnings"] as? [String] ?? []
        #expect(warnings.contains { $0.hasPrefix("stitched story: photo 1 (broken.jpg) left out") }, "\(warnings)")
        let (image, _) = try Harness.decode(hot.root + "/out/\(id)/\(id)-story-1-of-1.jpg")
        #expect(image.width == 400 && image.height == 657)
        // The tiny photo sits centred at its own size on the white background: its red corner
        // block starts at x = (400 − 49) / 2 = 175.
        let tinyTop = 620
        #expect(image.pixel(20, tinyTop + 3) == [255, 255, 255] || image.pixel(20, tinyTop + 3).allSatisfy { $0 > 245 })
        #expect(Harness.isRed(image.pixel(177, tinyTop + 3)), "\(image.pixel(177, tinyTop + 3))")
        #expect(!Harness.isRed(image.pixel(172, tinyTop + 3)))
        // The photos above fill the width: the first one's red corner at x = 0.
        #expect(Harness.isRed(image.pixel(3, 3)))

        // Every file filed, byte for byte; nothing left in drop/ or .work/.
        #expect(hot.names(in: hot.drop).isEmpty)
        #expect(hot.names(in: hot.root + "/.work").filter { !$0.hasPrefix(".") }.isEmpty)
        #expect(hot.names(in: hot.root + "/failed/\(id)") == ["broken.jpg"])
        #expect(hot.names(in: hot.root + "/originals/\(id)") == ["IMG_0001.DNG", "IMG_0001.JPG", "IMG_0001.xmp",
                                                                  "IMG_0002.jpg", "LICENSE", "notes.txt", "tiny.jpg"])
        for (name, bytes) in card {
            let kind = name == "broken.jpg" ? "failed" : "originals"
            #expect(try Harness.read(hot.root + "/\(kind)/\(id)/\(name)") == bytes, "\(name)")
        }
        // explain finds the files that were no item of their own.
        let raw = try Harness.run(["explain", "IMG_0001.DNG", hot.root])
        #expect(raw.status == 0 && raw.stdout.contains("was filed at") && raw.stdout.contains("with IMG_0001.JPG")
                && raw.stdout.contains("originals/\(id)/IMG_0001.DNG"), "\(raw.stdout)")
        let license = try Harness.run(["explain", "LICENSE", hot.root])
        #expect(license.status == 0 && license.stdout.contains("LICENSE is no photo (text, not a photo)")
                && license.stdout.contains("originals/\(id)/LICENSE"), "\(license.stdout)")
    }

    @Test func runSortsTheSameCardAndMovesNothing() throws {
        let dir = try Harness.tempDir()
        try FileManager.default.createDirectory(atPath: dir + "/card", withIntermediateDirectories: true)
        let card = try Self.card()
        for (name, bytes) in card { try Harness.write(bytes, to: dir + "/card/" + name) }
        try Harness.write(Self.template, to: dir + "/t.json5")
        let r = try Harness.run(["run", "--template", dir + "/t.json5", "--out", dir + "/out", dir + "/card"])
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        let report = try Harness.report(in: try Harness.batchFolder(in: dir + "/out"))
        let items = try #require(report["items"] as? [[String: Any]])
        #expect(items.map { $0["source"] as? String } == ["broken.jpg", "IMG_0001.JPG", "IMG_0002.jpg", "tiny.jpg"])
        #expect(items[1]["alternates"] as? [String] == ["IMG_0001.DNG"])
        let ignored = try #require(report["ignored"] as? [[String: String]])
        #expect(ignored.map { $0["source"]! } == ["IMG_0001.xmp", "LICENSE", "notes.txt"])
        #expect(ignored.map { $0["original"]! } == ["IMG_0001.xmp", "LICENSE", "notes.txt"].map { dir + "/card/" + $0 })
        #expect(r.stdout.contains("ignored: LICENSE (text, not a photo)"), "\(r.stdout)")
        for (name, bytes) in card { #expect(try Harness.read(dir + "/card/" + name) == bytes) }
    }

    @Test func aRawAloneIsFinishedFromItsPreviewOnlyWhenThePreviewIsLargeEnough() throws {
        let dir = try Harness.tempDir()
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        // A portrait raw stored sideways (orientation 6), its preview as cameras embed it: no
        // EXIF of its own, stored like the raw.
        let stored = Orientation.apply(Harness.marked(width: 300, height: 400), exif: Harness.inverse(6))
        let preview = try encodeImage(stored, options: EncodeOptions(format: .jpeg, quality: 90))
        var facts = DNGWriter.Facts()
        facts.orientation = 6
        try Harness.write(DNGWriter.dng(preview: preview, previewWidth: 400, previewHeight: 300, rawWidth: 400, rawHeight: 300,
                                        facts: facts), to: dir + "/in/IMG_0100.DNG")
        // A raw whose preview is a quarter of its size.
        let small = try encodeImage(Harness.marked(width: 200, height: 150), options: EncodeOptions(format: .jpeg))
        try Harness.write(DNGWriter.dng(preview: small, previewWidth: 200, previewHeight: 150, rawWidth: 800, rawHeight: 600),
                          to: dir + "/in/IMG_0101.DNG")
        try Harness.write("""
            { version: 1, resize: { longSide: 300 }, text: { text: "{camera}", capHeight: 0.05 } }
            """, to: dir + "/t.json5")
        let r = try Harness.run(["run", "--template", dir + "/t.json5", "--out", dir + "/out", dir + "/in"])
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        let batch = try Harness.batchFolder(in: dir + "/out")
        let items = try #require(try Harness.report(in: batch)["items"] as? [[String: Any]])
        #expect(items.map { $0["status"] as? String } == ["ok", "failed"])
        // Finished from its preview, turned upright, the camera's name in the mark; applied says so.
        #expect(items[0]["format"] as? String == "dng")
        #expect(items[0]["size"] as? [Int] == [300, 400])
        let output = try #require((items[0]["outputs"] as? [[String: Any]])?.first)
        #expect(output["size"] as? [Int] == [225, 300])
        let applied = try #require(output["applied"] as? [String: Any])
        let raw = try #require(applied["rawPreview"] as? [String: Any])
        #expect(raw["format"] as? String == "DNG")
        #expect(raw["size"] as? [Int] == [300, 400] && raw["rawSize"] as? [Int] == [300, 400])
        #expect((applied["text"] as? [String: Any])?["text"] as? String == "Canon EOS R5")
        let (image, info) = try Harness.decode(batch + "/" + (output["file"] as? String ?? ""))
        #expect(info.width == 225 && info.height == 300)
        #expect(Harness.isRed(image.pixel(5, 5)), "\(image.pixel(5, 5))")
        #expect(Harness.isGreen(image.pixel(219, 5)), "\(image.pixel(219, 5))")
        // Too small a preview for the outputs: camera-raw, with the sizes.
        let error = try #require(items[1]["error"] as? [String: String])
        #expect(error["code"] == "camera-raw")
        #expect(error["message"]?.contains("embedded preview (200×150) is smaller than the 300×225 output") == true,
                "\(error)")
    }
}
