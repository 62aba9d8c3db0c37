import Codecs
import Foundation
import Pixels
import Testing
import Typesetting
@testable import Finishing

/// The box of pixels that differ from a flat background by more than half of what the
/// mark adds: the mark's visible ink, measured from the pixels alone.
func markBox(_ image: Image, background: [UInt8], threshold: Int, in region: PixelRect? = nil) -> PixelRect? {
    image.withUnsafeRows { markBox($0, background: background, threshold: threshold, in: region) }
}

/// `markBox` on a canvas still being drawn on.
func markBox(_ image: borrowing Canvas, background: [UInt8], threshold: Int, in region: PixelRect? = nil) -> PixelRect? {
    image.withUnsafeRows { markBox($0, background: background, threshold: threshold, in: region) }
}

func markBox(_ image: PixelRows, background: [UInt8], threshold: Int, in region: PixelRect?) -> PixelRect? {
    let r = region ?? PixelRect(x: 0, y: 0, width: image.width, height: image.height)
    var minX = Int.max, minY = Int.max, maxX = -1, maxY = -1
    for y in r.y..<(r.y + r.height) {
        let row = image[y]
        for x in r.x..<(r.x + r.width) {
            var difference = 0
            for c in 0..<3 { difference = max(difference, abs(Int(row[x * image.channels + c]) - Int(background[c]))) }
            if difference > threshold {
                minX = min(minX, x); maxX = max(maxX, x); minY = min(minY, y); maxY = max(maxY, y)
            }
        }
    }
    return maxX < 0 ? nil : PixelRect(x: minX, y: minY, width: maxX - minX + 1, height: maxY - minY + 1)
}

/// A flat RGB picture, filled row by row (fast even in debug builds).
func flat(_ width: Int, _ height: Int, _ colour: [UInt8]) -> Canvas {
    Canvas(width: width, height: height, channels: 3, fill: colour)
}

/// A Display P3 profile (P3 primaries, D65, sRGB curve; made with lcms2, 580 bytes).
let displayP3 = [UInt8](Data(base64Encoded: "AAACRGxjbXMEQAAAbW50clJHQiBYWVogB+oACwAdABAANgAsYWNzcEFQUEwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAPbWAAEAAAAA0y1sY21zAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAALZGVzYwAAAQgAAAAwY3BydAAAATgAAABMd3RwdAAAAYQAAAAUY2hhZAAAAZgAAAAsclhZWgAAAcQAAAAUYlhZWgAAAdgAAAAUZ1hZWgAAAewAAAAUclRSQwAAAgAAAAAgZ1RSQwAAAgAAAAAgYlRSQwAAAgAAAAAgY2hybQAAAiAAAAAkbWx1YwAAAAAAAAABAAAADGVuVVMAAAAUAAAAHABEAGkAcwBwAGwAYQB5ACAAUAAzbWx1YwAAAAAAAAABAAAADGVuVVMAAAAwAAAAHABOAG8AIABjAG8AcAB5AHIAaQBnAGgAdAAsACAAdQBzAGUAIABmAHIAZQBlAGwAeVhZWiAAAAAAAAD21gABAAAAANMtc2YzMgAAAAAAAQxCAAAF3v//8yUAAAeTAAD9kP//+6H///2iAAAD3AAAwG5YWVogAAAAAAAAg98AAD2/////u1hZWiAAAAAAAAAoOAAAEQsAAMi5WFlaIAAAAAAAAEq/AACxNwAACrlwYXJhAAAAAAADAAAAAmZmAADypwAADVkAABPQAAAKW2Nocm0AAAAAAAMAAAAArhQAAFHsAABD1wAAsKQAACZmAAAPXA==")!)

@Suite struct MarkPainterTests {
    static let grey: [UInt8] = [60, 60, 60]

    func painter(_ template: Template, logo: Image? = nil) throws -> MarkPainter {
        let text = template.text.map { _ in try? Typesetter(pattern: "DejaVu Sans:bold") } ?? nil
        let tile = template.tile.map { _ in try? Typesetter(pattern: "DejaVu Sans:bold") } ?? nil
        return MarkPainter(template: template, assets: MarkAssets(textSetter: text, tileSetter: tile, logo: logo))
    }

