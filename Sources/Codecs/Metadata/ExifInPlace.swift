/// An EXIF block edited where it lies (docs/reference.md "Metadata"): every byte stays at its
/// offset, so a MakerNote — whose own offsets many cameras count from the start of the block
/// (Canon, Nikon's older models, Olympus, Sanyo, Panasonic, Minolta) — reads as the camera
/// wrote it. A value that fits its entry is overwritten there (Orientation, PixelX/YDimension);
/// an IFD whose entries change (Artist, Copyright, ImageDescription written; GPSInfo removed; a
/// dimension added) is written again after the block's last byte and its pointer moved to it;
/// what is removed (the GPS IFD and its values, the thumbnail and IFD1, a replaced IFD) is
/// overwritten with zeros, and cut off when it ends the block. Pure: bytes in, bytes out.
struct ExifInPlace {
    private(set) var bytes: [UInt8]
    private let little: Bool

    /// A TIFF block (no "Exif\0\0" header); nil when its header is not TIFF's.
    init?(_ bytes: [UInt8]) {
        guard bytes.count >= 8 else { return nil }
        switch (bytes[0], bytes[1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        self.bytes = bytes
        guard u16(2) == 42 else { return nil }
    }

    /// One IFD entry: `value` is its 4-byte value field as stored (the value, or its offset).
    struct Entry: Equatable {
        var tag: UInt16
        var type: UInt16
        var count: UInt32
        var value: [UInt8]

        /// Bytes its values take (nil: a type TIFF does not define).
        var size: Int? {
            let unit: Int
            switch type {
            case 1, 2, 6, 7: unit = 1
            case 3, 8: unit = 2
            case 4, 9, 11, 13: unit = 4
            case 5, 10, 12: unit = 8
            default: return nil
            }
            let (total, overflow) = unit.multipliedReportingOverflow(by: Int(count))
            return overflow ? nil : total
        }
    }

    struct IFD {
        var offset: Int
        var entries: [Entry]
        var next: UInt32
        /// Bytes the directory itself takes (count, entries, next pointer).
        var length: Int { 2 + 12 * entries.count + 4 }
    }

    static let orientation: UInt16 = 0x0112, exifPointer: UInt16 = 0x8769, gpsPointer: UInt16 = 0x8825
    static let pixelX: UInt16 = 0xA002, pixelY: UInt16 = 0xA003
    static let thumbnailOffset: UInt16 = 0x0201, thumbnailLength: UInt16 = 0x0202, interopPointer: UInt16 = 0xA005

    // MARK: Bytes

    func u16(_ at: Int) -> UInt16 { decode16(bytes[at..<at + 2]) }

    func u32(_ at: Int) -> UInt32 { decode32(bytes[at..<at + 4]) }

    func decode16(_ b: ArraySlice<UInt8>) -> UInt16 {
        let (x, y) = (UInt16(b[b.startIndex]), UInt16(b[b.startIndex + 1]))
        return little ? x | y << 8 : x << 8 | y
    }

    func decode32(_ b: ArraySlice<UInt8>) -> UInt32 {
        let v = b.prefix(4).map(UInt32.init)
        return little ? v[0] | v[1] << 8 | v[2] << 16 | v[3] << 24 : v[0] << 24 | v[1] << 16 | v[2] << 8 | v[3]
    }

    func encode16(_ v: UInt16) -> [UInt8] {
        little ? [UInt8(v & 0xFF), UInt8(v >> 8)] : [UInt8(v >> 8), UInt8(v & 0xFF)]
    }

    func encode32(_ v: UInt32) -> [UInt8] {
        let b = [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
        return little ? b.reversed() : b
    }

    /// The first value of a SHORT or LONG entry's field.
    func integer(_ e: Entry) -> UInt32? {
        switch e.type {
        case 3: UInt32(decode16(e.value[...]))
        case 4: decode32(e.value[...])
        default: nil
        }
    }

    // MARK: IFDs

    var ifd0Offset: Int { Int(u32(4)) }

    /// The IFD at `offset`, when it lies whole within the block.
    func ifd(at offset: Int) -> IFD? {
        guard offset >= 8, offset + 2 <= bytes.count else { return nil }
        let n = Int(u16(offset))
        guard n <= 1000, offset + 2 + 12 * n + 4 <= bytes.count else { return nil }
        var entries: [Entry] = []
        for k in 0..<n {
            let at = offset + 2 + 12 * k
            entries.append(Entry(tag: u16(at), type: u16(at + 2), count: u32(at + 4), value: Array(bytes[at + 8..<at + 12])))
        }
        return IFD(offset: offset, entries: entries, next: u32(offset + 2 + 12 * n))
    }

    /// Where an entry's values lie outside its field (nil: in the field, or not in the block).
    func outside(_ e: Entry) -> Range<Int>? {
        guard let size = e.size, size > 4 else { return nil }
        let start = Int(decode32(e.value[...]))
        guard start <= bytes.count, size <= bytes.count - start else { return nil }
        return start..<start + size
    }

    /// Overwrites one entry of the directory at `ifd.offset` (same tag position, same size).
    mutating func put(_ e: Entry, at index: Int, of ifd: IFD) {
        let at = ifd.offset + 2 + 12 * index
        bytes.replaceSubrange(at..<at + 12, with: encode16(e.tag) + encode16(e.type) + encode32(e.count) + e.value)
    }

    /// Writes `entries` (sorted by tag) as a new directory after the block's last byte, the
    /// values that do not fit a field after it; the old directory zeroed.
    /// - Parameter values: the values of entries whose field is to point at them, by tag.
    /// - Returns: its offset.
    mutating func append(_ entries: [Entry], next: UInt32, values: [UInt16: [UInt8]], replacing old: IFD) -> Int {
        zero(old.offset..<old.offset + old.length)
        if bytes.count % 2 == 1 { bytes.append(0) }
        let offset = bytes.count
        var entries = entries.sorted { $0.tag < $1.tag }
        var data = offset + 2 + 12 * entries.count + 4
        for k in entries.indices {
            guard let value = values[entries[k].tag] else { continue }
            if value.count <= 4 {
                entries[k].value = value + [UInt8](repeating: 0, count: 4 - value.count)
            } else {
                entries[k].value = encode32(UInt32(data))
                data += value.count + value.count % 2
            }
        }
        bytes += encode16(UInt16(entries.count))
        for e in entries { bytes += encode16(e.tag) + encode16(e.type) + encode32(e.count) + e.value }
        bytes += encode32(next)
        for e in entries {
            guard let value = values[e.tag], value.count > 4 else { continue }
            bytes += value
            if value.count % 2 == 1 { bytes.append(0) }
        }
        return offset
    }

    mutating func zero(_ range: Range<Int>) {
        let r = range.clamped(to: 0..<bytes.count)
        for k in r { bytes[k] = 0 }
    }

    // MARK: The edits

    /// The block with `policy`'s changes and `edits` made in place (see the type), or nil when
    /// the block is not one this can edit safely (an IFD out of bounds, a type TIFF does not
    /// define): the caller rewrites it with libexif then.
    /// - Returns: the bytes and whether a GPS IFD with entries was removed.
    static func rewrite(_ block: [UInt8], stripLocation: Bool, width: Int, height: Int,
                        edits: Exif.Edits) -> (bytes: [UInt8], removedGPS: Bool)? {
        guard var t = ExifInPlace(block), let original = t.ifd(at: t.ifd0Offset),
              original.entries.allSatisfy({ $0.size != nil }) else { return nil }
        var ifd0 = original
        var values: [UInt16: [UInt8]] = [:]
        var changed = false

        // Orientation 1: the pixels are upright now. One entry of one value is overwritten where
        // it lies; anything else (two Orientation entries, a count other than 1, a type other
        // than SHORT or LONG — a reader may take any of them) becomes one SHORT of 1 in IFD0
        // written again.
        let orientations = ifd0.entries.indices.filter { ifd0.entries[$0].tag == orientation }
        if orientations.count == 1, let k = orientations.first, ifd0.entries[k].count == 1,
           ifd0.entries[k].type == 3 || ifd0.entries[k].type == 4 {
            ifd0.entries[k].value = ifd0.entries[k].type == 3 ? t.encode16(1) + [0, 0] : t.encode32(1)
            t.put(ifd0.entries[k], at: k, of: original)
        } else if !orientations.isEmpty {
            ifd0.entries.removeAll { $0.tag == orientation }
            ifd0.entries.append(Entry(tag: orientation, type: 3, count: 1, value: t.encode16(1) + [0, 0]))
            changed = true
        }

        // The GPS IFD and its values zeroed, its pointer gone.
        var removedGPS = false
        if stripLocation, let k = ifd0.entries.firstIndex(where: { $0.tag == gpsPointer }) {
            if let at = t.integer(ifd0.entries[k]), let gps = t.ifd(at: Int(at)) {
                removedGPS = !gps.entries.isEmpty
                for e in gps.entries { if let r = t.outside(e) { t.zero(r) } }
                t.zero(gps.offset..<gps.offset + gps.length)
            }
            ifd0.entries.remove(at: k)
            changed = true
        }

        // The thumbnail (IFD1 and its image) zeroed — it shows the photo as it was —, and cut
        // off when it ends the block.
        if ifd0.next != 0 {
            if let ifd1 = t.ifd(at: Int(ifd0.next)) {
                var parts = [ifd1.offset..<ifd1.offset + ifd1.length]
                for e in ifd1.entries { if let r = t.outside(e) { parts.append(r) } }
                if let o = ifd1.entries.first(where: { $0.tag == thumbnailOffset }).flatMap(t.integer),
                   let l = ifd1.entries.first(where: { $0.tag == thumbnailLength }).flatMap(t.integer),
                   Int(o) <= t.bytes.count, Int(l) <= t.bytes.count - Int(o) {
                    parts.append(Int(o)..<Int(o) + Int(l))
                }
                for p in parts { t.zero(p) }
                if let start = parts.map(\.lowerBound).min(), t.lastUsedByte(ifd0) <= start, start > original.offset + original.length {
                    t.bytes.removeSubrange(start...)
                }
            }
            ifd0.next = 0
            changed = true
        }

        // The EXIF IFD's pixel size: in its fields, or that IFD written again with them.
        if let k = ifd0.entries.firstIndex(where: { $0.tag == exifPointer }), let at = t.integer(ifd0.entries[k]) {
            guard let stored = t.ifd(at: Int(at)), stored.entries.allSatisfy({ $0.size != nil }) else { return nil }
            var exif = stored
            var added = false
            for (tag, value) in [(pixelX, width), (pixelY, height)] {
                let long = Entry(tag: tag, type: 4, count: 1, value: t.encode32(UInt32(value)))
                if let i = exif.entries.firstIndex(where: { $0.tag == tag }) {
                    let e = exif.entries[i]
                    exif.entries[i] = e.type == 3 && e.count == 1 && value <= 0xFFFF
                        ? Entry(tag: tag, type: 3, count: 1, value: t.encode16(UInt16(value)) + [0, 0]) : long
                    t.put(exif.entries[i], at: i, of: exif)
                } else if !exif.entries.isEmpty {
                    exif.entries.append(long)
                    added = true
                }
            }
            if added {
                ifd0.entries[k].value = t.encode32(UInt32(t.append(exif.entries, next: exif.next, values: [:], replacing: stored)))
                changed = true
            }
        }

        // The template's texts in IFD0 (UTF-8, NUL-terminated, as libexif's writer does).
        for (tag, text) in [(UInt16(0x013B), edits.artist), (0x8298, edits.copyright), (0x010E, edits.description)] {
            guard let text else { continue }
            let value = Array(text.utf8) + [0]
            ifd0.entries.removeAll { $0.tag == tag }
            ifd0.entries.append(Entry(tag: tag, type: 2, count: UInt32(value.count), value: []))
            values[tag] = value
            changed = true
        }

        if changed {
            let moved = t.append(ifd0.entries, next: 0, values: values, replacing: original)
            t.bytes.replaceSubrange(4..<8, with: t.encode32(UInt32(moved)))
        }
        return (t.bytes, removedGPS)
    }

    /// The end of the last byte IFD0's entries still point at: their values, the EXIF IFD and
    /// the Interop IFD with theirs (a MakerNote's whole blob among them).
    private func lastUsedByte(_ ifd0: IFD) -> Int {
        var end = 8
        var seen: Set<Int> = []
        func walk(_ entries: [Entry]) {
            for e in entries {
                if let r = outside(e) { end = max(end, r.upperBound) }
                guard e.tag == Self.exifPointer || e.tag == Self.interopPointer, let at = integer(e), !seen.contains(Int(at)),
                      let ifd = ifd(at: Int(at)) else { continue }
                seen.insert(Int(at))
                end = max(end, ifd.offset + ifd.length)
                walk(ifd.entries)
            }
        }
        walk(ifd0.entries)
        return end
    }
}
