/// Who made a photo and who owns it, written into every output whatever the metadata policy
/// (template `output.credit`, variables already filled in). A nil or empty field is left as
/// the policy left it.
public struct Credit: Sendable, Equatable {
    /// EXIF Artist, XMP dc:creator, IPTC By-line.
    public var creator: String?
    /// EXIF Copyright, XMP dc:rights, IPTC CopyrightNotice.
    public var copyright: String?
    /// XMP photoshop:Credit, IPTC Credit (the credit line a publisher prints).
    public var credit: String?

    public init(creator: String? = nil, copyright: String? = nil, credit: String? = nil) {
        self.creator = creator
        self.copyright = copyright
        self.credit = credit
    }

    var isEmpty: Bool { [creator, copyright, credit].allSatisfy { ($0 ?? "").isEmpty } }
}

/// The texts a metadata template writes into an output (template `metadata`, variables and
/// codes already replaced; reference: Metadata templates), whatever the metadata policy — but
/// for the place (`city`, `country`), never written where the policy strips location. A nil
/// field is left as the policy left it; `keywords` are added to the photo's own.
public struct MetadataTexts: Sendable, Equatable {
    /// XMP dc:title, IPTC Object Name (2:05).
    public var title: String?
    /// XMP dc:description, IPTC Caption/Abstract (2:120), and EXIF ImageDescription where the
    /// output carries EXIF.
    public var caption: String?
    /// XMP dc:subject, IPTC Keywords (2:25, one dataset each).
    public var keywords: [String]
    /// XMP dc:creator, IPTC By-line (2:80), EXIF Artist.
    public var creator: String?
    /// XMP dc:rights, IPTC CopyrightNotice (2:116), EXIF Copyright.
    public var copyright: String?
    /// XMP xmpRights:UsageTerms (IIM has no such dataset).
    public var usageTerms: String?
    /// XMP photoshop:City, IPTC City (2:90).
    public var city: String?
    /// XMP photoshop:Country, IPTC Country/Primary Location Name (2:101).
    public var country: String?
    /// XMP Iptc4xmpExt:Event (IIM has no such dataset).
    public var event: String?

    public init(title: String? = nil, caption: String? = nil, keywords: [String] = [], creator: String? = nil,
                copyright: String? = nil, usageTerms: String? = nil, city: String? = nil, country: String? = nil,
                event: String? = nil) {
        self.title = title
        self.caption = caption
        self.keywords = keywords
        self.creator = creator
        self.copyright = copyright
        self.usageTerms = usageTerms
        self.city = city
        self.country = country
        self.event = event
    }

    var isEmpty: Bool { self == MetadataTexts() }

    /// True when one of the texts has an IIM dataset.
    var hasIIM: Bool {
        [title, caption, creator, copyright, city, country].contains { $0 != nil } || !keywords.isEmpty
    }
}

/// Where one output's pixels come from, so MWG regions follow them into it.
public struct RegionFrame: Sendable {
    /// The source as stored, and the orientation that turns it upright.
    public var stored: (width: Int, height: Int)
    public var orientation: Int
    /// The output's crop, as fractions of the upright source (centre and size).
    public var crop: XMPRegion.Area
    /// Where the cropped photo sits in the output file, as fractions of it (a frame makes
    /// it smaller than the whole).
    public var placed: XMPRegion.Area

    public init(stored: (width: Int, height: Int), orientation: Int, crop: XMPRegion.Area, placed: XMPRegion.Area) {
        self.stored = stored
        self.orientation = orientation
        self.crop = crop
        self.placed = placed
    }

    /// A region's area in the output (nil: not in it).
    func map(_ area: XMPRegion.Area, turn: Bool) -> XMPRegion.Area? {
        guard let inCrop = (turn ? area.oriented(orientation) : area).within(crop) else { return nil }
        return XMPRegion.Area(x: placed.x - placed.width / 2 + inCrop.x * placed.width,
                              y: placed.y - placed.height / 2 + inCrop.y * placed.height,
                              width: inCrop.width * placed.width, height: inCrop.height * placed.height)
    }
}

