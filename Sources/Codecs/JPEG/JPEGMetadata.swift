/// XMP and IPTC in JPEG files: XMP in an APP1 marker behind its namespace, IPTC IIM in a
/// Photoshop image resource block in APP13.
enum JPEGMetadata {
    static let app1 = 0xE1, app13 = 0xED
    /// The standard XMP packet's APP1 signature.
    static let xmpSignature: [UInt8] = Array("http://ns.adobe.com/xap/1.0/".utf8) + [0]
    /// Extended XMP (the part over 64 KiB: depth maps, original images) APP1 signature.
    static let extendedSignature: [UInt8] = Array("http://ns.adobe.com/xmp/extension/".utf8) + [0]

    /// What the saved APP markers hold.
    struct Found {
        var xmp: [UInt8]?
        /// Extended XMP was there (not read: see `MetadataRewrite`).
        var xmpExtended = false
        /// The IIM stream of the Photoshop block.
        var iptc: [UInt8]?
    }

    /// Reads XMP and IPTC from the APP markers, in file order. The first standard packet
    /// counts; APP13 payloads are joined (a block over 64 KiB spans several markers).
    static func read(_ markers: [(code: Int, bytes: ArraySlice<UInt8>)]) -> Found {
        var found = Found()
        var photoshop: [UInt8] = []
        for marker in markers {
            let bytes = marker.bytes
            if marker.code == app1, found.xmp == nil, bytes.starts(with: xmpSignature) {
                found.xmp = Array(bytes.dropFirst(xmpSignature.count))
            } else if marker.code == app1, bytes.starts(with: extendedSignature) {
                found.xmpExtended = true
            } else if marker.code == app13, bytes.starts(with: IPTC.photoshopHeader) {
                photoshop += bytes.dropFirst(IPTC.photoshopHeader.count)
            }
        }
        if !photoshop.isEmpty { found.iptc = IPTC.iim(fromPhotoshop: photoshop) }
        return found
    }

    /// The APP1 (XMP) and APP13 (IPTC) payloads to write for these blocks.
    static func markers(xmp: [UInt8]?, iptc: [UInt8]?) -> [(code: Int, bytes: [UInt8])] {
        var markers: [(Int, [UInt8])] = []
        if let xmp, !xmp.isEmpty { markers.append((app1, xmpSignature + xmp)) }
        if let iptc, !iptc.isEmpty, let block = IPTC(iim: iptc) { markers.append((app13, block.photoshopBlock())) }
        return markers
    }
}
