import Codecs
import Foundation
import Pixels
import Testing

/// The product's promise: one template puts "the same" mark on every shape of photo.
@Suite(.serialized) struct MarksTests {
    static let grey: [UInt8] = [50, 50, 50]

    /// A flat picture, filled row by row (48 MP in well under a second, even in debug).
    static func flat(_ width: Int, _ height: Int, _ colour: [UInt8], channels: Int = 3) -> Image {
        Image(width: width, height: height, channels: channels, fill: colour)
    }

    /// Pixels matching `test` (given a pointer to R, G, B), as a box (nil when none do).
    static func box(_ image: Image, in region: PixelRect,
                    where test: (UnsafePointer<UInt8>) -> Bool) -> PixelRect? {
        var minX = Int.max, minY = Int.max, maxX = -1, maxY = -1
        image.withUnsafeRows { rows in
            for y in region.y..<(region.y + region.height) {
                let row = rows[y]
                for x in region.x..<(region.x + region.width) where test(row + x * rows.channels) {
                    minX = min(minX, x); maxX = max(maxX, x); minY = min(minY, y); maxY = max(maxY, y)
                }
            }
        }
        return maxX < 0 ? nil : PixelRect(x: minX, y: minY, width: maxX - minX + 1, height: maxY - minY + 1)
    }

