import Testing
@testable import Codecs
import Pixels

/// A metadata template's texts written over each policy, read back from each format by our own
/// decoders (the end-to-end tests read the files with exiftool).
@Suite("metadata template texts, written and read back")
struct MetadataTextsTests {
    static let texts = MetadataTexts(title: "Finale — Zürich", caption: "Ada Lovelace trifft · 1:0", keywords: ["Fußball", "sun"],
                                     creator: "Jörg Öhman", copyright: "© 2026 Studio Nord", usageTerms: "Nur redaktionell",
                                     city: "Zürich", country: "Schweiz", event: "Cup-Finale")

    static func finish(_ policy: MetadataPolicy, source: [UInt8], as format: ImageFormat,
                       texts: MetadataTexts = texts) throws -> (info: SourceInfo, metadata: OutputMetadata) {
        let info = try JPEGDecoder(bytes: source, limits: DecodeLimits()).info
        let metadata = MetadataRewrite.rewrite(info, policy: policy, credit: Credit(), texts: texts, width: 64, height: 48,
                                               format: format)
        return (try MetadataTests.written(metadata, as: format), metadata)
    }

    /// A source with no metadata at all.
    static func bare() throws -> [UInt8] {
        try encodeImage(smoothImage(width: 64, height: 48, channels: 3), options: EncodeOptions(format: .jpeg, quality: 90))
    }

    @Test("every text goes into XMP, and into a new UTF-8 IIM block in JPEG", arguments: [ImageFormat.jpeg, .png, .webp, .heic])
    func everyTextIsWritten(format: ImageFormat) throws {
        let (out, metadata) = try Self.finish(.keep, source: try Self.bare(), as: format)
        let xmp = try #require(out.xmp.flatMap(XMPPacket.init))
        #expect(xmp.localizedText(XMPNamespace.dc, "dc:title") == "Finale — Zürich")
        #expect(xmp.localizedText(XMPNamespace.dc, "dc:description") == "Ada Lovelace trifft · 1:0")
        #expect(xmp.items(XMPNamespace.dc, "dc:subject") == ["Fußball", "sun"])
        #expect(xmp.items(XMPNamespace.dc, "dc:creator") == ["Jörg Öhman"])
        #expect(xmp.localizedText(XMPNamespace.dc, "dc:rights") == "© 2026 Studio Nord")
        #expect(xmp.localizedText(XMPNamespace.xmpRights, "xmpRights:UsageTerms") == "Nur redaktionell")
        #expect(xmp.string(XMPNamespace.photoshop, "photoshop:City") == "Zürich")
        #expect(xmp.string(XMPNamespace.photoshop, "photoshop:Country") == "Schweiz")
        #expect(xmp.localizedText(XMPNamespace.iptcExt, "Iptc4xmpExt:Event") == "Cup-Finale")
        let exif = try #require(out.exif, "the creator and copyright make an EXIF block, as the credit does")
        #expect(Exif.string(exif, tag: 0x013B) == "Jörg Öhman" && Exif.string(exif, tag: 0x8298) == "© 2026 Studio Nord")
        #expect(metadata.written == Self.texts && metadata.removed.isEmpty)
        if format == .jpeg {
            let iptc = try #require(out.iptc.flatMap { IPTC(iim: $0) })
            #expect(iptc.datasets.prefix(2) == [IPTC.Dataset(1, 90, IPTC.utf8Marker), IPTC.Dataset(2, 0, [0, 4])])
            #expect(iptc.strings(IPTC.Tag.objectName) == ["Finale — Zürich"])
            #expect(iptc.strings(IPTC.Tag.caption) == ["Ada Lovelace trifft · 1:0"])
            #expect(iptc.strings(IPTC.Tag.keywords) == ["Fußball", "sun"])
            #expect(iptc.strings(IPTC.Tag.byline) == ["Jörg Öhman"])
            #expect(iptc.strings(IPTC.Tag.copyrightNotice) == ["© 2026 Studio Nord"])
            #expect(iptc.strings(IPTC.Tag.city) == ["Zürich"] && iptc.strings(IPTC.Tag.countryName) == ["Schweiz"])
        } else {
            #expect(out.iptc == nil)
        }
    }

