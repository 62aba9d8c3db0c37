import Testing
@testable import Codecs
import Pixels

/// A source carrying EXIF, XMP and IPTC with known values, finished under each policy and
/// read back from the output file of each format.
@Suite("metadata policies and credit, written and read back")
struct MetadataTests {
    static let exif = ExifBuilder(orientation: 1, make: "Canon", model: "Canon EOS R5",
                                  dateTimeOriginal: "2026:11:29 15:04:05", gps: (52.52, 13.40),
                                  artist: "Jane Doe", copyright: "© 2026 Jane Doe",
                                  lens: "RF24-70mm F2.8 L IS USM", serialNumber: "0123456789").bytes()
    static let iptc = IPTC(datasets: [
        .init(1, 90, IPTC.utf8Marker), .init(2, 0, [0, 4]),
        .init(2, 25, text: "beach"), .init(2, 25, text: "sun"),
        .init(2, 80, text: "Jane Doe"), .init(2, 90, text: "Berlin"), .init(2, 101, text: "Germany"),
        .init(2, 110, text: "Studio Nord"), .init(2, 116, text: "© 2026 Jane Doe"), .init(2, 120, text: "Sunset"),
    ])

    /// The source: a JPEG carrying all three blocks.
    static func source() throws -> [UInt8] {
        var options = EncodeOptions(format: .jpeg, quality: 90, exif: exif)
        options.xmp = XMPTests.packet
        options.iptc = iptc.iim()
        return try encodeImage(smoothImage(width: 64, height: 48, channels: 3), options: options)
    }

    /// What an output file of `format` carries, read back by its decoder.
    static func written(_ metadata: OutputMetadata, as format: ImageFormat) throws -> SourceInfo {
        var options = EncodeOptions(format: format, quality: 90, exif: metadata.exif)
        options.xmp = metadata.xmp
        options.iptc = metadata.iptc
        let bytes = try encodeImage(smoothImage(width: 64, height: 48, channels: 3), options: options)
        return try openDecoder(bytes: bytes, limits: DecodeLimits()).info
    }

    static func finish(_ policy: MetadataPolicy, credit: Credit = Credit(),
                       as format: ImageFormat) throws -> (info: SourceInfo, removed: [String]) {
        let source = try JPEGDecoder(bytes: try Self.source(), limits: DecodeLimits()).info
        let metadata = MetadataRewrite.rewrite(source, policy: policy, credit: credit, width: 64, height: 48,
                                               format: format)
        return (try written(metadata, as: format), metadata.removed)
    }

    static func tag(_ info: SourceInfo, _ tag: UInt16, ifd: Int = 0) -> String? {
        info.exif.flatMap { Exif.string($0, tag: tag, ifd: ifd) }
    }

    @Test("a JPEG's XMP and IPTC are read back as written")
    func jpegCarriesEverything() throws {
        let info = try JPEGDecoder(bytes: try Self.source(), limits: DecodeLimits()).info
        #expect(info.xmp == XMPTests.packet)
        #expect(info.iptc == Self.iptc.iim())
        #expect(IPTC(iim: try #require(info.iptc)) == Self.iptc)
        #expect(!info.xmpExtended)
    }

    @Test("keep keeps EXIF, XMP and IPTC", arguments: [ImageFormat.jpeg, .png, .heic])
    func keep(format: ImageFormat) throws {
        let (out, removed) = try Self.finish(.keep, as: format)
        #expect(Exif.summary(try #require(out.exif)).hasGPS)
        #expect(Self.tag(out, 0x0110) == "Canon EOS R5")
        #expect(Self.tag(out, 0xA431, ifd: 2) == "0123456789")
        let xmp = try #require(out.xmp.flatMap(XMPPacket.init))
        #expect(xmp.string(XMPNamespace.exif, "exif:GPSLatitude") == "52,31.2N")
        #expect(xmp.items(XMPNamespace.dc, "dc:subject") == ["beach", "sun"])
        #expect(xmp.regions?.list.count == 2)
        if format == .jpeg {
            let iptc = try #require(out.iptc.flatMap { IPTC(iim: $0) })
            #expect(iptc.strings(IPTC.Tag.city) == ["Berlin"])
            #expect(iptc.strings(IPTC.Tag.keywords) == ["beach", "sun"])
            #expect(removed == [])
        } else {
            // No IIM in PNG or HEIF: its fields are in XMP (the caption was only in IIM).
            #expect(out.iptc == nil)
            #expect(xmp.localizedText(XMPNamespace.dc, "dc:description") == "Sunset")
            #expect(removed == ["IPTC (moved to XMP)"])
        }
    }

