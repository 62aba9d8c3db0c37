import Codecs
import Pixels
import Testing
import Typesetting
@testable import Finishing

/// Marks that stay legible on any photo: "auto" colours measured as WCAG contrast on the
/// pixels, the logo's dark-photo variant, a two-toned tile, and the calmest corner.
@Suite struct AutoMarkTests {
    typealias RGB = [UInt8]

    /// A photo whose left half is `left` and right half `right`.
    static func split(_ width: Int, _ height: Int, _ left: RGB, _ right: RGB) -> Canvas {
        var image = flat(width, height, left)
        image.withUnsafeMutableRows { rows in
            for y in 0..<height {
                for x in (width / 2)..<width { for c in 0..<3 { rows[y][x * 3 + c] = right[c] } }
            }
        }
        return image
    }

    /// Mid-grey with strong per-pixel noise (a busy photo), the same every run.
    static func busy(_ width: Int, _ height: Int) -> Canvas {
        busy(flat(width, height, [128, 128, 128]), in: PixelRect(x: 0, y: 0, width: width, height: height))
    }

    /// `image` with a busy `region`.
    static func busy(_ image: consuming Canvas, in r: PixelRect) -> Canvas {
        var seed: UInt64 = 12345
        image.withUnsafeMutableRows { rows in
            for y in r.y..<(r.y + r.height) {
                for x in r.x..<(r.x + r.width) {
                    seed = seed &* 6364136223846793005 &+ 1442695040888963407
                    let v = UInt8(clamping: 128 + Int(seed >> 57) - 64)
                    for c in 0..<3 { rows[y][x * 3 + c] = v }
                }
            }
        }
        return image
    }

    func painter(_ template: Template, logo: Image? = nil, onDark: Image? = nil) throws -> MarkPainter {
        let setter = try Typesetter(pattern: "DejaVu Sans:bold")
        return MarkPainter(template: template, assets: MarkAssets(textSetter: template.text == nil ? nil : setter,
                                                                  tileSetter: template.tile == nil ? nil : setter,
                                                                  logo: logo, onDark: onDark))
    }

    func autoText(_ position: Template.Position = .bottomRight, auto: [Template.Position]? = nil) -> Template {
        var template = Template(name: "t")
        var mark = Template.TextMark(text: "© Studio Nord")
        mark.autoColors = Template.AutoColors()
        mark.opacity = 1
        mark.capHeight = 0.06
        mark.position = position
        mark.autoPositions = auto
        template.text = mark
        return template
    }

    static func mean(_ values: [Double]) -> Double { values.reduce(0, +) / Double(max(1, values.count)) }

    @Test("auto text contrasts at least 3:1 with the photo under it", arguments: ["white", "black", "busy"])
    func autoTextContrast(_ photo: String) throws {
        func make() -> Canvas {
            switch photo {
            case "white": flat(600, 400, [255, 255, 255])
            case "black": flat(600, 400, [0, 0, 0])
            default: Self.busy(600, 400)
            }
        }
        var image = make()
        let clean = make().finished()
        let record = try #require(try painter(autoText()).paint(&image, icc: nil).text)
        let box = PixelRect(x: record.box[0], y: record.box[1], width: record.box[2], height: record.box[3])
        let fill = try #require(Template.Color(hex: record.color ?? ""))
        let under = Self.mean(clean.withUnsafeRows { PhotoSample.luminances($0, in: box) })
        let ratio = MarkChoice.contrast(MarkChoice.luminance(fill.r, fill.g, fill.b), under)
        #expect(ratio >= 3, "\(photo): \(record.color ?? "-") on a photo of mean luminance \(under) is \(ratio):1")
        // The pixels carry the fill the report names: the ink's most covered pixel is the fill.
        let inkColours = (box.y..<(box.y + box.height)).flatMap { y in (box.x..<(box.x + box.width)).map { image.pixel($0, y) } }
        #expect(inkColours.contains { $0 == [fill.r, fill.g, fill.b] })
        #expect(record.position == "bottom-right" && record.text == "© Studio Nord")
    }

    @Test("auto text over a white|black split stays legible on both halves (a rim in the other colour)")
    func autoTextOnSplit() throws {
        var image = Self.split(600, 400, [255, 255, 255], [0, 0, 0])
        let record = try #require(try painter(autoText(.bottom)).paint(&image, icc: nil).text)
        let box = PixelRect(x: record.box[0], y: record.box[1], width: record.box[2], height: record.box[3])
        #expect(box.x < 300 && box.x + box.width > 300, "the text straddles the split")
        // On each half, some of the mark's pixels contrast 3:1 or more with that half.
        for (background, range) in [(1.0, box.x..<300), (0.0, 300..<(box.x + box.width))] {
            var legible = 0
            for y in box.y..<(box.y + box.height) {
                for x in range {
                    let p = image.pixel(x, y)
                    if MarkChoice.contrast(MarkChoice.luminance(p[0], p[1], p[2]), background) >= 3 { legible += 1 }
                }
            }
            #expect(legible > box.height * 4, "background luminance \(background): \(legible) legible pixels")
        }
    }

