import Codecs
import Foundation
import JSON5
import Pixels
import Testing
@testable import Finishing

/// The keys of issue 10 in templates: each validated with file, line and key.
@Suite("template keys: credit, variables, output controls, variants")
struct StudioTemplateKeysTests {
    @Test func everyNewKeyReads() throws {
        let template = try TemplateLoader.parse(text: """
            { version: 1, resize: { longSide: 2048 }, crops: ["1:1", "4:5"],
              text: { text: "{camera} · {date}" }, tile: { text: "{stem}" },
              output: { format: "webp", metadata: "copyright-only", maxBytes: "500KiB", sharpen: true,
                        name: "{stem}-{variant}-{ratio}", credit: { creator: "Jane", copyright: "© {year} Studio" } },
              variants: [ { name: "thumb", resize: { longSide: 400 }, crops: null, text: null,
                            output: { quality: 70, maxBytes: 20000 } },
                          { name: "social", crops: ["9:16"], output: { format: "jpeg" } } ] }
            """, file: "t.json5", name: "t", directory: ".")
        #expect(template.output.format == .format(.webp))
        #expect(template.output.metadata == .copyrightOnly)
        #expect(template.output.maxBytes == 500 * 1024)
        #expect(template.output.sharpen == Template.Output.defaultSharpen)
        #expect(template.output.credit == Template.Credit(creator: "Jane", copyright: "© {year} Studio"))
        #expect(template.variants.map(\.name) == ["thumb", "social"])
        let thumb = template.variants[0].recipe
        #expect(thumb.resize == .longSide(400) && thumb.crops.isEmpty && thumb.text == nil && thumb.tile != nil)
        // output merges key by key over the template's.
        #expect(thumb.output.quality == 70 && thumb.output.maxBytes == 20000 && thumb.output.format == .format(.webp))
        #expect(thumb.output.name == "{stem}-{variant}-{ratio}" && thumb.output.metadata == .copyrightOnly)
        let social = template.variants[1].recipe
        #expect(social.crops.map(\.label) == ["9:16"] && social.resize == .longSide(2048))
        #expect(social.output.format == .format(.jpeg) && social.output.quality == 88)
        #expect(template.recipes.map(\.variant) == [nil, "thumb", "social"])
    }

    @Test(arguments: [
        ("{version: 1,\n text: { text: \"{camrea}\" } }", "t.json5:2: text.text: unknown variable {camrea} (did you mean {camera}?)"),
        ("{version: 1,\n tile: { text: \"{x}\" } }", "t.json5:2: tile.text: unknown variable {x}"),
        ("{version: 1, output: {\n credit: { copyright: \"© {yaer}\" } } }", "t.json5:2: output.credit.copyright: unknown variable {yaer} (did you mean {year}?)"),
        ("{version: 1, output: {\n credit: { owner: \"x\" } } }", "t.json5:2: output.credit.owner: unknown key 'owner'"),
        ("{version: 1, output: {\n credit: {} } }", "t.json5:2: output.credit: give at least one of creator, copyright, credit"),
        ("{version: 1, output: {\n metadata: \"copyright\" } }", "t.json5:2: output.metadata: "),
        ("{version: 1, output: {\n maxBytes: \"12 parsecs\" } }", "t.json5:2: output.maxBytes: must be a size of at least 1KiB"),
        ("{version: 1, output: {\n maxBytes: 100 } }", "t.json5:2: output.maxBytes: must be a size of at least 1KiB"),
        ("{version: 1, output: {\n sharpen: 5 } }", "t.json5:2: output.sharpen: must be a number"),
        ("{version: 1, output: {\n name: \"{stem}/{ratio}\" } }", "t.json5:2: output.name: must be safe in a file name"),
        ("{version: 1, output: {\n name: \"{date}\" } }", "t.json5:2: output.name: needs {stem}, {filename} or {index}"),
        ("{version: 1, crops: [\"1:1\", \"4:5\"], output: {\n name: \"{stem}\" } }", "t.json5:2: output.name: needs {ratio}"),
        ("{version: 1, output: {\n name: \"{stem}-{size}\" } }", "t.json5:2: output.name: unknown variable {size}"),
        ("{version: 1, output: {\n name: \"{stem}\", suffix: \"-w\" } }", "t.json5:2: output.name: give name or suffix, not both"),
        ("{version: 1, output: { name: \"{stem}\" },\n variants: [{ name: \"a\" }] }", "t.json5:1: output.name: needs {variant}"),
        ("{version: 1,\n variants: [{ resize: { longSide: 4 } }] }", "t.json5:2: variants[0]: missing key 'name'"),
        ("{version: 1, variants: [\n { name: \"a b\" }] }", "t.json5:2: variants[0].name: must be letters, digits"),
        ("{version: 1, variants: [{ name: \"a\" },\n { name: \"A\" }] }", "t.json5:2: variants[1].name: a second variant named"),
        ("{version: 1, variants: [\n { name: \"a\", stitch: {} }] }", "t.json5:2: variants[0].stitch: unknown key 'stitch'"),
        ("{version: 1, variants: [{ name: \"a\",\n resize: { longSide: -1 } }] }", "t.json5:2: variants[0].resize.longSide: "),
        ("{version: 1, variants: [{ name: \"a\",\n text: { text: \"{nope}\" } }] }", "t.json5:2: variants[0].text.text: unknown variable {nope}"),
        ("{version: 1, variants: [{ name: \"a\", output: {\n format: \"gif\" } }] }", "t.json5:2: variants[0].output.format: "),
        ("{version: 1,\n variants: { name: \"a\" } }", "t.json5:2: variants: must be a list of variants"),
    ])
    func errorsNameFileLineAndKey(_ text: String, _ expected: String) {
        let errors = templateTestErrors(text)
        #expect(errors.count == 1, "\(errors)")
        #expect(errors.first?.description.hasPrefix(expected) == true, "\(errors.map(\.description))")
    }
}

