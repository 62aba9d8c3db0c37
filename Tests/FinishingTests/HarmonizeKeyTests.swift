import Codecs
import Pixels
import Testing
@testable import Finishing

/// The `harmonize` key (docs/reference.md, `harmonize`): its forms, its defaults, and every
/// mistake named by key.
@Suite struct HarmonizeKeyTests {
    func parse(_ harmonize: String) throws -> Template {
        try TemplateLoader.parse(text: "{ version: 1, harmonize: \(harmonize) }", file: "t.json5", name: "t", directory: "/")
    }

    @Test func formsAndDefaults() throws {
        #expect(try parse("true").harmonize == Template.Harmonize())
        #expect(try parse("false").harmonize == nil)
        #expect(try TemplateLoader.parse(text: "{ version: 1 }", file: "t", name: "t", directory: "/").harmonize == nil)
        let all = try #require(try parse("{ whiteBalance: false, strength: 1, reference: \"IMG_0042.JPG\" }").harmonize)
        #expect(!all.whiteBalance && all.exposure && all.strength == 1 && all.reference == .file("IMG_0042.JPG"))
        #expect(try parse("{ reference: \"median\" }").harmonize?.reference == .median)
        let defaults = Template.Harmonize()
        #expect(defaults.whiteBalance && defaults.exposure && defaults.strength == 0.7 && defaults.reference == .median)
    }

    @Test func mistakesAreNamed() {
        func errors(_ harmonize: String) -> [String: String] {
            Dictionary(templateTestErrors("{ version: 1, harmonize: \(harmonize) }").map { ($0.keyPath, $0.message) },
                       uniquingKeysWith: { first, _ in first })
        }
        #expect(errors("{ strength: 0 }")["harmonize.strength"] != nil)
        #expect(errors("{ strength: 1.5 }")["harmonize.strength"] != nil)
        #expect(errors("{ refrence: \"median\" }")["harmonize.refrence"]?.contains("did you mean 'reference'") == true)
        #expect(errors("{ reference: \"shoot/IMG_1.jpg\" }")["harmonize.reference"]?.contains("no folder") == true)
        #expect(errors("{ whiteBalance: false, exposure: false }")["harmonize"]?.contains("nothing to match") == true)
        #expect(errors("\"yes\"")["harmonize"]?.contains("must be true, false or {") == true)
        // A photo is decoded once for every product: its light is not a variant's to change.
        #expect(!templateTestErrors("{ version: 1, variants: [{ name: \"a\", harmonize: true }] }").isEmpty)
    }

    @Test func theProofShowsASetBeforeAndAfter() throws {
        let template = try TemplateLoader.parse(text: "{ version: 1, resize: { longSide: 400 }, harmonize: { strength: 1 } }",
                                                file: "t.json5", name: "t", directory: "/")
        let sheet = try #require(try Proof.render(template: template, shrink: 16))
        #expect(sheet.failures.isEmpty, "\(sheet.failures)")
        // The six samples' one output each, then the five shots as shot and harmonized.
        #expect(sheet.layout.tiles.count == 6 + 2 * ProofSet.lights.count)
        let image = try decodeRGB(sheet.png)
        func light(_ tile: PixelRect) -> LightEstimate {
            var canvas = Canvas(width: tile.width, height: tile.height, channels: 3)
            canvas.withUnsafeMutableRows { rows in
                image.withUnsafeRows { sheet in
                    for y in 0..<tile.height { rows[y].update(from: sheet[tile.y + y] + tile.x * 3, count: rows.rowBytes) }
                }
            }
            return canvas.finished().withUnsafeRows { LightEstimate.measure($0) }
        }
        let before = sheet.layout.tiles[6..<11].map(light), after = sheet.layout.tiles[11..<16].map(light)
        let was = LightEstimate.spread(before), now = LightEstimate.spread(after)
        #expect(now.white < 0.5 * was.white && now.exposure < 0.6 * was.exposure, "\(was) → \(now)")
    }
}
