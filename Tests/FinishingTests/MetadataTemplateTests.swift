import Codecs
import Foundation
import JSON5
import Testing
@testable import Finishing

/// The `metadata` key: the codes file, the texts filled for one photo, validation with file, line
/// and key, and what `check` says (reference: Metadata templates).
@Suite("metadata templates: codes, texts, validation")
struct MetadataTemplateTests {
    static let roster = """
        \u{FEFF}// The Choo-Choos, by jersey
        7\tAda Lovelace\tLovelace\t"Ada ""the Countess"" Lovelace"
        CC2\t Aaron Barnum \tBarnum\r
        gk\tGrace Hopper

        DD13\tVictor Zenfliende\t\t
        """

    @Test func aCodesFileReadsAsSpreadsheetsWriteIt() throws {
        let codes = try CodeReplacements(file: "roster.tsv", text: Self.roster)
        #expect(codes.count == 4)
        #expect(codes.text(for: "7") == "Ada Lovelace")
        #expect(codes.text(for: "7#2") == "Lovelace")
        #expect(codes.text(for: "7#3") == "Ada \"the Countess\" Lovelace")
        #expect(codes.text(for: "7#1") == "Ada Lovelace")
        #expect(codes.text(for: "CC2") == "Aaron Barnum", "spaces around a cell and a CRLF are not the text")
        #expect(codes.text(for: "cc2") == nil, "codes are case-sensitive, as in Photo Mechanic")
        #expect(codes.text(for: "7#4") == nil && codes.text(for: "DD13#2") == nil && codes.text(for: "7#0") == nil)
    }

    @Test(arguments: [
        ("7 Ada Lovelace", 1, "no tab after the code"),
        ("7\tAda\n8\tBob\n7\tAda L.", 3, "the code 7 is given twice (first on line 1)"),
        ("a b\tAda", 1, "the code \"a b\" cannot be written between = signs"),
        ("x=y\tAda", 1, "the code \"x=y\" cannot be written between = signs"),
        ("\n\n8\t\t", 3, "the code 8 has no text after its tab"),
    ])
    func aBadCodesFileNamesItsLine(_ text: String, _ line: Int, _ message: String) {
        #expect(throws: CodeReplacements.Problem.self) { try CodeReplacements(file: "r.tsv", text: text) }
        do {
            _ = try CodeReplacements(file: "r.tsv", text: text)
        } catch {
            #expect(error.line == line)
            #expect(error.message.hasPrefix(message), "\(error.message)")
        }
    }

    @Test(arguments: [
        ("=7= scores", "Ada Lovelace scores", [String]()),
        ("=7#2=, =gk#1= and =CC2=", "Lovelace, Grace Hopper and Aaron Barnum", []),
        ("=99= and =7=", "=99= and Ada Lovelace", ["=99="]),
        ("=x=7=", "=xAda Lovelace", ["=x="]),
        ("=7#9= =99= =99=", "=7#9= =99= =99=", ["=7#9=", "=99="]),
        ("2 = 2, a=b, == and =", "2 = 2, a=b, == and =", []),
        ("E=mc² or x = y=", "E=mc² or x = y=", []),
        ("E=mc²=energy", "E=mc²=energy", ["=mc²="]),
    ])
    func codesAreReplacedAndTheUnknownLeftAsWritten(_ text: String, _ expected: String, _ unknown: [String]) throws {
        let codes = try CodeReplacements(file: "roster.tsv", text: Self.roster)
        let (written, notFound) = CodeReplacements.replace(in: text, with: codes)
        #expect(written == expected)
        #expect(notFound == unknown)
    }

    @Test func withoutACodesFileEveryCodeIsLeftAsWritten() {
        #expect(CodeReplacements.replace(in: "=7= scores", with: nil) == ("=7= scores", ["=7="]))
    }