    /// A template with only a text mark, solid unless `change` says otherwise.
    func textTemplate(_ words: String, _ change: (inout Template.TextMark) -> Void = { _ in }) -> Template {
        var template = Template(name: "t")
        var mark = Template.TextMark(text: words)
        mark.opacity = 1
        change(&mark)
        template.text = mark
        return template
    }

    @Test("long text on a tall screenshot is shrunk to maxWidth, in one correction")
    func shrinkToFit() throws {
        let template = textTemplate("© Example Studio · all rights reserved · www.example.com") {
            $0.capHeight = 0.04
            $0.maxWidth = 0.8
        }
        var image = flat(1179, 2556, Self.grey)
        let result = try painter(template).paint(&image, icc: nil)
        let record = try #require(result.text)
        let inkFound = markBox(image, background: Self.grey, threshold: 20)
        let ink = try #require(inkFound)
        // Within maxWidth × width, measured from the pixels, and not much narrower either.
        #expect(Double(ink.width) <= 0.8 * 1179, "ink \(ink.width) px wide")
        #expect(Double(ink.width) >= 0.8 * 1179 - 4)
        // Shrunk: the capitals are smaller than 4 % of the short side, and the report says how much.
        #expect(Double(record.capHeightPx) < 0.04 * 1179 - 5)
        #expect(!record.clamped)
        // Still placed by the margin: right edge of the ink and the baseline 3 % of the short side in.
        #expect(abs(1179 - (ink.x + ink.width) - Int(0.03 * 1179)) <= 1)
    }

    @Test("on a tiny photo the text is clamped to a legible cap height, and the report says so")
    func tinyClamp() throws {
        let template = textTemplate("HELL")
        var image = flat(160, 120, Self.grey)  // 3.5 % of 120 px would be 4.2 px capitals
        let record = try #require(try painter(template).paint(&image, icc: nil).text)
        #expect(record.clamped && record.capHeightPx == Int(MarkLayout.minimumCapHeight))
        let inkFound = markBox(image, background: Self.grey, threshold: 97)
        let ink = try #require(inkFound)
        #expect(abs(ink.height - Int(MarkLayout.minimumCapHeight)) <= 1, "capitals \(ink.height) px tall")
    }

    /// A logo of one colour whose alpha is a disc with a soft, antialiased edge; the
    /// transparent pixels are black (0, 0, 0, 0), as many tools save them: a compositor
    /// that forgets to weigh colour by alpha shows them as a dark fringe.
    static func softDisc(size: Int, colour: [UInt8]) -> Image {
        let centre = Double(size) / 2, radius = Double(size) * 0.4, soft = Double(size) * 0.05
        return Image(width: size, height: size, channels: 4) { rows in
            for y in 0..<size {
                for x in 0..<size {
                    let d = ((Double(x) + 0.5 - centre) * (Double(x) + 0.5 - centre)
                             + (Double(y) + 0.5 - centre) * (Double(y) + 0.5 - centre)).squareRoot()
                    let a = max(0, min(1, (radius - d) / soft + 0.5))
                    let p = rows[y] + x * 4
                    if a == 0 {
                        p[0] = 0; p[1] = 0; p[2] = 0; p[3] = 0
                    } else {
                        p[0] = colour[0]; p[1] = colour[1]; p[2] = colour[2]; p[3] = UInt8((a * 255).rounded())
                    }
                }
            }
        }
    }