/// A decoder that counts how often its photo is decoded.
final class CountingDecoder: PhotoDecoder {
    let inner: any PhotoDecoder
    var passes = 0
    init(_ inner: any PhotoDecoder) { self.inner = inner }
    var info: SourceInfo { inner.info }
    var scales: [Int] { inner.scales }
    func scaledSize(eighths: Int) -> (width: Int, height: Int) { inner.scaledSize(eighths: eighths) }
    var damage: Damage? { inner.damage }
    func decode(eighths: Int, channels: Int, limits: DecodeLimits,
                row: (UnsafePointer<UInt8>) throws -> Void) throws {
        passes += 1
        try inner.decode(eighths: eighths, channels: channels, limits: limits, row: row)
    }
}

@Suite("variants, names, maxBytes, sharpen")
struct StudioRecipeTests {
    static func photo(width: Int = 1600, height: Int = 1200, noisy: Bool = false) throws -> [UInt8] {
        var seed: UInt32 = 7
        let image = Image(width: width, height: height, channels: 3) { rows in
            for y in 0..<height {
                for x in 0..<width {
                    let p = rows[y] + x * 3
                    seed = seed &* 1_664_525 &+ 1_013_904_223
                    let noise = noisy ? Int(seed >> 26) : 0
                    p[0] = UInt8((x * 255 / width + noise) & 0xFF); p[1] = UInt8(y * 255 / height); p[2] = UInt8(noise * 3)
                }
            }
        }
        return try encodeImage(image, options: EncodeOptions(format: .jpeg, quality: 95))
    }

    static func template(_ text: String) throws -> Template {
        try TemplateLoader.parse(text: text, file: "t.json5", name: "t", directory: ".")
    }

    @Test func oneDecodeServesEveryVariant() throws {
        let template = try Self.template("""
            { version: 1, resize: { longSide: 1200 }, text: { text: "WEB" },
              variants: [ { name: "thumb", resize: { longSide: 400 }, text: null },
                          { name: "social", crops: ["1:1", "9:16"], output: { format: "png" } } ] }
            """)
        var counting: CountingDecoder?
        let photo = try PhotoFinisher(template: template).finish(
            bytes: try Self.photo(), limits: DecodeLimits(), facts: PhotoFacts(filename: "IMG_1.jpg"),
            open: { bytes, limits throws(PhotoError) in
                let decoder = CountingDecoder(try openDecoder(bytes: bytes, limits: limits))
                counting = decoder
                return decoder
            })
        #expect(counting?.passes == 1, "one decode for the template's output and all its variants' outputs")
        #expect(photo.outputs.map(\.name) == ["IMG_1.jpg", "IMG_1-thumb.jpg", "IMG_1-social-1x1.png", "IMG_1-social-9x16.png"])
        #expect(photo.outputs.map(\.variant) == [nil, "thumb", "social", "social"])
        #expect(photo.outputs.map(\.size) == [.init(1200, 900), .init(400, 300), .init(1200, 1200), .init(675, 1200)])
        #expect(photo.outputs[0].applied.text != nil && photo.outputs[1].applied.text == nil)
        #expect(photo.outputs[2].applied.text != nil, "a variant inherits the template's marks")
        for output in photo.outputs {
            let image = try decodeRGB(output.bytes)
            #expect(image.width == output.size.width && image.height == output.size.height)
        }
    }

