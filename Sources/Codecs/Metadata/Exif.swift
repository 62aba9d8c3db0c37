internal import CExif
#if canImport(Glibc)
import Glibc
#endif

/// What PhotoFinish needs to know from a photo's EXIF block.
public struct ExifSummary: Sendable, Equatable {
    /// The Orientation tag when it holds a valid value (1–8); nil when absent or invalid.
    public var orientation: Int?
    /// DateTimeOriginal as written ("YYYY:MM:DD HH:MM:SS"), for `order: "captured"`.
    public var dateTimeOriginal: String?
    /// True when the block has a GPS IFD with at least one entry.
    public var hasGPS: Bool
    /// Make, Model and LensModel as written (trailing spaces trimmed), for text variables.
    public var make: String?
    public var model: String?
    public var lens: String?

    public init(orientation: Int? = nil, dateTimeOriginal: String? = nil, hasGPS: Bool = false,
                make: String? = nil, model: String? = nil, lens: String? = nil) {
        self.orientation = orientation
        self.dateTimeOriginal = dateTimeOriginal
        self.hasGPS = hasGPS
        self.make = make
        self.model = model
        self.lens = lens
    }
}

/// What to keep of a photo's EXIF in its outputs (template `output.metadata`; the raw
/// values are the template's words).
public enum MetadataPolicy: String, Sendable, CaseIterable {
    /// Keep every tag (Orientation, pixel size and thumbnail are still fixed up).
    case keep
    /// Drop the GPS IFD (and location in XMP and IPTC), keep the rest.
    case stripLocation = "strip-location"
    /// Keep only who made the photo and who owns it: EXIF Artist and Copyright, XMP
    /// dc:creator, dc:rights and photoshop:Credit, IPTC By-line, CopyrightNotice and Credit.
    case copyrightOnly = "copyright-only"
    /// Write no EXIF, XMP or IPTC at all.
    case stripAll = "strip-all"
}

/// Reading and rewriting EXIF blocks through libexif.
///
/// Blocks are given from the TIFF header onwards; a leading "Exif\0\0" is accepted too.
public enum Exif {
    /// Orientation, capture time and GPS presence; an unreadable block gives an empty summary.
    public static func summary(_ exif: [UInt8]) -> ExifSummary {
        guard let document = ExifDocument(exif) else { return ExifSummary() }
        return ExifSummary(orientation: document.orientation,
                           dateTimeOriginal: document.string(EXIF_TAG_DATE_TIME_ORIGINAL, in: EXIF_IFD_EXIF),
                           hasGPS: document.content(EXIF_IFD_GPS).pointee.count > 0,
                           make: document.string(EXIF_TAG_MAKE, in: EXIF_IFD_0),
                           model: document.string(EXIF_TAG_MODEL, in: EXIF_IFD_0),
                           lens: document.string(EXIF_TAG_LENS_MODEL, in: EXIF_IFD_EXIF))
    }

    /// The Orientation tag (IFD0) when it holds 1–8; nil when absent, invalid or unreadable.
    public static func orientation(_ exif: [UInt8]) -> Int? {
        ExifDocument(exif)?.orientation
    }