    @Test("a soft-edged logo over a mid-tone photo: no dark fringe, no box, opacity once")
    func logoFringe() throws {
        let colour: [UInt8] = [240, 200, 40], background: [UInt8] = [128, 128, 128]
        var template = Template(name: "t")
        var mark = Template.LogoMark(file: "unused.png")
        mark.width = 0.3
        mark.opacity = 0.8
        mark.position = .center
        template.logo = mark
        var image = flat(640, 480, background)
        let result = try painter(template, logo: Self.softDisc(size: 400, colour: colour)).paint(&image, icc: nil)
        let logo = try #require(result.logo)
        let box = PixelRect(x: logo.box[0], y: logo.box[1], width: logo.box[2], height: logo.box[3])
        #expect(box.width == 144 && box.height == 144 && logo.scale == 0.36)
        #expect(result.warnings.isEmpty)
        var darker = 0
        for y in box.y..<(box.y + box.height) {
            for x in box.x..<(box.x + box.width) {
                let p = image.pixel(x, y)
                for c in 0..<3 where Int(p[c]) < Int(min(colour[c], background[c])) - 1 { darker += 1 }
            }
        }
        #expect(darker == 0, "\(darker) channel values darker than both the logo and the photo")
        // The logo's transparent corners are the photo, exactly.
        for (x, y) in [(box.x, box.y), (box.x + box.width - 1, box.y), (box.x, box.y + box.height - 1),
                       (box.x + box.width - 1, box.y + box.height - 1), (box.x + 5, box.y + 5)] {
            #expect(image.pixel(x, y) == background, "corner (\(x), \(y)) is \(image.pixel(x, y))")
        }
        // The disc's middle: logo × 0.8 + photo × 0.2 (opacity applied once, not twice).
        let middle = image.pixel(box.x + box.width / 2, box.y + box.height / 2)
        for c in 0..<3 {
            let expected = 0.8 * Double(colour[c]) + 0.2 * Double(background[c])
            #expect(abs(Double(middle[c]) - expected) <= 1, "channel \(c): \(middle[c]), expected \(expected)")
        }
    }

    @Test("a logo drawn larger than its file is warned about")
    func logoUpscale() throws {
        var template = Template(name: "t")
        template.logo = Template.LogoMark(file: "unused.png")  // 16 % of 1080 = 173 px from 96 px
        var canvas = flat(1920, 1080, Self.grey)
        let result = try painter(template, logo: Self.softDisc(size: 96, colour: [255, 0, 0])).paint(&canvas, icc: nil)
        #expect(result.warnings == ["logo scaled up 1.8×: use a larger logo file"])
        #expect(abs((result.logo?.scale ?? 0) - 1.8) < 0.01)
    }

