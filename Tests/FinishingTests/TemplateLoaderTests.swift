import Codecs
import Foundation
import JSON5
import Testing
@testable import Finishing
import System

/// A temporary folder for one test, removed afterwards.
final class TemplateTestFolder {
    let path: String

    init() throws {
        path = try TemporaryFolder.make("template-tests")
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)  // best effort: it is only a temp folder
    }

    @discardableResult
    func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let file = (path as NSString).appendingPathComponent(name)
        try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        return file
    }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String { try write(name, Array(text.utf8)) }

    /// The 8-byte PNG signature and an IHDR: enough for the logo check, which sniffs bytes.
    static let pngHead: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
}

/// The checked-in examples, found from this file's place in the repository.
let templateExamplesFolder = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("etc/photofinish").path

/// Parses `text` as template "t" in `directory`, returning the errors (empty when valid).
func templateTestErrors(_ text: String, directory: String = "/nonexistent") -> [JSON5Error] {
    do throws(JSON5Errors) {
        _ = try TemplateLoader.parse(text: text, file: "t.json5", name: "t", directory: directory)
        return []
    } catch {
        return error.errors
    }
}

@Suite struct TemplateLoaderTests {
    @Test func shopExample() throws {
        // The logo PNG is made by the integrator; give the example one in a copy of its folder.
        let folder = try TemplateTestFolder()
        let text = try String(contentsOfFile: templateExamplesFolder + "/templates/shop.json5", encoding: .utf8)
        let path = try folder.write("shop.json5", text)
        try folder.write("logos/studio.png", TemplateTestFolder.pngHead)
        let template = try TemplateLoader.load(path: path)
        #expect(template.name == "shop")
        #expect(template.directory == folder.path)
        #expect(template.resize == .longSide(2048))
        #expect(template.crops.isEmpty)
        #expect(template.text?.text == "© Example Studio")
        #expect(template.text?.position == .bottomRight)
        #expect(template.text?.shadow == Template.Shadow(opacity: 0.35, blur: 0.004, offset: 0.001))
        #expect(template.logo?.file == "logos/studio.png")
        #expect(template.output.format == .format(.jpeg))
        #expect(template.output.quality == 88)
        #expect(template.output.metadata == .stripLocation)
        #expect(template.sha256 == SHA256.hex(of: Array(text.utf8)))
    }

