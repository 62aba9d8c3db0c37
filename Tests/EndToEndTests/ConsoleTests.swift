import Foundation
import Testing

/// Two hot folders (shop, studio), a users file made with `photofinish user add`, and the real
/// daemon serving its console on a loopback port that `systemd-socket-activate --fdname=web`
/// passes in, exactly as `photofinish-web.socket` would.
struct ConsoleFixture {
    static let activate = "/usr/bin/systemd-socket-activate"
    static var canRun: Bool { FileManager.default.isExecutableFile(atPath: activate) }

    let dir: String
    let config: String
    let runtime: String
    let port: UInt16
    let shop: String
    let studio: String

    /// - Parameter timing: the config's batch timing and workers (quick batches by default).
    init(name: String = #function, maxFileBytes: String = "8MiB", template: String = HotFolderFixture.template,
         timing: String = #"settle: "300ms", quiet: "700ms", maxWait: "20s", workers: 2"#) throws {
        dir = try Harness.tempDir(name)
        shop = dir + "/shop"
        studio = dir + "/studio"
        runtime = dir + "/run"
        config = dir + "/photofinish.json5"
        port = try MetricsTests.freePort()
        try FileManager.default.createDirectory(atPath: dir + "/templates", withIntermediateDirectories: true)
        try Harness.write(template, to: dir + "/templates/small.json5")
        try Harness.write("""
            { templatesDir: "templates", users: "users.json5",
              inboxes: [ { name: "shop", root: "\(shop)", template: "small" }, { name: "studio", root: "\(studio)", template: "small" } ],
              \(timing), rescanInterval: "2s", maxFileBytes: "\(maxFileBytes)" }
            """, to: config)
    }

    /// `photofinish user add NAME --inbox …|--admin --password-stdin`, as an administrator types it.
    func addUser(_ name: String, _ password: String, inboxes: [String] = [], admin: Bool = false) throws {
        let scope = admin ? "--admin" : "--inbox " + inboxes.joined(separator: ",")
        let r = try Harness.exec("/bin/sh", ["-c", "printf '%s\\n' \"$PW\" | \"$BIN\" user add \(name) \(scope) --config \"$CONFIG\" --password-stdin"],
                                 deadline: .seconds(180), extraEnvironment: ["PW": password, "BIN": Harness.binary, "CONFIG": config])
        #expect(r.status == 0, "user add: \(r.stderr)")
    }

    /// The daemon started with anna (shop only) logged in and ready to upload: her client, and
    /// the form token of the shop's page. The console answers from its socket before the
    /// folders are taken up (under load the shop's drop/ may not exist yet: 503 with
    /// Retry-After): this returns once the daemon is ready.
    func startWithAnna() throws -> (daemon: SocketDaemon, anna: ConsoleClient, token: String) {
        try addUser("anna", "anna's password", inboxes: ["shop"])
        let daemon = try start()
        let anna = ConsoleClient(port: port)
        #expect(try anna.login("anna", "anna's password").status == 303, "\(daemon.log)")
        let token = try anna.csrf(on: "/inbox/shop/")
        daemon.waitUntilReady()
        return (daemon, anna, token)
    }

    func start(environment: [String: String] = [:]) throws -> SocketDaemon {
        // systemd-socket-activate hands the program only TERM, PATH, USER, HOME and what `-E`
        // names: the daemon's own runtime folder (its status, which `status` reads there alone)
        // and the test's settings are named.
        let passed = ["RUNTIME_DIRECTORY": runtime, "PHOTOFINISH_PROOF_SHRINK": "16"].merging(environment) { $1 }
        return try SocketDaemon([Self.activate, "-l", "127.0.0.1:\(port)", "--fdname=web"] + passed.sorted { $0.key < $1.key }.flatMap { ["-E", "\($0.key)=\($0.value)"] }
                                + [Harness.binary, "daemon", "--config", config],
                                runtime: runtime, logPath: dir + "/daemon.log", environment: environment)
    }

    func files(in folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    /// Published batch ids of a hot folder, with their reports (as plain JSON).
    func reports(_ root: String) -> [String: [String: Any]] {
        var out: [String: [String: Any]] = [:]
        for id in files(in: root + "/out") {
            if let data = FileManager.default.contents(atPath: root + "/out/" + id + "/report.json"),
               let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any] {
                out[id] = json
            }
        }
        return out
    }
}

