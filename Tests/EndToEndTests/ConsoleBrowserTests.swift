import Codecs
import Pixels
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

    /// Runs `script` in the page (its `arguments[0]`… are `args`); its result.
    func run(_ script: String, args: [Any] = []) throws -> Any? {
        let v = try call("POST", "/execute/sync", ["script": script, "args": args])["value"]
        return v is NSNull ? nil : v
    }

    /// How many elements match a CSS selector.
    func count(_ css: String) throws -> Int {
        try run("return document.querySelectorAll(\(Self.quoted(css))).length;") as? Int ?? 0
    }

    /// The window (tab) in use, a new one, and switching between them.
    var window: String { get throws { try call("GET", "/window")["value"] as? String ?? "" } }
    func newWindow() throws -> String {
        (try call("POST", "/window/new", ["type": "tab"])["value"] as? [String: Any])?["handle"] as? String ?? ""
    }
    func switchTo(_ handle: String) throws { try call("POST", "/window", ["handle": handle]) }

    /// The network as Chromium's DevTools slow it (bytes per second; nil: as it is).
    func throttleUploads(to bytesPerSecond: Int?) throws {
        if let bytesPerSecond {
            try call("POST", "/chromium/network_conditions", ["network_conditions": [
                "offline": false, "latency": 0, "download_throughput": -1, "upload_throughput": bytesPerSecond]])
        } else {
            try call("DELETE", "/chromium/network_conditions", nil)
        }
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

/// A day at a shop's counter in a real browser (Debian's chromium and chromium-driver), against
/// the real daemon: one browser for the whole suite, at a phone's width (390 px) and a
/// desktop's (1280 px). Each step's screenshots are kept in `.build/artefacts/console/`
/// (printed at the end):
/// 1. six photos uploaded from the phone, in two goes into one open batch, followed without a
///    reload to "Your 6 photos are ready" with their previews, the counts true on the way (the
///    page, `photofinish status` and STATUS.txt say the same at the same moment);
/// 2. a damaged photo dropped on the desktop page fails, is shown first with why, and is tried
///    again (once the template takes damaged photos) into a batch of its own;
/// 3. a batch finished again with the changed template;
/// 4. an administrator adds a login, who then logs in;
/// 5. a tab opened before its user's last login is told to reload, and then works;
/// 6. the daemon restarted in the middle of an upload: the upload goes on, nobody logs in again.
@Suite(.serialized) struct ConsoleBrowserTests {
    static let artefacts = FileManager.default.currentDirectoryPath + "/.build/artefacts/console"
    static let template = """
        { version: 1, resize: { longSide: 480 }, stitch: { width: 480, spacing: 8 }, output: { format: "jpeg", quality: 85 } }
        """

    @Test(.enabled(if: WebDriver.canRun && ConsoleFixture.canRun,
                   "chromium or chromium-driver is missing (scripts/bootstrap --browser installs them; scripts/test does)"))
    func aShopsDayInTheBrowser() throws {
        let started = ContinuousClock.now
        // Batches close 6 s after their last photo: the second half of the six joins the first.
        let hot = try ConsoleFixture(template: Self.template,
                                     timing: #"settle: "300ms", quiet: "6s", maxWait: "90s", workers: 1"#)
        try hot.addUser("anna", "anna's password", inboxes: ["shop"])
        try hot.addUser("boss", "the owner's password", admin: true)
        var daemon = try hot.start()
        defer { daemon.signal(SIGTERM); daemon.wait() }
        let base = "http://127.0.0.1:\(hot.port)"
        let phone = hot.dir + "/phone", downloads = hot.dir + "/downloads"
        for folder in [phone, downloads, Self.artefacts] { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        // The last three larger (12 MP): each takes a while, so their batch is seen on its way.
        let photos = try (1...6).map { i -> String in
            let path = phone + "/IMG_\(4300 + i).jpg"
            let (w, h) = i <= 3 ? (1600, 1200) : (4000, 3000)
            try Harness.write(try Harness.jpeg(upright: Scenery.photo(i, width: w, height: h)), to: path)
            return path
        }
        let browser = try WebDriver(dir: hot.dir, downloads: downloads)
        try browser.resize(width: 390, height: 844)

        // 1. Log in on the phone; the folder page fits its width.
        try browser.open(base + "/inbox/shop/")
        try browser.type("anna", into: "#user")
        try browser.type("anna's password", into: "#password")
        try keep(browser, "01-login", width: 390)
        try browser.click(".login button")
        #expect(Poll.until(.seconds(30)) { (try? browser.url) == base + "/inbox/shop/" }, "\((try? browser.url) ?? "")")
        daemon.waitUntilReady()
        #expect(try browser.run("return document.documentElement.scrollWidth <= window.innerWidth;") as? Bool == true)
        _ = try browser.run("window.photofinishMark = 'not reloaded'; return true;")
        try keep(browser, "02-folder", width: 390)

        // Three photos: finished while their batch is open, and said so everywhere alike.
        try browser.type(photos.prefix(3).joined(separator: "\n"), into: "input[type=file]")
        let openThree = Poll.until(.seconds(120)) {
            (try? browser.text(".result .detail"))?.contains("3 of 3 done (more photos may join)") == true
        }
        #expect(openThree, "\((try? browser.text(".result")) ?? "")\n\(daemon.log)")
        // `photofinish status` and STATUS.txt say the same (written within a second of a change).
        var status = ""
        #expect(Poll.until(.seconds(10), every: .milliseconds(300)) {
            status = (try? Harness.exec(Harness.binary, ["status", "--config", hot.config], deadline: .seconds(60),
                                        extraEnvironment: ["RUNTIME_DIRECTORY": hot.runtime]))?.stdout ?? ""
            return status.range(of: #"open batch \d{8}-\d{6}-[0-9a-f]{4} \(more photos may join\): 3 of 3 done"#, options: .regularExpression) != nil
        }, "\(status)")
        var statusText = ""
        #expect(Poll.until(.seconds(10)) {
            statusText = (try? String(contentsOfFile: hot.shop + "/STATUS.txt", encoding: .utf8)) ?? ""
            return statusText.contains("is open (more photos may join): 3 of 3 photos done.")
        }, "\(statusText)")
        try keep(browser, "03-three-done-open", width: 390)

        // Three more join it; the counts on the way never go back nor pass the total.
        try browser.type(photos.suffix(3).joined(separator: "\n"), into: "input[type=file]")
        var seen: [(done: Int, total: Int)] = []
        var midway = false
        let ready = Poll.until(.seconds(240), every: .milliseconds(100)) {
            if let counts = try? browser.run("var r = document.querySelector('.result'); return [Number(r.getAttribute('data-done')), Number(r.getAttribute('data-total'))];") as? [Int],
               counts.count == 2, counts[1] > 0, seen.last.map({ $0 != (counts[0], counts[1]) }) ?? true {
                seen.append((counts[0], counts[1]))
                if counts[1] == 6, counts[0] < 6, !midway { midway = (try? keep(browser, "04-on-the-way", width: 390)) != nil }
            }
            return (try? browser.text(".result .headline")) == "Your 6 photos are ready"
        }
        #expect(ready, "\((try? browser.text(".result")) ?? "")\n\(daemon.log)")
        #expect(seen.allSatisfy { $0.done <= $0.total }, "\(seen)")
        for (a, b) in zip(seen, seen.dropFirst()) where a.total == b.total { #expect(b.done >= a.done, "\(seen)") }
        #expect(seen.contains { $0.total == 6 }, "the batch of six was never shown on its way: \(seen)")
        print("console: the upload form's counts on the way: \(seen.map { "\($0.done)/\($0.total)" }.joined(separator: " → "))")
        #expect(try browser.run("return window.photofinishMark;") as? String == "not reloaded")
        #expect(Poll.until(.seconds(30)) {
            (try? browser.run("return Array.from(document.querySelectorAll('.ready-thumbs img')).filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;") as? Int) == 6
        })
        try keep(browser, "05-ready", width: 390)
        try browser.resize(width: 1280, height: 900)
        try keep(browser, "05-ready", width: 1280)
        let first = try #require(hot.reports(hot.shop).first { ($0.value["items"] as? [Any])?.count == 6 }?.key)
        try browser.click(".result .detail a")
        #expect(Poll.until(.seconds(30)) { (try? browser.url) == base + "/inbox/shop/batch/\(first)/" })
        #expect(try browser.count(".gallery .tile img") == 7)  // six photos and the story
        try keep(browser, "06-batch", width: 1280)
        try browser.resize(width: 390, height: 844)
        try keep(browser, "06-batch", width: 390)

        // 2. On the desktop, a damaged photo dropped onto the page: it fails, shown with why.
        try browser.resize(width: 1280, height: 900)
        try browser.open(base + "/inbox/shop/")
        let whole = try Harness.jpeg(upright: Scenery.photo(9, width: 1200, height: 900))
        let damaged = Array(whole.prefix(whole.count * 2 / 3))
        _ = try browser.run("""
            var bytes = Uint8Array.from(atob(arguments[0]), function (c) { return c.charCodeAt(0); });
            var data = new DataTransfer();
            data.items.add(new File([bytes], 'shop-window.jpg', { type: 'image/jpeg' }));
            ['dragenter', 'dragover', 'drop'].forEach(function (type) {
              document.dispatchEvent(new DragEvent(type, { dataTransfer: data, bubbles: true, cancelable: true }));
            });
            return true;
            """, args: [Data(damaged).base64EncodedString()])
        #expect(Poll.until(.seconds(120)) { (try? browser.text(".result .headline")) == "Your photo could not be finished" },
                "\((try? browser.text(".result")) ?? "")\n\(daemon.log)")
        try browser.click(".result .detail a")
        #expect(Poll.until(.seconds(30)) { (try? browser.count(".failure")) == 1 })
        #expect(try browser.text(".failure").contains("The photo is damaged"))
        try keep(browser, "07-failed", width: 1280)
        let failedBatch = try #require(try browser.url.split(separator: "/").dropLast(0).last.map(String.init))
        // The shop takes damaged photos from now on (the template, then a reload); try it again.
        try Harness.write(Self.template.replacingOccurrences(of: "version: 1,", with: "version: 1, damaged: \"warn\","),
                          to: hot.dir + "/templates/small.json5")
        try reload(daemon)
        try browser.click(".failure form button")
        #expect(Poll.until(.seconds(30)) { (try? browser.text(".ok-note"))?.contains("is being finished again") == true })
        let retried = Poll.until(.seconds(120)) {
            hot.reports(hot.shop).values.contains { $0["redoes"] as? String == failedBatch && $0["status"] as? String == "complete" }
        }
        #expect(retried, "\(daemon.log)")
        try browser.open(base + "/inbox/shop/batch/\(failedBatch)/")
        #expect(try browser.text(".batch-head").contains("Finished again in"))
        try keep(browser, "08-retried", width: 1280)

        // 3. The first batch finished again with the template as it is now (smaller).
        try Harness.write(Self.template.replacingOccurrences(of: "longSide: 480", with: "longSide: 320"), to: hot.dir + "/templates/small.json5")
        try reload(daemon)
        try browser.open(base + "/inbox/shop/batch/\(first)/")
        try browser.click(".actions form[action$='/redo'] button")
        #expect(Poll.until(.seconds(30)) { (try? browser.text(".ok-note"))?.contains("being finished again") == true })
        var redone: [String: Any]?
        #expect(Poll.until(.seconds(180)) {
            redone = hot.reports(hot.shop).values.first { $0["redoes"] as? String == first }
            return redone != nil
        }, "\(daemon.log)")
        let sizes = ((redone?["items"] as? [[String: Any]]) ?? []).compactMap { (($0["outputs"] as? [[String: Any]])?.first?["size"] as? [Int])?.max() }
        #expect(sizes == Array(repeating: 320, count: 6), "\(sizes)")
        try browser.open(base + "/inbox/shop/")
        try keep(browser, "09-folder-batches", width: 1280)
        try browser.resize(width: 390, height: 844)
        try keep(browser, "09-folder-batches", width: 390)

        // 4. The owner adds a login; it logs in.
        try logOut(browser)
        try logIn(browser, base, "boss", "the owner's password", next: "/users")
        try browser.type("carl", into: "#name")
        try browser.type("carl's password", into: "#new-password")
        try browser.click(".add-user input[value='shop']")
        try keep(browser, "10-users", width: 390)
        try browser.click(".add-user button")
        #expect(Poll.until(.seconds(30)) { (try? browser.text(".ok-note"))?.contains("carl may log in now") == true })
        try browser.resize(width: 1280, height: 900)
        try keep(browser, "10-users", width: 1280)
        try logOut(browser)
        try browser.resize(width: 390, height: 844)
        try logIn(browser, base, "carl", "carl's password", next: "/")
        #expect(try browser.text("#folders").contains("shop") && !(try browser.text("#folders").contains("studio")))
        try keep(browser, "11-carl", width: 390)

        // 5. A stale tab: carl logs out and in again in another tab; the first tab's upload
        // is told to reload the page (not "refused"), and works once it is.
        try browser.open(base + "/inbox/shop/")
        let stale = try browser.window
        let other = try browser.newWindow()
        try browser.switchTo(other)
        try browser.open(base + "/")
        try logOut(browser)
        try logIn(browser, base, "carl", "carl's password", next: "/")
        try browser.switchTo(stale)
        let extra = phone + "/IMG_4400.jpg"
        try Harness.write(try Harness.jpeg(upright: Scenery.photo(7, width: 1200, height: 900)), to: extra)
        try browser.type(extra, into: "input[type=file]")
        #expect(Poll.until(.seconds(30)) { (try? browser.text("#notice"))?.contains("This page is out of date") == true })
        #expect(try browser.text(".files").contains("not sent: this page is out of date"))
        #expect(try browser.run("return document.querySelector('.result').classList.contains('done');") as? Bool == false)
        try keep(browser, "12-stale-tab", width: 390)
        try browser.click("#notice button")
        #expect(Poll.until(.seconds(30)) { (try? browser.run("return document.getElementById('notice').hidden;") as? Bool) == true })
        try browser.type(extra, into: "input[type=file]")
        #expect(Poll.until(.seconds(120)) { (try? browser.text(".result .headline")) == "Your photo is ready" }, "\(daemon.log)")

        // 6. The daemon restarted while two photos are being sent (slowly): they go on once
        // it is back, in the same session.
        try browser.open(base + "/inbox/shop/")
        let slow = try (1...2).map { i -> String in
            let path = phone + "/IMG_45\(i).jpg"
            try Harness.write(try Harness.jpeg(upright: Scenery.photo(20 + i, width: 2400, height: 1800), quality: 97), to: path)
            return path
        }
        try browser.throttleUploads(to: 400_000)
        try browser.type(slow.joined(separator: "\n"), into: "input[type=file]")
        #expect(Poll.until(.seconds(30)) {
            (try? browser.run("var p = document.querySelector('.files li progress'); return p && p.value > 0 && p.value < p.max;") as? Bool) == true
        })
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
        #expect(Poll.until(.seconds(30)) { (try? browser.text(".result .headline")) == "Waiting for PhotoFinish…" })
        try keep(browser, "13-restart", width: 390)
        daemon = try hot.start()
        try browser.throttleUploads(to: nil)
        #expect(Poll.until(.seconds(180)) { (try? browser.text(".result .headline")) == "Your 2 photos are ready" },
                "\((try? browser.text(".result")) ?? "")\n\(daemon.log)")
        #expect(try browser.url == base + "/inbox/shop/")
        try keep(browser, "14-after-restart", width: 390)

        print("console: the browser's day took \(ContinuousClock.now - started); screenshots in \(Self.artefacts)/")
    }

    /// SIGHUP, and the reload said done in the log.
    private func reload(_ daemon: SocketDaemon) throws {
        let before = daemon.log.components(separatedBy: "reloaded").count
        daemon.signal(SIGHUP)
        #expect(Poll.until(.seconds(60)) { daemon.log.components(separatedBy: "reloaded").count > before }, "\(daemon.log)")
    }

    private func logOut(_ browser: WebDriver) throws {
        try browser.click(".logout button")
        #expect(Poll.until(.seconds(30)) { (try? browser.url)?.contains("/login") == true })
    }

    private func logIn(_ browser: WebDriver, _ base: String, _ user: String, _ password: String, next: String) throws {
        try browser.open(base + "/login?next=" + next)
        try browser.type(user, into: "#user")
        try browser.type(password, into: "#password")
        try browser.click(".login button")
        #expect(Poll.until(.seconds(30)) { (try? browser.url) == base + next }, "\((try? browser.url) ?? "")")
    }

    /// Keeps a screenshot as an artefact (`NAME-WIDTH.png`), after checking it is that wide
    /// and not blank.
    @discardableResult
    private func keep(_ browser: WebDriver, _ name: String, width: Int) throws -> String {
        // The pictures in view loaded first (a screenshot of grey squares shows nothing).
        _ = Poll.until(.seconds(10)) {
            (try? browser.run("return Array.from(document.images).filter(function (i) { return i.getBoundingClientRect().top < window.innerHeight; }).every(function (i) { return i.complete; });") as? Bool) == true
        }
        let path = Self.artefacts + "/\(name)-\(width).png"
        try Harness.write(try browser.screenshot(), to: path)
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
        return path
    }
}