    /// Variables are filled in the text around the codes and inside them, before the look-up; a
    /// variable's value is never itself taken for a code.
    @Test func variablesInsideACodeAreFilledFirst() throws {
        let codes = try CodeReplacements(file: "roster.tsv", text: Self.roster)
        let values = ["n": "7", "name": "=gk=", "none": ""]
        let render = { (piece: Substring) in Variables.render(String(piece), values).text }
        #expect(CodeReplacements.replace(in: "={n}#2=, {name} and ={none}=!", with: codes, render: render)
                == ("Lovelace, =gk= and !", []))
    }

    static let template = """
        { version: 1,
          metadata: { title: "{hotFolder} — {date}", caption: "=7= and ={uploader}= at {camera}",
                      keywords: ["=7#2=", "football", "=7#2=", "{uploader}"],
                      creator: "Jane Doe", copyright: "© {year} Studio Nord", usageTerms: "Editorial use only",
                      city: "Zürich", country: "Schweiz", event: "Cup Final", codes: "codes/roster.tsv" },
          output: { metadata: "keep", credit: { credit: "Studio Nord" } } }
        """

    @Test func theTextsAreFilledForEachPhotoThenTheirCodesReplaced() throws {
        let folder = try TemplateTestFolder()
        try folder.write("codes/roster.tsv", Self.roster + "\nanna\tAnna Bell\n")
        let template = try TemplateLoader.parse(text: Self.template, file: "t.json5", name: "t", directory: folder.path)
        let metadata = try #require(template.metadata)
        #expect(metadata.codes?.count == 5 && metadata.codes?.file == "codes/roster.tsv")
        #expect(metadata.texts.keywords == ["=7#2=", "football", "=7#2=", "{uploader}"])

        var facts = PhotoFacts(filename: "IMG_1.jpg", batch: "b", index: 1, count: 1)
        facts.captured = "2026:11:29 15:04:05"
        facts.hotFolder = "u12-finals"
        facts.uploader = "anna"
        let (filled, credit, warnings) = template.filled(with: facts)
        let written = try #require(filled.metadata)
        #expect(written.texts.title == "u12-finals — 2026-11-29")
        #expect(written.texts.caption == "Ada Lovelace and Anna Bell at", "a variable's value may be a code; {camera} is empty")
        #expect(written.texts.keywords == ["Lovelace", "football", "anna"], "each keyword once")
        #expect(written.texts.copyright == "© 2026 Studio Nord" && written.texts.city == "Zürich" && written.texts.event == "Cup Final")
        #expect(written.unknownCodes.isEmpty)
        #expect(credit == Codecs.Credit(credit: "Studio Nord"))
        #expect(warnings == ["{camera} left empty in metadata.caption: the photo names no camera (EXIF Make, Model)"])

        // No uploader (a photo dropped on the share): empty and not warned about; a code made of
        // it alone is dropped, not written as "==".
        facts.uploader = nil
        let (alone, _, quiet) = template.filled(with: facts)
        #expect(alone.metadata?.texts.caption == "Ada Lovelace and  at")
        #expect(alone.metadata?.texts.keywords == ["Lovelace", "football"])
        #expect(quiet == ["{camera} left empty in metadata.caption: the photo names no camera (EXIF Make, Model)"])
    }

    @Test func aTextLeftEmptyIsNotWrittenAndUnknownCodesAreKept() throws {
        var template = Template(name: "t")
        var metadata = Template.MetadataTemplate()
        metadata.texts.title = "{uploader}"
        metadata.texts.caption = "=7= by =ghost#2="
        metadata.texts.keywords = ["  ", "{uploader}", "=ghost#2="]
        template.metadata = metadata
        let (filled, _, warnings) = template.filled(with: PhotoFacts(filename: "a.jpg"))
        #expect(filled.metadata?.texts.title == nil)
        #expect(filled.metadata?.texts.caption == "=7= by =ghost#2=")
        #expect(filled.metadata?.texts.keywords == ["=ghost#2="])
        #expect(filled.metadata?.unknownCodes == ["=7=", "=ghost#2="])
        #expect(warnings.isEmpty)
        // The story of a batch carries no metadata: nothing filled, nothing warned.
        #expect(template.filled(with: PhotoFacts(), metadata: false).template.metadata == template.metadata)
    }

    @Test(arguments: [
        ("{version: 1,\n metadata: { caption: \"{camrea}\" } }", "t.json5:2: metadata.caption: unknown variable {camrea} (did you mean {camera}?)"),
        ("{version: 1,\n metadata: { captoin: \"x\" } }", "t.json5:2: metadata.captoin: unknown key 'captoin' (did you mean 'caption'?)"),
        ("{version: 1,\n metadata: { keywords: \"a, b\" } }", "t.json5:2: metadata.keywords: must be a list of keywords"),
        ("{version: 1, metadata: { keywords: [\"a\",\n \"{nope}\"] } }", "t.json5:2: metadata.keywords[1]: unknown variable {nope}"),
        ("{version: 1,\n metadata: { title: 7 } }", "t.json5:2: metadata.title: must be"),
        ("{version: 1,\n metadata: {} }", "t.json5:2: metadata: give at least one of title, caption"),
        ("{version: 1, metadata: { title: \"t\",\n codes: \"missing.tsv\" } }", "t.json5:2: metadata.codes: /nonexistent/missing.tsv: not found"),
        ("{version: 1, metadata: {\n creator: \"A\" }, output: { credit: { creator: \"B\" } } }",
         "t.json5:2: metadata.creator: output.credit.creator gives the creator too: give it once"),
        ("{version: 1, variants: [{ name: \"v\",\n metadata: { caption: \"{x}\" } }] }", "t.json5:2: variants[0].metadata.caption: unknown variable {x}"),
        ("{version: 1, metadata: { copyright: \"©\" }, variants: [{ name: \"v\",\n output: { credit: { copyright: \"©\" } } }] }",
         "t.json5:2: variants[0].output.credit.copyright: metadata.copyright gives the copyright too"),
    ])
    func errorsNameFileLineAndKey(_ text: String, _ expected: String) {
        let errors = templateTestErrors(text)
        #expect(errors.count == 1, "\(errors)")
        #expect(errors.first?.description.hasPrefix(expected) == true, "\(errors.map(\.description))")
    }

    @Test func aBadCodesFileIsNamedWithItsLineUnderTheKey() throws {
        let folder = try TemplateTestFolder()
        try folder.write("roster.tsv", "7\tAda\n8 Bob\n")
        try folder.write("latin1.tsv", [0x37, 0x09, 0x41, 0x0A, 0x38, 0x09, 0x4D, 0xFC, 0x6C, 0x6C, 0x65, 0x72, 0x0A])
        for (file, message) in [("roster.tsv", "\(folder.path)/roster.tsv:2: no tab after the code"),
                                ("latin1.tsv", "\(folder.path)/latin1.tsv:2: not UTF-8 text: save the file as UTF-8")] {
            let errors = templateTestErrors("{ version: 1, metadata: { caption: \"=7=\",\n codes: \"\(file)\" } }", directory: folder.path)
            #expect(errors.map(\.description).first?.hasPrefix("t.json5:2: metadata.codes: \(message)") == true, "\(errors)")
        }
    }

    /// A batch is finished with the codes its template was loaded with: the texts kept (as a
    /// claimed batch's manifest keeps them) win over the file as it is now.
    @Test func keptCodesWinOverTheFileOnDisk() throws {
        let folder = try TemplateTestFolder()
        let path = try folder.write("t.json5", "{ version: 1, metadata: { caption: \"=7=\", codes: \"r.tsv\" } }")
        try folder.write("r.tsv", "7\tAda Lovelace\n")
        let loaded = try TemplateLoader.load(path: path)
        #expect(loaded.codesFiles == ["r.tsv": "7\tAda Lovelace\n"])
        try folder.write("r.tsv", "7 broken\n")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let again = try TemplateLoader.parse(text: text, file: path, name: "t", directory: folder.path, files: loaded.codesFiles)
        #expect(again.metadata == loaded.metadata)
        #expect(!templateTestErrors(text, directory: folder.path).isEmpty, "from the disk, the broken file is refused")
    }

    /// The example the package installs (the README's sports example).
    @Test func theSportsExampleCaptionsAGame() throws {
        let template = try TemplateLoader.load(path: templateExamplesFolder + "/templates/sports.json5")
        #expect(template.metadata?.codes?.count == 9)
        #expect(template.metadataFindings.isEmpty)
        var facts = PhotoFacts(filename: "IMG_1.jpg", batch: "b")
        facts.captured = "2026:04:12 19:30:00"
        facts.hotFolder = "g0412"
        facts.uploader = "jdoe"
        let written = try #require(template.filled(with: facts).template.metadata)
        #expect(written.texts.title == "Choo-Choos vs Dunkers, April 12")
        #expect(written.texts.caption == "Choo-Choos vs Dunkers, April 12 at Riverside Arena. Photo: Jane Doe / Sports Desk")
        #expect(written.texts.creator == "Jane Doe" && written.texts.copyright == "© 2026 Sports Desk" && written.unknownCodes.isEmpty)
    }

    @Test func checkSaysWhatIsNotWrittenAsGiven() throws {
        let folder = try TemplateTestFolder()
        try folder.write("r.tsv", "7\tAda Lovelace\n")
        let template = try TemplateLoader.parse(text: """
            { version: 1,
              metadata: { caption: "=7= =8= ={uploader}=", city: "Zürich", country: "Schweiz", codes: "r.tsv" },
              variants: [ { name: "web" }, { name: "agency", output: { metadata: "keep" } },
                          { name: "plain", metadata: { caption: "=7=", city: "Bern" } }, { name: "bare", output: { metadata: "strip-all" } } ] }
            """, file: "t.json5", name: "t", directory: folder.path)
        #expect(template.metadataFindings.map(\.words) == [
            "metadata: city and country are not written: output.metadata \"strip-location\" strips where a photo was, the "
                + "template's words too (strip-location is the default); set output.metadata: \"keep\" to write them",
            "metadata.caption: =8= is not in the codes file r.tsv: it is written as it is",
            "variants[2].metadata.city: not written into the plain variant's outputs: output.metadata \"strip-location\" strips "
                + "where a photo was, the template's words too (strip-location is the default); set output.metadata: \"keep\" to write it",
            "variants[2].metadata.caption: =7= looks like a code, but no codes file is named (metadata.codes): it is written as it is",
            "variants[3].output.metadata: \"strip-all\" strips where a photo was: metadata.city and metadata.country are not "
                + "written into the bare variant's outputs (\"keep\" writes them)",
        ])
    }
}