/// A daemon started the way systemd starts it on a socket (`systemd-socket-activate`), spawned
/// with `posix_spawn` and reaped with `waitpid` here. Not a Foundation `Process`: that one
/// watches its child through a socket the child inherits, and `systemd-socket-activate` closes
/// every inherited descriptor, which makes Foundation's single watcher thread wait in
/// `waitpid` for the daemon, and no other child of the test process is seen to end meanwhile.
final class SocketDaemon {
    let pid: pid_t
    let logPath: String
    private var status: Int32?

    init(_ argv: [String], runtime: String, logPath: String, environment: [String: String] = [:]) throws {
        self.logPath = logPath
        var env = ProcessInfo.processInfo.environment
        env["RUNTIME_DIRECTORY"] = runtime
        env["JOURNAL_STREAM"] = nil
        env["NOTIFY_SOCKET"] = nil
        env["PHOTOFINISH_PROOF_SHRINK"] = "16"
        env.merge(environment) { $1 }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in cArgs + cEnv { free(p) } }
        var pid: pid_t = 0
        let r = posix_spawn(&pid, argv[0], &actions, nil, cArgs, cEnv)
        guard r == 0 else { throw POSIXError(POSIXErrorCode(rawValue: r) ?? .EIO) }
        self.pid = pid
    }

    deinit {
        if isRunning {
            kill(pid, SIGKILL)
            _ = wait(deadline: .seconds(10))
        }
    }

    var isRunning: Bool {
        guard status == nil else { return false }
        var st: Int32 = 0
        if waitpid(pid, &st, WNOHANG) == pid { status = st }
        return status == nil
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func signal(_ sig: Int32) { kill(pid, sig) }

    @discardableResult
    func waitUntilReady(deadline: Duration = .seconds(60)) -> Bool {
        let ok = Poll.until(deadline) { self.log.contains("ready: watching") || !self.isRunning }
        if !ok { Issue.record("the daemon did not get ready within \(deadline); log:\n\(log)") }
        return ok
    }

    /// The exit status (SIGKILL after the deadline, and the test fails).
    @discardableResult
    func wait(deadline: Duration = .seconds(60)) -> Int32 {
        if !Poll.until(deadline, { !self.isRunning }) {
            Issue.record("the daemon did not exit within \(deadline); log:\n\(log)")
            kill(pid, SIGKILL)
            var st: Int32 = 0
            waitpid(pid, &st, 0)
            status = st
        }
        let st = status ?? 0
        return (st & 0x7f) == 0 ? (st >> 8) & 0xff : 128 + (st & 0x7f)
    }
}

/// The console over HTTP, without a browser (SPEC §9): sessions, folders, CSRF, traversal,
/// names, the size limit, the ZIP, idle connections. Each test runs its own daemon.
struct ConsoleTests {
    static let skipReason = "systemd-socket-activate is missing (apt-get install systemd): the console is not tested"