/// Photos that look like photos (a sky, a sun, hills, noise), each its own: what the gallery's
/// screenshots show.
enum Scenery {
    static func photo(_ seed: Int, width: Int, height: Int) -> Image {
        var image = Canvas(width: width, height: height, channels: 3, fill: [0, 0, 0])
        let hue = Double(seed % 7) / 7
        func mix(_ a: Double, _ b: Double, _ t: Double) -> Double { a + (b - a) * t }
        let sunX = Double(width) * (0.2 + 0.6 * Double((seed * 37) % 100) / 100), sunY = Double(height) * 0.28
        var state = UInt64(seed * 7919 + 17)
        image.withUnsafeMutableRows { rows in
            for y in 0..<height {
                let row = rows[y]
                let v = Double(y) / Double(height)
                for x in 0..<width {
                    let u = Double(x) / Double(width)
                    let hill1 = 0.62 + 0.08 * sin(u * 6.3 + Double(seed)) + 0.03 * sin(u * 23 + Double(seed) * 2)
                    let hill2 = 0.75 + 0.06 * sin(u * 4.1 + Double(seed) * 3)
                    var r: Double, g: Double, b: Double
                    if v < hill1 {
                        r = mix(70 + 120 * hue, 250, v * 1.2); g = mix(120, 200, v); b = mix(230, 190 - 60 * hue, v)
                        let d = hypot(Double(x) - sunX, Double(y) - sunY) / Double(height)
                        if d < 0.09 { r = 255; g = 236; b = 170 } else if d < 0.25 { let t = (0.25 - d) / 0.16 * 0.5; r = mix(r, 255, t); g = mix(g, 220, t); b = mix(b, 160, t) }
                    } else if v < hill2 {
                        r = 60 + 40 * hue; g = 110 + 30 * sin(u * 40); b = 70
                    } else {
                        r = 40 + 30 * hue; g = 80 + 20 * v; b = 45
                    }
                    state = state &* 6364136223846793005 &+ 1442695040888963407
                    let n = Double(Int(state >> 59)) - 16
                    row[x * 3] = UInt8(max(0, min(255, r + n)))
                    row[x * 3 + 1] = UInt8(max(0, min(255, g + n)))
                    row[x * 3 + 2] = UInt8(max(0, min(255, b + n)))
                }
            }
        }
        return image.finished()
    }
}
