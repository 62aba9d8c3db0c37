import Codecs
import Foundation
import Pixels
import Testing

/// `photofinish run` with whole-set outputs: written after the photos, listed in the report,
/// and `report.json` still the last file.
@Suite struct WholeSetRunTests {
    @Test func runWritesTheStoryAndTheCardBeforeTheReport() throws {
        let dir = try Harness.tempDir()
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        try Harness.write("""
            { version: 1, resize: { longSide: 160 }, colorCard: true,
              stitch: { width: 150, spacing: 10, maxHeight: 400, background: "#000000" } }
            """, to: dir + "/t.json5")
        // Upright 300×200, 200×300 (stored sideways) and 240×240: at 150 px wide 100, 225 and
        // 150 px tall. Under a 400 px cap: IMG_1 and IMG_2 (335 px), then IMG_10 alone.
        try Harness.write(try Harness.jpeg(upright: Harness.marked(width: 300, height: 200)), to: dir + "/in/IMG_1.jpg")
        try Harness.write(try Harness.jpeg(upright: Harness.marked(width: 200, height: 300), orientation: 6),
                          to: dir + "/in/IMG_2.jpg")
        try Harness.write(try Harness.jpeg(upright: Harness.marked(width: 240, height: 240)), to: dir + "/in/IMG_10.jpg")
        let r = try Harness.run(["run", "--template", dir + "/t.json5", "--out", dir + "/out", dir + "/in"])
        #expect(r.status == 0, "\(r.stderr)")
        let batch = try Harness.batchFolder(in: dir + "/out")
        let id = URL(fileURLWithPath: batch).lastPathComponent
        let report = try Harness.report(in: batch)
        let outputs = try #require(report["outputs"] as? [[String: Any]])
        #expect(outputs.map { $0["file"] as? String } == [
            "\(id)-story-1-of-2.jpg", "\(id)-story-2-of-2.jpg", "\(id)-color-card.png"])
        #expect(outputs.map { $0["items"] as? [Int] } == [[1, 2], [3], [1, 2, 3]])
        #expect(outputs.prefix(2).map { $0["size"] as? [Int] } == [[150, 335], [150, 150]])
        #expect(report["warnings"] == nil)

        let (part, _) = try Harness.decode(batch + "/\(id)-story-1-of-2.jpg")
        #expect(part.width == 150 && part.height == 335)
        // IMG_2 upright at y 110…334: its red block top-left, green top-right; black spacing above.
        #expect(Harness.isRed(part.pixel(5, 115)) && Harness.isGreen(part.pixel(144, 115)))
        let gap = part.pixel(75, 105)
        #expect(gap.allSatisfy { $0 < 30 }, "spacing is \(gap)")
        #expect(Harness.isRed(part.pixel(5, 5)) && Harness.isGreen(part.pixel(144, 5)))

        // report.json is the last file written (SPEC §1): no output is newer.
        func modified(_ name: String) throws -> Date {
            try #require(try FileManager.default.attributesOfItem(atPath: batch + "/" + name)[.modificationDate] as? Date)
        }
        let last = try modified("report.json")
        for name in try FileManager.default.contentsOfDirectory(atPath: batch) where name != "report.json" {
            #expect(try modified(name) <= last, "\(name) is newer than report.json")
        }
        let html = try String(contentsOfFile: batch + "/report.html", encoding: .utf8)
        for o in outputs { #expect(html.contains("href=\"\(o["file"] as? String ?? "?")\"")) }
    }
}