    @Test(.enabled(if: ConsoleFixture.canRun, Comment(rawValue: skipReason)))
    func sessionsAndFoldersAreChecked() throws {
        let hot = try ConsoleFixture()
        try hot.addUser("anna", "anna's password", inboxes: ["shop"])
        try hot.addUser("boss", "the owner's password", admin: true)
        let daemon = try hot.start()
        let anon = ConsoleClient(port: hot.port)

        // No session: pages redirect to the login, actions answer 401.
        for path in ["/", "/inbox/shop/", "/inbox/studio/batch/20261129-150405-3f2a/", "/inbox/shop/batch/20261129-150405-3f2a.zip"] {
            let r = try anon.request("GET", path)
            #expect(r.status == 303, "\(path): \(r.status)\n\(daemon.log)")
            #expect(r.header("Location") == "/login?next=" + (path.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? ""))
        }
        daemon.waitUntilReady()
        #expect(try anon.request("POST", "/inbox/shop/upload", headers: [("Content-Type", "multipart/form-data; boundary=x")], body: Array("--x--\r\n".utf8)).status == 401)
        #expect(try anon.request("POST", "/logout").status == 401)
        #expect(hot.files(in: hot.shop + "/drop").isEmpty)

        // The login page: its form token, and a wrong password is refused and logged.
        let login = try anon.request("GET", "/login")
        #expect(login.status == 200)
        #expect(login.header("Content-Security-Policy")?.contains("script-src 'self'") == true)
        #expect(login.text.contains("name=\"user\"") && login.text.contains("name=\"password\"") && login.text.contains("name=\"csrf\""))
        #expect(try anon.login("anna", "wrong").status == 401)
        #expect(Poll.until(.seconds(10)) { daemon.log.contains("failed login as 'anna'") }, "\(daemon.log)")
        // A login form without its token (another site's form) is refused.
        let forged = try ConsoleClient(port: hot.port).request("POST", "/login", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                                               body: Array("user=anna&password=anna%27s+password".utf8))
        #expect(forged.status == 403)

        // anna: shop only.
        let anna = ConsoleClient(port: hot.port)
        let ok = try anna.login("anna", "anna's password", next: "/inbox/shop/")
        #expect(ok.status == 303 && ok.header("Location") == "/inbox/shop/", "\(ok.status) \(ok.text)")
        let cookie = try #require(ok.headers("Set-Cookie").first { $0.hasPrefix("photofinish_session=") })
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Max-Age="))
        #expect(!cookie.contains("Secure"), "plain HTTP: no Secure flag")
        let dashboard = try anna.request("GET", "/")
        #expect(dashboard.status == 200)
        #expect(dashboard.text.contains("href=\"/inbox/shop/\"") && !dashboard.text.contains("studio"))

        // A batch in studio, to ask for its files.
        let boss = ConsoleClient(port: hot.port)
        #expect(try boss.login("boss", "the owner's password").status == 303)
        let bossToken = try boss.csrf(on: "/inbox/studio/")
        #expect(try boss.upload("studio", [("s.jpg", try HotFolderFixture.photo(1))], csrf: bossToken).status == 200)
        #expect(Poll.until(.seconds(120)) { hot.reports(hot.studio).count == 1 }, "\(daemon.log)")
        let studioBatch = try #require(hot.reports(hot.studio).keys.first)
        #expect(try boss.request("GET", "/inbox/studio/batch/\(studioBatch)/s.jpg").status == 200)
        let bossHome = try boss.request("GET", "/").text
        #expect(bossHome.contains("/inbox/shop/") && bossHome.contains("/inbox/studio/"))

        // anna gets 403 on studio's pages, files, ZIP, proof and upload; nothing lands there.
        let annaToken = try anna.csrf(on: "/inbox/shop/")
        for path in ["/inbox/studio/", "/inbox/studio", "/inbox/studio/batch/\(studioBatch)/", "/inbox/studio/batch/\(studioBatch)/s.jpg",
                     "/inbox/studio/batch/\(studioBatch)/report.json", "/inbox/studio/batch/\(studioBatch).zip", "/inbox/studio/proof.png",
                     "/inbox/nosuch/"] {
            #expect(try anna.request("GET", path).status == 403, "\(path)")
        }
        let intruder = try anna.upload("studio", [("in.jpg", try HotFolderFixture.photo(2))], csrf: annaToken)
        #expect(intruder.status == 403)
        #expect(hot.files(in: hot.studio + "/drop").isEmpty)
        #expect(Poll.until(.seconds(30)) { hot.files(in: hot.studio + "/.work").isEmpty }, "\(hot.files(in: hot.studio + "/.work"))")

        // An upload without the form's token, or with another session's, is refused: nothing left.
        for token in [nil, bossToken] {
            let r = try anna.upload("shop", [("x.jpg", try HotFolderFixture.photo(3))], csrf: token)
            #expect(r.status == 403, "\(r.status) \(r.text)")
        }
        #expect(hot.files(in: hot.shop + "/drop").isEmpty && hot.files(in: hot.shop + "/.work").isEmpty)

        // Log out: the session is gone (the old cookie no longer works either).
        let old = anna.cookies
        #expect(try anna.request("POST", "/logout", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                 body: Array("csrf=\(annaToken)".utf8)).status == 303)
        anna.cookies = old
        #expect(try anna.request("GET", "/").status == 303)

        // A removed user's session ends at their next request.
        let r = try Harness.run(["user", "remove", "boss", "--config", hot.config])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try boss.request("GET", "/").status == 303)