/// The metadata blocks of one output, ready for its encoder.
public struct OutputMetadata: Sendable, Equatable {
    /// EXIF, TIFF header onwards.
    public var exif: [UInt8]?
    /// A serialized XMP packet.
    public var xmp: [UInt8]?
    /// An IPTC IIM stream (JPEG writes it as a Photoshop APP13 block).
    public var iptc: [UInt8]?
    /// What was taken out, for the report's `removed`.
    public var removed: [String]
    /// The metadata template's texts as written (its place left out where the policy strips
    /// location).
    public var written = MetadataTexts()
}

/// The metadata policies (template `output.metadata`) and the credit, applied to the EXIF,
/// XMP and IPTC a source carries, for one output.
///
/// `removed` names what went: `EXIF`, `XMP`, `IPTC` (a whole block), `GPS`, `XMP location`,
/// `IPTC location`, `EXIF other than credit`, `XMP other than credit`, `IPTC other than
/// credit`, `XMP extended part` (JPEG extended XMP: depth maps and the like, made for the
/// source's pixels), `IPTC (moved to XMP)` (a format without IIM: its fields are written as
/// their XMP twins), `… (unreadable)` (XMP: `XMP (unreadable: <exempi's reason>)`),
/// `… (too large for JPEG)`, `metadata.city` and `metadata.country` (the metadata template's
/// place, not written: the policy strips location).
public enum MetadataRewrite {
    /// The largest XMP packet one JPEG APP1 marker carries (65533 − the 29-byte namespace).
    public static let maxJPEGXMP = 65_504
    /// The largest Photoshop block one JPEG APP13 marker carries.
    public static let maxJPEGPhotoshop = 65_533

    /// Applies `policy`, then the metadata template's `texts` and `credit`, to a source's
    /// metadata for one output.
    /// - Parameters:
    ///   - info: the source (its EXIF, XMP and IPTC as read).
    ///   - texts: the metadata template's texts: in JPEG an IIM block is made for them when the
    ///     source has none (UTF-8, 1:90 set), in every format they go into XMP.
    ///   - width, height: the output's pixel size (frame included).
    ///   - format: the output's format: JPEG carries IPTC IIM, the others get its fields in XMP.
    ///   - regions: where the output's pixels come from (nil: the whole photo, upright).
    public static func rewrite(_ info: SourceInfo, policy: MetadataPolicy, credit: Credit,
                               texts: MetadataTexts = MetadataTexts(),
                               width: Int, height: Int, format: ImageFormat,
                               regions: RegionFrame? = nil) -> OutputMetadata {
        var removed: [String] = []
        var exif: [UInt8]?
        // Written in the same pass as the policy (see `Exif.rewrite`); a block is made for the
        // creator and copyright when none is kept, the caption goes only into one that is.
        func given(_ s: String?) -> String? { (s ?? "").isEmpty ? nil : s }
        let edits = Exif.Edits(artist: given(texts.creator) ?? given(credit.creator),
                               copyright: given(texts.copyright) ?? given(credit.copyright), description: given(texts.caption))
        if let source = info.exif {
            let rewritten = Exif.rewrite(source, policy: policy, width: width, height: height, edits: edits)
            exif = rewritten.exif
            removed += rewritten.removed
        }
        if exif == nil { exif = Exif.credit(nil, artist: edits.artist, copyright: edits.copyright) }
        var xmp = info.xmp.flatMap { bytes -> XMPPacket? in
            do throws(XMPUnreadable) {
                return try XMPPacket(reading: bytes)
            } catch {
                removed.append("XMP (unreadable: \(error.reason))")
                return nil
            }
        }
        if info.xmpExtended && policy != .stripAll { removed.append("XMP extended part") }
        if let packet = xmp {
            switch policy {
            case .stripAll:
                removed.append("XMP")
                xmp = nil
            case .copyrightOnly:
                if keepOnly(XMPFields.credit, in: packet) { removed.append("XMP other than credit") }
            case .stripLocation:
                if remove(XMPFields.location, from: packet) { removed.append("XMP location") }
                fitToOutput(packet, width: width, height: height, regions: regions)
            case .keep:
                fitToOutput(packet, width: width, height: height, regions: regions)
            }
        }
        var iptc = info.iptc.flatMap { bytes -> IPTC? in
            guard let parsed = IPTC(iim: bytes) else {
                removed.append("IPTC (unreadable)")
                return nil
            }
            return parsed
        }
        if var block = iptc {
            switch policy {
            case .stripAll:
                removed.append("IPTC")
                iptc = nil
            case .copyrightOnly:
                let before = block.datasets.count
                block.filter { IIMFields.structural($0) || IIMFields.credit($0) }
                if block.datasets.count < before { removed.append("IPTC other than credit") }
                iptc = block.datasets.contains(where: IIMFields.credit) ? block : nil
            case .stripLocation:
                let before = block.datasets.count
                block.filter { !IIMFields.location($0) }
                if block.datasets.count < before { removed.append("IPTC location") }
                iptc = block
            case .keep:
                iptc = block
            }
        }
        // Where the photo was is never written where the policy strips it, the template's words included.
        var texts = texts
        if policy != .keep {
            if texts.city != nil { removed.append("metadata.city") }
            if texts.country != nil { removed.append("metadata.country") }
            texts.city = nil
            texts.country = nil
        }
        if !texts.isEmpty { apply(texts, xmp: &xmp, iptc: &iptc, iim: format == .jpeg) }
        if !credit.isEmpty { apply(credit, xmp: &xmp, iptc: &iptc) }
        // Only JPEG carries IIM: elsewhere its fields go into XMP, where XMP does not have them.
        if format != .jpeg, let block = iptc {
            let packet = xmp ?? XMPPacket()
            IIMFields.mirror(block, into: packet)
            xmp = packet
            iptc = nil
            removed.append("IPTC (moved to XMP)")
        }
        var xmpBytes = xmp.map { $0.serialized() }
        if format == .jpeg, let bytes = xmpBytes, bytes.count > maxJPEGXMP {
            xmpBytes = nil
            removed.append("XMP (too large for JPEG)")
        }
        var iim = iptc.map { $0.iim() }
        if format == .jpeg, let block = iptc, block.photoshopBlock().count > maxJPEGPhotoshop {
            iim = nil
            removed.append("IPTC (too large for JPEG)")
        }
        return OutputMetadata(exif: exif, xmp: xmpBytes, iptc: iim, removed: removed, written: texts)
    }

