import Testing
@testable import Codecs

@Suite("XMP packets (exempi) and MWG regions")
struct XMPTests {
    /// What a photo manager writes: creator, rights, credit, keywords, a city, GPS, one face.
    static let packet = Array("""
        <x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>
        <rdf:Description rdf:about='' xmlns:dc='http://purl.org/dc/elements/1.1/'
          xmlns:exif='http://ns.adobe.com/exif/1.0/' xmlns:photoshop='http://ns.adobe.com/photoshop/1.0/'
          xmlns:mwg-rs='http://www.metadataworkinggroup.com/schemas/regions/'
          xmlns:stArea='http://ns.adobe.com/xmp/sType/Area#' xmlns:stDim='http://ns.adobe.com/xap/1.0/sType/Dimensions#'
          exif:GPSLatitude='52,31.2N' photoshop:City='Berlin' photoshop:Credit='Studio Nord'>
        <dc:creator><rdf:Seq><rdf:li>Jane Doe</rdf:li></rdf:Seq></dc:creator>
        <dc:rights><rdf:Alt><rdf:li xml:lang='x-default'>© 2026 Jane Doe</rdf:li></rdf:Alt></dc:rights>
        <dc:subject><rdf:Bag><rdf:li>beach</rdf:li><rdf:li>sun</rdf:li></rdf:Bag></dc:subject>
        <mwg-rs:Regions rdf:parseType='Resource'>
          <mwg-rs:AppliedToDimensions stDim:w='4000' stDim:h='3000' stDim:unit='pixel'/>
          <mwg-rs:RegionList><rdf:Bag>
            <rdf:li><rdf:Description mwg-rs:Name='Ann' mwg-rs:Type='Face'>
              <mwg-rs:Area stArea:x='0.25' stArea:y='0.5' stArea:w='0.1' stArea:h='0.2' stArea:unit='normalized'/>
            </rdf:Description></rdf:li>
            <rdf:li><rdf:Description mwg-rs:Type='Focus'>
              <mwg-rs:Area stArea:x='0.9' stArea:y='0.1' stArea:w='0.1' stArea:h='0.1' stArea:unit='normalized'/>
            </rdf:Description></rdf:li>
          </rdf:Bag></mwg-rs:RegionList>
        </mwg-rs:Regions>
        </rdf:Description></rdf:RDF></x:xmpmeta>
        """.utf8)