    @Test("the place is never written where the policy strips location; the rest is, whatever the policy",
          arguments: [MetadataPolicy.stripLocation, .copyrightOnly, .stripAll])
    func thePlaceFollowsThePolicy(policy: MetadataPolicy) throws {
        let (out, metadata) = try Self.finish(policy, source: try MetadataTests.source(), as: .jpeg)
        let xmp = try #require(out.xmp.flatMap(XMPPacket.init))
        #expect(!xmp.has(XMPNamespace.photoshop, "photoshop:City") && !xmp.has(XMPNamespace.photoshop, "photoshop:Country"))
        #expect(xmp.localizedText(XMPNamespace.dc, "dc:title") == "Finale — Zürich")
        let iptc = try #require(out.iptc.flatMap { IPTC(iim: $0) })
        #expect(iptc.strings(IPTC.Tag.city).isEmpty && iptc.strings(IPTC.Tag.countryName).isEmpty)
        #expect(iptc.strings(IPTC.Tag.caption) == ["Ada Lovelace trifft · 1:0"])
        #expect(!Exif.summary(try #require(out.exif)).hasGPS)
        #expect(metadata.removed.suffix(2) == ["metadata.city", "metadata.country"])
        #expect(metadata.written.city == nil && metadata.written.country == nil && metadata.written.event == "Cup-Finale")
        // The photo's own keywords stay only where the policy keeps them.
        #expect(iptc.strings(IPTC.Tag.keywords) == (policy == .stripLocation ? ["beach", "sun", "Fußball"] : ["Fußball", "sun"]))
    }

    @Test("keywords join the photo's own, XMP's and IIM's, each once", arguments: [ImageFormat.jpeg, .png])
    func keywordsJoinThePhotosOwn(format: ImageFormat) throws {
        let (out, _) = try Self.finish(.keep, source: try MetadataTests.source(), as: format)
        let xmp = try #require(out.xmp.flatMap(XMPPacket.init))
        #expect(xmp.items(XMPNamespace.dc, "dc:subject") == ["beach", "sun", "Fußball"])
        #expect(xmp.localizedText(XMPNamespace.dc, "dc:description") == "Ada Lovelace trifft · 1:0", "the template's caption wins")
        if format == .jpeg {
            let iptc = try #require(out.iptc.flatMap { IPTC(iim: $0) })
            #expect(iptc.strings(IPTC.Tag.keywords) == ["beach", "sun", "Fußball"])
            #expect(iptc.strings(IPTC.Tag.credit) == ["Studio Nord"], "what the template does not name is kept")
            // The caption is kept in step in EXIF too (the source's EXIF is kept).
            #expect(Exif.string(try #require(out.exif), tag: 0x010E) == "Ada Lovelace trifft · 1:0")
        }
    }

    @Test("a Latin-1 IIM block is made UTF-8 before the texts go in")
    func aLatin1BlockBecomesUTF8() throws {
        let latin1 = IPTC(datasets: [.init(2, 0, [0, 4]), .init(2, 90, [0x4D, 0xFC, 0x6E, 0x63, 0x68, 0x65, 0x6E])])
        var options = EncodeOptions(format: .jpeg, quality: 90)
        options.iptc = latin1.iim()
        let source = try encodeImage(smoothImage(width: 64, height: 48, channels: 3), options: options)
        let (out, _) = try Self.finish(.keep, source: source, as: .jpeg, texts: MetadataTexts(title: "Straße"))
        let iptc = try #require(out.iptc.flatMap { IPTC(iim: $0) })
        #expect(iptc.isUTF8)
        #expect(iptc.strings(IPTC.Tag.city) == ["München"])
        #expect(iptc.strings(IPTC.Tag.objectName) == ["Straße"])
        #expect(iptc.datasets.filter { $0.record == 2 && $0.number == 0 }.count == 1)
    }

    @Test("a template with only XMP fields makes no IIM block")
    func onlyXMPFieldsMakeNoIIM() throws {
        let (out, _) = try Self.finish(.keep, source: try Self.bare(), as: .jpeg,
                                       texts: MetadataTexts(usageTerms: "Editorial use only", event: "Cup Final"))
        #expect(out.iptc == nil)
        #expect(out.xmp.flatMap(XMPPacket.init)?.localizedText(XMPNamespace.iptcExt, "Iptc4xmpExt:Event") == "Cup Final")
    }
}