    @Test func webSocialAndPrintExamples() throws {
        let web = try TemplateLoader.load(path: templateExamplesFolder + "/templates/web.json5")
        #expect(web.name == "web")
        #expect(web.resize == .longSide(2048))
        #expect(web.text == nil && web.logo == nil && web.tile == nil)
        #expect(web.output.quality == 88 && web.output.progressive)

        let social = try TemplateLoader.load(path: templateExamplesFolder + "/templates/social.json5")
        #expect(social.resize == .longSide(1080))
        #expect(social.crops == [
            Template.Crop(label: "1:1", width: 1, height: 1),
            Template.Crop(label: "4:5", width: 4, height: 5),
            Template.Crop(label: "16:9", width: 16, height: 9, skipIfCutOver: 0.5),
        ])

        let print = try TemplateLoader.load(path: templateExamplesFolder + "/templates/print.json5")
        #expect(print.resize == nil)
        #expect(print.frame == Template.Frame(width: 0.03, color: .white))
        #expect(print.output.metadata == .keep)
        #expect(print.output.color == .srgb)
        #expect(print.order == .captured)
    }

    @Test func everyExampleTemplatePassesTheCheckHelper() throws {
        let folder = try TemplateTestFolder()
        for name in ["shop", "web", "social", "print"] {
            let text = try String(contentsOfFile: templateExamplesFolder + "/templates/\(name).json5", encoding: .utf8)
            try folder.write("\(name).json5", text)
        }
        try folder.write("logos/studio.png", TemplateTestFolder.pngHead)
        let paths = ["shop", "web", "social", "print"].map { folder.path + "/\($0).json5" }
        #expect(TemplateLoader.check(paths: paths).isEmpty)
    }

    @Test func defaultsApply() throws {
        let template = try TemplateLoader.parse(text: "{ version: 1, text: { text: \"hi\" }, tile: { text: \"P\" }, stitch: {} }",
                                                file: "t.json5", name: "t", directory: "/tmp")
        #expect(template.order == .name)
        #expect(template.resize == nil)
        #expect(template.crops == [])
        #expect(template.colorCard == false)
        #expect(template.originals == .keep)
        #expect(template.output == Template.Output())
        var text = Template.TextMark(text: "hi")
        text.capHeight = 0.035
        #expect(template.text == text)
        #expect(template.tile == Template.TileMark(text: "P"))
        #expect(template.stitch == Template.Stitch())
    }

    @Test func commentsTrailingCommasAndQuotesAreAccepted() throws {
        let template = try TemplateLoader.parse(text: """
            // leading comment
            {
              /* block */ version: 1,
              'order': "arrival",
              "crops": ['1:1', "3:2",],
              output: { format: 'png', suffix: "-web", },
            }
            """, file: "t.json5", name: "t", directory: "/tmp")
        #expect(template.order == .arrival)
        #expect(template.crops.map(\.label) == ["1:1", "3:2"])
        #expect(template.output.format == .format(.png))
        #expect(template.output.suffix == "-web")
    }

    @Test func typoOnLineSevenIsNamedWithSuggestion() {
        let errors = templateTestErrors("""
            {
              version: 1,
              text: {
                text: "© Studio",
                capHeight: 0.03,
              },
              resise: { longSide: 2048 },
            }
            """)
        #expect(errors.count == 1)
        #expect(errors.first?.line == 7)
        #expect(errors.first?.keyPath == "resise")
        #expect(errors.first?.description == "t.json5:7: resise: unknown key 'resise' (did you mean 'resize'?)")
    }

    @Test func badValueNamesFileLineKeyAndRange() {
        let errors = templateTestErrors("{\n version: 1,\n text: {\n  text: \"x\",\n  capHeight: 3,\n }\n}")
        #expect(errors.map(\.description) == ["t.json5:5: text.capHeight: must be a number greater than 0 and at most 0.5, got 3"])
    }

    @Test func allErrorsAreCollectedInLineOrder() {
        let errors = templateTestErrors("""
            {
              version: 2,
              order: "nmae",
              resize: { longSide: 0, shortSide: 5 },
              crops: ["1:1", { ratio: "2:2" }, "4x5", { ratio: "3:2", skipIfCutOver: 1.5 }],
              frame: { width: 0.6, colour: "#fff" },
              text: { text: "", position: "bottom-rigth" },
              tile: { text: "P", angle: 200, gap: -1 },
              stitch: { width: 1.5, background: "white", split: "yes" },
              colorCard: 1,
              output: { format: "jpg", quality: 101, suffix: ".hidden", metadata: "none", color: "p3" },
              originals: "remove",
            }
            """)
        let byKey = Dictionary(errors.map { ($0.keyPath, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(errors.map(\.line) == errors.map(\.line).sorted { ($0 ?? 0) < ($1 ?? 0) })
        #expect(byKey["version"]?.line == 2)
        #expect(byKey["order"]?.message.contains("did you mean \"name\"") == true)
        #expect(byKey["resize"]?.message.contains("only one of") == true)
        #expect(byKey["crops[1].ratio"]?.message.contains("same ratio as crops[0] (1:1)") == true)
        #expect(byKey["crops[2]"]?.line == 5)
        #expect(byKey["crops[3].skipIfCutOver"] != nil)
        #expect(byKey["frame.width"]?.line == 6)
        #expect(byKey["frame.colour"]?.message == "unknown key 'colour' (did you mean 'color'?)")
        #expect(byKey["text.text"]?.message == "must not be empty")
        #expect(byKey["text.position"]?.message.contains("did you mean \"bottom-right\"") == true)
        #expect(byKey["tile.angle"]?.message == "must be a number between -180 and 180, got 200")
        #expect(byKey["tile.gap"] != nil)
        #expect(byKey["stitch.width"]?.message.contains("whole number") == true)
        #expect(byKey["stitch.background"] != nil)
        #expect(byKey["stitch.split"]?.message == "must be true or false, got \"yes\"")
        #expect(byKey["colorCard"] != nil)
        #expect(byKey["output.format"]?.message.contains("did you mean \"jpeg\"") == true)
        #expect(byKey["output.quality"]?.message == "must be a whole number between 1 and 100, got 101")
        #expect(byKey["output.suffix"] != nil)
        #expect(byKey["output.metadata"] != nil)
        #expect(byKey["output.color"] != nil)
        #expect(byKey["originals"]?.line == 12)
        #expect(errors.count == 22)
    }

    @Test func resizeForms() throws {
        func resize(_ json: String) throws -> Template.Resize? {
            try TemplateLoader.parse(text: "{version: 1, resize: \(json)}", file: "t", name: "t", directory: "/").resize
        }
        #expect(try resize("{ shortSide: 1200 }") == .shortSide(1200))
        #expect(try resize("{ fit: [1600, 1200] }") == .fit(width: 1600, height: 1200))
        #expect(templateTestErrors("{version: 1, resize: {}}").first?.message.contains("needs one of") == true)
        #expect(templateTestErrors("{version: 1, resize: { fit: [1600] }}").first?.keyPath == "resize.fit")
        #expect(templateTestErrors("{version: 1, resize: { fit: [1600, -2] }}").first?.keyPath == "resize.fit[1]")
    }

    @Test func missingVersionAndNonObjectDocument() {
        #expect(templateTestErrors("{}").first?.message.contains("missing key 'version'") == true)
        #expect(templateTestErrors("[1, 2]").first?.message.contains("must be an object") == true)
    }

    @Test func syntaxErrorHasLine() {
        let errors = templateTestErrors("{\n  version: 1,\n  order: \"name\"\n  colorCard: true,\n}")
        #expect(errors.count == 1)
        #expect(errors.first?.line == 4)
        #expect(errors.first?.message.hasPrefix("syntax error: expected ',' or '}' after the value of 'order'") == true)
    }

    @Test func duplicateKeyIsAnError() {
        let errors = templateTestErrors("{\n version: 1,\n order: \"name\",\n order: \"arrival\",\n}")
        #expect(errors.map(\.line) == [4])
        #expect(errors.first?.keyPath == "order")
    }

    @Test func logoFileMustExistAndBeAPNG() throws {
        let folder = try TemplateTestFolder()
        let text = "{\n version: 1,\n logo: {\n  file: \"logos/mark.png\",\n  position: \"top-right\" } }"
        let missing = templateTestErrors(text, directory: folder.path)
        #expect(missing.first?.line == 4)
        #expect(missing.first?.keyPath == "logo.file")
        #expect(missing.first?.message.contains(folder.path + "/logos/mark.png: not found") == true)

        // A logo that cannot be opened for another reason says the system's: a link to itself
        // is not "not found".
        try FileManager.default.createDirectory(atPath: folder.path + "/logos", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/logos/mark.png", withDestinationPath: "mark.png")
        let looped = templateTestErrors(text, directory: folder.path).first?.message
        #expect(looped?.contains("mark.png: cannot be read: Too many levels of symbolic links") == true, "\(looped ?? "")")
        try FileManager.default.removeItem(atPath: folder.path + "/logos/mark.png")

        try folder.write("logos/mark.png", Array("GIF89a not a png".utf8))
        #expect(templateTestErrors(text, directory: folder.path).first?.message.contains("is not a PNG") == true)

        try folder.write("logos/mark.png", TemplateTestFolder.pngHead)
        let template = try TemplateLoader.parse(text: text, file: "t", name: "t", directory: folder.path)
        #expect(template.logo?.position == .topRight)
        #expect(template.logo?.width == 0.16)
    }

    @Test func byteOrderMarkIsAccepted() throws {
        let template = try TemplateLoader.parse(text: "\u{FEFF}{ version: 1, colorCard: true }",
                                                file: "t", name: "t", directory: "/")
        #expect(template.colorCard)
    }

    @Test func aFolderIsNotATemplate() throws {
        let folder = try TemplateTestFolder()
        let errors = TemplateLoader.check(paths: [folder.path])
        #expect(errors.count == 1)
        #expect(errors.first?.file == folder.path)
        #expect(errors.first?.line == nil)
        #expect(errors.first?.message == "is a folder, not a template or config file")
    }

    @Test func loadNamesAMissingFile() {
        #expect(throws: JSON5Errors.self) { try TemplateLoader.load(path: "/nonexistent/x.json5") }
        let errors = TemplateLoader.check(paths: ["/nonexistent/x.json5"])
        #expect(errors.map(\.description) == ["/nonexistent/x.json5: no such file"])
    }

    @Test(arguments: [
        ("#fff", Template.Color(r: 255, g: 255, b: 255)),
        ("#1a2B3c", Template.Color(r: 0x1a, g: 0x2b, b: 0x3c)),
        ("#10203040", Template.Color(r: 0x10, g: 0x20, b: 0x30, a: 0x40)),
        ("#08f", Template.Color(r: 0, g: 0x88, b: 0xff)),
    ])
    func colours(text: String, color: Template.Color) {
        #expect(Template.Color(hex: text) == color)
    }

    @Test(arguments: ["fff", "#ff", "#ffff", "#12345g", "#1234567", "", "#"])
    func badColours(text: String) {
        #expect(Template.Color(hex: text) == nil)
    }
}
