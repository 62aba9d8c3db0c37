/// The few facts PhotoFinish checks in a HEIF/AVIF file's boxes itself, before libheif
/// decodes it: the primary item's type, the canvas a derived image (a `grid` of tiles, as
/// phones write, or an `iovl` overlay) declares in its own data, and the primary item's
/// `ispe` (image spatial extents).
///
/// libheif 1.15 allocates a grid's canvas from the grid's data and its handle's size from
/// `ispe`; a file whose grid says 26725×30317 while `ispe` says 48×32 passes every size check
/// and then overflows libheif's 32-bit offsets while tiles are pasted (a write out of bounds,
/// found by fuzzing: Fuzz/regressions/heif/). So the two must agree.
///
/// Best effort and pure: every offset and length comes from the file and is checked against
/// what is left, never added blindly; what cannot be read stays nil (libheif reports a broken
/// container itself).
struct HEIFBoxes {
    /// The primary item's type: "hvc1", "av01", "grid", "iovl", …
    var primaryType: String?
    /// The canvas a derived primary image (`grid`, `iovl`) declares in its data.
    var derivedCanvas: (width: Int, height: Int)?
    /// The primary item's `ispe`.
    var primaryExtent: (width: Int, height: Int)?
    /// Set when the file ends before the data its items need (a copy cut short).
    var cut: Cut?
    /// A derived image of the file (`grid`, `iovl`) one of whose inputs is itself derived, or
    /// the item itself: a grid of grids, or a loop. libheif 1.15 decodes a grid's inputs by
    /// recursion, each level on threads of its own, without looking for a loop: a 1 KB file
    /// whose alpha image is a grid made of itself made it start threads until the system
    /// refused one, and the uncaught `std::system_error` aborted the process (found by fuzzing:
    /// Fuzz/regressions/heif/; `heif-convert` aborts the same way). Phones and cameras write
    /// grids of coded tiles only.
    var nestedDerivation = false

    /// A file that ends before its items' data does.
    struct Cut {
        /// How long the file would have to be (every item's data, every top-level box).
        var needed: Int
        /// The bytes of the primary image's data (its tiles', for a grid) the file lacks, and
        /// how many it needs in all.
        var missingBytes: Int
        var imageBytes: Int
        /// For a grid: how many of its tiles lack data, of how many.
        var tiles: (missing: Int, of: Int)?
    }

    init(_ bytes: [UInt8]) {
        let file = BoxReader(bytes: bytes)
        guard let meta = file.boxes(in: 0..<bytes.count).first(where: { $0.type == "meta" }),
              meta.content.count >= 4 else { return }
        let children = file.boxes(in: (meta.content.lowerBound + 4)..<meta.content.upperBound)
        func child(_ type: String) -> Range<Int>? { children.first { $0.type == type }?.content }
        guard let pitm = child("pitm"), let primary = file.itemID(fullBoxAt: pitm, wide: file.u8(pitm.lowerBound) != 0) else { return }
        primaryType = child("iinf").flatMap { file.itemType(of: primary, iinf: $0) }
        if let iprp = child("iprp") {
            primaryExtent = file.extent(of: primary, iprp: iprp)
        }
        if primaryType == "grid" || primaryType == "iovl", let iloc = child("iloc"),
           let data = file.itemData(of: primary, iloc: iloc, idat: child("idat")) {
            derivedCanvas = primaryType == "grid" ? BoxReader.gridCanvas(data) : BoxReader.overlayCanvas(data)
        }
        if let iref = child("iref") {
            // Any derived item of the file, not only the primary: libheif decodes the primary's
            // auxiliary images (its alpha) too, and the fuzzer's loop was one of those.
            let iinf = child("iinf")
            func derived(_ item: Int) -> Bool { ["grid", "iovl"].contains(iinf.flatMap { file.itemType(of: item, iinf: $0) }) }
            nestedDerivation = file.derivations(iref: iref).contains { derivation in
                derivation.inputs.contains { $0 == derivation.item || derived($0) }
            }
        }
        if let iloc = child("iloc") {
            let tiles = primaryType == "grid" ? child("iref").map { file.derivedFrom(primary, iref: $0) } ?? [] : []
            cut = Self.cut(of: file, locations: file.locations(iloc: iloc), image: tiles.isEmpty ? [primary] : tiles,
                           grid: !tiles.isEmpty)
        }
    }