    @Test("the tiled mark covers every corner of the photo", arguments: [-30.0, 0, 45, 90])
    func tileCoversCorners(_ angle: Double) throws {
        var template = Template(name: "t")
        var tile = Template.TileMark(text: "PREVIEW")
        tile.angle = angle
        tile.opacity = 0.5
        template.tile = tile
        var image = flat(600, 400, Self.grey)
        let record = try #require(try painter(template).paint(&image, icc: nil).tile)
        #expect(record.capHeightPx == 20 && record.angle == angle)
        // Any square as large as one step in both directions holds some of the mark: there is
        // no clean corner to crop out.
        let side = max(record.step[0], record.step[1])
        for (x, y) in [(0, 0), (600 - side, 0), (0, 400 - side), (600 - side, 400 - side), (300 - side / 2, 200 - side / 2)] {
            let region = PixelRect(x: max(0, x), y: max(0, y), width: min(side, 600), height: min(side, 400))
            let found = markBox(image, background: Self.grey, threshold: 30, in: region)
            #expect(found != nil,
                    "no mark in \(region) at \(angle)°")
        }
    }

    @Test("mark colours are converted into a kept wide-gamut profile: white stays white, red stays sRGB red")
    func colourIntoP3() throws {
        let red = textTemplate("HHHH") {
            $0.capHeight = 0.2
            $0.color = Template.Color(r: 255, g: 0, b: 0)
            $0.position = .left
        }
        let white = textTemplate("HHHH") {
            $0.capHeight = 0.2
            $0.position = .right
        }

        func solidInk(_ image: borrowing Canvas, in region: PixelRect) throws -> [UInt8] {
            // The middle of the first H's left stem: full coverage.
            let inkFound = markBox(image, background: Self.grey, threshold: 60, in: region)
            let ink = try #require(inkFound)
            return image.pixel(ink.x + 3, ink.y + ink.height / 2)
        }
        var plain = flat(400, 300, Self.grey)
        _ = try painter(red).paint(&plain, icc: nil)
        #expect(try solidInk(plain, in: PixelRect(x: 0, y: 0, width: 200, height: 300)) == [255, 0, 0])

        var p3 = flat(400, 300, Self.grey)
        _ = try painter(red).paint(&p3, icc: displayP3)
        let ink = try solidInk(p3, in: PixelRect(x: 0, y: 0, width: 200, height: 300))
        // sRGB red inside P3 is about (234, 51, 35): less saturated numbers, the same colour.
        #expect(ink[0] < 245 && ink[0] > 220 && ink[1] > 35 && ink[2] > 20, "sRGB red in P3: \(ink)")

        var p3White = flat(400, 300, Self.grey)
        _ = try painter(white).paint(&p3White, icc: displayP3)
        #expect(try solidInk(p3White, in: PixelRect(x: 200, y: 0, width: 200, height: 300)) == [255, 255, 255])
    }

    @Test("a shadow is a real blur that scales with the photo")
    func shadow() throws {
        let template = textTemplate("HELL") {
            $0.capHeight = 0.1
            $0.opacity = 0.85
            $0.shadow = Template.Shadow(opacity: 0.8, blur: 0.01, offset: 0.01)
            $0.position = .topLeft
        }
        let light: [UInt8] = [200, 200, 200]
        var image = flat(800, 600, light)
        let record = try #require(try painter(template).paint(&image, icc: nil).text)
        // Below the ink's bottom edge the shadow fades out over a few sigma (6 px): darkest
        // near the ink, lighter further down, back to the photo beyond 3 sigma + offset.
        let x = record.box[0] + 5, bottom = record.box[1] + record.box[3]
        let near = Int(image.pixel(x, bottom + 2)[0]), mid = Int(image.pixel(x, bottom + 9)[0])
        let far = Int(image.pixel(x, bottom + 30)[0])
        #expect(near < mid && mid < 200 && far == 200, "near \(near), mid \(mid), far \(far)")
    }

    @Test("the logo is decoded once per batch: deleting its file after the finisher is built changes nothing")
    func logoDecodedOnce() throws {
        let folder = TemporaryFolder.path("marks")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let logoBytes = try encodeImage(Self.softDisc(size: 200, colour: [250, 20, 20]), options: EncodeOptions(format: .png))
        try Data(logoBytes).write(to: URL(fileURLWithPath: folder + "/logo.png"))
        var template = Template(name: "t", directory: folder)
        template.logo = Template.LogoMark(file: "logo.png")
        template.output.format = .format(.png)
        let finisher = PhotoFinisher(template: template)
        try FileManager.default.removeItem(atPath: folder + "/logo.png")
        let photo = try encodeImage(flat(500, 400, Self.grey).finished(), options: EncodeOptions(format: .png))
        for _ in 0..<2 {
            let finished = try finisher.finish(bytes: photo, limits: DecodeLimits())
            let logo = try #require(finished.outputs.first?.applied.logo)
            #expect(logo.box == [20, 16, 64, 64])
        }
    }

    @Test("boxes in the report are in the output file's pixels: a frame moves them")
    func framedBoxes() throws {
        var template = textTemplate("HELL") { $0.position = .topLeft }
        template.frame = Template.Frame(width: 0.05, color: .white)
        template.output.format = .format(.png)
        let finisher = PhotoFinisher(template: template, marks: MarkAssets(
            textSetter: try Typesetter(pattern: "DejaVu Sans:bold"), tileSetter: nil, logo: nil))
        let photo = try encodeImage(flat(500, 400, Self.grey).finished(), options: EncodeOptions(format: .png))
        let output = try #require(try finisher.finish(bytes: photo, limits: DecodeLimits()).outputs.first)
        let box = try #require(output.applied.text?.box)
        #expect(output.applied.frame == 20 && output.size == .init(540, 440))
        // Margin 3 % of 400 = 12 px inside the photo, plus the 20 px frame.
        #expect(abs(box[0] - 32) <= 1 && abs(box[1] - 32) <= 1, "\(box)")
        let image = try decodeRGB(output.bytes)
        let inner = PixelRect(x: 20, y: 20, width: 500, height: 400)
        let inkFound = markBox(image, background: Self.grey, threshold: 97, in: inner)
        let ink = try #require(inkFound)
        #expect(abs(ink.x - box[0]) <= 1 && abs(ink.y - box[1]) <= 1 && abs(ink.width - box[2]) <= 1)
    }

    @Test("a logo that is not a PNG fails every photo with a message naming the file")
    func badLogo() throws {
        let folder = TemporaryFolder.path("marks")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data("not an image".utf8).write(to: URL(fileURLWithPath: folder + "/logo.png"))
        var template = Template(name: "t", directory: folder)
        template.logo = Template.LogoMark(file: "logo.png")
        let photo = try encodeImage(flat(50, 40, Self.grey).finished(), options: EncodeOptions(format: .png))
        #expect {
            _ = try PhotoFinisher(template: template).finish(bytes: photo, limits: DecodeLimits())
        } throws: { error in
            (error as? PhotoError)?.message.contains("logo file \(folder)/logo.png") == true
        }
    }
}

