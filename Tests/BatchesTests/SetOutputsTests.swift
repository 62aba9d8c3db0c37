@testable import Batches
import Codecs
import Finishing
import Foundation
import Pixels
import Testing

/// The whole-set outputs of a real (small) batch, run in-process on files in a temp folder.
@Suite struct SetOutputsTests {
    /// Known dominant colours: a blue sky over an orange strip; a red product on white paper
    /// with a black shadow; a green field; a night shot (near-black is the picture).
    static let expected: [[UInt8]] = [[40, 90, 200], [190, 30, 40], [50, 150, 60], [8, 8, 10]]
    static let fixtures: [[([UInt8], Double)]] = [
        [([40, 90, 200], 0.7), ([240, 140, 30], 0.3)],
        [([252, 252, 252], 0.6), ([190, 30, 40], 0.3), ([4, 4, 4], 0.1)],
        [([50, 150, 60], 0.8), ([250, 250, 250], 0.2)],
        [([8, 8, 10], 0.92), ([240, 210, 60], 0.08)],
    ]

    /// A 160×120 JPEG of horizontal colour bands.
    static func bands(_ parts: [([UInt8], Double)]) throws -> [UInt8] {
        var limits: [(Int, [UInt8])] = []
        var acc = 0.0
        for (c, f) in parts { acc += f; limits.append((Int((acc * 120).rounded()), c)) }
        let image = Image(width: 160, height: 120, channels: 3) { rows in
            for y in 0..<120 {
                let c = limits.first { y < $0.0 }?.1 ?? parts.last!.0
                for x in 0..<160 { for i in 0..<3 { rows[y][x * 3 + i] = c[i] } }
            }
        }
        return try encodeImage(image, options: EncodeOptions(format: .jpeg, quality: 95))
    }

    /// Writes the fixtures (and any extra files) and returns the sources in order.
    static func folder(extra: [(String, [UInt8])] = []) throws -> (String, [BatchRunner.Source]) {
        let dir = TemporaryFolder.path("set")
        try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: true)
        var files: [(String, [UInt8])] = []
        for (i, f) in fixtures.enumerated() { files.append(("photo\(i + 1).jpg", try bands(f))) }
        files += extra
        for (name, bytes) in files { try Data(bytes).write(to: URL(fileURLWithPath: dir + "/" + name)) }
        return (dir + "/out", files.map { BatchRunner.Source(path: dir + "/" + $0.0) })
    }

    func template() -> Template {
        var t = Template(name: "set")
        t.colorCard = true
        var s = Template.Stitch()
        s.width = 100; s.spacing = 4; s.maxHeight = 200
        t.stitch = s
        return t
    }

    func run(_ sources: [BatchRunner.Source], into folder: String) async -> Report {
        var limits = BatchLimits()
        limits.workers = 2
        let report = await BatchRunner(template: template(), limits: limits)
            .finishPhotos(batch: "20261129-150405-3f2a", sources: sources, folder: folder)
        return SetOutputs(template: template(), limits: limits).make(report, sources: sources, folder: folder)
    }

    func lab(_ hex: String?) -> Lab? { hex.flatMap(SetOutputs.lab) }

    @Test func colourCardReportsTheKnownColoursInOrder() async throws {
        let (folder, sources) = try Self.folder()
        let report = await run(sources, into: folder)
        for (item, rgb) in zip(report.items, Self.expected) {
            let got = try #require(lab(item.color), "item \(item.index) has no colour")
            let want = Lab(srgb: rgb[0], rgb[1], rgb[2])
            #expect(got.deltaE(want) < 4, "item \(item.index): \(got.hex), want \(want.hex)")
        }
        // The card: one swatch per photo, in batch order, each painted in the item's colour.
        let card = try #require(report.outputs.first { $0.file == "20261129-150405-3f2a-color-card.png" })
        #expect(card.items == [1, 2, 3, 4])
        let layout = ColorCard.layout(count: 4)
        #expect(card.size == [layout.width, layout.height])
        let image = try decodeRGB(file: folder + "/" + card.file)
        #expect(image.width == layout.width && image.height == layout.height)
        for (rect, item) in zip(layout.swatches, report.items) {
            let p = image.pixel(rect.x + rect.width / 2, rect.y + rect.height / 2)
            let c = try #require(lab(item.color))
            #expect(Lab(srgb: p[0], p[1], p[2]).deltaE(c) < 1, "swatch \(item.index)")
        }
        // Thumbnails exist for report.html.
        for item in report.items {
            let thumb = try #require(item.thumbnail)
            #expect(FileManager.default.fileExists(atPath: folder + "/" + thumb))
        }
        let json = ReportWriter.json(report)
        #expect(json.contains("\"color\": \"#") && json.contains("\"thumbnail\": \"thumbs/photo1.jpg\""))
        // The page is written with the JSON, once (after filing, in the daemon).
        #expect(!FileManager.default.fileExists(atPath: folder + "/report.html"))
        let written = try ReportWriter.write(report, toFolder: folder)
        #expect(written.warnings == report.warnings)
        #expect(FileManager.default.fileExists(atPath: folder + "/report.html"))
    }

    @Test func storyIsSplitIntoPartsAndListedWithItsItems() async throws {
        let (folder, sources) = try Self.folder()
        let report = await run(sources, into: folder)
        // 100 px wide, 75 px per photo, 4 px apart, at most 200 px: two photos per part.
        let parts = report.outputs.filter { $0.file.contains("-story-") }
        #expect(parts.map(\.file) == ["20261129-150405-3f2a-story-1-of-2.jpg", "20261129-150405-3f2a-story-2-of-2.jpg"])
        #expect(parts.map(\.items) == [[1, 2], [3, 4]])
        #expect(parts.map(\.size) == [[100, 154], [100, 154]])
        let first = try decodeRGB(file: folder + "/" + parts[0].file)
        #expect(first.width == 100 && first.height == 154)
        // Photo 2's red band sits on its rectangle (rows 79…153; red at 60–90 % of its height).
        let red = first.pixel(50, 79 + 75 * 3 / 4)
        #expect(red[0] > 150 && red[1] < 80 && red[2] < 80, "\(red)")
        #expect(report.warnings == nil)
    }

    @Test func aPhotoThatFailedIsLeftOutOfTheStoryAndNamed() async throws {
        let (folder, sources) = try Self.folder(extra: [("zz-broken.jpg", Array(try Self.bands(Self.fixtures[0]).prefix(400)))])
        let report = await run(sources, into: folder)
        #expect(report.status == .partial)
        // The story is made of the four photos that were finished, at its full width.
        let parts = report.outputs.filter { $0.file.contains("-story-") }
        #expect(parts.map(\.items) == [[1, 2], [3, 4]])
        #expect(parts.map(\.size) == [[100, 154], [100, 154]])
        #expect(parts.map(\.leftOut) == [[5], [5]])
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
        #expect(names.filter { $0.contains("-story-") }.count == 2, "\(names)")
        let warning = try #require(report.warnings?.first)
        #expect(warning.hasPrefix("stitched story: photo 5 (zz-broken.jpg) left out") && warning.contains("corrupt-image"),
                "\(warning)")
        // The colour card still shows the photos that were read.
        #expect(report.outputs.first { $0.file.hasSuffix("-color-card.png") }?.items == [1, 2, 3, 4])
        let json = ReportWriter.json(report)
        #expect(json.contains("\"leftOut\": [5]"), "\(json)")
    }

    @Test func aPhotoThatBreaksBeforeTheStitchTakesTheWrittenPartsWithIt() async throws {
        let (folder, sources) = try Self.folder()
        var limits = BatchLimits()
        limits.workers = 2
        let report = await BatchRunner(template: template(), limits: limits)
            .finishPhotos(batch: "20261129-150405-3f2a", sources: sources, folder: folder)
        // Photo 4 (in the second part) is damaged after it was finished, before the stitch:
        // part 1 is written first, then must go again.
        try Data([0xFF, 0xD8, 0xFF]).write(to: URL(fileURLWithPath: sources[3].path.description))
        let done = SetOutputs(template: template(), limits: limits).make(report, sources: sources, folder: folder)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
        #expect(!names.contains { $0.contains("-story-") }, "\(names)")
        #expect(!done.outputs.contains { $0.file.contains("-story-") })
        #expect(done.warnings?.first?.contains("photo 4 (photo4.jpg) could not be read again") == true, "\(done.warnings ?? [])")
    }

}