    /// Whether the file ends before its items' data: `Cut`, or nil when it holds it all.
    /// - Parameters:
    ///   - image: the items holding the primary image's pixels (the grid's tiles, or the item).
    private static func cut(of file: BoxReader, locations: [BoxReader.ItemLocation], image: [Int], grid: Bool) -> Cut? {
        let size = file.bytes.count
        var needed = file.declaredEnd()
        for location in locations {
            for range in location.fileRanges ?? [] { needed = max(needed, range.upperBound) }
        }
        guard needed > size else { return nil }
        var missing = 0, total = 0, tilesMissing = 0
        for id in image {
            guard let ranges = locations.first(where: { $0.id == id })?.fileRanges else { continue }
            var lacking = 0
            for range in ranges {
                total += range.count
                lacking += max(0, range.upperBound - max(range.lowerBound, size))
            }
            missing += lacking
            if lacking > 0 { tilesMissing += 1 }
        }
        return Cut(needed: needed, missingBytes: missing, imageBytes: total,
                   tiles: grid ? (tilesMissing, image.count) : nil)
    }
}

/// Bounds-checked big-endian reads over a file's bytes.
struct BoxReader {
    let bytes: [UInt8]

    func u8(_ at: Int) -> Int? {
        at >= 0 && at < bytes.count ? Int(bytes[at]) : nil
    }

    /// An unsigned big-endian integer of `size` bytes (0…8); nil past the end or over `Int.max`.
    func uint(_ at: Int, size: Int) -> Int? {
        guard size >= 0, size <= 8, at >= 0, at <= bytes.count, size <= bytes.count - at else { return nil }
        var value: UInt64 = 0
        for i in 0..<size { value = value << 8 | UInt64(bytes[at + i]) }
        return Int(exactly: value)
    }

    func u16(_ at: Int) -> Int? { uint(at, size: 2) }
    func u32(_ at: Int) -> Int? { uint(at, size: 4) }

    func fourCC(_ at: Int) -> String? {
        guard at >= 0, at <= bytes.count - 4 else { return nil }
        return String(decoding: bytes[at..<(at + 4)], as: UTF8.self)
    }

    /// The boxes inside `range`, in order; stops at the first one that does not fit.
    func boxes(in range: Range<Int>) -> [(type: String, content: Range<Int>)] {
        var found: [(type: String, content: Range<Int>)] = []
        var at = range.lowerBound
        while range.upperBound - at >= 8, let size32 = u32(at), let type = fourCC(at + 4) {
            var header = 8, size = size32
            if size32 == 1 {
                guard let large = uint(at + 8, size: 8) else { break }
                header = 16
                size = large
            } else if size32 == 0 {
                size = range.upperBound - at
            }
            guard size >= header, size <= range.upperBound - at else { break }
            found.append((type, (at + header)..<(at + size)))
            at += size
            if found.count >= 10_000 { break }
        }
        return found
    }

    /// The item ID of a `pitm`-like full box: 16 bits (version 0) or 32 bits.
    func itemID(fullBoxAt content: Range<Int>, wide: Bool) -> Int? {
        wide ? u32(content.lowerBound + 4) : u16(content.lowerBound + 4)
    }

    /// The `item_type` of one item, from `iinf`'s `infe` boxes (version 2 or 3).
    func itemType(of item: Int, iinf: Range<Int>) -> String? {
        guard let version = u8(iinf.lowerBound) else { return nil }
        let entries = iinf.lowerBound + 4 + (version == 0 ? 2 : 4)
        guard entries <= iinf.upperBound else { return nil }
        for infe in boxes(in: entries..<iinf.upperBound) where infe.type == "infe" {
            let c = infe.content.lowerBound
            guard let v = u8(c), v >= 2 else { continue }
            let idSize = v == 2 ? 2 : 4
            guard let id = uint(c + 4, size: idSize), id == item,
                  c + 4 + idSize + 2 + 4 <= infe.content.upperBound else { continue }
            return fourCC(c + 4 + idSize + 2)
        }
        return nil
    }