/// Finishes a flat blue photo of `width`×`height` with an opaque magenta text mark.
private func finishFlatPhoto(width: Int, height: Int, text: String, capHeight: Double = 0.035,
                             position: Template.Position = .bottomRight) throws -> FinishedPhoto {
    let source = Image(width: width, height: height, channels: 3, fill: [40, 90, 200])
    let bytes = try encodeImage(source, options: EncodeOptions(format: .jpeg, quality: 95))
    var template = Template(name: "t")
    var mark = Template.TextMark(text: text)
    mark.capHeight = capHeight
    mark.opacity = 1
    mark.color = .init(r: 255, g: 0, b: 255)
    mark.position = position
    template.text = mark
    return try PhotoFinisher(template: template).finish(bytes: bytes, limits: DecodeLimits())
}

/// The preview (report thumbnail, colour card sample) shows the photo, never its marks,
/// even when the photo is small enough that the output needs no resampling.
@Suite struct PreviewTests {
    @Test func previewOfASmallPhotoCarriesNoMark() throws {
        let photo = try finishFlatPhoto(width: 200, height: 150, text: "MARK", capHeight: 0.2, position: .center)
        let output = try #require(photo.outputs.first)
        #expect(output.applied.text != nil, "the output is marked")
        let preview = try #require(photo.preview)
        var magenta = 0
        for y in 0..<preview.height {
            for x in 0..<preview.width {
                let p = preview.pixel(x, y)
                if p[0] > 150 && p[1] < 100 && p[2] > 150 { magenta += 1 }
            }
        }
        #expect(magenta == 0, "the preview shows \(magenta) mark pixels")
    }
}

/// A text that, even at the smallest legible size, is wider than a tiny photo is left out
/// with a warning, never drawn cut off at the edge.
@Suite struct TinyPhotoTextTests {
    @Test func textWiderThanATinyPhotoIsLeftOutAndSaid() throws {
        let text = "© Example Studio 2026, all rights reserved"
        let photo = try finishFlatPhoto(width: 100, height: 68, text: text)
        let output = try #require(photo.outputs.first)
        #expect(output.applied.text == nil)
        #expect(photo.warnings.contains { $0.hasPrefix("text mark left out") && $0.contains("100 px wide photo") },
                "\(photo.warnings)")
        // The same text fits a normal photo.
        let fits = try finishFlatPhoto(width: 1200, height: 800, text: text)
        #expect(fits.outputs.first?.applied.text != nil)
        #expect(!fits.warnings.contains { $0.hasPrefix("text mark left out") })
    }
}
