import Codecs
import Foundation
import Testing

/// A WebDriver client (W3C protocol, HTTP + JSON) for Debian's `chromedriver`, driving headless
/// Chromium: sessions, navigation, elements, typing, clicks, scripts, window sizes, screenshots.
final class WebDriver {
    static let driver = "/usr/bin/chromedriver"
    static var canRun: Bool { FileManager.default.isExecutableFile(atPath: driver) && Chromium.path != nil }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let process: SocketDaemon
    private let http: ConsoleClient
    private var session = ""

    /// Starts chromedriver and a browser whose downloads go to `downloads`.
    init(dir: String, downloads: String) throws {
        let port = try MetricsTests.freePort()
        process = try SocketDaemon([Self.driver, "--port=\(port)"], runtime: dir, logPath: dir + "/chromedriver.log")
        http = ConsoleClient(port: port)
        let ready = Poll.until(.seconds(60)) {
            (try? self.http.request("GET", "/status"))?.text.contains("\"ready\":true") == true
        }
        guard ready else { throw Failure(description: "chromedriver did not start: \(process.log)") }
        let options: [String: Any] = [
            "binary": Chromium.path!,
            // No network but loopback: every other address goes to a proxy that is not there
            // (Chromium sends loopback direct unless told `<-loopback>`, as the report test does).
            // /dev/shm is small in containers: the renderer would crash there.
            "args": ["--headless=new", "--window-size=1280,900", "--disable-dev-shm-usage"]
                + Chromium.flags(profile: dir + "/profile").filter { $0 != "--headless" && !$0.hasPrefix("--proxy-bypass-list") },
            "prefs": ["download.default_directory": downloads, "download.prompt_for_download": false,
                      "download.directory_upgrade": true, "safebrowsing.enabled": false],
        ]
        let answer = try call("POST", "/session", ["capabilities": ["alwaysMatch": ["browserName": "chrome", "goog:chromeOptions": options]]])
        guard let id = answer["sessionId"] as? String else { throw Failure(description: "no session: \(answer)") }
        session = id
    }

    deinit {
        _ = try? call("DELETE", "", nil)
        // chromedriver has no shutdown of its own but a command; the browser is gone already.
        process.signal(SIGKILL)
        process.wait(deadline: .seconds(30))
    }

    /// One command; its `value`.
    @discardableResult
    func call(_ method: String, _ path: String, _ body: [String: Any]? = [:]) throws -> [String: Any] {
        let full = path == "/session" ? path : "/session/\(session)\(path)"
        let data = try body.map { try JSONSerialization.data(withJSONObject: $0) } ?? Data()
        let r = try http.request(method, full, headers: body == nil ? [] : [("Content-Type", "application/json")], body: Array(data))
        let json = (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any] ?? [:]
        guard r.status == 200 else { throw Failure(description: "\(method) \(full): \(r.status) \(r.text.prefix(600))") }
        if path == "/session" { return json["value"] as? [String: Any] ?? [:] }
        return ["value": json["value"] ?? NSNull()]
    }

    func open(_ url: String) throws { try call("POST", "/url", ["url": url]) }

    var url: String { get throws { try call("GET", "/url")["value"] as? String ?? "" } }

    /// The first element matching a CSS selector.
    func element(_ css: String) throws -> String {
        let value = try call("POST", "/element", ["using": "css selector", "value": css])["value"] as? [String: Any]
        guard let id = value?.values.first as? String else { throw Failure(description: "no element \(css)") }
        return id
    }

    func type(_ text: String, into css: String) throws {
        try call("POST", "/element/\(try element(css))/value", ["text": text])
    }

    func click(_ css: String) throws {
        try call("POST", "/element/\(try element(css))/click")
    }

    /// Runs `script` in the page; its result.
    func run(_ script: String) throws -> Any? {
        let v = try call("POST", "/execute/sync", ["script": script, "args": []])["value"]
        return v is NSNull ? nil : v
    }

    func text(_ css: String) throws -> String {
        try run("var e = document.querySelector(\(Self.quoted(css))); return e ? e.textContent : '';") as? String ?? ""
    }

    func resize(width: Int, height: Int) throws {
        try call("POST", "/window/rect", ["width": width, "height": height])
    }

    /// A PNG of the viewport.
    func screenshot() throws -> [UInt8] {
        guard let base64 = try call("GET", "/screenshot")["value"] as? String, let data = Data(base64Encoded: base64) else {
            throw Failure(description: "no screenshot")
        }
        return Array(data)
    }

    static func quoted(_ s: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: [s]), as: UTF8.self).dropFirst().dropLast().description
    }
}

/// The console in a real browser (Debian's chromium and chromium-driver): log in, upload three
/// photos from the folder page, watch them finish on the dashboard without reloading, open the
/// batch's report, download its ZIP. Screenshots at 390 and 1280 px wide are kept in
/// `.build/artefacts/console/` (of the package; printed at the end).
@Suite(.serialized) struct ConsoleBrowserTests {
    static let artefacts = FileManager.default.currentDirectoryPath + "/.build/artefacts/console"

