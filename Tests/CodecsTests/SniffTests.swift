import Testing
import Codecs

/// Bytes from ASCII, with \0 as needed.
private func a(_ s: String) -> [UInt8] { Array(s.utf8) }

/// An ISO BMFF `ftyp` box with the given brands.
private func ftyp(_ major: String, _ compatible: [String]) -> [UInt8] {
    let size = 16 + 4 * compatible.count
    return [0, 0, 0, UInt8(size)] + a("ftyp") + a(major) + [0, 0, 0, 0] + compatible.flatMap(a) + Array(repeating: 0, count: 32)
}

/// A little-endian TIFF whose IFD0 has the given entries (tag, type, count, inline value or
/// offset) and extra data appended after the IFD.
private func tiff(_ entries: [(UInt16, UInt16, UInt32, [UInt8])], tail: [UInt8] = []) -> [UInt8] {
    func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * $0)) & 0xFF) } }
    var bytes = a("II*\0") + le32(8) + le16(UInt16(entries.count))
    for (tag, type, count, value) in entries {
        bytes += le16(tag) + le16(type) + le32(count) + (value + [0, 0, 0, 0]).prefix(4)
    }
    return bytes + le32(0) + tail
}

/// A TIFF whose Make tag (stored after the IFD) says `make`.
private func tiffMade(by make: String) -> [UInt8] {
    let text = a(make) + [0]
    let offset = UInt32(8 + 2 + 12 + 4)
    let value = (0..<4).map { UInt8((offset >> (8 * $0)) & 0xFF) }
    return tiff([(0x010F, 2, UInt32(text.count), value)], tail: text)
}