    /// Removes every property `drop` names; true when one was there.
    private static func remove(_ drop: (String, String) -> Bool, from packet: XMPPacket) -> Bool {
        let doomed = packet.properties(in: nil).filter { drop($0.namespace, $0.path) }
        for p in doomed { packet.delete(p.namespace, p.path) }
        return !doomed.isEmpty
    }

    /// Removes every property `keep` does not name; true when one went.
    private static func keepOnly(_ keep: (String, String) -> Bool, in packet: XMPPacket) -> Bool {
        remove({ !keep($0, $1) }, from: packet)
    }

    /// What no longer describes the output: orientation (its pixels are upright), pixel size,
    /// the old thumbnail, the extended part's pointer and the source IIM's checksum; regions
    /// follow the pixels.
    private static func fitToOutput(_ packet: XMPPacket, width: Int, height: Int, regions: RegionFrame?) {
        if packet.has(XMPNamespace.tiff, "tiff:Orientation") { packet.set(XMPNamespace.tiff, "tiff:Orientation", "1") }
        for (ns, path, value) in [(XMPNamespace.exif, "exif:PixelXDimension", width),
                                  (XMPNamespace.exif, "exif:PixelYDimension", height),
                                  (XMPNamespace.tiff, "tiff:ImageWidth", width),
                                  (XMPNamespace.tiff, "tiff:ImageLength", height)] where packet.has(ns, path) {
            packet.set(ns, path, String(value))
        }
        packet.delete(XMPNamespace.xmp, "xmp:Thumbnails")
        packet.delete(XMPNamespace.xmpNote, "xmpNote:HasExtendedXMP")
        packet.delete(XMPNamespace.photoshop, "photoshop:LegacyIPTCDigest")
        guard let found = packet.regions else { return }
        let frame = regions ?? RegionFrame(stored: (width, height), orientation: 1,
                                           crop: .init(x: 0.5, y: 0.5, width: 1, height: 1),
                                           placed: .init(x: 0.5, y: 0.5, width: 1, height: 1))
        let turn = found.measuredOnStoredPixels(stored: frame.stored, orientation: frame.orientation)
        packet.moveRegions(to: (width, height)) { frame.map($0, turn: turn) }
    }

