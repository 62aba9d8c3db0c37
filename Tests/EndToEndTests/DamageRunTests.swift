import Codecs
import Foundation
import Pixels
import Testing

/// `photofinish run` on damaged files (made here from files our encoders wrote): by default
/// each fails as `corrupt-image` and leaves no output, even when its rows already streamed into
/// an encoder before the damage was reached; with `damaged: "warn"` each is finished, its
/// report item and report.html saying what is damaged.
@Suite(.serialized) struct DamageRunTests {
    /// The damaged files, by name, and the start of the damage's words.
    static func damagedFiles() throws -> [(name: String, bytes: [UInt8], says: String)] {
        let photo = Harness.marked(width: 640, height: 480)
        let jpeg = try Harness.jpeg(upright: photo)
        // Cut near the end: the damage is found after most rows went to the encoder.
        let lateCut = Array(jpeg.prefix(jpeg.count * 9 / 10))
        // A foreign marker inside the scan data, what exif-samples' corrupted.jpg holds.
        let scanStart = try #require((2..<(jpeg.count - 1)).first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xDA })
        let middle = scanStart + (jpeg.count - scanStart) / 2
        let corrupt = Array(jpeg[..<middle]) + [0xFF, 0xE1] + Array(jpeg[middle...])
        var png = try encodeImage(photo, options: EncodeOptions(format: .png))
        let idat = try #require((8..<(png.count - 4)).first { png[$0..<($0 + 4)].elementsEqual("IDAT".utf8) })
        let length = Int(png[idat - 4]) << 24 | Int(png[idat - 3]) << 16 | Int(png[idat - 2]) << 8 | Int(png[idat - 1])
        png[idat + 4 + length] ^= 0x01  // its CRC
        // Grain, so the picture's data spreads over the file and a cut keeps its top rows.
        var seed: UInt32 = 3
        let grainy = Image(width: 640, height: 480, channels: 3) { rows in
            for y in 0..<480 {
                for x in 0..<(640 * 3) {
                    seed = seed &* 1_664_525 &+ 1_013_904_223
                    rows[y][x] = UInt8(truncatingIfNeeded: 60 + Int(seed >> 26) + x / 12)
                }
            }
        }
        let heic = try encodeImage(grainy, options: EncodeOptions(format: .heic, quality: 80))
        let webp = try encodeImage(grainy, options: EncodeOptions(format: .webp, quality: 80))
        return [
            ("b_late.jpg", lateCut, "JPEG data ends early at byte \(lateCut.count): the bottom "),
            ("c_corrupt.jpg", corrupt, "Corrupt JPEG data: premature end of data segment"),
            ("d_crc.png", png, "PNG: IDAT: CRC error"),
            ("e_cut.heic", Array(heic.prefix(heic.count * 7 / 10)), "HEIF data ends early at byte "),
            ("f_cut.webp", Array(webp.prefix(webp.count * 6 / 10)), "WebP data ends early at byte "),
        ]
    }

    func setUp(damaged: String?, name: String = #function) throws -> (dir: String, template: String) {
        let dir = try Harness.tempDir(name)
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        try Harness.write(try Harness.jpeg(upright: Harness.marked(width: 300, height: 200)), to: dir + "/in/a_good.jpg")
        for file in try Self.damagedFiles() { try Harness.write(file.bytes, to: dir + "/in/" + file.name) }
        let key = damaged.map { ", damaged: \"\($0)\"" } ?? ""
        try Harness.write("{ version: 1, resize: { longSide: 400 }\(key) }", to: dir + "/t.json5")
        return (dir, dir + "/t.json5")
    }

    @Test("by default every damaged photo fails as corrupt-image and leaves no output")
    func failByDefault() throws {
        let (dir, template) = try setUp(damaged: nil)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try Harness.run(["run", "--template", template, "--out", dir + "/out", dir + "/in"])
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        let batch = try Harness.batchFolder(in: dir + "/out")
        let items = try #require(try Harness.report(in: batch)["items"] as? [[String: Any]])
        #expect(items.map { $0["status"] as? String } == ["ok", "failed", "failed", "failed", "failed", "failed"])
        for (item, file) in zip(items.dropFirst(), try Self.damagedFiles()) {
            let error = try #require(item["error"] as? [String: Any])
            #expect(error["code"] as? String == "corrupt-image", "\(file.name)")
            #expect((error["message"] as? String)?.hasPrefix(file.says) == true, "\(file.name): \(error)")
            #expect(item["outputs"] == nil)
            #expect(r.stdout.contains("\(file.name): corrupt-image: \(file.says)"), "\(r.stdout)")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: batch).sorted()
        #expect(left == ["a_good.jpg", "report.html", "report.json", "thumbs"], "no output of a failed photo is left")
        #expect(try FileManager.default.contentsOfDirectory(atPath: batch + "/thumbs") == ["a_good.jpg"])
    }

    @Test("damaged: \"warn\" finishes each damaged photo with the damage said, in the report and on the page")
    func warn() throws {
        let (dir, template) = try setUp(damaged: "warn")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try Harness.run(["run", "--template", template, "--out", dir + "/out", dir + "/in"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let batch = try Harness.batchFolder(in: dir + "/out")
        let report = try Harness.report(in: batch)
        let items = try #require(report["items"] as? [[String: Any]])
        #expect(items.allSatisfy { $0["status"] as? String == "ok" })
        #expect(items[0]["warnings"] == nil)
        let page = String(decoding: try Harness.read(batch + "/report.html"), as: UTF8.self)
        for (item, file) in zip(items.dropFirst(), try Self.damagedFiles()) {
            let warning = try #require((item["warnings"] as? [String])?.first, "\(file.name)")
            #expect(warning.hasPrefix("damaged: " + file.says), "\(file.name): \(warning)")
            #expect(r.stdout.contains("\(file.name): \(warning)"), "run prints the damage: \(r.stdout)")
            let output = try #require((item["outputs"] as? [[String: Any]])?.first?["file"] as? String)
            let (image, _) = try Harness.decode(batch + "/" + output)
            #expect(max(image.width, image.height) == 400, "\(file.name): \(image.width)×\(image.height)")
            #expect(page.contains("Warning: \(warning)"), "report.html shows \(file.name)'s damage")
        }
    }
}
