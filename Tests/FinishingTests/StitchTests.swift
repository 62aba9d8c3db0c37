import Codecs
import Finishing
import Foundation
import JSON5
import Pixels
import Testing

@Suite struct StitchPlanTests {
    typealias Size = OutputPlan.Size

    /// Landscape 4032×3024; the same photo stored sideways (upright 3024×4032); a tall phone
    /// screenshot; a square; a panorama.
    let mixed = [Size(4032, 3024), Size(3024, 4032), Size(1179, 2556), Size(1080, 1080), Size(16000, 3400)]

    func stitch(width: Int = 1080, spacing: Int = 24, maxHeight: Int = 16000, split: Bool = true,
                upscale: Bool = false) -> Template.Stitch {
        var s = Template.Stitch()
        s.width = width; s.spacing = spacing; s.maxHeight = maxHeight; s.split = split; s.upscale = upscale
        return s
    }

    func rects(_ part: StitchPlan.Part) -> [PixelRect] { part.placements.map(\.rect) }

    @Test func mixedShapesGetTheExpectedIntegerLayout() throws {
        let plan = try StitchPlan.make(upright: mixed, stitch: stitch())
        #expect(plan.width == 1080)
        #expect(plan.parts.count == 1)
        // Heights from aspect ratios (2341.4 → 2341, 229.5 → 230); 24 px only between photos.
        #expect(rects(plan.parts[0]) == [
            PixelRect(x: 0, y: 0, width: 1080, height: 810),
            PixelRect(x: 0, y: 834, width: 1080, height: 1440),
            PixelRect(x: 0, y: 2298, width: 1080, height: 2341),
            PixelRect(x: 0, y: 4663, width: 1080, height: 1080),
            PixelRect(x: 0, y: 5767, width: 1080, height: 230),
        ])
        #expect(plan.parts[0].height == 5997)
        #expect(plan.parts[0].placements.map(\.photo) == [0, 1, 2, 3, 4])
    }

    @Test func sidewaysStoredPhotoIsPlannedUpright() throws {
        // Stored 400×300 with EXIF orientation 6: a person sees 300×400.
        let stored = Image(width: 400, height: 300, channels: 3, fill: [10, 20, 30])
        let jpeg = try encodeImage(stored, options: EncodeOptions(format: .jpeg, exif: ExifBuilder(orientation: 6).bytes()))
        let header = try UprightDecode.header(bytes: jpeg, limits: DecodeLimits())
        #expect(header.upright == Size(300, 400))
        #expect(header.orientation == 6)
        let plan = try StitchPlan.make(upright: [Size(400, 300), header.upright], stitch: stitch(width: 300, spacing: 10))
        #expect(rects(plan.parts[0]) == [PixelRect(x: 0, y: 0, width: 300, height: 225),
                                         PixelRect(x: 0, y: 235, width: 300, height: 400)])
    }

    @Test func aNarrowPhotoStaysAtItsOwnSizeCentredUnlessAsked() throws {
        let small = [Size(800, 600), Size(640, 640), Size(2160, 1080)]
        // The canvas keeps its width: the narrow photos are centred at their own size.
        let plan = try StitchPlan.make(upright: small, stitch: stitch())
        #expect(plan.width == 1080)
        #expect(rects(plan.parts[0]) == [PixelRect(x: 140, y: 0, width: 800, height: 600),
                                         PixelRect(x: 220, y: 624, width: 640, height: 640),
                                         PixelRect(x: 0, y: 1288, width: 1080, height: 540)])
        // A tiny photo (49 px) never shrinks the story.
        let tiny = try StitchPlan.make(upright: [Size(49, 30), Size(4000, 3000)], stitch: stitch())
        #expect(rects(tiny.parts[0]) == [PixelRect(x: 515, y: 0, width: 49, height: 30),
                                         PixelRect(x: 0, y: 54, width: 1080, height: 810)])
        // Without split, shrinking under the cap shrinks only what is wider than the canvas.
        let capped = try StitchPlan.make(upright: [Size(100, 100), Size(4000, 4000)],
                                         stitch: stitch(maxHeight: 724, split: false))
        #expect(capped.width == 600)
        #expect(rects(capped.parts[0]) == [PixelRect(x: 250, y: 0, width: 100, height: 100),
                                           PixelRect(x: 0, y: 124, width: 600, height: 600)])
        let two = [Size(800, 600), Size(640, 640)]
        let asked = try StitchPlan.make(upright: two, stitch: stitch(upscale: true))
        #expect(asked.width == 1080)
        #expect(rects(asked.parts[0]) == [PixelRect(x: 0, y: 0, width: 1080, height: 810),
                                          PixelRect(x: 0, y: 834, width: 1080, height: 1080)])
    }

    @Test func overTheCapSplitsWithWholePhotosPerPart() throws {
        let plan = try StitchPlan.make(upright: mixed, stitch: stitch(maxHeight: 3000))
        #expect(plan.parts.map { $0.placements.map(\.photo) } == [[0, 1], [2], [3, 4]])
        #expect(plan.parts.map(\.height) == [2274, 2341, 1334])
        #expect(rects(plan.parts[2]) == [PixelRect(x: 0, y: 0, width: 1080, height: 1080),
                                         PixelRect(x: 0, y: 1104, width: 1080, height: 230)])
        for part in plan.parts {
            #expect(part.height <= 3000)
            // Whole photos: each placement keeps the full common width and its own aspect height.
            for p in part.placements {
                #expect(p.rect.width == 1080 && p.rect.height == StitchPlan.height(of: mixed[p.photo], atWidth: 1080))
                #expect(p.rect.y + p.rect.height <= part.height)
            }
        }
        // Every photo exactly once, in batch order.
        #expect(plan.parts.flatMap { $0.placements.map(\.photo) } == [0, 1, 2, 3, 4])
    }

    @Test func overTheCapWithoutSplitShrinksTheWidth() throws {
        let plan = try StitchPlan.make(upright: mixed, stitch: stitch(maxHeight: 3000, split: false))
        // The widest that fits: at 531 px the story is 2997 px tall, at 532 px 3002.
        #expect(plan.width == 531)
        #expect(plan.parts.count == 1)
        #expect(plan.parts[0].height == 2997)
        #expect(rects(plan.parts[0]).map(\.height) == [398, 708, 1151, 531, 113])
    }

    @Test func aPhotoTallerThanTheCapAloneGetsItsOwnShrunkPart() throws {
        let plan = try StitchPlan.make(upright: [Size(400, 300), Size(100, 4000), Size(400, 300)],
                                       stitch: stitch(width: 100, spacing: 0, maxHeight: 2000))
        #expect(plan.parts.map { $0.placements.map(\.photo) } == [[0], [1], [2]])
        #expect(rects(plan.parts[1]) == [PixelRect(x: 25, y: 0, width: 50, height: 2000)])
    }

    @Test func anImpossibleCapIsAnError() {
        #expect(throws: StitchPlanError.self) {
            try StitchPlan.make(upright: [Size(10, 10), Size(10, 10), Size(10, 10)],
                                stitch: stitch(spacing: 1000, maxHeight: 1500, split: false))
        }
    }
}

