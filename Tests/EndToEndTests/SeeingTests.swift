import Codecs
import Foundation
import Pixels
import Testing

/// `photofinish proof`, `photofinish explain`, and the daemon's `STATUS.txt` and proof, with
/// the real binary. Sample photos at 1/16 of their real sizes (`PHOTOFINISH_PROOF_SHRINK`):
/// a debug build spends two minutes on the real 130 MP.
struct SeeingTests {
    static let shrink = ["PHOTOFINISH_PROOF_SHRINK": "16"]
    static let tileHeight = 360, background: [UInt8] = [64, 64, 64]

    /// The example templates and how many outputs their proof shows: one per sample, one per
    /// crop not skipped (social skips 16:9 on the portrait, the screenshot and the panorama).
    @Test(arguments: [("web", 6), ("shop", 6), ("print", 6), ("social", 15)])
    func proofOfAnExampleTemplateShowsEveryOutputAsALabelledTile(name: String, outputs: Int) throws {
        let dir = try Harness.tempDir("proof-\(name)")
        let template = FileManager.default.currentDirectoryPath + "/etc/photofinish/templates/\(name).json5"
        let result = try Harness.run(["proof", "--template", template, "--out", dir + "/sheets"], extraEnvironment: Self.shrink)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\(outputs) outputs of 6 sample photos"), "\(result.stdout)")
        let (sheet, _) = try Harness.decode(dir + "/sheets/proof-\(name).png")
        let tiles = Self.tiles(in: sheet)
        #expect(tiles.count == outputs, "\(tiles)")
        #expect(sheet.width <= 2400)
        for tile in tiles {
            #expect(tile.height == Self.tileHeight || tile.width == 2400 - 64, "\(tile)")
            // Its label: ink in the band under the tile.
            let band = PixelRect(x: tile.x, y: tile.y + tile.height + 4, width: min(tile.width, 200), height: 40)
            #expect(Self.count(sheet, in: band) { $0 != Self.background } > 30, "no label under \(tile)")
        }
        // The sheet ends one margin under the last label band.
        let last = try #require(tiles.max { $0.y < $1.y })
        #expect(sheet.height == last.y + last.height + 48 + 32)
    }

    @Test func proofWithABrokenTemplateExitsTwoNamingTheKey() throws {
        let dir = try Harness.tempDir()
        try Harness.write("{ version: 1, resize: { longSide: -3 } }", to: dir + "/bad.json5")
        let result = try Harness.run(["proof", "--template", dir + "/bad.json5", "--out", dir], extraEnvironment: Self.shrink)
        #expect(result.status == 2)
        #expect((result.stderr + result.stdout).contains("longSide"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/proof-bad.png"))
    }

    @Test func explainSaysWhatBecameOfEachFile() throws {
        let hot = try HotFolderFixture()
        let good = try HotFolderFixture.photo(1), broken = Array(try HotFolderFixture.photo(2).prefix(300))
        try Harness.write(good, to: hot.dir + "/good.jpg")
        try Harness.write(broken, to: hot.dir + "/broken.jpg")
        // A finished batch with one photo done and one failed, as a report under out/.
        let run = try Harness.run(["run", "--template", hot.dir + "/templates/small.json5", "--out", hot.root + "/out",
                                   hot.dir + "/good.jpg", hot.dir + "/broken.jpg"])
        #expect(run.status == 1)
        let batch = try Harness.batchFolder(in: hot.root + "/out")
        let id = (batch as NSString).lastPathComponent

        func explain(_ args: [String]) throws -> Harness.Result { try Harness.run(["explain"] + args) }
        let finished = try explain(["good.jpg", hot.root])
        #expect(finished.status == 0)
        #expect(finished.stdout.contains("good.jpg was finished at "), "\(finished.stdout)")
        #expect(finished.stdout.contains("in batch \(id) by host \(Harness.hostName) into out/\(id)/good.jpg"), "\(finished.stdout)")
        let failed = try explain(["broken.jpg", hot.root])
        #expect(failed.status == 0)
        #expect(failed.stdout.contains("broken.jpg failed at ") && failed.stdout.contains(" on host \(Harness.hostName): corrupt-image"),
                "\(failed.stdout)")
        // The same bytes under another name are found by content.
        try Harness.write(good, to: hot.dir + "/renamed.jpg")
        let byContent = try explain([hot.dir + "/renamed.jpg", hot.root])
        #expect(byContent.stdout.contains("The same photo, dropped as good.jpg, was finished"), "\(byContent.stdout)")