    @Test("reads simple, array and language-alternative properties")
    func reads() throws {
        let xmp = try #require(XMPPacket(Self.packet))
        #expect(xmp.string(XMPNamespace.photoshop, "photoshop:Credit") == "Studio Nord")
        #expect(xmp.items(XMPNamespace.dc, "dc:creator") == ["Jane Doe"])
        #expect(xmp.items(XMPNamespace.dc, "dc:subject") == ["beach", "sun"])
        #expect(xmp.localizedText(XMPNamespace.dc, "dc:rights") == "© 2026 Jane Doe")
        #expect(xmp.string(XMPNamespace.exif, "exif:GPSLatitude") == "52,31.2N")
        #expect(xmp.string(XMPNamespace.dc, "dc:title") == nil)
        let top = xmp.properties(in: nil).map { $0.path }
        #expect(Set(top) == ["exif:GPSLatitude", "photoshop:City", "photoshop:Credit", "dc:creator", "dc:rights",
                             "dc:subject", "mwg-rs:Regions"])
    }

    @Test("changes survive a serialize and parse")
    func writes() throws {
        let xmp = try #require(XMPPacket(Self.packet))
        xmp.delete(XMPNamespace.exif, "exif:GPSLatitude")
        xmp.setItems(XMPNamespace.dc, "dc:creator", ["A", "B"], ordered: true)
        xmp.setLocalizedText(XMPNamespace.dc, "dc:rights", "© Studio")
        xmp.set(XMPNamespace.photoshop, "photoshop:Credit", "Credit & <more>")
        let back = try #require(XMPPacket(xmp.serialized()))
        #expect(!back.has(XMPNamespace.exif, "exif:GPSLatitude"))
        #expect(back.items(XMPNamespace.dc, "dc:creator") == ["A", "B"])
        #expect(back.localizedText(XMPNamespace.dc, "dc:rights") == "© Studio")
        #expect(back.string(XMPNamespace.photoshop, "photoshop:Credit") == "Credit & <more>")
        #expect(back.items(XMPNamespace.dc, "dc:subject") == ["beach", "sun"])
        let empty = XMPPacket()
        #expect(empty.isEmpty)
        #expect(XMPPacket(empty.serialized())?.isEmpty == true)
    }

    @Test("not XMP is nil, never a crash", arguments: ["", "<x:xmpmeta", "not xml at all", "<a><b></a>"])
    func notXMP(_ text: String) {
        #expect(XMPPacket(Array(text.utf8)) == nil)
    }

    @Test("an unreadable packet says why, in exempi's words, and exempi's message is kept from stderr")
    func unreadableSaysWhy() {
        let duplicate = "<x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>"
            + "<rdf:Description rdf:about='' xmlns:a='http://example.com/ab/' a:k='v'><a:k>w</a:k></rdf:Description>"
            + "</rdf:RDF></x:xmpmeta>"
        for (text, reason) in [(duplicate, "Duplicate property or field node"), ("not xml at all", "XML parsing failure"),
                               ("", "the packet is empty")] {
            #expect(throws: XMPUnreadable(reason: reason)) { try XMPPacket(reading: Array(text.utf8)) }
        }
        #expect(throws: XMPUnreadable(reason: "the packet is not UTF-8")) { try XMPPacket(reading: [0x3C, 0xFF, 0x3E]) }
        // The same messages once more on this thread: nothing was left over from the last one.
        #expect(throws: XMPUnreadable(reason: "XML parsing failure")) { try XMPPacket(reading: Array("<a><b></a>".utf8)) }
    }

    @Test("a packet exempi would write so that it does not parse again (a namespace URI holding a quote) is nil")
    func namespaceWithAQuote() {
        let good = "<x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>"
            + "<rdf:Description rdf:about='' xmlns:a='http://example.com/ab/' a:k='v'/></rdf:RDF></x:xmpmeta>"
        #expect(XMPPacket(Array(good.utf8))?.string("http://example.com/ab/", "k") == "v")
        let quoted = good.replacingOccurrences(of: "http://example.com/ab/", with: "http://example.com/a\"b/")
        #expect(XMPPacket(Array(quoted.utf8)) == nil)
    }

    @Test("MWG regions: read, turned upright when measured on stored pixels, moved into a crop")
    func regions() throws {
        let xmp = try #require(XMPPacket(Self.packet))
        let regions = try #require(xmp.regions)
        #expect(regions.appliedTo?.width == 4000 && regions.appliedTo?.height == 3000)
        #expect(regions.list == [
            XMPRegion(type: "Face", name: "Ann", area: .init(x: 0.25, y: 0.5, width: 0.1, height: 0.2)),
            XMPRegion(type: "Focus", name: nil, area: .init(x: 0.9, y: 0.1, width: 0.1, height: 0.1)),
        ])
        // Written for the stored 4000×3000 pixels of a photo shown turned (orientation 6).
        let turned = regions.upright(stored: (4000, 3000), orientation: 6)
        #expect(turned[0].area == .init(x: 0.5, y: 0.25, width: 0.2, height: 0.1))
        // Written for the upright 3000×4000 photo: left as they are.
        let upright = XMPRegions(appliedTo: (3000, 4000), list: regions.list)
        #expect(upright.upright(stored: (4000, 3000), orientation: 6) == regions.list)

        // The right half of the photo as an output: Ann is gone, the focus area moves.
        let rightHalf = XMPRegion.Area(x: 0.75, y: 0.5, width: 0.5, height: 1)
        xmp.moveRegions(to: (2000, 3000)) { $0.within(rightHalf) }
        let moved = try #require(XMPPacket(xmp.serialized())?.regions)
        #expect(moved.appliedTo?.width == 2000 && moved.appliedTo?.height == 3000)
        #expect(moved.list.count == 1)
        let focus = try #require(moved.list.first)
        #expect(focus.type == "Focus")
        #expect(abs(focus.area.x - 0.8) < 1e-6 && abs(focus.area.width - 0.2) < 1e-6 && abs(focus.area.y - 0.1) < 1e-6)
        // No region left: no Regions at all.
        xmp.moveRegions(to: (10, 10)) { _ in nil }
        #expect(xmp.regions == nil)
    }
}
