/// Builds a small EXIF block (TIFF header onwards, little-endian) from a few fields: what a
/// camera would write. Used to make sample photos (the demo) and test fixtures.
public struct ExifBuilder: Sendable {
    public var orientation: Int?
    public var make: String?
    public var model: String?
    /// "YYYY:MM:DD HH:MM:SS".
    public var dateTimeOriginal: String?
    /// Degrees, north and east positive.
    public var gps: (latitude: Double, longitude: Double)?
    /// Artist and Copyright (IFD0), LensModel and BodySerialNumber (EXIF IFD).
    public var artist: String?
    public var copyright: String?
    public var lens: String?
    public var serialNumber: String?

    public init(orientation: Int? = nil, make: String? = nil, model: String? = nil,
                dateTimeOriginal: String? = nil, gps: (latitude: Double, longitude: Double)? = nil,
                artist: String? = nil, copyright: String? = nil, lens: String? = nil, serialNumber: String? = nil) {
        self.orientation = orientation
        self.make = make
        self.model = model
        self.dateTimeOriginal = dateTimeOriginal
        self.gps = gps
        self.artist = artist
        self.copyright = copyright
        self.lens = lens
        self.serialNumber = serialNumber
    }

    private struct Entry {
        var tag: UInt16, type: UInt16, count: UInt32, data: [UInt8]
    }

    private static func ascii(_ tag: UInt16, _ s: String) -> Entry {
        let bytes = Array(s.utf8) + [0]
        return Entry(tag: tag, type: 2, count: UInt32(bytes.count), data: bytes)
    }

    private static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8)] }
    private static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * $0)) & 0xff) } }

    private static func rationals(_ values: [(UInt32, UInt32)]) -> [UInt8] {
        values.flatMap { le32($0.0) + le32($0.1) }
    }

    private static func degrees(_ v: Double) -> [UInt8] {
        let a = abs(v), d = a.rounded(.down), m = ((a - d) * 60).rounded(.down)
        let s = ((a - d) * 60 - m) * 60
        return rationals([(UInt32(d), 1), (UInt32(m), 1), (UInt32((s * 100).rounded()), 100)])
    }

    /// The EXIF bytes, starting at the TIFF header (no "Exif\0\0" prefix).
    public func bytes() -> [UInt8] {
        var ifd0: [Entry] = []
        if let make { ifd0.append(Self.ascii(0x010F, make)) }
        if let model { ifd0.append(Self.ascii(0x0110, model)) }
        if let orientation {
            ifd0.append(Entry(tag: 0x0112, type: 3, count: 1, data: Self.le16(UInt16(orientation)) + [0, 0]))
        }
        if let artist { ifd0.append(Self.ascii(0x013B, artist)) }
        if let copyright { ifd0.append(Self.ascii(0x8298, copyright)) }
        var exifIFD: [Entry] = []
        if let dateTimeOriginal { exifIFD.append(Self.ascii(0x9003, dateTimeOriginal)) }
        if let serialNumber { exifIFD.append(Self.ascii(0xA431, serialNumber)) }
        if let lens { exifIFD.append(Self.ascii(0xA434, lens)) }
        var gpsIFD: [Entry] = []
        if let gps {
            gpsIFD = [
                Entry(tag: 0x0000, type: 1, count: 4, data: [2, 3, 0, 0]),
                Self.ascii(0x0001, gps.latitude >= 0 ? "N" : "S"),
                Entry(tag: 0x0002, type: 5, count: 3, data: Self.degrees(gps.latitude)),
                Self.ascii(0x0003, gps.longitude >= 0 ? "E" : "W"),
                Entry(tag: 0x0004, type: 5, count: 3, data: Self.degrees(gps.longitude)),
            ]
        }
        // Pointers go in IFD0 with placeholder values, patched once the layout is known.
        if !exifIFD.isEmpty { ifd0.append(Entry(tag: 0x8769, type: 4, count: 1, data: [0, 0, 0, 0])) }
        if !gpsIFD.isEmpty { ifd0.append(Entry(tag: 0x8825, type: 4, count: 1, data: [0, 0, 0, 0])) }
        ifd0.sort { $0.tag < $1.tag }

        func size(_ entries: [Entry]) -> Int {
            2 + 12 * entries.count + 4 + entries.reduce(0) { $0 + ($1.data.count > 4 ? ($1.data.count + 1) & ~1 : 0) }
        }
        let ifd0At = 8, exifAt = ifd0At + size(ifd0), gpsAt = exifAt + (exifIFD.isEmpty ? 0 : size(exifIFD))
        for i in ifd0.indices {
            if ifd0[i].tag == 0x8769 { ifd0[i].data = Self.le32(UInt32(exifAt)) }
            if ifd0[i].tag == 0x8825 { ifd0[i].data = Self.le32(UInt32(gpsAt)) }
        }
        var out: [UInt8] = [0x49, 0x49, 0x2A, 0x00] + Self.le32(UInt32(ifd0At))
        func write(_ entries: [Entry], at start: Int) {
            precondition(out.count == start)
            out += Self.le16(UInt16(entries.count))
            var dataAt = start + 2 + 12 * entries.count + 4
            var data: [UInt8] = []
            for e in entries {
                out += Self.le16(e.tag) + Self.le16(e.type) + Self.le32(e.count)
                if e.data.count <= 4 {
                    out += e.data + [UInt8](repeating: 0, count: 4 - e.data.count)
                } else {
                    out += Self.le32(UInt32(dataAt))
                    data += e.data
                    if e.data.count % 2 == 1 { data.append(0) }
                    dataAt += (e.data.count + 1) & ~1
                }
            }
            out += Self.le32(0)
            out += data
        }
        write(ifd0, at: ifd0At)
        if !exifIFD.isEmpty { write(exifIFD, at: exifAt) }
        if !gpsIFD.isEmpty { write(gpsIFD, at: gpsAt) }
        return out
    }
}