        // In drop/: settling (changed a moment ago: its mtime is in the future), waiting
        // (unchanged for an hour), ignored by name; the hot folder found from the path.
        try Harness.write(good, to: hot.drop + "/fresh.jpg")
        try Harness.write(good, to: hot.drop + "/old.jpg")
        try Harness.write(good, to: hot.drop + "/~$draft.jpg")
        let now = Date().timeIntervalSince1970
        #expect(Self.touch(hot.drop + "/fresh.jpg", now + 3600) && Self.touch(hot.drop + "/old.jpg", now - 3600))
        let settling = try explain([hot.drop + "/fresh.jpg"])
        #expect(settling.status == 0 && settling.stdout.contains("fresh.jpg is in drop/") && settling.stdout.contains("settling"),
                "\(settling.stdout)")
        let waiting = try explain([hot.drop + "/old.jpg"])
        #expect(waiting.stdout.contains("waiting for its batch"), "\(waiting.stdout)")
        let ignored = try explain(["~$draft.jpg", hot.root])
        #expect(ignored.stdout.contains("never taken: its name is ignored"), "\(ignored.stdout)")

        // Claimed in a batch in .work/ (its manifest, as a claim writes it).
        let claimed = hot.root + "/.work/20261129-120000-abcd"
        try FileManager.default.createDirectory(atPath: claimed + "/src", withIntermediateDirectories: true)
        try Harness.write("""
            { "version": 1, "batch": "20261129-120000-abcd", "inbox": "shop", "claimed": "2026-11-29T12:00:00.000Z",
              "template": { "name": "small", "sha256": "00", "directory": "." },
              "items": [ { "name": "a.jpg", "bytes": 1, "sha256": "11" }, { "name": "inwork.jpg", "bytes": 1, "sha256": "22" } ] }
            """, to: claimed + "/manifest.json")
        let inWork = try explain(["inwork.jpg", hot.root])
        #expect(inWork.stdout.contains("claimed in batch 20261129-120000-abcd (photo 2 of 2)"), "\(inWork.stdout)")

        let unknown = try explain(["never-seen.jpg", hot.root])
        #expect(unknown.status == 1)
        #expect(unknown.stdout.contains("nothing is known about never-seen.jpg"))
    }

    /// What in drop/ is never taken is listed with why (STATUS.txt and `status ROOT`), and so
    /// is a reload that failed, until one succeeds.
    @Test func neverTakenFilesAndAFailedReloadAreShown() throws {
        let hot = try HotFolderFixture()
        let daemon = try hot.start()
        let status = hot.root + "/STATUS.txt"
        func text() -> String { (try? String(contentsOfFile: status, encoding: .utf8)) ?? "" }
        #expect(Poll.until(.seconds(30)) { text().contains("Idle: no batch is being processed.") }, "log:\n\(daemon.log)")
        try FileManager.default.createDirectory(atPath: hot.drop + "/holiday", withIntermediateDirectories: true)
        try Harness.write([1, 2, 3], to: hot.drop + "/IMG_0001.jpg.part")
        try Harness.write([1, 2, 3], to: hot.drop + "/.hidden.jpg")
        try Harness.write(try HotFolderFixture.photo(1), to: hot.dir + "/linked.jpg")
        #expect(link(hot.dir + "/linked.jpg", hot.drop + "/linked.jpg") == 0)
        let expected = [
            "- .hidden.jpg in drop/ is never taken: its name is ignored (hidden, a partial download or a temporary file); rename it to have it finished",
            "- IMG_0001.jpg.part in drop/ is never taken: its name is ignored (hidden, a partial download or a temporary file); rename it to have it finished",
            "- holiday in drop/ is never taken: it is a folder, and folders in drop/ are not descended into; move its files into drop/ itself",
            "- linked.jpg in drop/ is never taken: it has 2 hard links (another name could still change it); copy it in instead",
        ]
        #expect(Poll.until(.seconds(30)) { text().contains("Never taken from drop/ (4 items):") }, "\(text()); log:\n\(daemon.log)")
        let lines = text().components(separatedBy: "\r\n")
        for line in expected { #expect(lines.contains(line), "\(text())") }
        #expect(Poll.until(.seconds(30)) {
            let out = (try? Harness.run(["status", hot.root], extraEnvironment: ["RUNTIME_DIRECTORY": hot.runtime]).stdout) ?? ""
            return expected.allSatisfy { out.contains("  " + String($0.dropFirst(2)) + "\n") }
        })
        // Renamed: it is taken, and leaves the list.
        #expect(rename(hot.drop + "/IMG_0001.jpg.part", hot.drop + "/IMG_0001.jpg") == 0)
        #expect(Poll.until(.seconds(30)) { text().contains("Never taken from drop/ (3 items):") }, "\(text())")

        // A reload that fails is said on STATUS.txt until one succeeds.
        let config = try String(contentsOfFile: hot.config, encoding: .utf8)
        try Harness.write(config.replacingOccurrences(of: "settle: \"300ms\"", with: "settle: \"soon\""), to: hot.config)
        daemon.signal(SIGHUP)
        #expect(Poll.until(.seconds(30)) { text().contains("reload at ") && text().contains("settle") }, "\(text()); log:\n\(daemon.log)")
        #expect(text().contains("PhotoFinish still runs with the configuration it had"))
        try Harness.write(config, to: hot.config)
        daemon.signal(SIGHUP)
        #expect(Poll.until(.seconds(30)) { !text().contains("reload at ") }, "\(text()); log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    /// Hot folders that share a template share its proof: rendered once, copied to the others.
    @Test func hotFoldersSharingATemplateRenderItsProofOnce() throws {
        let hot = try HotFolderFixture()
        let roots = [hot.root, hot.dir + "/hot2", hot.dir + "/hot3"]
        for root in roots.dropFirst() {
            for sub in ["drop", "out", "originals", "failed", ".work"] {
                try FileManager.default.createDirectory(atPath: root + "/" + sub, withIntermediateDirectories: true)
            }
        }
        let inboxes = roots.enumerated().map { "{ name: \"shop\($0.offset)\", root: \"\($0.element)\", template: \"small\" }" }
        try Harness.write("""
            { templatesDir: "templates", inboxes: [ \(inboxes.joined(separator: ", ")) ], staleAfter: "24h", workers: 2 }
            """, to: hot.config)
        let daemon = try hot.start()
        func proofs(_ root: String) -> [String] { hot.names(in: root + "/proof").filter { $0.hasSuffix(".png") } }
        #expect(Poll.until(.seconds(120)) { roots.allSatisfy { proofs($0).count == 1 } }, "log:\n\(daemon.log)")
        let name = try #require(proofs(hot.root).first)
        let bytes = try roots.map { try Data(contentsOf: URL(fileURLWithPath: $0 + "/proof/" + name)) }
        #expect(bytes.allSatisfy { $0 == bytes[0] && !$0.isEmpty }, "the same proof, under the same name, in every hot folder")
        // The links are said in one line a template once the queue is empty (two links: one
        // line, or two if the second request came after the first link).
        func count(_ text: String) -> Int { daemon.log.components(separatedBy: text).count - 1 }
        #expect(Poll.until(.seconds(10)) {
            count("linked into 2 hot folders (rendered once") == 1 || count("linked into 1 hot folder (rendered once") == 2
        }, "log:\n\(daemon.log)")
        #expect(count("rendering the proof of template small") == 1, "log:\n\(daemon.log)")
    }

    /// The daemon keeps `STATUS.txt` in words (CRLF) and renders the template's proof into
    /// `proof/` at start and again after a reload that changed the template.
    @Test func daemonWritesStatusTextAndTheProofOfItsTemplate() throws {
        let hot = try HotFolderFixture()
        // What a crash in the middle of writing STATUS.txt left behind (an hour ago): swept at
        // start. A younger one may be another daemon's write in progress and stays.
        let leftover = hot.root + "/.pf-tmp-STATUS.txt-1a2b3c"
        try Harness.write("half a stat", to: leftover)
        var hourAgo = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, leftover, &hourAgo, 0) == 0)
        let daemon = try hot.start()
        let status = hot.root + "/STATUS.txt"
        func text() -> String { (try? String(contentsOfFile: status, encoding: .utf8)) ?? "" }
        func proofs() -> [String] { hot.names(in: hot.root + "/proof").filter { $0.hasSuffix(".png") } }
        #expect(Poll.until(.seconds(30)) { text().contains("Idle: no batch is being processed.") }, "log:\n\(daemon.log)")
        #expect(text().contains("PhotoFinish - hot folder \"shop\"\r\nUpdated "))
        #expect(!text().replacingOccurrences(of: "\r\n", with: "").contains("\n"), "every line ends in CRLF")
        #expect(!FileManager.default.fileExists(atPath: leftover), "a half-written STATUS.txt is swept")
        #expect(Poll.until(.seconds(120)) { proofs().count == 1 }, "log:\n\(daemon.log)")
        let first = try #require(proofs().first)
        #expect(first.hasPrefix("small-") && first.count == "small-".count + 12 + ".png".count)
        let (sheet, _) = try Harness.decode(hot.root + "/proof/" + first)
        #expect(Self.tiles(in: sheet).count == 6)

        try hot.drop(try HotFolderFixture.photo(1), as: "one.jpg")
        try hot.drop(try HotFolderFixture.photo(2), as: "two.jpg")
        try hot.drop(Array(try HotFolderFixture.photo(3).prefix(200)), as: "broken.jpg")
        #expect(Poll.until(.seconds(60)) { text().contains("Last batch: 2") }, "log:\n\(daemon.log)")
        let id = try #require(hot.reports().keys.first)
        #expect(text().contains("Last batch: \(id), finished "), "\(text())")
        #expect(text().contains("2 of 3 photos finished, 1 failed (see failed/\(id)/)."), "\(text())")

        // A changed template: a new proof under the new sha, the old one gone.
        try Harness.write("{ version: 1, resize: { longSide: 48 }, crops: [\"1:1\"] }", to: hot.dir + "/templates/small.json5")
        daemon.signal(SIGHUP)
        #expect(Poll.until(.seconds(120)) { proofs().count == 1 && proofs() != [first] }, "\(proofs()); log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
        #expect(text().contains("PhotoFinish is stopped."), "\(text())")

        // Started again: the last batch is the newest report already in out/; the proof of the
        // current template is there, so none is made.
        let proof = proofs()
        let again = try hot.start(log: "again.log")
        #expect(Poll.until(.seconds(30)) { text().contains("Idle: ") && text().contains("Last batch: \(id), finished ") },
                "\(text()); log:\n\(again.log)")
        again.signal(SIGTERM)
        #expect(again.wait() == 0)
        #expect(proofs() == proof && !again.log.contains("rendering the proof"), "log:\n\(again.log)")
    }

    static func touch(_ path: String, _ seconds: Double) -> Bool {
        var times = [timespec(tv_sec: Int(seconds), tv_nsec: 0), timespec(tv_sec: Int(seconds), tv_nsec: 0)]
        return utimensat(AT_FDCWD, path, &times, 0) == 0
    }

    /// The tiles of a contact sheet: solid rectangles at least 40 px high, found from their
    /// top-left corners (the sheet's background above and left of them), measured down and
    /// right until the background comes back for good (a photo pixel that happens to equal
    /// the background does not end a tile).
    static func tiles(in sheet: Image) -> [PixelRect] {
        sheet.withUnsafeRows { tiles(in: $0) }
    }

    static func tiles(in sheet: PixelRows) -> [PixelRect] {
        func isBackground(_ x: Int, _ y: Int) -> Bool {
            guard x >= 0, y >= 0, x < sheet.width, y < sheet.height else { return true }
            let p = sheet[y] + x * 3
            return p[0] == background[0] && p[1] == background[1] && p[2] == background[2]
        }
        func run(_ x: Int, _ y: Int, dx: Int, dy: Int) -> Int {
            var n = 0, gap = 0
            while gap < 3 {
                if isBackground(x + (n + gap) * dx, y + (n + gap) * dy) { gap += 1 } else { n += gap + 1; gap = 0 }
                if x + (n + gap) * dx >= sheet.width || y + (n + gap) * dy >= sheet.height { break }
            }
            return n
        }
        var found: [PixelRect] = []
        for y in 0..<sheet.height {
            for x in 0..<sheet.width where !isBackground(x, y) && isBackground(x - 1, y) && isBackground(x, y - 1)
                && isBackground(x - 1, y - 1) {
                let h = run(x, y, dx: 0, dy: 1)
                guard h >= 40 else { continue }
                let w = run(x, y, dx: 1, dy: 0)
                if !found.contains(where: { $0.x <= x && x < $0.x + $0.width && $0.y <= y && y < $0.y + $0.height }) {
                    found.append(PixelRect(x: x, y: y, width: w, height: h))
                }
            }
        }
        return found
    }

    static func count(_ image: Image, in rect: PixelRect, _ match: ([UInt8]) -> Bool) -> Int {
        var n = 0
        image.withUnsafeRows { rows in
            for y in rect.y..<min(rows.height, rect.y + rect.height) {
                let row = rows[y]
                for x in rect.x..<min(rows.width, rect.x + rect.width) where match([row[x * 3], row[x * 3 + 1], row[x * 3 + 2]]) {
                    n += 1
                }
            }
        }
        return n
    }
}
