@testable import Codecs
import Foundation
import Pixels
import Testing

/// HEIC in (with rotation), HEIC/AVIF/PNG out, through the real binary.
@Suite(.serialized) struct FormatTests {
    @Test func rotatedHEICComesOutUpright() throws {
        let dir = try Harness.tempDir()
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        // Upright picture 300×400 (portrait), stored as a landscape that must be turned 90°
        // clockwise to display: libheif writes that as irot, the way phones store portraits.
        let upright = Harness.marked(width: 300, height: 400)
        let stored = Orientation.apply(upright, exif: 8)   // turned back: 400×300
        let rotated = try HEIFEncoder.encode(stored, options: EncodeOptions(format: .heic, quality: 90), orientation: 6)
        try Harness.write(rotated, to: dir + "/in/phone.heic")
        try Harness.write("{ version: 1, output: { format: \"jpeg\" } }", to: dir + "/t.json5")
        let r = try Harness.run(["run", "--template", dir + "/t.json5", "--out", dir + "/out", dir + "/in"])
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        let batch = try Harness.batchFolder(in: dir + "/out")
        let (image, _) = try Harness.decode(batch + "/phone.jpg")
        #expect(image.width == 300 && image.height == 400)
        #expect(Harness.isRed(image.pixel(8, 8)), "top-left is \(image.pixel(8, 8))")
        #expect(Harness.isGreen(image.pixel(291, 8)), "top-right is \(image.pixel(291, 8))")
        let item = try #require((try Harness.report(in: batch)["items"] as? [[String: Any]])?.first)
        #expect(item["format"] as? String == "heic")
        #expect(item["size"] as? [Int] == [300, 400])
    }

    /// AVIF can abort the process in libheif 1.15 + aom 3.6 with some chroma settings (TRAPS):
    /// encode it in a child process (the binary), so an abort fails this test instead of the runner.
    @Test(arguments: ["avif", "heic", "png", "same"])
    func encodesEveryOutputFormat(_ format: String) throws {
        let dir = try Harness.tempDir("fmt\(format)")
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        try Harness.write(try Harness.jpeg(upright: Harness.marked(width: 640, height: 480)), to: dir + "/in/a.jpg")
        try Harness.write("{ version: 1, resize: { longSide: 320 }, output: { format: \"\(format)\", quality: 70 } }",
                          to: dir + "/t.json5")
        let r = try Harness.run(["run", "--template", dir + "/t.json5", "--out", dir + "/out", dir + "/in"])
        #expect(r.status == 0, "exit \(r.status): \(r.stderr)")
        let batch = try Harness.batchFolder(in: dir + "/out")
        let ext = ["avif": "avif", "heic": "heic", "png": "png", "same": "jpg"][format]!
        let (image, info) = try Harness.decode(batch + "/a.\(ext)")
        #expect(info.format.rawValue == (format == "same" ? "jpeg" : format))
        #expect(image.width == 320 && image.height == 240)
        #expect(Harness.isRed(image.pixel(6, 6)))
        #expect(Harness.isGreen(image.pixel(313, 6)))
    }
}
