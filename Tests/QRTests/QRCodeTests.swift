import Foundation
import Pixels
import QR
import Testing

/// QR codes read back with zbarimg: what a phone's camera finds is exactly the link.
@Suite struct QRCodeTests {
    static let link = "https://photos.example.com/s/q3K9w_Zb0xT-4nQeLrA8VgHcYpUu1sDf2kMj6oNiEa7tPyBvCx5lWzRh0gFd3s9/"

    @Test func aLinkReadsBackExactly() throws {
        if let reason = QRScanner.unavailable { print("skipped: \(reason)"); return }
        let code = try QRCode(Self.link)
        #expect(code.size == 17 + 4 * code.version)
        for pixels in [2, 4, 10] {
            #expect(try QRScanner.texts(in: try code.png(pixelsPerModule: pixels)) == [Self.link])
        }
    }

    @Test(arguments: ["a", "0123456789", "HTTPS://EXAMPLE.COM/S/ABC/", "Grüße · 写真 ✓", "line one\nline two"])
    func anyTextReadsBack(_ text: String) throws {
        if let reason = QRScanner.unavailable { print("skipped: \(reason)"); return }
        let code = try QRCode(text, level: .high)
        // zbarimg gives one text a line.
        #expect(try QRScanner.texts(in: try code.png(pixelsPerModule: 4)) == text.split(separator: "\n").map(String.init))
    }

    /// The drawing keeps the quiet zone (four light modules on every side) and draws every
    /// module as a whole square of pixels.
    @Test func theImageKeepsItsQuietZoneAndWholeModules() throws {
        let code = try QRCode(Self.link)
        let ppm = 3
        let image = code.image(pixelsPerModule: ppm, dark: [10, 20, 30, 255], light: [250, 240, 230, 255])
        #expect(image.width == (code.size + 2 * QRCode.quietZone) * ppm && image.height == image.width)
        var darkInZone = 0, mismatched = 0
        for y in 0..<image.height {
            for x in 0..<image.width {
                let pixel = image.pixel(x, y)
                let mx = x / ppm - QRCode.quietZone, my = y / ppm - QRCode.quietZone
                let inSymbol = (0..<code.size).contains(mx) && (0..<code.size).contains(my)
                if !inSymbol && pixel != [250, 240, 230, 255] { darkInZone += 1 }
                if pixel != (code.isDark(mx, my) ? [10, 20, 30, 255] : [250, 240, 230, 255]) { mismatched += 1 }
            }
        }
        #expect(darkInZone == 0)
        #expect(mismatched == 0)
        // The three finder patterns: a dark 7 × 7 ring at three corners.
        for (cx, cy) in [(0, 0), (code.size - 7, 0), (0, code.size - 7)] {
            #expect(code.isDark(cx, cy) && code.isDark(cx + 6, cy + 6) && !code.isDark(cx + 1, cy + 1) && code.isDark(cx + 3, cy + 3))
        }
    }

    /// The SVG's path covers exactly the dark modules, shifted by the quiet zone, and its
    /// title is the text, escaped.
    @Test func theSVGDrawsTheSameModules() throws {
        let text = "https://example.com/s/a\"b<c>&d/"
        let code = try QRCode(text)
        let svg = code.svg(pixelsPerModule: 5)
        let side = code.size + 2 * QRCode.quietZone
        #expect(svg.contains("viewBox=\"0 0 \(side) \(side)\" width=\"\(side * 5)\" height=\"\(side * 5)\""))
        #expect(svg.contains("<title>https://example.com/s/a&quot;b&lt;c&gt;&amp;d/</title>"))
        #expect(!svg.contains("a\"b"))
        // Every "Mx yhNv1h-Nz" run, back into modules.
        let d = try #require(svg.split(separator: "d=\"").last?.split(separator: "\"").first)
        var drawn = Set<Int>()
        for run in d.split(separator: "z") {
            let numbers = run.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
            let (x, y, length) = (numbers[0], numbers[1], numbers[2])
            for i in 0..<length { drawn.insert((y - QRCode.quietZone) * code.size + x - QRCode.quietZone + i) }
        }
        var dark = Set<Int>()
        for y in 0..<code.size { for x in 0..<code.size where code.isDark(x, y) { dark.insert(y * code.size + x) } }
        #expect(drawn == dark)
    }

    @Test func whatCannotBeACodeIsRefusedWithWhy() {
        #expect(throws: QRCode.Refused.self) { try QRCode("") }
        #expect(throws: QRCode.Refused.self) { try QRCode("a\u{0}b") }
        do {
            _ = try QRCode(String(repeating: "x", count: 4000))
            Issue.record("a 4000-byte text made a QR code")
        } catch {
            #expect(error.description.contains("too long"))
        }
    }
}