    @Test("six shapes, one template: the same capitals, margins and logo on every output")
    func sameMarkOnEveryShape() throws {
        let dir = try Harness.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        // The logo: an opaque red 300×100 plate in a PNG with alpha.
        let logo = Self.flat(300, 100, [220, 20, 20, 255], channels: 4)
        try Harness.write(try encodeImage(logo, options: EncodeOptions(format: .png)), to: dir + "/logo.png")
        // Flat-topped, flat-bottomed capitals: their ink height is the cap height, their
        // bottom the baseline.
        try Harness.write("""
            { version: 1, resize: { shortSide: 600 },
              text: { text: "HELL FILM", capHeight: 0.06, margin: 0.03, maxWidth: 0.9, position: "bottom-right",
                      color: "#ffffff", opacity: 1 },
              logo: { file: "logo.png", width: 0.16, padding: 0.04, opacity: 1, position: "top-left" },
              output: { format: "png" } }
            """, to: dir + "/marks.json5")
        var sideways = ExifBuilder()
        sideways.orientation = 6
        let shapes: [(name: String, width: Int, height: Int, exif: ExifBuilder?)] = [
            ("a_landscape.jpg", 4032, 3024, nil),
            ("b_portrait.jpg", 4032, 3024, sideways),  // stored sideways: upright 3024×4032
            ("c_48mp.jpg", 8000, 6000, nil),
            ("d_screenshot.jpg", 1179, 2556, nil),
            ("e_square.jpg", 1080, 1080, nil),
            ("f_panorama.jpg", 16000, 3400, nil),
        ]
        for shape in shapes {
            let bytes = try encodeImage(Self.flat(shape.width, shape.height, Self.grey),
                                        options: EncodeOptions(format: .jpeg, quality: 90, exif: shape.exif?.bytes()))
            try Harness.write(bytes, to: dir + "/in/" + shape.name)
        }
        let r = try Harness.run(["run", "--template", dir + "/marks.json5", "--out", dir + "/out", dir + "/in"])
        #expect(r.status == 0, "\(r.stderr)")
        let batch = try Harness.batchFolder(in: dir + "/out")
        let items = try #require(try Harness.report(in: batch)["items"] as? [[String: Any]])
        #expect(items.count == 6)

        var capHeights: [Int] = [], rightMargins: [Int] = [], baselineMargins: [Int] = [], logoSizes: [[Int]] = []
        for (index, shape) in shapes.enumerated() {
            let stem = String(shape.name.dropLast(4))
            let (image, _) = try Harness.decode(batch + "/" + stem + ".png")
            let short = min(image.width, image.height)
            #expect(short == 600, "\(shape.name): \(image.width)×\(image.height)")
            if shape.exif != nil { #expect(image.width == 600 && image.height == 800, "the portrait is upright") }
            let whole = PixelRect(x: 0, y: 0, width: image.width, height: image.height)
            // Text: white ink, half-covered pixels and more.
            let ink = try #require(Self.box(image, in: whole) { $0[0] > 152 && $0[1] > 152 }, "\(shape.name): no text")
            // Logo: red.
            let plate = try #require(Self.box(image, in: whole) { $0[0] > 135 && $0[1] < 90 }, "\(shape.name): no logo")
            let cap = Double(ink.height) / Double(short)
            let right = image.width - (ink.x + ink.width), baseline = image.height - (ink.y + ink.height)
            #expect(abs(cap / 0.06 - 1) < 0.03, "\(shape.name): capitals \(ink.height) px = \(cap) of the short side")
            #expect(abs(Double(right) / Double(short) - 0.03) <= 1.0 / 600, "\(shape.name): right margin \(right) px")
            #expect(abs(Double(baseline) / Double(short) - 0.03) <= 1.0 / 600, "\(shape.name): baseline margin \(baseline) px")
            #expect(abs(Double(plate.width) / Double(short) - 0.16) <= 1.0 / 600, "\(shape.name): logo \(plate.width) px wide")
            #expect(abs(plate.height - plate.width / 3) <= 1, "\(shape.name): logo aspect kept")
            #expect(abs(plate.x - Int((0.04 * Double(image.width)).rounded())) <= 1, "\(shape.name): logo x \(plate.x)")
            #expect(abs(plate.y - Int((0.04 * Double(image.height)).rounded())) <= 1, "\(shape.name): logo y \(plate.y)")
            capHeights.append(ink.height)
            rightMargins.append(right)
            baselineMargins.append(baseline)
            logoSizes.append([plate.width, plate.height])

            // The report records what the pixels show.
            let outputs = try #require(items[index]["outputs"] as? [[String: Any]])
            let applied = try #require(outputs.first?["applied"] as? [String: Any])
            let text = try #require(applied["text"] as? [String: Any])
            #expect(text["capHeightPx"] as? Int == 36)
            let textBox = try #require(text["box"] as? [Int])
            #expect(zip(textBox, [ink.x, ink.y, ink.width, ink.height]).allSatisfy { abs($0 - $1) <= 1 },
                    "\(shape.name): report \(textBox), pixels \(ink)")
            let logoRecord = try #require(applied["logo"] as? [String: Any])
            #expect(logoRecord["box"] as? [Int] == [plate.x, plate.y, plate.width, plate.height])
            #expect((logoRecord["scale"] as? Double).map { abs($0 - 0.32) < 0.001 } == true)
        }
        // The same across all six, to a pixel.
        for values in [capHeights, rightMargins, baselineMargins, logoSizes.map { $0[0] }, logoSizes.map { $0[1] }] {
            #expect(values.max()! - values.min()! <= 1, "\(values)")
        }
    }

    @Test("a batch whose logo cannot be read fails each photo with the logo's name, and says so")
    func missingLogoFile() throws {
        let dir = try Harness.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        try Harness.write([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0], to: dir + "/logo.png")
        try Harness.write("{ version: 1, logo: { file: \"logo.png\" } }", to: dir + "/t.json5")
        try Harness.write(try encodeImage(Self.flat(64, 48, Self.grey), options: EncodeOptions(format: .jpeg)),
                          to: dir + "/in/a.jpg")
        let r = try Harness.run(["run", "--template", dir + "/t.json5", "--out", dir + "/out", dir + "/in"])
        #expect(r.status == 1)
        let items = try #require(try Harness.report(in: try Harness.batchFolder(in: dir + "/out"))["items"] as? [[String: Any]])
        let error = try #require(items.first?["error"] as? [String: Any])
        #expect((error["message"] as? String)?.contains("logo file \(dir)/logo.png") == true, "\(error)")
    }
}