    /// Rewrites a source's EXIF block for an output.
    ///
    /// In every kept case Orientation becomes 1 (the pixels are upright now),
    /// PixelXDimension/PixelYDimension become the output size, and the embedded thumbnail
    /// is dropped (it would show the old, uncropped, unrotated picture). MakerNotes are
    /// kept byte for byte and where they were, never reinterpreted.
    /// - Parameters:
    ///   - exif: the source block.
    ///   - policy: what to keep.
    ///   - width: the output's width in pixels.
    ///   - height: the output's height in pixels.
    /// - Returns: the block to embed (TIFF header onwards, no "Exif\0\0"), or nil for none;
    ///   and what was removed, for the report: `["EXIF"]`, `["GPS"]`, `["EXIF other than credit"]`,
    ///   `["EXIF (unreadable)"]` or `[]`.
    ///   - edits: Artist, Copyright and ImageDescription to write over what is kept (nil: as
    ///     kept), in the same pass. The block is edited in place (`ExifInPlace`): its MakerNote,
    ///     whose offsets many cameras count from the block's start, stays where it was.
    public static func rewrite(_ exif: [UInt8], policy: MetadataPolicy,
                               width: Int, height: Int, edits: Edits = Edits()) -> (exif: [UInt8]?, removed: [String]) {
        if policy == .stripAll { return (nil, ["EXIF"]) }
        guard let document = ExifDocument(exif) else { return (nil, ["EXIF (unreadable)"]) }
        if policy == .copyrightOnly { return copyrightOnly(document, edits: edits) }
        // Edited where it lies, so its MakerNote keeps its place (`ExifInPlace`); libexif
        // writes it anew only when that cannot be done.
        let tiff = exif.starts(with: [0x45, 0x78, 0x69, 0x66, 0, 0]) ? Array(exif.dropFirst(6)) : exif
        if let edited = ExifInPlace.rewrite(tiff, stripLocation: policy == .stripLocation, width: width, height: height, edits: edits),
           edited.bytes.count <= maxBlock {
            return (edited.bytes, edited.removedGPS ? ["GPS"] : [])
        }
        var removed: [String] = []
        if policy == .stripLocation {
            let gps = document.content(EXIF_IFD_GPS)
            if gps.pointee.count > 0 {
                document.clear(gps)
                removed.append("GPS")
            }
        }
        if let entry = exif_content_get_entry(document.content(EXIF_IFD_0), EXIF_TAG_ORIENTATION) {
            document.setInteger(entry, 1)
        }
        let exifIFD = document.content(EXIF_IFD_EXIF)
        if exifIFD.pointee.count > 0 {
            document.setDimension(EXIF_TAG_PIXEL_X_DIMENSION, width, in: exifIFD)
            document.setDimension(EXIF_TAG_PIXEL_Y_DIMENSION, height, in: exifIFD)
        }
        document.dropThumbnail()
        edits.apply(to: document)
        guard let bytes = document.save() else { return (nil, ["EXIF (unreadable)"]) }
        return (bytes, removed)
    }

    /// The largest block a JPEG's APP1 carries after its "Exif\0\0".
    static let maxBlock = 65_533 - 6

    /// What a template writes into IFD0 over the source's: the credit's or metadata template's
    /// creator and copyright, the metadata template's caption. Nil leaves a tag as it is.
    public struct Edits: Sendable, Equatable {
        public var artist: String?
        public var copyright: String?
        public var description: String?

        public init(artist: String? = nil, copyright: String? = nil, description: String? = nil) {
            self.artist = artist
            self.copyright = copyright
            self.description = description
        }

        func apply(to document: ExifDocument) {
            for (tag, value) in [(EXIF_TAG_ARTIST, artist), (EXIF_TAG_COPYRIGHT, copyright),
                                 (EXIF_TAG_IMAGE_DESCRIPTION, description)] {
                if let value { document.setString(tag, value, in: EXIF_IFD_0) }
            }
        }
    }

    /// Artist and Copyright alone (the edits' over the source's), in a block of their own.
    private static func copyrightOnly(_ source: ExifDocument, edits: Edits) -> (exif: [UInt8]?, removed: [String]) {
        let kept = [(EXIF_TAG_ARTIST, edits.artist), (EXIF_TAG_COPYRIGHT, edits.copyright)].compactMap { tag, edit in
            (edit ?? source.string(tag, in: EXIF_IFD_0)).map { (tag, $0) }
        }
        let entries = (0..<Int(EXIF_IFD_COUNT.rawValue)).reduce(0) {
            $0 + Int(source.content(ExifIfd(rawValue: UInt32($1))).pointee.count)
        }
        let removed = entries > [EXIF_TAG_ARTIST, EXIF_TAG_COPYRIGHT].filter({ source.string($0, in: EXIF_IFD_0) != nil }).count
            ? ["EXIF other than credit"] : []
        guard !kept.isEmpty, let data = exif_data_new() else { return (nil, removed) }
        let document = ExifDocument(owning: data)
        exif_data_set_byte_order(data, EXIF_BYTE_ORDER_INTEL)
        for (tag, value) in kept { document.setString(tag, value, in: EXIF_IFD_0) }
        return (document.save(), removed)
    }