        // Failed logins from one address are slowed: after three, the next must wait (even
        // with the right password), and the wait doubles.
        let guesser = ConsoleClient(port: hot.port)
        var statuses: [Int] = []
        for i in 0..<3 { statuses.append(try guesser.login("anna", "guess \(i)").status) }
        #expect(statuses == [401, 401, 401])
        let throttled = try guesser.login("anna", "anna's password")
        #expect(throttled.status == 429 && throttled.header("Retry-After") != nil, "\(throttled.status)")
        #expect(throttled.text.contains("Too many failed logins"))
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    @Test(.enabled(if: ConsoleFixture.canRun, Comment(rawValue: skipReason)))
    func uploadsLandCleanedAndTheBatchIsServedAndZipped() throws {
        let hot = try ConsoleFixture()
        let (daemon, anna, token) = try hot.startWithAnna()
        let photos = try (1...3).map { try HotFolderFixture.photo($0) }
        let r = try anna.upload("shop", [("../../x.jpg", photos[0]), ("<script>alert(1)</script>.jpg", photos[1]), ("x.jpg", photos[2])],
                                csrf: token, json: false)
        #expect(r.status == 200, "\(r.text)")
        // The answer names each file as sent, escaped, and where it landed.
        #expect(r.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;.jpg") && !r.text.contains("<script>alert"))
        #expect(r.text.contains("drop/x.jpg") && r.text.contains("drop/x (2).jpg") && r.text.contains("drop/script&gt;.jpg"))
        #expect(Poll.until(.seconds(120)) { hot.reports(hot.shop).count == 1 }, "\(daemon.log)")
        let (id, report) = try #require(hot.reports(hot.shop).first)
        let sources = ((report["items"] as? [[String: Any]]) ?? []).compactMap { $0["source"] as? String }.sorted()
        #expect(sources == ["script>.jpg", "x (2).jpg", "x.jpg"])
        // The originals are the bytes sent, whole.
        #expect(try Harness.read(hot.shop + "/originals/\(id)/x.jpg") == photos[0])
        #expect(try Harness.read(hot.shop + "/originals/\(id)/x (2).jpg") == photos[2])
        #expect(Poll.until(.seconds(30)) { hot.files(in: hot.shop + "/.work").isEmpty }, "\(hot.files(in: hot.shop + "/.work"))")

        // The folder page lists the batch; the batch page its files, names escaped.
        let folder = try anna.request("GET", "/inbox/shop/").text
        #expect(folder.contains("/inbox/shop/batch/\(id)/") && folder.contains("name=\"photos\"") && folder.contains("multiple"))
        let page = try anna.request("GET", "/inbox/shop/batch/\(id)/")
        #expect(page.status == 200)
        #expect(page.text.contains("script&gt;.jpg") && !page.text.contains("<script>alert") && page.text.contains("report.html"))
        let html = try anna.request("GET", "/inbox/shop/batch/\(id)/report.html")
        #expect(html.status == 200 && html.header("Content-Type")?.hasPrefix("text/html") == true)
        #expect(html.header("Content-Security-Policy")?.contains("script") == false || html.header("Content-Security-Policy")?.contains("default-src 'none'") == true)
        let served = try anna.request("GET", "/inbox/shop/batch/\(id)/x.jpg")
        #expect(served.status == 200 && served.header("Content-Type") == "image/jpeg")
        #expect(served.body == (try Harness.read(hot.shop + "/out/\(id)/x.jpg")))

        // Traversal, encoded or not, and symlinks inside out/ pointing out: 404.
        try "secret".write(toFile: hot.dir + "/secret.txt", atomically: true, encoding: .utf8)
        #expect(symlink(hot.dir + "/secret.txt", hot.shop + "/out/\(id)/evil.jpg") == 0)
        #expect(symlink(hot.dir, hot.shop + "/out/\(id)/evildir") == 0)
        #expect(symlink(hot.dir, hot.shop + "/out/20261129-150405-3f2a") == 0)
        for path in ["/inbox/shop/batch/\(id)/../../../secret.txt", "/inbox/shop/batch/\(id)/%2e%2e/%2e%2e/%2e%2e/secret.txt",
                     "/inbox/shop/batch/\(id)/..%2f..%2f..%2fsecret.txt", "/inbox/shop/batch/\(id)/%2E%2E%2F%2E%2E%2Fsecret.txt",
                     "/inbox/shop/batch/\(id)/evil.jpg", "/inbox/shop/batch/\(id)/evildir/secret.txt",
                     "/inbox/shop/batch/20261129-150405-3f2a/secret.txt", "/inbox/shop/batch/20261129-150405-3f2a/",
                     "/inbox/shop/%2e%2e/studio/", "/inbox/shop/batch/\(id)/thumbs%2fx.jpg", "/inbox/shop/batch/\(id)/.%2e/x.jpg"] {
            let r = try anna.request("GET", path)
            #expect(r.status == 404, "\(path): \(r.status)")
            #expect(!r.text.contains("secret"), "\(path)")
        }
        // Symlinks are not listed, nor put in the ZIP.
        #expect(!(try anna.request("GET", "/inbox/shop/batch/\(id)/").text.contains("evil")))

        // The ZIP: the photos (every output), byte for byte, read back by Python's zipfile;
        // with the report, every file of out/<id>/ (no symlink).
        let zip = try anna.request("GET", "/inbox/shop/batch/\(id).zip")
        #expect(zip.status == 200 && zip.header("Content-Type") == "application/zip")
        #expect(zip.header("Content-Disposition")?.contains("\(id).zip") == true)
        try Harness.write(zip.body, to: hot.dir + "/batch.zip")
        try Self.checkZip(hot.dir + "/batch.zip", against: hot.shop + "/out/\(id)", id: id, dir: hot.dir, report: false)
        let whole = try anna.request("GET", "/inbox/shop/batch/\(id).zip?report=1")
        try Harness.write(whole.body, to: hot.dir + "/whole.zip")
        try Self.checkZip(hot.dir + "/whole.zip", against: hot.shop + "/out/\(id)", id: id, dir: hot.dir)
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    /// The ZIP holds `<id>/…` for each regular file under `folder` (`report` false: the photos
    /// its report lists as outputs only), each the same bytes, named as Windows can unpack them.
    static func checkZip(_ zip: String, against folder: String, id: String, dir: String, report: Bool = true) throws {
        let python = "/usr/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            print("skipped: python3 is missing: the ZIP's contents are not checked")
            return
        }
        let out = dir + "/unzipped-\(UInt32.random(in: 0...UInt32.max))"
        let r = try Harness.exec(python, ["-c", """
            import sys, zipfile
            z = zipfile.ZipFile(sys.argv[1])
            bad = z.testzip()
            if bad: sys.exit('bad CRC: ' + bad)
            for i in z.infolist(): print(i.filename)
            z.extractall(sys.argv[2])
            """, zip, out], deadline: .seconds(180))
        #expect(r.status == 0, "\(r.stderr)")
        let names = r.stdout.split(separator: "\n").map(String.init).sorted()
        // Regular files only, walked without following a symlink (the test put symlinks there).
        var expected: [String] = []
        func walk(_ relative: String) {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder + relative)) ?? [] {
                var st = stat()
                guard lstat(folder + relative + "/" + name, &st) == 0 else { continue }
                if (st.st_mode & S_IFMT) == S_IFREG { expected.append(id + relative + "/" + name) }
                if (st.st_mode & S_IFMT) == S_IFDIR { walk(relative + "/" + name) }
            }
        }
        walk("")
        if !report {
            let json = try JSONSerialization.jsonObject(with: Data(try Harness.read(folder + "/report.json"))) as? [String: Any]
            let items = (json?["items"] as? [[String: Any]]) ?? []
            let outputs = Set(items.flatMap { (($0["outputs"] as? [[String: Any]]) ?? []).compactMap { $0["file"] as? String } }
                              + ((json?["outputs"] as? [[String: Any]]) ?? []).compactMap { $0["file"] as? String })
            expected = expected.filter { outputs.contains(String($0.dropFirst(id.count + 1))) }
        }
        // Names as Windows takes them: its reserved characters as `_`.
        func windows(_ name: String) -> String { String(name.map { ":*?\"<>|\\".contains($0) ? "_" : $0 }) }
        #expect(names == expected.map(windows).sorted())
        for name in expected {
            #expect(try Harness.read(out + "/" + windows(name)) == (try Harness.read(folder + String(name.dropFirst(id.count)))), "\(name)")
        }
    }

    /// A phone names every photo `image.jpg`: four sent one after another while their batch is
    /// open (the first already claimed into it) each land at once under a name of their own and
    /// are finished together; nothing waits in drop/.
    @Test(.enabled(if: ConsoleFixture.canRun, Comment(rawValue: skipReason)))
    func aPhonesFourImageJpgAreAllTakenIntoTheOpenBatch() throws {
        let hot = try ConsoleFixture(timing: #"settle: "300ms", quiet: "4s", maxWait: "60s", workers: 2"#)
        let (daemon, anna, token) = try hot.startWithAnna()
        var landed: [String] = []
        for i in 0..<4 {
            // The one before is claimed into the open batch first (it left drop/).
            #expect(Poll.until(.seconds(30)) { hot.files(in: hot.shop + "/drop").isEmpty }, "\(hot.files(in: hot.shop + "/drop"))")
            let r = try anna.upload("shop", [("image.jpg", try HotFolderFixture.photo(20 + i))], csrf: token)
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
            landed += ((answer["accepted"] as? [[String: Any]]) ?? []).compactMap { $0["as"] as? String }
        }
        #expect(landed == ["image.jpg", "image (2).jpg", "image (3).jpg", "image (4).jpg"])
        #expect(Poll.until(.seconds(120)) { hot.reports(hot.shop).count == 1 }, "\(daemon.log)")
        let report = try #require(hot.reports(hot.shop).values.first)
        let sources = ((report["items"] as? [[String: Any]]) ?? []).compactMap { $0["source"] as? String }
        #expect(sources.sorted() == landed.sorted(), "\(sources)")
        #expect(report["status"] as? String == "complete")
        #expect(hot.files(in: hot.shop + "/drop").isEmpty)
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    @Test(.enabled(if: ConsoleFixture.canRun, Comment(rawValue: skipReason)))
    func aTwoGiBUploadOverTheLimitIsRefusedAtOnceAndLeavesNothing() throws {
        // The request's Content-Length says 2 GiB: refused from its head (413) before a byte of
        // the body is read.
        let hot = try ConsoleFixture(maxFileBytes: "8MiB")
        try hot.addUser("anna", "anna's password", inboxes: ["shop"])
        let daemon = try hot.start()
        let anna = ConsoleClient(port: hot.port)
        #expect(try anna.login("anna", "anna's password").status == 303, "\(daemon.log)")
        let token = try anna.csrf(on: "/inbox/shop/")
        // 2 GiB of one file, made a MiB at a time as it is sent (never held).
        let boundary = "pf2gib"
        let head = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n\(token)\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"photos\"; filename=\"huge.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n".utf8)
        let tail = Array("\r\n--\(boundary)--\r\n".utf8)
        let fileBytes: Int64 = 2 << 30
        let total = Int64(head.count) + fileBytes + Int64(tail.count)
        var left = fileBytes
        var stage = 0
        let mib = [UInt8](repeating: 0xAB, count: 1 << 20)
        let r = try anna.request("POST", "/inbox/shop/upload", headers: [("Content-Type", "multipart/form-data; boundary=\(boundary)"),
                                                                        ("Accept", "application/json")], length: total) { piece in
            switch stage {
            case 0: piece = head; stage = 1
            case 1:
                piece = left >= mib.count ? mib : Array(mib.prefix(Int(left)))
                left -= Int64(piece.count)
                if left == 0 { stage = 2 }
            case 2: piece = tail; stage = 3
            default: return false
            }
            return true
        }
        #expect(r.status == 413, "\(r.status) \(r.text)")
        // Refused from its head: far less than 2 GiB was sent (the socket buffers hold a few MiB).
        #expect(r.sent < 64 << 20, "sent \(r.sent) bytes before the answer")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
        let refused = try #require(answer["refused"] as? [[String: Any]])
        #expect((refused.first?["reason"] as? String)?.contains("8 MiB") == true, "\(answer)")
        #expect(hot.files(in: hot.shop + "/drop").isEmpty)
        #expect(hot.files(in: hot.shop + "/.work").isEmpty, "\(hot.files(in: hot.shop + "/.work"))")

        // A file that passes the limit inside a request that looked small enough (8 MiB and a
        // bit): refused once it passes, removed at once; the photo before it in the same form is
        // taken, and nothing of the big one is left anywhere.
        let big = [UInt8](repeating: 0xCD, count: (8 << 20) + 300_000)
        let small = try HotFolderFixture.photo(4)
        let mixed = try anna.upload("shop", [("ok.jpg", small), ("big.jpg", big)], csrf: token)
        #expect(mixed.status == 413, "\(mixed.status) \(mixed.text)")
        let lists = try #require(try JSONSerialization.jsonObject(with: Data(mixed.body)) as? [String: Any])
        #expect((lists["accepted"] as? [[String: Any]])?.compactMap { $0["as"] as? String } == ["ok.jpg"])
        #expect((lists["refused"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["big.jpg"])
        let landed = hot.files(in: hot.shop + "/drop") + hot.files(in: hot.shop + "/originals").flatMap { hot.files(in: hot.shop + "/originals/" + $0) }
        #expect(!landed.contains("big.jpg"))
        #expect(Poll.until(.seconds(60)) { hot.reports(hot.shop).count == 1 }, "\(daemon.log)")
        #expect(Poll.until(.seconds(30)) { hot.files(in: hot.shop + "/.work").isEmpty }, "\(hot.files(in: hot.shop + "/.work"))")
        let sources = hot.reports(hot.shop).values.flatMap { ($0["items"] as? [[String: Any]] ?? []).compactMap { $0["source"] as? String } }
        #expect(sources == ["ok.jpg"])
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    @Test(.enabled(if: ConsoleFixture.canRun, Comment(rawValue: skipReason)))
    func twoHundredIdleConnectionsFromOneAddressStopNeitherTheBatchNorTheDashboard() throws {
        let hot = try ConsoleFixture()
        try hot.addUser("anna", "anna's password", inboxes: ["shop"])
        let daemon = try hot.start()
        let anna = ConsoleClient(port: hot.port)
        #expect(try anna.login("anna", "anna's password").status == 303, "\(daemon.log)")
        daemon.waitUntilReady()
        // 200 connections held open from one address (another loopback address than the
        // dashboard's): half send nothing, half half a request head.
        var idle: [Int32] = []
        defer { for fd in idle { close(fd) } }
        for i in 0..<200 {
            let fd = try ConsoleClient.connect(port: hot.port, from: "127.0.0.2")
            if i % 2 == 1 { _ = "GET / HTTP/1.1\r\nHost: x\r\n".withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) } }
            idle.append(fd)
        }
        // A batch dropped the ordinary way finishes; the dashboard answers meanwhile and after.
        let hotFolder = try HotFolderFixture(root: hot.shop)
        for i in 0..<4 { try hotFolder.drop(try HotFolderFixture.photo(10 + i), as: "p\(i).jpg") }
        let start = ContinuousClock.now
        var answered = 0
        let finished = Poll.until(.seconds(120)) {
            if let r = try? anna.request("GET", "/"), r.status == 200 { answered += 1 }
            return hot.reports(hot.shop).count == 1
        }
        #expect(finished, "\(daemon.log)")
        #expect(answered > 0)
        // The dashboard shows the batch once the service has filed it (just after its report).
        #expect(Poll.until(.seconds(30)) { (try? anna.request("GET", "/"))?.text.contains("p0.jpg and 3 more · 4 photos") == true },
                "\((try? anna.request("GET", "/"))?.text ?? "")")
        print("console: 200 idle connections; a 4-photo batch finished in \(ContinuousClock.now - start), dashboard answered \(answered) times meanwhile")
        // One address holds at most its share (64): the others were closed as they came; the
        // ones held are still open (not dropped to make room), each costs the server no thread.
        var open = 0
        for fd in idle {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, 0) == 0 { open += 1 }
        }
        #expect(open == 64, "\(open) of 200 idle connections from one address still open")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }
}
