import Codecs
import Foundation
import Pixels
import Testing

/// A studio's day: one drop finished into several products, with its credit and the photo's
/// own facts in the mark, and the metadata each product may carry.
@Suite struct StudioRunTests {
    @Test func oneDropManyProductsEachWithItsMetadata() throws {
        let dir = try Harness.tempDir()
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        // A camera JPEG carrying EXIF (GPS, serial), XMP (keywords, city, GPS) and IPTC (city, credit).
        var options = EncodeOptions(format: .jpeg, quality: 92)
        options.exif = ExifBuilder(orientation: 1, make: "Canon", model: "Canon EOS R5", dateTimeOriginal: "2026:11:29 15:04:05",
                                   gps: (52.52, 13.40), artist: "Jane Doe", copyright: "© Jane Doe",
                                   serialNumber: "0123456789").bytes()
        options.xmp = Array("""
            <x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>
            <rdf:Description rdf:about='' xmlns:dc='http://purl.org/dc/elements/1.1/'
              xmlns:exif='http://ns.adobe.com/exif/1.0/' xmlns:photoshop='http://ns.adobe.com/photoshop/1.0/'
              exif:GPSLatitude='52,31.2N' photoshop:City='Berlin'>
            <dc:subject><rdf:Bag><rdf:li>beach</rdf:li></rdf:Bag></dc:subject></rdf:Description></rdf:RDF></x:xmpmeta>
            """.utf8)
        options.iptc = IPTC(datasets: [.init(2, 90, text: "Berlin"), .init(2, 80, text: "Jane Doe"),
                                       .init(2, 25, text: "beach")]).iim()
        try Harness.write(try encodeImage(Harness.marked(width: 1200, height: 900), options: options),
                          to: dir + "/in/IMG_0001.jpg")
        // A WebP with no facts at all.
        try Harness.write(try encodeImage(Harness.marked(width: 900, height: 600), options: EncodeOptions(format: .webp)),
                          to: dir + "/in/IMG_0002.webp")
        try Harness.write("""
            { version: 1, resize: { longSide: 600 },
              text: { text: "{camera} · {date} · {index}/{count}", capHeight: 0.04 },
              output: { metadata: "keep", credit: { creator: "Studio Nord", copyright: "© {year} Studio Nord" },
                        name: "{stem}-{variant}" },
              variants: [
                { name: "web", output: { metadata: "strip-location", format: "webp" } },
                { name: "press", output: { metadata: "copyright-only" } },
                { name: "thumb", resize: { longSide: 200 }, text: null, output: { metadata: "strip-all" } },
              ] }
            """, to: dir + "/t.json5")
        let r = try Harness.run(["run", "--template", dir + "/t.json5", "--out", dir + "/out", dir + "/in"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let batch = try Harness.batchFolder(in: dir + "/out")
        let items = try #require(try Harness.report(in: batch)["items"] as? [[String: Any]])
        let outputs = try #require(items.first?["outputs"] as? [[String: Any]])
        #expect(outputs.map { $0["file"] as? String } == ["IMG_0001.jpg", "IMG_0001-web.webp", "IMG_0001-press.jpg",
                                                          "IMG_0001-thumb.jpg"])
        #expect(outputs.map { $0["variant"] as? String } == [nil, "web", "press", "thumb"])
        func applied(_ i: Int) -> [String: Any] { outputs[i]["applied"] as? [String: Any] ?? [:] }
        #expect((applied(0)["text"] as? [String: Any])?["text"] as? String == "Canon EOS R5 · 2026-11-29 · 1/2")
        #expect(applied(3)["text"] == nil)
        #expect(applied(0)["removed"] as? [String] == [])
        #expect(applied(1)["removed"] as? [String] == ["GPS", "XMP location", "IPTC location", "IPTC (moved to XMP)"])
        #expect(applied(2)["removed"] as? [String] == ["EXIF other than credit", "XMP other than credit",
                                                       "IPTC other than credit"])
        #expect(applied(3)["removed"] as? [String] == ["EXIF", "XMP", "IPTC"])
        // Every decode of the batch served all four: one decode scale for them all.
        #expect(Set(outputs.map { ($0["applied"] as? [String: Any])?["decodeScale"] as? String }).count == 1)

        func info(_ file: String) throws -> SourceInfo { try Harness.decode(batch + "/" + file).1 }
        func xmp(_ info: SourceInfo) throws -> XMPPacket { try #require(info.xmp.flatMap(XMPPacket.init)) }
        func exif(_ info: SourceInfo, _ tag: UInt16, ifd: Int = 0) -> String? { info.exif.flatMap { Exif.string($0, tag: tag, ifd: ifd) } }

        let keep = try info("IMG_0001.jpg")
        let keepExif = try #require(keep.exif)
        #expect(Exif.summary(keepExif).hasGPS && exif(keep, 0xA431, ifd: 2) == "0123456789")
        #expect(exif(keep, 0x013B) == "Studio Nord" && exif(keep, 0x8298) == "© 2026 Studio Nord")
        #expect(try xmp(keep).string(XMPNamespace.photoshop, "photoshop:City") == "Berlin")
        #expect(try xmp(keep).items(XMPNamespace.dc, "dc:creator") == ["Studio Nord"])
        let keptIPTC = try #require(keep.iptc.flatMap { IPTC(iim: $0) })
        #expect(keptIPTC.strings(IPTC.Tag.city) == ["Berlin"] && keptIPTC.strings(IPTC.Tag.byline) == ["Studio Nord"])

        let web = try info("IMG_0001-web.webp"), webXMP = try xmp(web)
        let webExif = try #require(web.exif)
        #expect(web.format == .webp && !Exif.summary(webExif).hasGPS)
        #expect(!webXMP.has(XMPNamespace.photoshop, "photoshop:City"))
        #expect(webXMP.items(XMPNamespace.dc, "dc:subject") == ["beach"])
        #expect(webXMP.localizedText(XMPNamespace.dc, "dc:rights") == "© 2026 Studio Nord")

        let press = try info("IMG_0001-press.jpg")
        #expect(exif(press, 0x010F) == nil && exif(press, 0xA431, ifd: 2) == nil)
        #expect(exif(press, 0x013B) == "Studio Nord")
        #expect(Set(try xmp(press).properties(in: nil).map(\.path)) == ["dc:creator", "dc:rights"])
        #expect(try #require(press.iptc.flatMap { IPTC(iim: $0) }).strings(IPTC.Tag.city).isEmpty)

        let thumb = try info("IMG_0001-thumb.jpg")
        #expect(exif(thumb, 0x013B) == "Studio Nord" && exif(thumb, 0x010F) == nil, "strip-all, then the credit")
        #expect(thumb.iptc == nil)
        #expect(Set(try xmp(thumb).properties(in: nil).map(\.path)) == ["dc:creator", "dc:rights"])

        // The WebP source: read by content, no facts, so {camera} and {date} are empty and said.
        let second = try #require(items.last)
        #expect(second["format"] as? String == "webp" && second["status"] as? String == "ok")
        let warnings = second["warnings"] as? [String] ?? []
        #expect(warnings.contains { $0.hasPrefix("{camera} left empty in text.text") }, "\(warnings)")
        #expect(warnings.contains { $0.hasPrefix("{date} left empty in text.text") }, "\(warnings)")
        let secondText = ((second["outputs"] as? [[String: Any]])?.first?["applied"] as? [String: Any])?["text"]
        #expect((secondText as? [String: Any])?["text"] as? String == " ·  · 2/2")
    }
}