    /// The `ispe` associated with an item through `ipma`.
    func extent(of item: Int, iprp: Range<Int>) -> (width: Int, height: Int)? {
        let children = boxes(in: iprp)
        guard let ipco = children.first(where: { $0.type == "ipco" })?.content,
              let ipma = children.first(where: { $0.type == "ipma" })?.content,
              let version = u8(ipma.lowerBound), let flags = u8(ipma.lowerBound + 3),
              let count = u32(ipma.lowerBound + 4) else { return nil }
        let properties = boxes(in: ipco)
        var at = ipma.lowerBound + 8
        for _ in 0..<min(count, 1 << 16) {
            let idSize = version < 1 ? 2 : 4
            guard let id = uint(at, size: idSize), let associations = u8(at + idSize) else { return nil }
            at += idSize + 1
            let entrySize = flags & 1 == 1 ? 2 : 1
            for _ in 0..<associations {
                guard let entry = uint(at, size: entrySize) else { return nil }
                at += entrySize
                let index = entry & (entrySize == 2 ? 0x7FFF : 0x7F)
                guard id == item, index >= 1, index <= properties.count else { continue }
                let property = properties[index - 1]
                if property.type == "ispe", let width = u32(property.content.lowerBound + 4),
                   let height = u32(property.content.lowerBound + 8) {
                    return (width, height)
                }
            }
        }
        return nil
    }

    /// Where one item's data is, from `iloc`.
    struct ItemLocation {
        var id: Int
        /// 0: in the file; 1: in `idat`; 2: in another item.
        var method: Int
        var base: Int
        /// Offset (from `base`) and length (0: to the end of the region) of each extent.
        var extents: [(offset: Int, length: Int)]

        /// The file bytes the item's data reaches (method 0 only, each extent with a length),
        /// or nil when they cannot be told.
        var fileRanges: [Range<Int>]? {
            guard method == 0 else { return nil }
            var ranges: [Range<Int>] = []
            for extent in extents {
                let (start, o1) = base.addingReportingOverflow(extent.offset)
                let (end, o2) = start.addingReportingOverflow(extent.length)
                guard !o1, !o2, start >= 0, extent.length > 0 else { return nil }
                ranges.append(start..<end)
            }
            return ranges
        }
    }

    /// Every item `iloc` places, in order, up to the first entry that cannot be read.
    func locations(iloc: Range<Int>) -> [ItemLocation] {
        let c = iloc.lowerBound
        guard let version = u8(c), version <= 2, let sizes = u16(c + 4) else { return [] }
        let offsetSize = sizes >> 12, lengthSize = (sizes >> 8) & 15, baseSize = (sizes >> 4) & 15
        let indexSize = version >= 1 ? sizes & 15 : 0
        let idSize = version < 2 ? 2 : 4
        guard let count = uint(c + 6, size: idSize) else { return [] }
        var at = c + 6 + idSize
        var found: [ItemLocation] = []
        for _ in 0..<min(count, 1 << 16) {
            guard let id = uint(at, size: idSize) else { return found }
            at += idSize
            var method = 0
            if version >= 1 {
                guard let field = u16(at) else { return found }
                method = field & 15
                at += 2
            }
            guard let base = uint(at + 2, size: baseSize), let extentCount = u16(at + 2 + baseSize) else { return found }
            at += 2 + baseSize + 2
            var extents: [(offset: Int, length: Int)] = []
            // Extents of zero-sized fields take no bytes: all the same, the first one is enough.
            let extentBytes = indexSize + offsetSize + lengthSize
            for _ in 0..<(extentBytes == 0 ? min(extentCount, 1) : extentCount) {
                guard let offset = uint(at + indexSize, size: offsetSize),
                      let length = uint(at + indexSize + offsetSize, size: lengthSize) else { return found }
                at += extentBytes
                extents.append((offset, length))
            }
            found.append(ItemLocation(id: id, method: method, base: base, extents: extents))
        }
        return found
    }

