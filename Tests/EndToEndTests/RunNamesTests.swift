import Codecs
import Foundation
import Glibc
import Pixels
import Testing

/// `photofinish run` takes its arguments as bytes and lists folders through byte names, so
/// every name a file system holds is finished like the daemon finishes it: a Latin-1 name (as
/// old Samba clients write), an invalid UTF-8 one, one of 255 bytes. And files pair only within
/// one folder, as on a card.
@Suite(.serialized) struct RunNamesTests {
    /// The names, as bytes, with how the report shows each (escaped) and the output made from
    /// it (the readable name, as the daemon makes it).
    static let names: [(bytes: [UInt8], shown: String, output: String)] = [
        (Array("caf".utf8) + [0xE9] + Array(".jpg".utf8), "caf\\xE9.jpg", "café.jpg"),
        (Array("bad".utf8) + [0xFF, 0xFE] + Array(".jpg".utf8), "bad\\xFF\\xFE.jpg", "badÿþ.jpg"),
        // NAME_MAX: the output's stem keeps room for the longest extension (".jpeg"), as the
        // daemon's outputs do.
        (Array(repeating: UInt8(ascii: "L"), count: 251) + Array(".jpg".utf8),
         String(repeating: "L", count: 251) + ".jpg", String(repeating: "L", count: 250) + ".jpg"),
        (Array("plain.jpg".utf8), "plain.jpg", "plain.jpg"),
    ]

    /// Writes `bytes` at a path given as bytes (Foundation takes only text paths).
    static func write(_ bytes: [UInt8], at path: [UInt8]) throws {
        let fd = (path + [0]).withUnsafeBufferPointer { p in
            p.baseAddress!.withMemoryRebound(to: CChar.self, capacity: p.count) { open($0, O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
        }
        try #require(fd >= 0, "cannot create \(String(decoding: path, as: UTF8.self)): errno \(errno)")
        defer { close(fd) }
        try #require(bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == bytes.count)
    }

    /// A word for bash's `$'…'` quoting: every byte as `\xHH`.
    static func quoted(_ bytes: [UInt8]) -> String {
        "$'" + bytes.map { String(format: "\\x%02x", $0) }.joined() + "'"
    }

    /// Runs the binary through bash, so the arguments reach it as the bytes given.
    static func run(_ words: [[UInt8]]) throws -> Harness.Result {
        try Harness.exec("/bin/bash", ["-c", "exec " + ([Array(Harness.binary.utf8)] + words).map(quoted).joined(separator: " ")],
                         deadline: .seconds(300))
    }

    func setUp(name: String = #function) throws -> (dir: String, template: String) {
        let dir = try Harness.tempDir(name)
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        let jpeg = try Harness.jpeg(upright: Harness.marked(width: 300, height: 200))
        for name in Self.names { try Self.write(jpeg, at: Array((dir + "/in/").utf8) + name.bytes) }
        try Harness.write("{ version: 1, resize: { longSide: 100 } }", to: dir + "/t.json5")
        return (dir, dir + "/t.json5")
    }

    /// The batch's items: source, original and outputs; each output decodes.
    func check(_ out: String, expected order: [Int]) throws -> [(source: String, original: String?)] {
        let batch = try Harness.batchFolder(in: out)
        let items = try #require(try Harness.report(in: batch)["items"] as? [[String: Any]])
        #expect(items.count == order.count)
        for (item, index) in zip(items, order) {
            let name = Self.names[index]
            #expect(item["status"] as? String == "ok", "\(name.shown): \(item)")
            #expect(item["source"] as? String == name.shown)
            let outputs = (item["outputs"] as? [[String: Any]])?.compactMap { $0["file"] as? String }
            #expect(outputs == [name.output], "\(name.shown): named as the daemon names it")
            let (image, _) = try Harness.decode(batch + "/" + name.output)
            #expect(image.width == 100)
        }
        return items.map { ($0["source"] as? String ?? "", $0["original"] as? String) }
    }

    @Test("run DIR finishes every name the folder holds: Latin-1, invalid UTF-8, 255 bytes")
    func folderOfByteNames() throws {
        let (dir, template) = try setUp()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try Self.run([Array("run".utf8), Array("--template".utf8), Array(template.utf8),
                              Array("--out".utf8), Array((dir + "/out").utf8), Array((dir + "/in").utf8)])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.hasPrefix("complete: 4 of 4 photos finished"), "\(r.stdout)")
        // Natural order of the names as read: "bad…", "café", "LLL…", "plain".
        _ = try check(dir + "/out", expected: [1, 0, 2, 3])
    }

    @Test("run FILE… takes each argument's bytes: Latin-1, invalid UTF-8, 255 bytes")
    func argumentsOfByteNames() throws {
        let (dir, template) = try setUp()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let files = Self.names.map { Array((dir + "/in/").utf8) + $0.bytes }
        let r = try Self.run([Array("run".utf8), Array("--template".utf8), Array(template.utf8),
                              Array("--out".utf8), Array((dir + "/out").utf8)] + files)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let items = try check(dir + "/out", expected: [0, 1, 2, 3])
        #expect(items.map(\.original) == Self.names.map { dir + "/in/" + $0.shown }, "original: the path given, escaped")
        // A name that is not there is said as given (escaped), not repaired.
        let missing = try Self.run([Array("run".utf8), Array("--template".utf8), Array(template.utf8),
                                    Array("--out".utf8), Array((dir + "/out2").utf8), Array("caf".utf8) + [0xE8, 0x2E]])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("caf\\xE8.: no such file or folder"), "\(missing.stderr)")
    }