/// The whole-set outputs drawn with the real marks and text (issue 3's renderer).
@Suite struct SetOutputsMarksTests {
    @Test func cardLabelsAndStoryMarksAreDrawn() async throws {
        let (folder, sources) = try SetOutputsTests.folder()
        var t = SetOutputsTests().template()
        var text = Template.TextMark(text: "MARK")
        text.capHeight = 0.12
        text.opacity = 1
        text.color = .init(r: 255, g: 0, b: 255)
        t.text = text
        var limits = BatchLimits()
        limits.workers = 2
        let runner = BatchRunner(template: t, limits: limits)
        let report = await runner.run(batch: "20261129-150405-3f2a", sources: sources, folder: folder)
        // The colour card: each band under a swatch holds dark ink (its hex code).
        let card = try decodeRGB(file: folder + "/20261129-150405-3f2a-color-card.png")
        for band in ColorCard.layout(count: 4).labels {
            var dark = 0
            for y in band.y..<(band.y + band.height) {
                for x in band.x..<(band.x + band.width) where card.pixel(x, y)[0] < 128 { dark += 1 }
            }
            #expect(dark > 20, "label band \(band) has \(dark) dark pixels")
        }
        // Every story part carries the magenta mark near its bottom-right corner.
        let parts = report.outputs.filter { $0.file.contains("-story-") }
        #expect(!parts.isEmpty)
        for part in parts {
            let image = try decodeRGB(file: folder + "/" + part.file)
            var magenta = 0
            for y in (image.height * 2 / 3)..<image.height {
                for x in (image.width / 2)..<image.width {
                    let p = image.pixel(x, y)
                    if p[0] > 180 && p[1] < 90 && p[2] > 180 { magenta += 1 }
                }
            }
            #expect(magenta > 10, "\(part.file): \(magenta) mark pixels")
        }
    }
}