    /// Writes Artist and Copyright into a block (a new one when there is none); a nil value
    /// leaves that tag as it is.
    /// - Returns: the block, or the one given when nothing is set (or it cannot be read).
    public static func credit(_ exif: [UInt8]?, artist: String?, copyright: String?) -> [UInt8]? {
        guard artist != nil || copyright != nil else { return exif }
        let document: ExifDocument
        if let exif {
            guard let parsed = ExifDocument(exif) else { return exif }
            document = parsed
        } else {
            guard let data = exif_data_new() else { return exif }
            document = ExifDocument(owning: data)
            exif_data_set_byte_order(data, EXIF_BYTE_ORDER_INTEL)
        }
        if let artist { document.setString(EXIF_TAG_ARTIST, artist, in: EXIF_IFD_0) }
        if let copyright { document.setString(EXIF_TAG_COPYRIGHT, copyright, in: EXIF_IFD_0) }
        return document.save() ?? exif
    }

    /// An ASCII tag of IFD0 (or another IFD), for tests and readers of outputs.
    public static func string(_ exif: [UInt8], tag: UInt16, ifd: Int = 0) -> String? {
        ExifDocument(exif)?.string(ExifTag(rawValue: UInt32(tag)), in: ExifIfd(rawValue: UInt32(ifd)))
    }

    /// Builds a small EXIF block (for tests and for outputs made from scratch).
    static func make(orientation: Int? = nil, dateTimeOriginal: String? = nil,
                     gpsLatitude: (degrees: Int, minutes: Int, seconds: Int)? = nil,
                     thumbnail: [UInt8]? = nil) -> [UInt8]? {
        guard let data = exif_data_new() else { return nil }
        let document = ExifDocument(owning: data)
        exif_data_set_byte_order(data, EXIF_BYTE_ORDER_INTEL)
        if let orientation {
            document.add(EXIF_TAG_ORIENTATION, format: EXIF_FORMAT_SHORT, components: 1, size: 2,
                         in: document.content(EXIF_IFD_0)) { exif_set_short($0, document.order, ExifShort(orientation)) }
        }
        if let dateTimeOriginal {
            var chars = Array(dateTimeOriginal.utf8)
            chars.append(0)
            document.add(EXIF_TAG_DATE_TIME_ORIGINAL, format: EXIF_FORMAT_ASCII, components: chars.count,
                         size: chars.count, in: document.content(EXIF_IFD_EXIF)) { p in
                for (i, c) in chars.enumerated() { p[i] = c }
            }
        }
        if let gpsLatitude {
            let gps = document.content(EXIF_IFD_GPS)
            // GPSLatitudeRef (tag 1) "N", GPSLatitude (tag 2) as three rationals.
            document.add(ExifTag(rawValue: 1), format: EXIF_FORMAT_ASCII, components: 2, size: 2, in: gps) { p in
                p[0] = UInt8(ascii: "N"); p[1] = 0
            }
            document.add(ExifTag(rawValue: 2), format: EXIF_FORMAT_RATIONAL, components: 3, size: 24, in: gps) { p in
                let parts = [gpsLatitude.degrees, gpsLatitude.minutes, gpsLatitude.seconds]
                for (i, v) in parts.enumerated() {
                    exif_set_rational(p + 8 * i, document.order, ExifRational(numerator: ExifLong(v), denominator: 1))
                }
            }
        }
        if let thumbnail, !thumbnail.isEmpty, let copy = malloc(thumbnail.count)?.assumingMemoryBound(to: UInt8.self) {
            copy.initialize(from: thumbnail, count: thumbnail.count)
            data.pointee.data = copy
            data.pointee.size = UInt32(thumbnail.count)
        }
        return document.save()
    }

    /// The embedded thumbnail (IFD1's JPEG, most cameras' 160 × 120), nil when there is none or
    /// it is not a JPEG.
    public static func thumbnail(_ exif: [UInt8]) -> [UInt8]? {
        guard let document = ExifDocument(exif), let bytes = document.data.pointee.data else { return nil }
        let thumbnail = [UInt8](UnsafeBufferPointer(start: bytes, count: Int(document.data.pointee.size)))
        return thumbnail.starts(with: [0xFF, 0xD8]) ? thumbnail : nil
    }