    @Test("the onDark logo is drawn on a dark photo, the file on a light one")
    func logoVariant() throws {
        let darkLogo = Image(width: 40, height: 20, channels: 4, fill: [30, 30, 30, 255])
        let lightLogo = Image(width: 40, height: 20, channels: 4, fill: [250, 250, 250, 255])
        var template = Template(name: "t")
        var mark = Template.LogoMark(file: "dark.png")
        mark.onDark = "light.png"
        mark.opacity = 1
        template.logo = mark
        for (background, variant) in [([UInt8](repeating: 255, count: 3), "file"), ([0, 0, 0], "onDark")] {
            var image = flat(400, 300, background)
            let record = try #require(try painter(template, logo: darkLogo, onDark: lightLogo).paint(&image, icc: nil).logo)
            #expect(record.variant == variant)
            let centre = image.pixel(record.box[0] + record.box[2] / 2, record.box[1] + record.box[3] / 2)
            let contrast = MarkChoice.contrast(MarkChoice.luminance(centre[0], centre[1], centre[2]),
                                               MarkChoice.luminance(background[0], background[1], background[2]))
            #expect(contrast >= 3, "\(variant): logo pixel \(centre) on \(background)")
        }
    }

    @Test("an auto tiled mark shows on both halves of a white|black photo")
    func autoTileOnBothHalves() throws {
        var template = Template(name: "t")
        var tile = Template.TileMark(text: "PROOF")
        tile.autoColors = Template.AutoColors()
        tile.opacity = 0.3
        template.tile = tile
        var image = Self.split(600, 400, [255, 255, 255], [0, 0, 0])
        let record = try #require(try painter(template).paint(&image, icc: nil).tile)
        #expect(record.color == "auto")
        for (background, x0) in [([UInt8](repeating: 255, count: 3), 0), ([0, 0, 0], 300)] {
            let half = PixelRect(x: x0 + 10, y: 10, width: 280, height: 380)
            var marked = 0
            for y in half.y..<(half.y + half.height) {
                for x in half.x..<(half.x + half.width) where abs(Int(image.pixel(x, y)[0]) - Int(background[0])) > 25 {
                    marked += 1
                }
            }
            #expect(marked > half.width * half.height / 50, "half at x \(x0): \(marked) marked pixels")
        }
    }

    @Test("through the finisher: auto text is finished whole (dark on white), the auto tile streams band by band")
    func autoMarksThroughTheFinisher() throws {
        // No resize: the outputs are full resolution, the path that streams when it can.
        var template = autoText(auto: [.bottomRight, .topLeft])
        var tile = Template.TileMark(text: "PROOF")
        tile.autoColors = Template.AutoColors()
        tile.opacity = 0.3
        var tiled = Template(name: "tile")
        tiled.tile = tile
        template.variants = [.init(name: "tile", recipe: tiled)]
        let setter = try Typesetter(pattern: "DejaVu Sans:bold")
        let assets = MarkAssets(textSetter: setter, tileSetter: setter, logo: nil, onDark: nil)
        let bytes = try encodeImage(Self.split(600, 400, [255, 255, 255], [255, 255, 255]).finished(),
                                    options: EncodeOptions(format: .png))
        #expect(!MarkPainter(template: tiled, assets: assets).needsPixels, "an auto tile needs no pixels: it streams")
        #expect(MarkPainter(template: template, assets: assets).needsPixels)
        let photo = try PhotoFinisher(template: template, marks: assets).finish(bytes: bytes, limits: DecodeLimits())
        let text = try #require(photo.outputs.first?.applied.text)
        #expect(text.color == "#1a1a1a", "dark text on a white photo")
        let decoded = try decodeRGB(photo.outputs[0].bytes)
        let box = PixelRect(x: text.box[0], y: text.box[1], width: text.box[2], height: text.box[3])
        var dark = 0
        for y in box.y..<(box.y + box.height) {
            for x in box.x..<(box.x + box.width) where decoded.pixel(x, y)[0] < 100 { dark += 1 }
        }
        #expect(dark > box.width * box.height / 10, "\(dark) dark pixels in the text's box \(box)")
        // The tile's dark rim shows on white in the streamed output.
        let tileOutput = try decodeRGB(photo.outputs[1].bytes)
        var marked = 0
        for y in 0..<tileOutput.height {
            for x in 0..<tileOutput.width where tileOutput.pixel(x, y)[0] < 230 { marked += 1 }
        }
        #expect(marked > 600 * 400 / 50, "\(marked) marked pixels")
    }