    @Test("strip-location removes GPS and the place from EXIF, XMP and IPTC", arguments: [ImageFormat.jpeg, .png, .heic])
    func stripLocation(format: ImageFormat) throws {
        let (out, removed) = try Self.finish(.stripLocation, as: format)
        #expect(!Exif.summary(try #require(out.exif)).hasGPS)
        #expect(Self.tag(out, 0x0110) == "Canon EOS R5")
        let xmp = try #require(out.xmp.flatMap(XMPPacket.init))
        #expect(!xmp.has(XMPNamespace.exif, "exif:GPSLatitude"))
        #expect(!xmp.has(XMPNamespace.photoshop, "photoshop:City"))
        #expect(xmp.items(XMPNamespace.dc, "dc:subject") == ["beach", "sun"])
        #expect(removed.starts(with: ["GPS", "XMP location", "IPTC location"]))
        if format == .jpeg {
            let iptc = try #require(out.iptc.flatMap { IPTC(iim: $0) })
            #expect(iptc.strings(IPTC.Tag.city).isEmpty && iptc.strings(IPTC.Tag.countryName).isEmpty)
            #expect(iptc.strings(IPTC.Tag.caption) == ["Sunset"])
        } else {
            #expect(!xmp.has(XMPNamespace.photoshop, "photoshop:Country"), "the IIM country is not brought back")
        }
    }

    @Test("copyright-only keeps creator, rights and credit alone", arguments: [ImageFormat.jpeg, .png, .heic])
    func copyrightOnly(format: ImageFormat) throws {
        let (out, removed) = try Self.finish(.copyrightOnly, as: format)
        let exif = try #require(out.exif)
        #expect(Exif.string(exif, tag: 0x013B) == "Jane Doe" && Exif.string(exif, tag: 0x8298) == "© 2026 Jane Doe")
        #expect(Self.tag(out, 0x010F) == nil && Self.tag(out, 0xA431, ifd: 2) == nil && !Exif.summary(exif).hasGPS)
        #expect(Exif.summary(exif).dateTimeOriginal == nil)
        let xmp = try #require(out.xmp.flatMap(XMPPacket.init))
        #expect(Set(xmp.properties(in: nil).map(\.path)) == ["dc:creator", "dc:rights", "photoshop:Credit"])
        #expect(xmp.items(XMPNamespace.dc, "dc:creator") == ["Jane Doe"])
        #expect(xmp.string(XMPNamespace.photoshop, "photoshop:Credit") == "Studio Nord")
        #expect(removed.starts(with: ["EXIF other than credit", "XMP other than credit", "IPTC other than credit"]))
        if format == .jpeg {
            let iptc = try #require(out.iptc.flatMap { IPTC(iim: $0) })
            #expect(Set(iptc.datasets.map { "\($0.record):\($0.number)" }) == ["1:90", "2:0", "2:80", "2:110", "2:116"])
        }
    }

    @Test("strip-all writes no metadata", arguments: [ImageFormat.jpeg, .png, .heic])
    func stripAll(format: ImageFormat) throws {
        let (out, removed) = try Self.finish(.stripAll, as: format)
        #expect(out.exif == nil && out.xmp == nil && out.iptc == nil)
        #expect(removed == ["EXIF", "XMP", "IPTC"])
    }

