import Codecs
import Foundation
import Pixels
import Testing
@testable import Finishing

@Suite("text variables")
struct VariablesTests {
    @Test func piecesAndUnknownNames() {
        #expect(Variables.pieces("{camera} · {date}") == [.variable("camera"), .literal(" · "), .variable("date")])
        #expect(Variables.pieces("a {b c} {} {x1} {{stem}}") == [.literal("a {b c} {} {x1} {"), .variable("stem"),
                                                                  .literal("}")])
        #expect(Variables.unknown(in: "{year} {camrea} {stem} {foo}", known: Variables.photo) == ["camrea", "foo"])
        #expect(Variables.unknown(in: "{variant}", known: Variables.name) == [])
        #expect(Variables.render("© {year} {nothing}", ["year": "2026"]) == ("© 2026 ", ["nothing"]))
    }

    @Test func factsOfAPhoto() {
        var facts = PhotoFacts(filename: "IMG_0001.HEIC", batch: "20261129-150405-3f2a", index: 3, count: 80)
        facts.captured = "2026:11:29 15:04:05"
        facts.make = "NIKON CORPORATION"
        facts.model = "NIKON Z 6 "
        facts.lens = "NIKKOR Z 24-70mm f/4 S"
        #expect(facts.values == ["filename": "IMG_0001.HEIC", "stem": "IMG_0001", "date": "2026-11-29", "time": "15:04",
                                 "year": "2026", "camera": "NIKON Z 6", "lens": "NIKKOR Z 24-70mm f/4 S",
                                 "batch": "20261129-150405-3f2a", "index": "3", "count": "80"])
        #expect(PhotoFacts.camera(make: "Apple", model: "iPhone 15 Pro") == "Apple iPhone 15 Pro")
        #expect(PhotoFacts.camera(make: "Canon", model: "Canon EOS R5") == "Canon EOS R5")
        #expect(PhotoFacts.camera(make: nil, model: nil) == nil)
        #expect(PhotoFacts.dateAndTime("0000:00:00 00:00:00") == nil)
        #expect(PhotoFacts.dateAndTime("    :  :     :  :  ") == nil)
    }

    /// A JPEG with a camera and a capture time, finished with variables in its mark and
    /// credit: the output's metadata and the report record say the same words.
    @Test func markAndCreditCarryThePhotosFacts() throws {
        let exif = ExifBuilder(make: "Canon", model: "Canon EOS R5", dateTimeOriginal: "2026:11:29 15:04:05").bytes()
        let bytes = try encodeImage(Image(width: 400, height: 300, channels: 3, fill: [40, 90, 200]),
                                    options: EncodeOptions(format: .jpeg, quality: 95, exif: exif))
        let template = try TemplateLoader.parse(text: """
            { version: 1,
              text: { text: "{camera} · {date} · {index}/{count}", capHeight: 0.05 },
              output: { metadata: "strip-all",
                        credit: { creator: "Jane Doe", copyright: "© {year} Studio Nord", credit: "{stem}" } } }
            """, file: "t.json5", name: "t", directory: ".")
        let facts = PhotoFacts(filename: "IMG_7.jpg", batch: "20261129-150405-3f2a", index: 2, count: 5)
        let photo = try PhotoFinisher(template: template).finish(bytes: bytes, limits: DecodeLimits(), facts: facts)
        let output = try #require(photo.outputs.first)
        #expect(output.applied.text?.text == "Canon EOS R5 · 2026-11-29 · 2/5")
        #expect(photo.warnings.isEmpty, "\(photo.warnings)")
        let info = try openDecoder(bytes: output.bytes, limits: DecodeLimits()).info
        let written = try #require(info.exif)
        #expect(Exif.string(written, tag: 0x013B) == "Jane Doe")
        #expect(Exif.string(written, tag: 0x8298) == "© 2026 Studio Nord")
        #expect(Exif.summary(written).make == nil, "strip-all: the camera itself is not written")
        let xmp = try #require(info.xmp.flatMap(XMPPacket.init))
        #expect(xmp.localizedText(XMPNamespace.dc, "dc:rights") == "© 2026 Studio Nord")
        #expect(xmp.string(XMPNamespace.photoshop, "photoshop:Credit") == "IMG_7")
        #expect(output.applied.removed == ["EXIF"])
    }

    @Test func aMissingFactIsEmptyAndWarnedAbout() throws {
        // A PNG screenshot: no EXIF at all.
        let bytes = try encodeImage(Image(width: 300, height: 200, channels: 3, fill: [200, 200, 200]),
                                    options: EncodeOptions(format: .png))
        var template = Template(name: "t")
        template.text = Template.TextMark(text: "{camera}|{year}|{stem}")
        template.output.credit = Template.Credit(copyright: "© {year}")
        let photo = try PhotoFinisher(template: template)
            .finish(bytes: bytes, limits: DecodeLimits(), facts: PhotoFacts(filename: "shot.png"))
        #expect(photo.outputs.first?.applied.text?.text == "||shot")
        #expect(photo.warnings == [
            "{camera} left empty in text.text: the photo names no camera (EXIF Make, Model)",
            "{year} left empty in text.text, output.credit.copyright: the photo has no capture date (EXIF DateTimeOriginal)",
        ])
    }
}
