import Codecs
import Foundation
import Pixels
import Testing

/// Headless Chromium from Debian (`scripts/bootstrap --browser`), when installed.
enum Chromium {
    static let path: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Common flags: no sandbox (tests run as root), no GPU, a throwaway profile, and no
    /// network at all, so a page that needed one would show it.
    static func flags(profile: String) -> [String] {
        ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--user-data-dir=" + profile, "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"]
    }
}

/// `report.html` of a batch with failures, opened from disk in a real browser.
@Suite(.serialized) struct ReportPageTests {
    static let template = """
        { version: 1, resize: { longSide: 200 }, colorCard: true,
          stitch: { width: 120, spacing: 4 } }
        """

    /// The page's text as HTML escapes it, so names with `&` or quotes are found as written.
    func escaped(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }

    @Test(.enabled(if: Chromium.path != nil,
                   "chromium is not installed (scripts/bootstrap --browser installs it; scripts/test does)"))
    func reportPageShowsEveryItemAndErrorInABrowser() throws {
        let dir = try Harness.tempDir()
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        try Harness.write(Self.template, to: dir + "/t.json5")
        try Harness.write(try Harness.jpeg(upright: Harness.marked(width: 300, height: 200)), to: dir + "/in/a landscape.jpg")
        try Harness.write(try Harness.jpeg(upright: Harness.marked(width: 200, height: 300), orientation: 6),
                          to: dir + "/in/b_sideways.jpg")
        try Harness.write(try Harness.jpeg(upright: Harness.marked(width: 240, height: 240)), to: dir + "/in/c café & bar #2.jpg")
        let big = try Harness.jpeg(upright: Harness.marked(width: 900, height: 600))
        try Harness.write(Array(big.prefix(big.count / 2)), to: dir + "/in/d_truncated.jpg")
        try Harness.write([UInt8](), to: dir + "/in/e_empty.jpg")
        try Harness.write(Array("not a photo\n".utf8), to: dir + "/in/f_text.jpg")
        let r = try Harness.run(["run", "--template", dir + "/t.json5", "--out", dir + "/out", dir + "/in"])
        #expect(r.status == 1, "\(r.stderr)")
        let batch = try Harness.batchFolder(in: dir + "/out")
        let report = try Harness.report(in: batch)
        let items = try #require(report["items"] as? [[String: Any]])
        #expect(items.count == 6)

        let html = try String(contentsOfFile: batch + "/report.html", encoding: .utf8)
        // Opens from disk: no script, nothing fetched from anywhere.
        #expect(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"))
        #expect(html.contains("name=\"viewport\""))
        for item in items where item["status"] as? String == "ok" {
            let thumb = try #require(item["thumbnail"] as? String)
            let (image, _) = try Harness.decode(batch + "/" + thumb)
            #expect(max(image.width, image.height) <= 480)
        }

        let chromium = try #require(Chromium.path)
        let page = URL(fileURLWithPath: batch + "/report.html").absoluteString
        let shot = dir + "/shot.png"
        // A phone-sized window, tall enough for the header and the first photos.
        let s = try Harness.exec(chromium, Chromium.flags(profile: dir + "/profile")
                                 + ["--window-size=412,2400", "--screenshot=" + shot, page], deadline: .seconds(120))
        #expect(s.status == 0, "\(s.stderr)")
        let (png, _) = try Harness.decode(shot)
        #expect(png.width == 412 && png.height == 2400)
        // Not blank: many colours, and the thumbnails' red corner blocks were drawn (the
        // images loaded from thumbs/ without a server).
        var colours = Set<Int>()
        var red = 0
        for y in stride(from: 0, to: png.height, by: 2) {
            for x in stride(from: 0, to: png.width, by: 2) {
                let p = png.pixel(x, y)
                colours.insert(Int(p[0]) << 16 | Int(p[1]) << 8 | Int(p[2]))
                if Harness.isRed(p) { red += 1 }
            }
        }
        #expect(colours.count > 50, "screenshot looks empty: \(colours.count) colours")
        #expect(red > 20, "no thumbnail visible in the screenshot")

        let d = try Harness.exec(chromium, Chromium.flags(profile: dir + "/profile") + ["--dump-dom", page],
                                 deadline: .seconds(120))
        #expect(d.status == 0, "\(d.stderr)")
        let dom = d.stdout
        #expect(dom.contains("Partly done"))
        for item in items {
            let source = try #require(item["source"] as? String)
            #expect(dom.contains(escaped(source)), "page lacks \(source)")
            if let error = item["error"] as? [String: Any] {
                let message = try #require(error["message"] as? String)
                let code = try #require(error["code"] as? String)
                #expect(dom.contains(escaped(message)) && dom.contains(code), "page lacks the error of \(source)")
            }
        }
        #expect(dom.contains("The file is damaged or cut short."))
        #expect(dom.contains("The file is empty."))
        // The story was not made, and the page says which photo stopped it.
        let warnings = try #require(report["warnings"] as? [String])
        #expect(warnings.contains { $0.contains("photo 4 (d_truncated.jpg)") })
        for w in warnings { #expect(dom.contains(escaped(w))) }
        // Links are relative and percent-encoded, so the odd name still opens.
        #expect(dom.contains("href=\"c%20caf%C3%A9%20&amp;%20bar%20%232.jpg\""), "\(dom)")
    }
}
