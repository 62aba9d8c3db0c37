import Foundation
import Pixels
import Testing

/// `report.html` draws each crop's box on the thumbnail, checked in a real browser.
@Suite(.serialized) struct CropBoxPageTests {
    @Test(.enabled(if: Chromium.path != nil,
                   "chromium is not installed (scripts/bootstrap --browser installs it; scripts/test does)"))
    func cropBoxesAreDrawnOnTheThumbnail() throws {
        let dir = try Harness.tempDir()
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        try Harness.write("{ version: 1, resize: { longSide: 200 }, crops: [\"1:1\", \"9:16\"] }", to: dir + "/t.json5")
        // A calm photo whose only subject is a saturated red block near its left edge.
        var photo = Canvas(width: 600, height: 400, channels: 3, fill: [90, 110, 140])
        photo.withUnsafeMutableRows { rows in
            for y in 150..<250 { for x in 20..<120 { rows[y][x * 3] = 220; rows[y][x * 3 + 1] = 30; rows[y][x * 3 + 2] = 30 } }
        }
        try Harness.write(try Harness.jpeg(upright: photo.finished()), to: dir + "/in/a.jpg")
        let r = try Harness.run(["run", "--template", dir + "/t.json5", "--out", dir + "/out", dir + "/in"])
        #expect(r.status == 0, "\(r.stderr)")
        let batch = try Harness.batchFolder(in: dir + "/out")
        let report = try Harness.report(in: batch)
        let item = try #require((report["items"] as? [[String: Any]])?.first)
        let outputs = try #require(item["outputs"] as? [[String: Any]])
        let crops = outputs.compactMap { ($0["applied"] as? [String: Any])?["crop"] as? [String: Any] }
        #expect(crops.count == 2)
        for crop in crops {
            #expect(crop["focus"] as? String == "subject")
            // Placed on the subject: against the left edge, not centred.
            #expect((crop["box"] as? [Int])?.first == 0, "\(crop)")
        }

        let chromium = try #require(Chromium.path)
        let page = URL(fileURLWithPath: batch + "/report.html").absoluteString
        let d = try Harness.exec(chromium, Chromium.flags(profile: dir + "/profile") + ["--dump-dom", page],
                                 deadline: .seconds(120))
        #expect(d.status == 0, "\(d.stderr)")
        #expect(d.stdout.contains("data-ratio=\"1:1\"") && d.stdout.contains("data-ratio=\"9:16\""))
        #expect(d.stdout.contains("placed on the subject"))
        #expect(!d.stdout.contains("<script"))

        let shot = dir + "/shot.png"
        let s = try Harness.exec(chromium, Chromium.flags(profile: dir + "/profile")
                                 + ["--window-size=412,900", "--screenshot=" + shot, page], deadline: .seconds(120))
        #expect(s.status == 0, "\(s.stderr)")
        let (png, _) = try Harness.decode(shot)
        // The boxes' strokes: the first crop's yellow and the second's cyan, as drawn lines.
        var yellow = 0, cyan = 0
        for y in 0..<png.height {
            for x in 0..<png.width {
                let p = png.pixel(x, y)
                if p[0] > 220 && p[1] > 190 && p[2] < 80 { yellow += 1 }
                if p[0] < 90 && p[1] > 200 && p[2] > 190 { cyan += 1 }
            }
        }
        #expect(yellow > 200, "no yellow 1:1 box in the screenshot (\(yellow) px)")
        #expect(cyan > 200, "no cyan 9:16 box in the screenshot (\(cyan) px)")
    }
}