    /// The first bytes (at most 64) of an item's data, from `iloc`: in the file (construction
    /// method 0) or in `idat` (1).
    func itemData(of item: Int, iloc: Range<Int>, idat: Range<Int>?) -> [UInt8]? {
        guard let location = locations(iloc: iloc).first(where: { $0.id == item }),
              let first = location.extents.first else { return nil }
        let (start, overflow) = location.base.addingReportingOverflow(first.offset)
        guard !overflow else { return nil }
        let region: Range<Int>
        switch location.method {
        case 0: region = 0..<bytes.count
        case 1: guard let idat else { return nil }; region = idat
        default: return nil
        }
        // A length of 0 means "to the end of the region".
        guard start >= 0, start <= region.count else { return nil }
        let available = region.count - start
        let length = first.length == 0 ? available : min(first.length, available)
        let from = region.lowerBound + start
        return Array(bytes[from..<(from + min(length, 64))])
    }

    /// The items a `dimg` reference of `item` names (a grid's tiles, in order), from `iref`.
    func derivedFrom(_ item: Int, iref: Range<Int>) -> [Int] {
        derivations(iref: iref).first { $0.item == item }?.inputs ?? []
    }

    /// Every `dimg` reference in `iref`: a derived item and the items it is made of, in order.
    func derivations(iref: Range<Int>) -> [(item: Int, inputs: [Int])] {
        // A full box: version and flags (4 bytes) before the references.
        guard iref.count >= 4, let version = u8(iref.lowerBound) else { return [] }
        let idSize = version == 0 ? 2 : 4
        var all: [(item: Int, inputs: [Int])] = []
        for reference in boxes(in: (iref.lowerBound + 4)..<iref.upperBound) where reference.type == "dimg" {
            let c = reference.content.lowerBound
            guard let from = uint(c, size: idSize), let count = u16(c + idSize) else { continue }
            var ids: [Int] = []
            for i in 0..<count {
                guard let id = uint(c + idSize + 2 + i * idSize, size: idSize) else { break }
                ids.append(id)
            }
            all.append((from, ids))
        }
        return all
    }

    /// How far the top-level boxes declare the file to reach: past its end when the last box
    /// (the `mdat`, as a rule) is cut short.
    func declaredEnd() -> Int {
        var at = 0
        while bytes.count - at >= 8, let size32 = u32(at) {
            var size = size32
            if size32 == 1 {
                guard let large = uint(at + 8, size: 8) else { break }
                size = large
            } else if size32 == 0 {
                return bytes.count
            }
            guard size >= 8 else { break }
            let (end, overflow) = at.addingReportingOverflow(size)
            if overflow { return Int.max }
            if end > bytes.count { return end }
            at = end
        }
        return bytes.count
    }

    /// A `grid` item's canvas: version, flags, rows − 1, columns − 1, then width and height in
    /// 16 bits (32 when flags bit 0 is set).
    static func gridCanvas(_ data: [UInt8]) -> (width: Int, height: Int)? {
        let reader = BoxReader(bytes: data)
        guard let flags = reader.u8(1) else { return nil }
        let size = flags & 1 == 1 ? 4 : 2
        guard let width = reader.uint(4, size: size), let height = reader.uint(4 + size, size: size) else { return nil }
        return (width, height)
    }

    /// An `iovl` item's canvas: version, flags, four 16-bit fill values, then width and height
    /// in 16 bits (32 when flags bit 0 is set).
    static func overlayCanvas(_ data: [UInt8]) -> (width: Int, height: Int)? {
        let reader = BoxReader(bytes: data)
        guard let flags = reader.u8(1) else { return nil }
        let size = flags & 1 == 1 ? 4 : 2
        guard let width = reader.uint(10, size: size), let height = reader.uint(10 + size, size: size) else { return nil }
        return (width, height)
    }
}