    /// The size of the embedded thumbnail, 0 when none (for tests).
    static func thumbnailSize(_ exif: [UInt8]) -> Int {
        guard let document = ExifDocument(exif) else { return 0 }
        return Int(document.data.pointee.size)
    }
}

/// One parsed EXIF block; the only owner of its `ExifData`.
final class ExifDocument {
    let data: UnsafeMutablePointer<ExifData>

    init(owning data: UnsafeMutablePointer<ExifData>) {
        self.data = data
    }

    /// Parses a block; nil when libexif finds nothing in it.
    convenience init?(_ bytes: [UInt8]) {
        guard bytes.count >= 8, let data = exif_data_new() else { return nil }
        self.init(owning: data)
        // Keep what is there: no "fixing" to the specification, no dropping of tags libexif
        // does not know, and MakerNotes left byte for byte (rewriting them breaks them).
        exif_data_unset_option(data, EXIF_DATA_OPTION_IGNORE_UNKNOWN_TAGS)
        exif_data_unset_option(data, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION)
        exif_data_set_option(data, EXIF_DATA_OPTION_DONT_CHANGE_MAKER_NOTE)
        let header: [UInt8] = [0x45, 0x78, 0x69, 0x66, 0, 0]
        // libexif only finds a block behind its "Exif\0\0" header (or inside a JPEG).
        let block = bytes.starts(with: header) ? bytes : header + bytes
        guard block.count <= Int(UInt32.max) else { return nil }
        block.withUnsafeBufferPointer { exif_data_load_data(data, $0.baseAddress, UInt32($0.count)) }
        let found = (0..<Int(EXIF_IFD_COUNT.rawValue)).contains { content(ExifIfd(rawValue: UInt32($0))).pointee.count > 0 }
        if !found && data.pointee.size == 0 { return nil }
    }

    deinit { exif_data_unref(data) }

    var order: ExifByteOrder { exif_data_get_byte_order(data) }

    func content(_ ifd: ExifIfd) -> UnsafeMutablePointer<ExifContent> {
        let all = data.pointee.ifd
        // exif_data_new creates all five IFDs; they live as long as the data.
        switch ifd {
        case EXIF_IFD_0: return all.0!
        case EXIF_IFD_1: return all.1!
        case EXIF_IFD_EXIF: return all.2!
        case EXIF_IFD_GPS: return all.3!
        default: return all.4!
        }
    }

    /// Orientation from IFD0 when it is 1–8.
    var orientation: Int? {
        guard let entry = exif_content_get_entry(content(EXIF_IFD_0), EXIF_TAG_ORIENTATION),
              let value = integer(entry), (1...8).contains(value) else { return nil }
        return value
    }

    /// PixelXDimension and PixelYDimension from the EXIF IFD.
    var pixelDimensions: (x: Int?, y: Int?) {
        let ifd = content(EXIF_IFD_EXIF)
        return (exif_content_get_entry(ifd, EXIF_TAG_PIXEL_X_DIMENSION).flatMap(integer),
                exif_content_get_entry(ifd, EXIF_TAG_PIXEL_Y_DIMENSION).flatMap(integer))
    }

    /// A SHORT or LONG entry's first value.
    func integer(_ entry: UnsafeMutablePointer<ExifEntry>) -> Int? {
        let e = entry.pointee
        guard e.components >= 1, let p = e.data else { return nil }
        switch e.format {
        case EXIF_FORMAT_SHORT where e.size >= 2: return Int(exif_get_short(p, order))
        case EXIF_FORMAT_LONG where e.size >= 4: return Int(exif_get_long(p, order))
        default: return nil
        }
    }

    /// Overwrites a SHORT or LONG entry's first value (when it fits the entry's format).
    func setInteger(_ entry: UnsafeMutablePointer<ExifEntry>, _ value: Int) {
        let e = entry.pointee
        guard e.components >= 1, let p = e.data else { return }
        if e.format == EXIF_FORMAT_SHORT, e.size >= 2, value <= 0xFFFF {
            exif_set_short(p, order, ExifShort(value))
        } else if e.format == EXIF_FORMAT_LONG, e.size >= 4 {
            exif_set_long(p, order, ExifLong(value))
        }
    }