    /// Writes a metadata template's texts into the XMP and, with `iim` (JPEG), the IIM block —
    /// made, UTF-8, when there is none (the EXIF's are written with the policy's pass).
    /// Keywords join the photo's own (XMP's and IIM's), each once.
    private static func apply(_ texts: MetadataTexts, xmp: inout XMPPacket?, iptc: inout IPTC?, iim: Bool) {
        let packet = xmp ?? XMPPacket()
        var keywords: [String] = []
        if !texts.keywords.isEmpty {
            for keyword in packet.items(XMPNamespace.dc, "dc:subject") + (iptc?.strings(IPTC.Tag.keywords) ?? []) + texts.keywords
            where !keywords.contains(keyword) {
                keywords.append(keyword)
            }
            packet.setItems(XMPNamespace.dc, "dc:subject", keywords, ordered: false)
        }
        for (value, namespace, path) in [(texts.title, XMPNamespace.dc, "dc:title"),
                                         (texts.caption, XMPNamespace.dc, "dc:description"),
                                         (texts.copyright, XMPNamespace.dc, "dc:rights"),
                                         (texts.usageTerms, XMPNamespace.xmpRights, "xmpRights:UsageTerms"),
                                         (texts.event, XMPNamespace.iptcExt, "Iptc4xmpExt:Event")] {
            if let value { packet.setLocalizedText(namespace, path, value) }
        }
        if let creator = texts.creator { packet.setItems(XMPNamespace.dc, "dc:creator", [creator], ordered: true) }
        if let city = texts.city { packet.set(XMPNamespace.photoshop, "photoshop:City", city) }
        if let country = texts.country { packet.set(XMPNamespace.photoshop, "photoshop:Country", country) }
        xmp = packet
        guard iim, iptc != nil || texts.hasIIM else { return }
        var block = iptc ?? IPTC()
        block.declareUTF8()
        for (value, tag) in [(texts.title, IPTC.Tag.objectName), (texts.caption, IPTC.Tag.caption),
                             (texts.creator, IPTC.Tag.byline), (texts.copyright, IPTC.Tag.copyrightNotice),
                             (texts.city, IPTC.Tag.city), (texts.country, IPTC.Tag.countryName)] {
            if let value { block.set(tag, [value]) }
        }
        if !keywords.isEmpty { block.set(IPTC.Tag.keywords, keywords) }
        iptc = block
    }

    private static func apply(_ credit: Credit, xmp: inout XMPPacket?, iptc: inout IPTC?) {
        func given(_ s: String?) -> String? { (s ?? "").isEmpty ? nil : s }
        let creator = given(credit.creator), copyright = given(credit.copyright), line = given(credit.credit)
        let packet = xmp ?? XMPPacket()
        if let creator { packet.setItems(XMPNamespace.dc, "dc:creator", [creator], ordered: true) }
        if let copyright { packet.setLocalizedText(XMPNamespace.dc, "dc:rights", copyright) }
        if let line { packet.set(XMPNamespace.photoshop, "photoshop:Credit", line) }
        xmp = packet
        // An IIM block that is already there is kept in step; none is made for the credit.
        if var block = iptc {
            if let creator { block.set(IPTC.Tag.byline, [creator]) }
            if let copyright { block.set(IPTC.Tag.copyrightNotice, [copyright]) }
            if let line { block.set(IPTC.Tag.credit, [line]) }
            iptc = block
        }
    }
}

/// The XMP properties the policies name.
enum XMPFields {
    /// `copyright-only` keeps these.
    static func credit(_ namespace: String, _ path: String) -> Bool {
        (namespace == XMPNamespace.dc && (path == "dc:creator" || path == "dc:rights"))
            || (namespace == XMPNamespace.photoshop && path == "photoshop:Credit")
    }

    /// `strip-location` removes these: GPS, and where the photo was taken or shows.
    static func location(_ namespace: String, _ path: String) -> Bool {
        switch namespace {
        case XMPNamespace.exif: path.hasPrefix("exif:GPS")
        case XMPNamespace.photoshop: ["photoshop:City", "photoshop:State", "photoshop:Country"].contains(path)
        case XMPNamespace.iptcCore: ["Iptc4xmpCore:Location", "Iptc4xmpCore:CountryCode"].contains(path)
        case XMPNamespace.iptcExt: ["Iptc4xmpExt:LocationCreated", "Iptc4xmpExt:LocationShown"].contains(path)
        default: false
        }
    }
}

