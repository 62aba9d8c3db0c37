import Codecs
import Foundation
import JSON5
import Pixels
import QR
import Testing
@testable import Finishing

/// The `qr` mark: its template keys, its size and quiet zone measured on finished 12 MP and
/// 48 MP photos, and the link a scanner reads from them.
@Suite struct QRMarkTests {
    static let link = "https://photos.example.com/s/q3K9w_Zb0xT-4nQeLrA8VgHcYpUu1sDf2kMj6oNiEa7tPyBvCx5lWzRh0gFd3s9/"

    func parse(_ qr: String) throws(JSON5Errors) -> Template {
        try TemplateLoader.parse(text: "{ version: 1, qr: \(qr) }", file: "t.json5", name: "t", directory: "/tmp")
    }

    func problems(_ qr: String) -> [String] {
        do throws(JSON5Errors) {
            _ = try parse(qr)
            return []
        } catch {
            return error.errors.map(\.description)
        }
    }

    @Test func theKeysAndTheirDefaults() throws {
        let mark = try #require(try parse("{}").qr)
        #expect(mark == Template.QRMark(text: "{shareURL}"))
        #expect(mark.width == 0.12 && mark.position == .bottomLeft && mark.padding == 0.03 && mark.level == .medium)
        let custom = try #require(try parse("""
            { text: "{shareURL}?photo={stem}", width: 0.2, position: "top-right", padding: 0.05,
              color: "#1a1a40", background: "#fffff0", level: "quartile" }
            """).qr)
        #expect(custom.text == "{shareURL}?photo={stem}" && custom.width == 0.2 && custom.position == .topRight)
        #expect(custom.color == Template.Color(r: 0x1a, g: 0x1a, b: 0x40) && custom.level == .quartile)
    }

    @Test func whatAScannerCannotReadIsRefusedWithWhy() {
        #expect(problems(##"{ text: "{shareUrl}" }"##).contains { $0.contains("unknown variable {shareUrl} (did you mean {shareURL}?)") })
        #expect(problems(##"{ position: "auto" }"##).contains { $0.contains("qr.position") && $0.contains("keeps its place") })
        #expect(problems(##"{ color: "#ffffff", background: "#000000" }"##).contains { $0.contains("must be darker than background") })
        #expect(problems(##"{ color: "#777777", background: "#ffffff" }"##).contains { $0.contains("contrasts 4.5:1") && $0.contains("at least 7:1") })
        #expect(problems(##"{ color: "#00000080" }"##).contains { $0.contains("qr.color") && $0.contains("must be opaque") })
        #expect(problems(##"{ width: 0.01 }"##).contains { $0.contains("qr.width") })
        #expect(problems(##"{ size: 0.1 }"##).contains { $0.contains("qr") && $0.contains("size") })
    }

    @Test func withoutALinkTheCodeIsLeftOutAndSaid() throws {
        let template = try parse("{}")
        let (filled, _, warnings) = template.filled(with: PhotoFacts(filename: "IMG_1.jpg"))
        #expect(filled.qr == nil)
        #expect(warnings.contains { $0.hasPrefix("qr mark left out: {shareURL} has no value") && $0.contains("web.publicURL") })
        var facts = PhotoFacts(filename: "IMG_1.jpg")
        facts.shareURL = Self.link
        let withLink = template.filled(with: facts)
        #expect(withLink.template.qr?.text == Self.link && withLink.warnings.isEmpty)
    }

    /// A busy picture (fine stripes and checks in every colour): the worst ground for a code
    /// without its quiet zone.
    static func busyPhoto(_ width: Int, _ height: Int) -> Image {
        Image(width: width, height: height, channels: 3) { rows in
            // 64 distinct rows, copied down the picture (fast in a debug build).
            for y in 0..<min(64, height) {
                let row = rows[y]
                for x in 0..<width {
                    row[x * 3] = UInt8((x * 7 + y * 13) & 255)
                    row[x * 3 + 1] = UInt8(((x / 3) ^ (y * 5)) & 255)
                    row[x * 3 + 2] = UInt8((x * 3 + y * 29) & 255)
                }
            }
            for y in 64..<height { rows[y].update(from: rows[y % 64], count: rows.rowBytes) }
        }
    }

    /// On a finished 12 MP and 48 MP photo: the code is `width` × short side to within one module,
    /// in whole pixels per module, placed as the logo would be, its quiet zone light all round,
    /// every module as the symbol has it, and zbarimg reads exactly the link from the JPEG.
    @Test(arguments: [(4000, 3000, 0), (8000, 6000, 0.01)])
    func theCodeOnAFinishedPhoto(width: Int, height: Int, frame: Double) throws {
        let source = try encodeImage(Self.busyPhoto(width, height), options: EncodeOptions(format: .jpeg, quality: 90))
        var template = Template(name: "t")
        template.qr = Template.QRMark()
        if frame > 0 { template.frame = Template.Frame(width: frame, color: .init(r: 200, g: 30, b: 30)) }
        var facts = PhotoFacts(filename: "IMG_1.jpg")
        facts.shareURL = Self.link
        let photo = try PhotoFinisher(template: template).finish(bytes: source, limits: DecodeLimits(), facts: facts)
        let output = try #require(photo.outputs.first)
        let record = try #require(output.applied.qr)
        #expect(photo.warnings.isEmpty, "\(photo.warnings)")
        #expect(record.text == Self.link)

        let code = try QRCode(Self.link)
        let shortSide = min(width, height)
        let modules = code.sizeWithQuietZone
        let perModule = Int(0.12 * Double(shortSide)) / modules
        #expect(record.modules == code.size && record.modulePx == perModule && record.quietZonePx == 4 * perModule)
        #expect(record.box[2] == perModule * modules && record.box[3] == record.box[2])
        #expect(Double(shortSide) * 0.12 - Double(record.box[2]) < Double(modules), "within one module of 12 % of the short side")
        print("qr mark on \(width)×\(height): \(record.box[2]) px square for \(Int(0.12 * Double(shortSide))) px asked, \(code.size) modules (version \(code.version)) at \(perModule) px, quiet zone \(record.quietZonePx) px, at \(record.box[0]),\(record.box[1])")
        // Placed as a logo of that size would be (bottom-left, 3 %), then moved by the frame.
        let border = output.applied.frame ?? 0
        let (x, y) = MarkLayout.logoOrigin(position: .bottomLeft, image: .init(width, height), logo: .init(record.box[2], record.box[2]),
                                           padding: 0.03)
        #expect(record.box[0] == x + border && record.box[1] == y + border)

        // Measured from the decoded output: each module's centre, the quiet zone all round.
        let image = try decodeRGB(output.bytes)
        func luminance(moduleX: Int, _ moduleY: Int) -> Double {
            // The module's middle half, away from the JPEG's ringing at its edges.
            let left = record.box[0] + moduleX * perModule + perModule / 4, top = record.box[1] + moduleY * perModule + perModule / 4
            var sum = 0, count = 0
            for py in top..<(top + max(1, perModule / 2)) {
                for px in left..<(left + max(1, perModule / 2)) {
                    let p = image.pixel(px, py)
                    sum += Int(p[0]) + Int(p[1]) + Int(p[2])
                    count += 3
                }
            }
            return Double(sum) / Double(count)
        }
        var wrong: [String] = []
        for my in 0..<modules {
            for mx in 0..<modules {
                let dark = code.isDark(mx - QRCode.quietZone, my - QRCode.quietZone)
                let value = luminance(moduleX: mx, my)
                if dark ? value > 60 : value < 200 { wrong.append("(\(mx), \(my)): \(Int(value))") }
            }
        }
        #expect(wrong.isEmpty, "modules unlike the symbol (the quiet zone is the outer 4): \(wrong.prefix(10))")
        // Just outside the box, the photo again: the code takes no more room than it says.
        let outside = image.pixel(record.box[0] + record.box[2] + 2, record.box[1] + record.box[3] / 2)
        #expect(Set(outside).count > 1 || outside != [255, 255, 255])

        if let reason = QRScanner.unavailable { print("zbarimg part skipped: \(reason)"); return }
        #expect(try QRScanner.texts(in: output.bytes, suffix: ".jpg") == [Self.link])
    }
}
