import Testing
@testable import Finishing

/// The keys of subject crops and auto marks: read into the model, and every mistake named by
/// line and key.
@Suite struct PictureKeysTests {
    @Test func keysAreRead() throws {
        let template = try TemplateLoader.parse(text: """
            { version: 1, cropFocus: "center",
              crops: ["1:1", { ratio: "4:5", focus: "subject" }],
              text: { text: "©", color: "auto", autoColors: { light: "#fafafa", dark: "#202020" }, outline: 0.1,
                      position: "auto", positions: ["top-left", "bottom-left"] },
              tile: { text: "PROOF", color: "auto" } }
            """, file: "t.json5", name: "t", directory: "/")
        #expect(template.cropFocus == .center)
        #expect(template.crops.map(\.focus) == [nil, .subject])
        let text = try #require(template.text)
        #expect(text.autoColors == Template.AutoColors(light: .init(r: 0xfa, g: 0xfa, b: 0xfa), dark: .init(r: 0x20, g: 0x20, b: 0x20)))
        #expect(text.outline == 0.1)
        #expect(text.autoPositions == [.topLeft, .bottomLeft])
        #expect(template.tile?.autoColors == Template.AutoColors())
        // Defaults: subject crops, fixed colour and place.
        let plain = try TemplateLoader.parse(text: "{ version: 1, crops: [\"1:1\"], text: { text: \"a\", position: \"auto\" } }",
                                             file: "t", name: "t", directory: "/")
        #expect(plain.cropFocus == .subject)
        #expect(plain.text?.autoPositions == Template.cornerPositions)
        #expect(plain.text?.autoColors == nil)
        let plan = Layout.plan(stored: .init(400, 300), orientation: 1, template: plain).outputs[0]
        #expect(plan.focus == .subject)
    }

    @Test func mistakesAreNamedByLineAndKey() {
        let errors = templateTestErrors("""
            { version: 1,
              cropFocus: "faces",
              crops: [{ ratio: "1:1", focus: "centre" }],
              text: { text: "a", color: "automatic", autoColors: { light: "white" }, outline: 2, positions: ["top"] },
              logo: { file: "/nonexistent/l.png", onDark: "/nonexistent/d.png", position: "auto", positions: ["middle"] },
              tile: { text: "P", color: "#12345", autoColors: { dark: "#000" } },
            }
            """)
        let byKey = Dictionary(errors.map { ($0.keyPath, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(byKey["cropFocus"]?.line == 2)
        #expect(byKey["crops[0].focus"]?.message.contains("did you mean \"center\"") == true)
        #expect(byKey["text.color"]?.message.contains("or \"auto\"") == true)
        #expect(byKey["text.autoColors.light"]?.line == 4)
        #expect(byKey["text.outline"] != nil)
        #expect(byKey["text.positions"]?.message.contains("only used with position: \"auto\"") == true)
        #expect(byKey["logo.onDark"]?.message.contains("not found") == true)
        #expect(byKey["logo.positions[0]"]?.line == 5)
        #expect(byKey["tile.color"] != nil)
        #expect(byKey["tile.autoColors"]?.message.contains("only used with color: \"auto\"") == true)
    }
}