    @Test func namePatternsFillInAndTidyUp() throws {
        let values = ["stem": "IMG_1", "date": "2026-11-29", "camera": "Canon EOS R5", "time": "15:04", "lens": "f/4"]
        func name(_ pattern: String, variant: String? = nil, crop: String? = nil) -> String {
            OutputName.file(pattern: pattern, suffix: "", values: values, variant: variant, crop: crop, extension: "jpg")
        }
        #expect(name("{stem}-{variant}-{ratio}", variant: "web", crop: "4:5") == "IMG_1-web-4x5.jpg")
        #expect(name("{stem}-{variant}-{ratio}") == "IMG_1.jpg")
        #expect(name("{stem}-{variant}-{ratio}", crop: "1:1") == "IMG_1-1x1.jpg")
        #expect(name("{date}_{stem}_{camera}") == "2026-11-29_IMG_1_Canon EOS R5.jpg")
        #expect(name("{stem} {time} {lens} {year}") == "IMG_1 15-04 f-4.jpg")
        #expect(OutputName.file(pattern: "{stem}", suffix: "", values: values, variant: nil, crop: nil, extension: "jpg",
                                taken: ["IMG_1.jpg", "img_1-2.JPG"]) == "IMG_1-3.jpg")
        // In a real recipe: the pattern, the variant, the ratio.
        let template = try Self.template("""
            { version: 1, resize: { longSide: 800 }, crops: ["1:1", "3:2"],
              output: { name: "{index}-{stem}-{variant}-{ratio}" },
              variants: [ { name: "small", resize: { longSide: 200 } } ] }
            """)
        let photo = try PhotoFinisher(template: template).finish(
            bytes: try Self.photo(), limits: DecodeLimits(), facts: PhotoFacts(filename: "a.jpg", index: 7))
        #expect(photo.outputs.map(\.name) == ["7-a-1x1.jpg", "7-a-3x2.jpg", "7-a-small-1x1.jpg", "7-a-small-3x2.jpg"])
    }

    @Test func maxBytesLowersTheQualityUntilTheFileFits() throws {
        let bytes = try Self.photo(noisy: true)
        let plain = try PhotoFinisher(template: try Self.template("{ version: 1, output: { quality: 95 } }"))
            .finish(bytes: bytes, limits: DecodeLimits())
        let full = try #require(plain.outputs.first)
        #expect(full.applied.quality == nil)
        let cap = full.bytes.count / 3
        let capped = try PhotoFinisher(template: try Self.template("{ version: 1, output: { quality: 95, maxBytes: \(cap) } }"))
            .finish(bytes: bytes, limits: DecodeLimits())
        let output = try #require(capped.outputs.first)
        #expect(output.bytes.count <= cap)
        let quality = try #require(output.applied.quality)
        #expect(quality < 95 && quality >= OutputLine.minQuality)
        #expect(capped.warnings.isEmpty)
        // A lossless PNG cannot be made smaller: said, not silently over.
        let png = try PhotoFinisher(template: try Self.template("{ version: 1, output: { format: \"png\", maxBytes: 2000 } }"))
            .finish(bytes: bytes, limits: DecodeLimits())
        #expect(png.outputs.first?.applied.quality == nil)
        #expect(png.warnings.contains { $0.contains("PNG is lossless") })
    }

    /// A hard vertical edge shrunk 4×: sharpened, the edge is steeper and overshoots; flat
    /// areas stay flat; not shrunk, nothing is done.
    @Test func sharpenScalesWithTheDownscale() throws {
        let source = Image(width: 1600, height: 400, channels: 3) { rows in
            for y in 0..<400 {
                for x in 0..<1600 {
                    let v: UInt8 = x < 801 ? 60 : 190
                    let p = rows[y] + x * 3
                    p[0] = v; p[1] = v; p[2] = v
                }
            }
        }
        let png = try encodeImage(source, options: EncodeOptions(format: .png))
        func finished(_ sharpen: String) throws -> (image: Image, applied: Applied) {
            let photo = try PhotoFinisher(template: try Self.template(
                "{ version: 1, resize: { longSide: 400 }, output: { format: \"png\", sharpen: \(sharpen) } }"))
                .finish(bytes: png, limits: DecodeLimits())
            let output = try #require(photo.outputs.first)
            return (try decodeRGB(output.bytes), output.applied)
        }
        let soft = try finished("false"), sharp = try finished("1")
        #expect(soft.applied.sharpen == nil)
        #expect(sharp.applied.sharpen == Applied.SharpenRecord(amount: 1, sigma: 0.8))
        let row = 50
        func values(_ image: Image) -> [Int] { (190..<212).map { Int(image.pixel($0, row)[0]) } }
        let before = values(soft.image), after = values(sharp.image)
        #expect(after.min()! < before.min()! && after.max()! > before.max()!, "overshoot: \(before) → \(after)")
        #expect(sharp.image.pixel(20, row) == soft.image.pixel(20, row), "a flat area is left alone")
        #expect(sharp.image.pixel(380, row) == soft.image.pixel(380, row))
        // At 1:1 there is nothing to restore.
        let same = try PhotoFinisher(template: try Self.template("{ version: 1, output: { format: \"png\", sharpen: 1 } }"))
            .finish(bytes: png, limits: DecodeLimits())
        #expect(same.outputs.first?.applied.sharpen == nil)
    }
}