    @Test(.enabled(if: WebDriver.canRun && ConsoleFixture.canRun,
                   "chromium or chromium-driver is missing (scripts/bootstrap --browser installs them; scripts/test does)"))
    func aPersonUploadsWatchesAndDownloadsInABrowser() throws {
        let hot = try ConsoleFixture(template: """
            { version: 1, resize: { longSide: 160 }, colorCard: true, output: { format: "jpeg", quality: 80 } }
            """)
        try hot.addUser("anna", "anna's password", inboxes: ["shop"])
        let daemon = try hot.start()
        let base = "http://127.0.0.1:\(hot.port)"
        // Three photos on "the phone".
        let phone = hot.dir + "/phone"
        let downloads = hot.dir + "/downloads"
        for folder in [phone, downloads, Self.artefacts] { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        var photos: [String] = []
        for (i, (w, h)) in [(320, 240), (240, 320), (300, 300)].enumerated() {
            let path = phone + "/IMG_\(i + 1).jpg"
            try Harness.write(try Harness.jpeg(upright: Harness.marked(width: w, height: h)), to: path)
            photos.append(path)
        }
        let browser = try WebDriver(dir: hot.dir, downloads: downloads)

        // Not logged in: the console sends the browser to its login page.
        try browser.open(base + "/inbox/shop/")
        #expect(try browser.url.hasPrefix(base + "/login?next="), "\((try? browser.url) ?? "")\n\(daemon.log)")
        try browser.type("anna", into: "#user")
        try browser.type("anna's password", into: "#password")
        try browser.click(".login button")
        #expect(Poll.until(.seconds(30)) { (try? browser.url) == base + "/inbox/shop/" }, "\((try? browser.url) ?? "")")

        // The folder page at phone width: the form fits, nothing overflows sideways.
        try browser.resize(width: 390, height: 844)
        #expect(try browser.run("return document.documentElement.scrollWidth <= window.innerWidth;") as? Bool == true)
        try keep(try browser.screenshot(), "folder-390.png", width: 390)

        // Upload three photos: the script sends each with its own progress bar and answer.
        try browser.type(photos.joined(separator: "\n"), into: "input[type=file]")
        try browser.click("form.upload button")
        #expect(Poll.until(.seconds(60)) {
            (try? browser.run("return document.querySelectorAll('form.upload .files li.accepted').length;") as? Int) == 3
        }, "\((try? browser.text("form.upload .files")) ?? "")\n\(daemon.log)")
        let rows = try browser.text("form.upload .files")
        for i in 1...3 { #expect(rows.contains("IMG_\(i).jpg") && rows.contains("uploaded as IMG_\(i).jpg"), "\(rows)") }
        try keep(try browser.screenshot(), "folder-390-uploaded.png", width: 390)

        // The dashboard: the batch finishes while we watch; the page is never reloaded (a mark
        // set on it stays), its live part is refreshed by the script.
        try browser.open(base + "/")
        _ = try browser.run("window.photofinishMark = 'not reloaded'; return true;")
        let finished = Poll.until(.seconds(180)) {
            (try? browser.text("#folders"))?.contains("3 of 3 photos finished") == true
        }
        #expect(finished, "\((try? browser.text("#folders")) ?? "")\n\(daemon.log)")
        #expect(try browser.run("return window.photofinishMark;") as? String == "not reloaded")
        #expect(try browser.text("#folders").contains("complete"))
        try keep(try browser.screenshot(), "dashboard-390.png", width: 390)
        try browser.resize(width: 1280, height: 900)
        try keep(try browser.screenshot(), "dashboard-1280.png", width: 1280)

        // Open the batch from the dashboard, then its report.
        let id = try #require(hot.reports(hot.shop).keys.first)
        try browser.click("#folders a[href*='/batch/']")
        #expect(Poll.until(.seconds(30)) { (try? browser.url) == base + "/inbox/shop/batch/\(id)/" }, "\((try? browser.url) ?? "")")
        try keep(try browser.screenshot(), "batch-1280.png", width: 1280)
        try browser.click("a[href$='/report.html']")
        #expect(Poll.until(.seconds(30)) { (try? browser.url)?.hasSuffix("/report.html") == true })
        let report = try browser.run("return document.body.innerText;") as? String ?? ""
        for i in 1...3 { #expect(report.contains("IMG_\(i).jpg"), "\(report.prefix(500))") }
        // Its thumbnails load from the batch folder (each image has a size; the lazy ones are
        // asked for at once).
        _ = try browser.run("Array.from(document.images).forEach(function (i) { i.loading = 'eager'; }); return true;")
        #expect(Poll.until(.seconds(30)) {
            (try? browser.run("return Array.from(document.images).filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;") as? Int) ?? 0 >= 3
        }, "\((try? browser.run("return Array.from(document.images).map(function (i) { return i.src + ' ' + i.naturalWidth; }).join(', ');")) ?? "")")
        try keep(try browser.screenshot(), "report-1280.png", width: 1280)
        try browser.resize(width: 390, height: 844)
        try keep(try browser.screenshot(), "report-390.png", width: 390)

        // Download the ZIP with the browser, and check what it holds.
        try browser.open(base + "/inbox/shop/batch/\(id)/")
        try browser.click("a[href$='.zip']")
        let zip = downloads + "/\(id).zip"
        #expect(Poll.until(.seconds(60)) { FileManager.default.fileExists(atPath: zip) }, "\(hot.files(in: downloads))")
        try ConsoleTests.checkZip(zip, against: hot.shop + "/out/\(id)", id: id, dir: hot.dir)
        print("console: screenshots in \(Self.artefacts)/ (folder-390, folder-390-uploaded, dashboard-390, dashboard-1280, batch-1280, report-1280, report-390)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    /// Keeps a screenshot as an artefact, after checking it is `width` wide and not blank.
    private func keep(_ png: [UInt8], _ name: String, width: Int) throws {
        let path = Self.artefacts + "/" + name
        try Harness.write(png, to: path)
        let (image, _) = try Harness.decode(path)
        #expect(image.width == width, "\(name): \(image.width) px wide")
        var colours = Set<Int>()
        for y in stride(from: 0, to: image.height, by: 7) {
            for x in stride(from: 0, to: image.width, by: 7) {
                let p = image.pixel(x, y)
                colours.insert(Int(p[0]) << 16 | Int(p[1]) << 8 | Int(p[2]))
            }
        }
        #expect(colours.count > 8, "\(name) looks blank")
    }
}
