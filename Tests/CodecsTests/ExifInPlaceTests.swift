import Foundation
import Testing
import TestSupport
@testable import Codecs

/// The EXIF block edited in place (docs/reference.md "Metadata"): a Canon MakerNote, whose
/// offsets count from the block's start, reads the same with exiftool after the template's
/// Artist, Copyright and ImageDescription, the upright orientation, the output's size, the GPS
/// removed and the thumbnail dropped.
struct ExifInPlaceTests {
    static let exiftool = "/usr/bin/exiftool"

    /// A camera's block, laid out as cameras do (little-endian): IFD0 (Make, Model, Orientation 6,
    /// the EXIF and GPS pointers) and its values, the EXIF IFD (640 × 480, the MakerNote), the
    /// MakerNote — a Canon IFD whose two strings lie at offsets from the block's start —, the
    /// GPS IFD, IFD1 and its thumbnail last.
    static func cameraBlock() -> [UInt8] {
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(v >> (8 * $0) & 0xFF) } }
        func entry(_ tag: Int, _ type: Int, _ count: Int, _ value: [UInt8]) -> [UInt8] {
            le16(tag) + le16(type) + le32(count) + value + [UInt8](repeating: 0, count: 4 - value.count)
        }
        func ifd(_ entries: [[UInt8]], next: Int = 0) -> [UInt8] { le16(entries.count) + entries.flatMap { $0 } + le32(next) }
        let make = Array("Canon\0".utf8), model = Array("Canon PF Test\0".utf8)
        let imageType = Array("IMG:PF TEST JPEG\0".utf8), firmware = Array("Firmware 1.0.0\0".utf8)
        let thumbnail: [UInt8] = [0xFF, 0xD8] + [UInt8](repeating: 0x5A, count: 100) + [0xFF, 0xD9]
        let exifAt = 94, makerAt = 136, gpsAt = 200, ifd1At = 266, thumbAt = 308
        var b: [UInt8] = [0x49, 0x49, 0x2A, 0x00] + le32(8)
        b += ifd([entry(0x010F, 2, make.count, le32(74)), entry(0x0110, 2, model.count, le32(80)), entry(0x0112, 3, 1, le16(6)),
                  entry(0x8769, 4, 1, le32(exifAt)), entry(0x8825, 4, 1, le32(gpsAt))], next: ifd1At)
        b += make + model
        b += ifd([entry(0xA002, 3, 1, le16(640)), entry(0xA003, 3, 1, le16(480)), entry(0x927C, 7, 64, le32(makerAt))])
        b += ifd([entry(0x0006, 2, imageType.count, le32(166)), entry(0x0007, 2, firmware.count, le32(184))])
        b += imageType + [0] + firmware + [0]
        b += ifd([entry(0x0000, 1, 4, [2, 3, 0, 0]), entry(0x0001, 2, 2, Array("N\0".utf8)), entry(0x0002, 5, 3, le32(242))])
        b += [52, 1, 31, 1, 1234, 100].flatMap { le32($0) }
        b += ifd([entry(0x0103, 3, 1, le16(6)), entry(0x0201, 4, 1, le32(thumbAt)), entry(0x0202, 4, 1, le32(thumbnail.count))])
        precondition(b.count == thumbAt)
        return b + thumbnail
    }

    /// A JPEG holding `block` as its EXIF (exiftool reads the metadata of a JPEG's markers).
    static func jpeg(_ block: [UInt8]) -> [UInt8] {
        let app1 = Array("Exif\0\0".utf8) + block
        return [0xFF, 0xD8, 0xFF, 0xE1, UInt8((app1.count + 2) >> 8), UInt8((app1.count + 2) & 0xFF)] + app1 + [0xFF, 0xD9]
    }

    @Test func aCanonMakerNoteReadsTheSameAfterEveryEdit() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.exiftool) else {
            print("skipped: exiftool is missing (apt-get install libimage-exiftool-perl)")
            return
        }
        let source = Self.cameraBlock()
        let edits = Exif.Edits(artist: "Jörg Öhman", copyright: "© 2026 Studio Nord", description: "Finale in Zürich")
        let (written, removed) = Exif.rewrite(source, policy: .stripLocation, width: 4000, height: 70_000, edits: edits)
        let block = try #require(written)
        #expect(removed == ["GPS"])
        // Everything up to the GPS IFD where it was; the GPS and the thumbnail gone.
        #expect(Array(block[0..<4]) == Array(source[0..<4]) && Array(block[136..<200]) == Array(source[136..<200]))
        #expect(!block.indices.dropLast(24).contains { Array(block[$0..<$0 + 8]) == [52, 0, 0, 0, 1, 0, 0, 0] }, "a GPS value is left")
        #expect(!block.indices.dropLast(3).contains { Array(block[$0..<$0 + 4]) == [0x5A, 0x5A, 0x5A, 0x5A] }, "the thumbnail is left")

        let dir = try TemporaryFolder.make("exif-in-place")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data(Self.jpeg(source)).write(to: URL(fileURLWithPath: dir + "/source.jpg"))
        try Data(Self.jpeg(block)).write(to: URL(fileURLWithPath: dir + "/output.jpg"))
        let run = Process()
        run.executableURL = URL(fileURLWithPath: Self.exiftool)
        run.arguments = ["-j", "-a", "-G1", "-n", "-charset", "UTF8", "-validate", "-warning", "-Canon:all", "-IFD0:all",
                         "-ExifIFD:all", "-GPS:all", "-IFD1:all", dir + "/source.jpg", dir + "/output.jpg"]
        let pipe = Pipe()
        run.standardOutput = pipe
        try run.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        run.waitUntilExit()
        let read = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        let (before, after) = (read[0], read[1])
        // The MakerNote as the camera wrote it, before and after.
        #expect(before["Canon:CanonImageType"] as? String == "IMG:PF TEST JPEG", "\(before)")
        for tag in ["Canon:CanonImageType", "Canon:CanonFirmwareVersion"] {
            #expect(after[tag] as? String == before[tag] as? String, "\(tag): \(after)")
        }
        #expect(after["IFD0:Artist"] as? String == "Jörg Öhman" && after["IFD0:Copyright"] as? String == "© 2026 Studio Nord"
                && after["IFD0:ImageDescription"] as? String == "Finale in Zürich", "\(after)")
        #expect(after["IFD0:Orientation"] as? Int == 1 && after["IFD0:Make"] as? String == "Canon", "\(after)")
        #expect(after["ExifIFD:ExifImageWidth"] as? Int == 4000 && after["ExifIFD:ExifImageHeight"] as? Int == 70_000, "\(after)")
        #expect(!after.keys.contains { $0.hasPrefix("GPS:") || $0.hasPrefix("IFD1:") }, "\(after)")
        // exiftool's checks find nothing in the output that the source did not have.
        func warnings(_ tags: [String: Any]) -> Set<String> {
            Set(tags.filter { $0.key.hasSuffix("Warning") }.compactMap { $0.value as? String })
        }
        #expect(warnings(after).subtracting(warnings(before)).isEmpty, "\(warnings(after))")
    }
}