@Suite struct StitchRenderTests {
    /// A JPEG that shows `upright` once its EXIF orientation is applied.
    func jpeg(_ upright: Image, orientation: Int = 1) throws -> [UInt8] {
        let inverse = orientation == 6 ? 8 : orientation == 8 ? 6 : orientation
        return try encodeImage(Orientation.apply(upright, exif: inverse),
                               options: EncodeOptions(format: .jpeg, quality: 95,
                                                      exif: ExifBuilder(orientation: orientation).bytes()))
    }

    /// Top half `top`, bottom half `bottom`.
    func halves(_ w: Int, _ h: Int, _ top: [UInt8], _ bottom: [UInt8]) -> Image {
        Image(width: w, height: h, channels: 3) { rows in
            for y in 0..<h {
                let c = y < h / 2 ? top : bottom
                for x in 0..<w { for i in 0..<3 { rows[y][x * 3 + i] = c[i] } }
            }
        }
    }

    func near(_ p: [UInt8], _ c: [UInt8], _ tolerance: Int = 12) -> Bool {
        zip(p, c).allSatisfy { abs(Int($0) - Int($1)) <= tolerance }
    }

    @Test func eachPhotoLandsOnItsPlannedRectangle() throws {
        let red: [UInt8] = [220, 30, 30], green: [UInt8] = [30, 200, 40], blue: [UInt8] = [30, 40, 210]
        let yellow: [UInt8] = [230, 220, 40], bg: [UInt8] = [250, 0, 250]
        // A landscape JPEG, a portrait stored sideways (orientation 6), and an RGBA PNG
        // whose transparent half must show the background.
        let rgba = Image(width: 200, height: 200, channels: 4) { rows in
            for y in 0..<200 { for x in 0..<200 {
                let p = rows[y] + x * 4
                p[0] = yellow[0]; p[1] = yellow[1]; p[2] = yellow[2]; p[3] = y < 100 ? 255 : 0
            } }
        }
        let files = [try jpeg(halves(480, 360, red, green)),
                     try jpeg(halves(300, 400, blue, red), orientation: 6),
                     try encodeImage(rgba, options: EncodeOptions(format: .png))]
        var settings = Template.Stitch()
        settings.width = 120; settings.spacing = 8; settings.background = .init(r: bg[0], g: bg[1], b: bg[2])
        let sizes = try files.map { try UprightDecode.header(bytes: $0, limits: DecodeLimits()).upright }
        let plan = try StitchPlan.make(upright: sizes, stitch: settings)
        #expect(plan.parts.count == 1)
        let r = plan.parts[0].placements.map(\.rect)
        #expect(r == [PixelRect(x: 0, y: 0, width: 120, height: 90), PixelRect(x: 0, y: 98, width: 120, height: 160),
                      PixelRect(x: 0, y: 266, width: 120, height: 120)])
        let canvas = try Stitcher(stitch: settings, quality: 95)
            .render(plan.parts[0], width: plan.width, read: { files[$0] }, limits: DecodeLimits())
        #expect(canvas.width == 120 && canvas.height == 386)
        func at(_ rect: PixelRect, _ fy: Double) -> [UInt8] {
            canvas.pixel(rect.x + rect.width / 2, rect.y + Int(Double(rect.height) * fy))
        }
        #expect(near(at(r[0], 0.2), red) && near(at(r[0], 0.8), green))
        // Upright: blue on top, red below, although the file stores them side by side.
        #expect(near(at(r[1], 0.2), blue) && near(at(r[1], 0.8), red))
        #expect(near(at(r[2], 0.2), yellow) && near(at(r[2], 0.8), bg, 2))
        // The spacing rows are background, and the photos do not bleed into them.
        for y in [90, 94, 97, 258, 265] { #expect(near(canvas.pixel(60, y), bg, 0), "row \(y)") }
        // And the first and last rows of each rectangle are the photo's own.
        #expect(near(canvas.pixel(60, 0), red) && near(canvas.pixel(60, 89), green))
        #expect(near(canvas.pixel(60, 98), blue) && near(canvas.pixel(60, 257), red))
        // The encoded part decodes at the canvas size.
        let encoded = try Stitcher(stitch: settings, quality: 90).encode(canvas)
        let info = try openDecoder(bytes: encoded, limits: DecodeLimits()).info
        #expect(info.width == 120 && info.height == 386)
    }

    @Test func anUnreadablePhotoStopsTheStitchAndIsNamed() throws {
        let good = try jpeg(Image(width: 64, height: 48, channels: 3, fill: [1, 2, 3]))
        let broken = Array(good.prefix(good.count / 2))
        var settings = Template.Stitch()
        settings.width = 64
        let plan = try StitchPlan.make(upright: [.init(64, 48), .init(64, 48)], stitch: settings)
        let files = [good, broken]
        do {
            _ = try Stitcher(stitch: settings, quality: 90)
                .render(plan.parts[0], width: plan.width, read: { files[$0] }, limits: DecodeLimits())
            Issue.record("a broken photo must stop the stitch")
        } catch {
            #expect(error.photo == 1)
            #expect(error.error.code == .corruptImage)
        }
    }

    @Test func marksHookRunsOnEachPartOnlyWhenAsked() throws {
        let file = try jpeg(Image(width: 40, height: 30, channels: 3, fill: [0, 0, 255]))
        var settings = Template.Stitch()
        settings.width = 40
        let plan = try StitchPlan.make(upright: [.init(40, 30)], stitch: settings)
        let painter: CanvasMarks = { canvas in canvas.withUnsafeMutableRows { $0[0].update(repeating: 7, count: 3) } }
        let marked = try Stitcher(stitch: settings, quality: 90, marks: painter)
            .render(plan.parts[0], width: plan.width, read: { _ in file }, limits: DecodeLimits())
        #expect(marked.pixel(0, 0) == [7, 7, 7])
        settings.marks = false
        let clean = try Stitcher(stitch: settings, quality: 90, marks: painter)
            .render(plan.parts[0], width: plan.width, read: { _ in file }, limits: DecodeLimits())
        #expect(clean.pixel(0, 0) != [7, 7, 7])
    }

    @Test func colourCardSwatchesAndLabelBandsInOrder() throws {
        let card = ColorCard.layout(count: 8)
        #expect(card.width == 1200)
        // Six per row, then two: squares of (1200 − 80 − 5 × 24) / 6 = 166 px, bands of 41 px.
        #expect(card.swatches[0] == PixelRect(x: 40, y: 40, width: 166, height: 166))
        #expect(card.swatches[5] == PixelRect(x: 990, y: 40, width: 166, height: 166))
        #expect(card.swatches[6] == PixelRect(x: 40, y: 271, width: 166, height: 166))
        #expect(card.labels[0] == PixelRect(x: 40, y: 206, width: 166, height: 41))
        #expect(card.height == 40 + 2 * (166 + 41) + 24 + 40)
        let colors = (0..<8).map { Lab(srgb: UInt8($0 * 30), 100, 200) }
        let seen = Locked<[String]>([])
        let image = try card.render(colors) { _, band, text in
            seen.update { $0.append("\(band.x),\(band.y) \(text)") }
        }
        #expect(seen.value == zip(card.labels, colors).map { "\($0.x),\($0.y) \($1.hex)" })
        for (rect, lab) in zip(card.swatches, colors) {
            let c = lab.srgb
            #expect(image.pixel(rect.x + 5, rect.y + 5) == [c.r, c.g, c.b])
        }
    }

    @Test func stitchKeysAreValidated() throws {
        let t = try TemplateLoader.parse(text: "{ version: 1, stitch: { marks: false, upscale: true } }",
                                         file: "t.json5", name: "t", directory: "/tmp")
        #expect(t.stitch?.marks == false && t.stitch?.upscale == true)
        // Marks are on unless a template says otherwise.
        #expect(Template.Stitch().marks && !Template.Stitch().upscale)
        #expect(throws: JSON5Errors.self) {
            try TemplateLoader.parse(text: "{ version: 1, stitch: { marks: \"yes\" } }", file: "t.json5", name: "t",
                                     directory: "/tmp")
        }
        do {
            _ = try TemplateLoader.parse(text: "{ version: 1,\n stitch: { mark: true } }", file: "t.json5", name: "t",
                                         directory: "/tmp")
            Issue.record("a misspelt stitch key must be an error")
        } catch {
            #expect(error.errors.first?.description.contains("t.json5:2") == true)
        }
    }
}