    @Test("files of two folders are never paired; a HEIC+JPEG pair in one folder is one photo, its HEIC finished")
    func pairsOnlyWithinOneFolder() throws {
        let dir = try Harness.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for folder in ["heic", "jpg", "card"] {
            try FileManager.default.createDirectory(atPath: dir + "/" + folder, withIntermediateDirectories: true)
        }
        let liftImage = Harness.marked(width: 200, height: 300), harbourImage = Harness.marked(width: 400, height: 150)
        let lift = try encodeImage(liftImage, options: EncodeOptions(format: .heic, quality: 80))
        let harbour = try Harness.jpeg(upright: harbourImage)
        try Harness.write(lift, to: dir + "/heic/HMD.heif")
        try Harness.write(harbour, to: dir + "/jpg/HMD.jpg")
        try Harness.write(lift, to: dir + "/card/IMG_1.HEIC")
        try Harness.write(try Harness.jpeg(upright: liftImage), to: dir + "/card/IMG_1.JPG")
        try Harness.write("{ version: 1, resize: { longSide: 100 } }", to: dir + "/t.json5")

        let two = try Harness.run(["run", "--template", dir + "/t.json5", "--out", dir + "/two",
                                   dir + "/heic/HMD.heif", dir + "/jpg/HMD.jpg"])
        #expect(two.status == 0, "\(two.stdout)\(two.stderr)")
        let twoBatch = try Harness.batchFolder(in: dir + "/two")
        let twoItems = try #require(try Harness.report(in: twoBatch)["items"] as? [[String: Any]])
        #expect(twoItems.map { $0["format"] as? String } == ["heic", "jpeg"], "two photos, each finished")
        #expect(twoItems.map { $0["size"] as? [Int] } == [[200, 300], [400, 150]])
        #expect(twoItems.allSatisfy { $0["alternates"] == nil })
        let outputs = twoItems.compactMap { ($0["outputs"] as? [[String: Any]])?.first?["file"] as? String }
        #expect(outputs.count == 2 && Set(outputs).count == 2, "\(outputs)")
        for file in outputs { _ = try Harness.decode(twoBatch + "/" + file) }

        let one = try Harness.run(["run", "--template", dir + "/t.json5", "--out", dir + "/one", dir + "/card"])
        #expect(one.status == 0, "\(one.stdout)\(one.stderr)")
        let oneItems = try #require(try Harness.report(in: try Harness.batchFolder(in: dir + "/one"))["items"] as? [[String: Any]])
        #expect(oneItems.count == 1)
        #expect(oneItems.first?["source"] as? String == "IMG_1.HEIC")
        #expect(oneItems.first?["format"] as? String == "heic")
        #expect(oneItems.first?["alternates"] as? [String] == ["IMG_1.JPG"])
    }
}