@Suite("Sniffing by content")
struct SniffTests {
    @Test("0 bytes is empty")
    func empty() { #expect(sniff([]) == .empty) }

    @Test("readable formats")
    func images() {
        #expect(sniff([0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]) == .image(.jpeg))
        #expect(sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]) == .image(.png))
        #expect(sniff(ftyp("heic", ["mif1", "heic"])) == .image(.heic))
        #expect(sniff(ftyp("mif1", ["mif1", "heic"])) == .image(.heic))
        #expect(sniff(ftyp("heix", [])) == .image(.heic))
        #expect(sniff(ftyp("avif", ["mif1", "avif", "miaf"])) == .image(.avif))
        #expect(sniff(ftyp("mif1", ["avif", "miaf"])) == .image(.avif))
        #expect(sniff(ftyp("avis", [])) == .image(.avif))
    }

    @Test("camera raw files are named")
    func raws() {
        #expect(sniff(tiff([(0xC612, 1, 4, [1, 4, 0, 0])])) == .cameraRaw("DNG"))
        #expect(sniff(a("II*\0\u{10}\0\0\0CR\u{02}\0") + Array(repeating: 0, count: 16)) == .cameraRaw("CR2"))
        #expect(sniff(ftyp("crx ", ["crx ", "isom"])) == .cameraRaw("CR3"))
        #expect(sniff(a("IIRO\u{08}\0\0\0") + Array(repeating: 0, count: 8)) == .cameraRaw("ORF"))
        #expect(sniff(a("IIU\0\u{08}\0\0\0") + Array(repeating: 0, count: 8)) == .cameraRaw("RW2"))
        #expect(sniff(a("FUJIFILMCCD-RAW 0201FF383501")) == .cameraRaw("RAF"))
        #expect(sniff(tiffMade(by: "NIKON CORPORATION")) == .cameraRaw("NEF"))
        #expect(sniff(tiffMade(by: "SONY")) == .cameraRaw("ARW"))
        #expect(sniff(tiffMade(by: "PENTAX Corporation")) == .cameraRaw("PEF"))
        #expect(sniff(tiffMade(by: "Canon")) == .cameraRaw("CR2"))
        #expect(sniff(tiffMade(by: "OLYMPUS IMAGING CORP.")) == .cameraRaw("ORF"))
        #expect(sniff(tiffMade(by: "Panasonic")) == .cameraRaw("RW2"))
        #expect(sniff(tiffMade(by: "Hasselblad")) == .cameraRaw("3FR"))
        #expect(sniff(tiffMade(by: "LEICA")) == .cameraRaw("camera raw"))
    }

    @Test("plain and damaged TIFFs are unsupported TIFF, never a crash")
    func plainTIFF() {
        #expect(sniff(tiff([(0x0100, 3, 1, [16, 0])])) == .unsupported("TIFF"))
        #expect(sniff(tiffMade(by: "Acme Scanner")) == .unsupported("TIFF"))
        #expect(sniff(a("II*\0")) == .unsupported("TIFF"))
        #expect(sniff(a("MM\0*") + [0xFF, 0xFF, 0xFF, 0xF0]) == .unsupported("TIFF"))
        // IFD claims 65535 entries; Make points past the end.
        #expect(sniff(a("II*\0\u{08}\0\0\0") + [0xFF, 0xFF, 0x0F, 0x01, 2, 0, 50, 0, 0, 0, 0xF0, 0xFF, 0, 0]) == .unsupported("TIFF"))
        // Every prefix of a DNG header is handled.
        let dng = tiff([(0xC612, 1, 4, [1, 4, 0, 0])])
        for n in 1...dng.count { _ = sniff(Array(dng.prefix(n))) }
    }

    @Test("other formats are named")
    func others() {
        #expect(sniff(a("GIF89a\u{01}\0\u{01}\0")) == .unsupported("GIF"))
        #expect(sniff(a("GIF87a")) == .unsupported("GIF"))
        #expect(sniff(a("RIFF\u{24}\0\0\0WEBPVP8 ")) == .image(.webp))
        #expect(sniff(a("BM") + [0x46, 0, 0, 0, 0, 0, 0, 0, 0x36, 0, 0, 0, 40, 0, 0, 0]) == .unsupported("BMP"))
        #expect(sniff([0, 0, 0, 0x0C, 0x6A, 0x50, 0x20, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) == .unsupported("JPEG 2000"))
        #expect(sniff([0xFF, 0x0A, 0xFA, 0x7F]) == .unsupported("JPEG XL"))
        #expect(sniff(a("8BPS\0\u{01}")) == .unsupported("PSD"))
        #expect(sniff(a("%PDF-1.7\n")) == .unsupported("PDF"))
        #expect(sniff(a("<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>")) == .unsupported("SVG"))
        #expect(sniff(a("<svg width=\"10\"/>")) == .unsupported("SVG"))
        #expect(sniff(a("<?xml version=\"1.0\"?><root/>")) == .unsupported("XML"))
        #expect(sniff(a("PK\u{03}\u{04}\u{14}\0")) == .unsupported("ZIP"))
        #expect(sniff(ftyp("isom", ["isom", "iso2", "avc1", "mp41"])) == .unsupported("MP4 video"))
        #expect(sniff(ftyp("qt  ", ["qt  "])) == .unsupported("QuickTime video"))
    }

    @Test("text named .jpg is text")
    func text() {
        #expect(sniff(a("Dear customer,\nthis is not a photo.\n")) == .unsupported("text"))
        #expect(sniff(a("Grüße aus Köln\r\n")) == .unsupported("text"))
    }

    @Test("anything else is unknown, with its first bytes")
    func unknown() {
        #expect(sniff([0x00, 0x01, 0x02, 0xFE, 0x80, 0x99, 0x42, 0x13, 0x77]) == .unsupported("unknown (first bytes 0x000102fe80994213)"))
        #expect(sniff([0x00]) == .unsupported("unknown (first bytes 0x00)"))
    }

    @Test("results map to the report's error codes")
    func errors() {
        #expect(sniff([]).error?.code == .emptyFile)
        #expect(sniff(a("GIF89a")).error?.code == .unsupportedFormat)
        #expect(sniff(a("GIF89a")).error?.message.contains("GIF") == true)
        #expect(sniff(ftyp("crx ", [])).error?.code == .cameraRaw)
        #expect(sniff([0xFF, 0xD8, 0xFF]).error == nil)
    }
}