    /// An ASCII entry, up to its first NUL.
    func string(_ tag: ExifTag, in ifd: ExifIfd) -> String? {
        guard let entry = exif_content_get_entry(content(ifd), tag),
              entry.pointee.format == EXIF_FORMAT_ASCII, let p = entry.pointee.data else { return nil }
        let bytes = UnsafeBufferPointer(start: p, count: Int(entry.pointee.size)).prefix { $0 != 0 }
        var text = Substring(String(decoding: bytes, as: UTF8.self))
        while text.last == " " { text.removeLast() }
        return text.isEmpty ? nil : String(text)
    }

    /// Replaces an ASCII entry (UTF-8 bytes, NUL-terminated: what current EXIF readers show).
    func setString(_ tag: ExifTag, _ value: String, in ifd: ExifIfd) {
        let content = self.content(ifd)
        if let old = exif_content_get_entry(content, tag) { exif_content_remove_entry(content, old) }
        let chars = Array(value.utf8) + [0]
        add(tag, format: EXIF_FORMAT_ASCII, components: chars.count, size: chars.count, in: content) { p in
            for (i, c) in chars.enumerated() { p[i] = c }
        }
    }

    /// Sets PixelX/YDimension, rewriting the entry as LONG when a SHORT cannot hold the value.
    func setDimension(_ tag: ExifTag, _ value: Int, in ifd: UnsafeMutablePointer<ExifContent>) {
        if let entry = exif_content_get_entry(ifd, tag) {
            let e = entry.pointee
            if (e.format == EXIF_FORMAT_SHORT && value <= 0xFFFF && e.size >= 2) || (e.format == EXIF_FORMAT_LONG && e.size >= 4) {
                setInteger(entry, value)
                return
            }
            exif_content_remove_entry(ifd, entry)
        }
        add(tag, format: EXIF_FORMAT_LONG, components: 1, size: 4, in: ifd) { exif_set_long($0, self.order, ExifLong(value)) }
    }

    /// Adds an entry whose bytes `fill` writes.
    func add(_ tag: ExifTag, format: ExifFormat, components: Int, size: Int,
             in ifd: UnsafeMutablePointer<ExifContent>, fill: (UnsafeMutablePointer<UInt8>) -> Void) {
        guard let entry = exif_entry_new() else { return }
        defer { exif_entry_unref(entry) }
        // libexif frees entry data with its default allocator, which is calloc/free.
        guard let bytes = calloc(1, size)?.assumingMemoryBound(to: UInt8.self) else { return }
        fill(bytes)
        entry.pointee.tag = tag
        entry.pointee.format = format
        entry.pointee.components = UInt(components)
        entry.pointee.size = UInt32(size)
        entry.pointee.data = bytes
        exif_content_add_entry(ifd, entry)
    }

    /// Removes every entry of an IFD (an empty IFD is not written).
    func clear(_ ifd: UnsafeMutablePointer<ExifContent>) {
        while ifd.pointee.count > 0, let entry = ifd.pointee.entries[0] {
            exif_content_remove_entry(ifd, entry)
        }
    }

    /// Drops the thumbnail image and its IFD1.
    func dropThumbnail() {
        if let thumbnail = data.pointee.data {
            free(thumbnail)
            data.pointee.data = nil
            data.pointee.size = 0
        }
        clear(content(EXIF_IFD_1))
    }

    /// The block as bytes (TIFF header onwards), nil when libexif cannot write it.
    func save() -> [UInt8]? {
        var buffer: UnsafeMutablePointer<UInt8>?
        var size: UInt32 = 0
        exif_data_save_data(data, &buffer, &size)
        guard let buffer else { return nil }
        defer { free(buffer) }
        // libexif writes its "Exif\0\0" header first; the JPEG encoder adds its own.
        guard size > 6 + 8 else { return nil }
        return Array(UnsafeBufferPointer(start: buffer + 6, count: Int(size) - 6))
    }
}