    @Test("credit is written whatever the policy", arguments: [MetadataPolicy.stripAll, .keep, .copyrightOnly])
    func credit(policy: MetadataPolicy) throws {
        let credit = Credit(creator: "Studio Nord", copyright: "© 2026 Studio Nord", credit: "Studio Nord / Agency")
        let (out, _) = try Self.finish(policy, credit: credit, as: .jpeg)
        let exif = try #require(out.exif)
        #expect(Exif.string(exif, tag: 0x013B) == "Studio Nord")
        #expect(Exif.string(exif, tag: 0x8298) == "© 2026 Studio Nord")
        let xmp = try #require(out.xmp.flatMap(XMPPacket.init))
        #expect(xmp.items(XMPNamespace.dc, "dc:creator") == ["Studio Nord"])
        #expect(xmp.localizedText(XMPNamespace.dc, "dc:rights") == "© 2026 Studio Nord")
        #expect(xmp.string(XMPNamespace.photoshop, "photoshop:Credit") == "Studio Nord / Agency")
        if policy == .stripAll {
            #expect(out.iptc == nil, "no IIM block is made for the credit")
        } else {
            // A kept IIM block says the same.
            let iptc = try #require(out.iptc.flatMap { IPTC(iim: $0) })
            #expect(iptc.strings(IPTC.Tag.byline) == ["Studio Nord"])
            #expect(iptc.strings(IPTC.Tag.copyrightNotice) == ["© 2026 Studio Nord"])
            #expect(iptc.strings(IPTC.Tag.credit) == ["Studio Nord / Agency"])
        }
    }

    @Test("XMP regions follow a crop into the output")
    func regionsFollowTheCrop() throws {
        let source = try JPEGDecoder(bytes: try Self.source(), limits: DecodeLimits()).info
        // The right half of the 64×48 photo, framed by 4 px (a 40×56 file).
        let frame = RegionFrame(stored: (64, 48), orientation: 1, crop: .init(x: 0.75, y: 0.5, width: 0.5, height: 1),
                                placed: .init(x: 0.5, y: 0.5, width: 32.0 / 40, height: 48.0 / 56))
        let out = MetadataRewrite.rewrite(source, policy: .keep, credit: Credit(), width: 40, height: 56,
                                          format: .jpeg, regions: frame)
        let regions = try #require(out.xmp.flatMap(XMPPacket.init)?.regions)
        #expect(regions.appliedTo?.width == 40 && regions.appliedTo?.height == 56)
        #expect(regions.list.map(\.type) == ["Focus"])
        let area = try #require(regions.list.first?.area)
        // Focus at x 0.9 of the photo = 0.8 of the half = (4 + 0.8 × 32) / 40 of the file.
        #expect(abs(area.x - (4 + 0.8 * 32) / 40) < 1e-5 && abs(area.width - 0.2 * 32 / 40) < 1e-5)
    }

    @Test("IIM: lengths that run past the end are refused, never read", arguments: [
        [0x1C, 2, 80, 0x00, 0x10, 65, 66],                    // 16 bytes announced, 2 there
        [0x1C, 2, 80, 0x80, 0x04, 0xFF, 0xFF, 0xFF, 0xFF, 65], // extended length of 4 GiB
        [0x1C, 2, 80, 0x80, 0x00],                            // extended with no length bytes
        [0x1C, 2, 80, 0x80, 0x09, 0, 0, 0, 0, 0, 0, 0, 0, 1], // 9 length bytes
        [0x1D, 2, 80, 0, 0],                                  // not a dataset marker
        [0x1C, 2],                                            // cut short
    ] as [[UInt8]])
    func hostileIIM(_ bytes: [UInt8]) {
        #expect(IPTC(iim: bytes) == nil)
    }

    @Test("IIM and Photoshop blocks round-trip; Latin-1 text becomes UTF-8 when UTF-8 is added")
    func iimRoundTrip() throws {
        #expect(IPTC(iim: Self.iptc.iim()) == Self.iptc)
        #expect(IPTC.iim(fromPhotoshop: Self.iptc.photoshopBlock()) == Self.iptc.iim())
        var big = IPTC(datasets: [.init(2, 120, [UInt8](repeating: 65, count: 40_000))])
        #expect(IPTC(iim: big.iim()) == big, "an extended dataset")
        var latin = IPTC(datasets: [.init(2, 90, [0x4B, 0xF6, 0x6C, 0x6E])])  // "Köln" in Latin-1
        latin.set(IPTC.Tag.byline, ["Zoë"])
        #expect(latin.isUTF8)
        #expect(latin.strings(IPTC.Tag.city) == ["Köln"] && latin.strings(IPTC.Tag.byline) == ["Zoë"])
        big.set(IPTC.Tag.credit, ["x"])
        #expect(big.strings(IPTC.Tag.credit) == ["x"] && !big.isUTF8)
    }
}