    @Test("position auto picks a calm corner, never the busy one, nor the subject's, nor the logo's")
    func autoPositionAvoidsBusyCorner() throws {
        var image = Self.busy(flat(600, 400, [90, 110, 140]), in: PixelRect(x: 300, y: 200, width: 300, height: 200))
        let template = autoText(auto: Template.cornerPositions)
        let record = try #require(try painter(template).paint(&image, icc: nil).text)
        #expect(record.position != "bottom-right")
        // With the subject at the bottom left, the text goes to a top corner.
        var image2 = Self.busy(flat(600, 400, [90, 110, 140]), in: PixelRect(x: 300, y: 200, width: 300, height: 200))
        let subject = FocusBox(x: 0.05, y: 0.6, width: 0.3, height: 0.4)
        let record2 = try #require(try painter(template).paint(&image2, icc: nil, subject: subject).text)
        #expect(record2.position?.hasPrefix("top-") == true, "chose \(record2.position ?? "")")
        // A logo at auto takes another corner than the text.
        var both = template
        var logo = Template.LogoMark(file: "l.png")
        logo.autoPositions = Template.cornerPositions
        both.logo = logo
        var image3 = flat(600, 400, [90, 110, 140])
        let marks = try painter(both, logo: Image(width: 40, height: 20, channels: 4, fill: [200, 0, 0, 255]))
            .paint(&image3, icc: nil)
        let text = try #require(marks.text), drawnLogo = try #require(marks.logo)
        #expect(text.position != drawnLogo.position)
        // On a tall photo a top-left text and a top-left logo would stack touching: kept apart.
        var tallPhoto = flat(270, 480, [90, 110, 140])
        let tall = try painter(both, logo: Image(width: 40, height: 20, channels: 4, fill: [200, 0, 0, 255]))
            .paint(&tallPhoto, icc: nil)
        let t = try #require(tall.text), l = try #require(tall.logo)
        let apart = t.box[1] + t.box[3] + 8 <= l.box[1] || l.box[1] + l.box[3] + 8 <= t.box[1]
            || t.box[0] + t.box[2] + 8 <= l.box[0] || l.box[0] + l.box[2] + 8 <= t.box[0]
        #expect(apart, "text \(t.box) and logo \(l.box)")
    }
}

/// The choice rules with plain values.
@Suite struct MarkChoiceTests {
    @Test func wcagContrast() {
        #expect(abs(MarkChoice.contrast(1, 0) - 21) < 1e-9)
        #expect(abs(MarkChoice.luminance(255, 255, 255) - 1) < 1e-6)
        #expect(MarkChoice.luminance(0, 0, 0) == 0)
        // #777777 on white is about 4.48:1 (the well-known WCAG example).
        let grey = MarkChoice.luminance(0x77, 0x77, 0x77)
        #expect(abs(MarkChoice.contrast(grey, 1) - 4.48) < 0.01)
    }

    @Test func fillChoice() {
        let light = 1.0, dark = MarkChoice.luminance(0x1a, 0x1a, 0x1a)
        #expect(MarkChoice.fill(light: light, dark: dark, under: [Double](repeating: 0.95, count: 100)) == (false, false))
        #expect(MarkChoice.fill(light: light, dark: dark, under: [Double](repeating: 0.01, count: 100)) == (true, false))
        // Half white, half black: whichever is chosen needs a rim.
        let split = [Double](repeating: 1, count: 50) + [Double](repeating: 0, count: 50)
        #expect(MarkChoice.fill(light: light, dark: dark, under: split).rim)
    }

    @Test func calmestSkipsWhatToAvoid() {
        let boxes = [PixelRect(x: 0, y: 0, width: 10, height: 10), PixelRect(x: 90, y: 0, width: 10, height: 10),
                     PixelRect(x: 0, y: 90, width: 10, height: 10)]
        #expect(MarkChoice.calmest(boxes: boxes, detail: [1, 2, 3], avoid: []) == 0)
        #expect(MarkChoice.calmest(boxes: boxes, detail: [1, 2, 3], avoid: [PixelRect(x: 0, y: 0, width: 5, height: 5)]) == 1)
        // Everything covered by the second rule: it is given up, the first still holds.
        #expect(MarkChoice.calmest(boxes: boxes, detail: [1, 2, 3],
                                   avoid: [PixelRect(x: 0, y: 0, width: 5, height: 5),
                                           PixelRect(x: 0, y: 0, width: 100, height: 100)]) == 1)
    }

    @Test func logoVariantByContrast() {
        #expect(MarkChoice.prefersOnDark(file: [(0.02, 1)], onDark: [(0.9, 1)], under: [0.01, 0.02]))
        #expect(!MarkChoice.prefersOnDark(file: [(0.02, 1)], onDark: [(0.9, 1)], under: [0.9, 1.0]))
        // Dark lettering beside a mid-blue emblem, on a dark photo: the light variant (light
        // lettering, an orange emblem) reads better, though the means are close.
        #expect(MarkChoice.prefersOnDark(file: [(0.02, 3), (0.2, 1)], onDark: [(0.9, 3), (0.3, 1)], under: [0.02]))
    }
}