/// The IIM datasets the policies name, and their XMP twins.
enum IIMFields {
    static func named(_ d: IPTC.Dataset, _ tags: [(UInt8, UInt8)]) -> Bool {
        tags.contains { $0.0 == d.record && $0.1 == d.number }
    }

    /// The character set and the record version: kept with whatever is kept.
    static func structural(_ d: IPTC.Dataset) -> Bool {
        named(d, [IPTC.Tag.codedCharacterSet, IPTC.Tag.recordVersion])
    }

    static func credit(_ d: IPTC.Dataset) -> Bool {
        named(d, [IPTC.Tag.byline, IPTC.Tag.copyrightNotice, IPTC.Tag.credit])
    }

    static func location(_ d: IPTC.Dataset) -> Bool {
        named(d, [IPTC.Tag.contentLocationCode, IPTC.Tag.contentLocationName, IPTC.Tag.city, IPTC.Tag.sublocation,
                  IPTC.Tag.provinceState, IPTC.Tag.countryCode, IPTC.Tag.countryName])
    }

    /// How an IIM dataset is written in XMP (IPTC Core / MWG mapping).
    enum Twin {
        case text(String, String)
        case localized(String, String)
        case seq(String, String)
        case bag(String, String)
    }

    static let twins: [((UInt8, UInt8), Twin)] = [
        (IPTC.Tag.objectName, .localized(XMPNamespace.dc, "dc:title")),
        (IPTC.Tag.keywords, .bag(XMPNamespace.dc, "dc:subject")),
        (IPTC.Tag.specialInstructions, .text(XMPNamespace.photoshop, "photoshop:Instructions")),
        (IPTC.Tag.byline, .seq(XMPNamespace.dc, "dc:creator")),
        (IPTC.Tag.bylineTitle, .text(XMPNamespace.photoshop, "photoshop:AuthorsPosition")),
        (IPTC.Tag.city, .text(XMPNamespace.photoshop, "photoshop:City")),
        (IPTC.Tag.sublocation, .text(XMPNamespace.iptcCore, "Iptc4xmpCore:Location")),
        (IPTC.Tag.provinceState, .text(XMPNamespace.photoshop, "photoshop:State")),
        (IPTC.Tag.countryCode, .text(XMPNamespace.iptcCore, "Iptc4xmpCore:CountryCode")),
        (IPTC.Tag.countryName, .text(XMPNamespace.photoshop, "photoshop:Country")),
        (IPTC.Tag.transmissionReference, .text(XMPNamespace.photoshop, "photoshop:TransmissionReference")),
        (IPTC.Tag.headline, .text(XMPNamespace.photoshop, "photoshop:Headline")),
        (IPTC.Tag.credit, .text(XMPNamespace.photoshop, "photoshop:Credit")),
        (IPTC.Tag.source, .text(XMPNamespace.photoshop, "photoshop:Source")),
        (IPTC.Tag.copyrightNotice, .localized(XMPNamespace.dc, "dc:rights")),
        (IPTC.Tag.caption, .localized(XMPNamespace.dc, "dc:description")),
        (IPTC.Tag.writer, .text(XMPNamespace.photoshop, "photoshop:CaptionWriter")),
    ]

    /// Writes each IIM field the XMP does not have yet as its XMP twin.
    static func mirror(_ iptc: IPTC, into packet: XMPPacket) {
        for (tag, twin) in twins {
            let values = iptc.strings(tag)
            guard let first = values.first else { continue }
            switch twin {
            case .text(let ns, let path) where !packet.has(ns, path): packet.set(ns, path, first)
            case .localized(let ns, let path) where !packet.has(ns, path): packet.setLocalizedText(ns, path, first)
            case .seq(let ns, let path) where !packet.has(ns, path): packet.setItems(ns, path, values, ordered: true)
            case .bag(let ns, let path) where !packet.has(ns, path): packet.setItems(ns, path, values, ordered: false)
            default: break
            }
        }
    }
}
