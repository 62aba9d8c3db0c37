import Batches
import Configuration
import Foundation
import HTTP
import HotFolders
import JSON5
import Service
import System
import Testing
import TestSupport
@testable import Web

/// The console's pure parts: routes, upload names, the users file, password hashes, sessions
/// and the login throttle, the pages' escaping.
struct RouteTests {
    static let id = "20261129-150405-3f2a"

    @Test func routesOfSpecNine() {
        #expect(Route.parse("/") == .dashboard)
        #expect(Route.parse("/login") == .login)
        #expect(Route.parse("/logout") == .logout)
        #expect(Route.parse("/static/console.css") == .asset("console.css"))
        #expect(Route.parse("/inbox/shop/") == .folder("shop"))
        #expect(Route.parse("/inbox/shop") == .folderWithoutSlash("shop"))
        #expect(Route.parse("/inbox/shop/upload") == .upload("shop"))
        #expect(Route.parse("/inbox/shop/proof.png") == .proof("shop"))
        #expect(Route.parse("/inbox/shop/batch/\(Self.id)/") == .batch("shop", Self.id))
        #expect(Route.parse("/inbox/shop/batch/\(Self.id)") == .batchWithoutSlash("shop", Self.id))
        #expect(Route.parse("/inbox/shop/batch/\(Self.id).zip") == .zip("shop", Self.id))
        #expect(Route.parse("/inbox/shop/batch/\(Self.id)/thumbs/IMG%201.jpg") == .batchFile("shop", Self.id, ["thumbs", "IMG 1.jpg"]))
        // Latin-1 bytes in a name: served as the bytes they are.
        #expect(Route.parse("/inbox/shop/batch/\(Self.id)/caf%E9.jpg") == .batchFile("shop", Self.id, [FileName(bytes: Array("caf".utf8) + [0xE9] + Array(".jpg".utf8))!]))
    }

    @Test(arguments: [
        "/inbox/shop/batch/\(id)/../../x", "/inbox/shop/batch/\(id)/%2e%2e/x", "/inbox/shop/batch/\(id)/%2E%2E/%2e%2e/x",
        "/inbox/shop/batch/\(id)/..%2f..%2fx", "/inbox/shop/batch/\(id)/thumbs%2fx.jpg", "/inbox/shop/batch/\(id)/a%00b",
        "/inbox/shop/batch/\(id)/.hidden", "/inbox/shop/batch/\(id)//x", "/inbox/shop/batch/\(id)/x/", "/inbox/..%2f/",
        "/inbox/.shop/", "/inbox/shop/batch/../", "/inbox/shop/batch/2026/", "/inbox/shop/batch/\(id)/%zz",
        "/inbox/shop/batch/\(id)/.", "/x", "inbox/shop/", "/inbox/sh%2fop/",
    ])
    func trickyPathsGoNowhere(_ path: String) {
        #expect(Route.parse(path) == .notFound, "\(path)")
    }

    @Test func linksAreEncodedSoTheyRouteBack() {
        let name = FileName(bytes: Array("a b#?%&\"<>.jpg".utf8) + [0xE9])!
        let link = Paths.batchFile("shop", Self.id, ["thumbs", name])
        #expect(!link.contains(" ") && !link.contains("#") && !link.contains("?") && !link.contains("\""))
        #expect(Route.parse(link) == .batchFile("shop", Self.id, ["thumbs", name]))
    }
}

struct UploadNameTests {
    func cleaned(_ s: String) -> UploadNames.Outcome { UploadNames.clean(Array(s.utf8)) }

    @Test func pathsAreCutToTheLastName() {
        #expect(cleaned("../../x.jpg") == .name("x.jpg"))
        #expect(cleaned("C:\\Users\\anna\\IMG_1.JPG") == .name("IMG_1.JPG"))
        #expect(cleaned("/etc/passwd") == .name("passwd"))
        #expect(cleaned("<script>alert(1)</script>.jpg") == .name("script>.jpg"))
        #expect(cleaned("<script>alert(1)<script>.jpg") == .name("<script>alert(1)<script>.jpg"))
    }

    @Test func hiddenControlAndIgnoredNames() {
        #expect(cleaned("..hidden.jpg") == .name("hidden.jpg"))
        #expect(cleaned(" .x.jpg ") == .name("x.jpg"))
        #expect(cleaned("a\u{7}b\nc.jpg") == .name("abc.jpg"))
        #expect(cleaned("a%22b%0A.jpg") == .name("a\"b.jpg"))
        #expect(cleaned("") == .empty)
        for ignored in ["x.tmp", "~$x.docx", "Thumbs.db", "x.jpg.part", "..."] {
            guard case .refused = cleaned(ignored) else {
                Issue.record("\(ignored) should be refused")
                continue
            }
        }
    }

    @Test func latin1AndUTF8AreKeptAsSent() {
        let latin1: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".jpg".utf8)
        #expect(UploadNames.clean(latin1) == .name(FileName(bytes: latin1)!))
        #expect(cleaned("Fête à Zürich 東京.heic") == .name("Fête à Zürich 東京.heic"))
    }

    @Test func longNamesKeepTheirExtensionAndWholeCharacters() {
        guard case .name(let name) = cleaned(String(repeating: "é", count: 200) + ".jpeg") else {
            Issue.record("refused")
            return
        }
        #expect(name.bytes.count <= 255)
        #expect(name.string?.hasSuffix("é.jpeg") == true)
    }

    @Test func alternativesNumberBeforeTheExtension() {
        #expect(UploadNames.alternative("IMG_1.jpg", 2) == "IMG_1 (2).jpg")
        #expect(UploadNames.alternative("README", 3) == "README (3)")
        #expect(UploadNames.alternative(".x", 2) == ".x (2)")
    }
}

struct UsersTests {
    @Test func hashesAreYescryptAndCheckOnlyTheirPassword() throws {
        let hash = try PasswordHash.make("correct horse")
        #expect(hash.hasPrefix("$y$"))
        #expect(PasswordHash.isUsable(hash))
        #expect(PasswordHash.verify("correct horse", against: hash))
        #expect(!PasswordHash.verify("correct hors", against: hash))
        #expect(!PasswordHash.verify("correct horse", against: "*"))
        #expect(!PasswordHash.verify("", against: ""))
        // Two hashes of one password differ (their salts).
        #expect(try PasswordHash.make("correct horse") != hash)
        #expect(throws: PasswordHash.Refused.self) { try PasswordHash.make("short") }
    }

    @Test func theFileRoundTripsAndIsValidated() throws {
        let users = Users(users: [.init(name: "anna", hash: "$y$j9T$a$b", inboxes: ["shop", "studio"]),
                                  .init(name: "owner@studio", hash: "$y$j9T$c$d", admin: true)])
        let again = try Users.parse(text: users.text, file: "users.json5")
        #expect(again == users)
        #expect(again["anna"]?.mayUse("shop") == true)
        #expect(again["anna"]?.mayUse("other") == false)
        #expect(again["owner@studio"]?.mayUse("anything") == true)
        do {
            _ = try Users.parse(text: """
                { users: [ { name: "a", hash: "x", inboxes: "shop" }, { name: "a", hash: "y" }, { name: "-x", hash: "z" },
                           { name: "b" }, { name: "c", hash: "h", colour: 1 } ], other: 1 }
                """, file: "users.json5")
            Issue.record("accepted a broken users file")
        } catch {
            let text = error.errors.map(\.description).joined(separator: "\n")
            for part in ["users[0].inboxes", "listed twice", "users[2].name", "missing key 'hash'", "colour", "other"] {
                #expect(text.contains(part), "\(part) in \(text)")
            }
        }
    }

    @Test func writtenWithMode0640AndReadBack() throws {
        let dir = TemporaryFolder.path("users-\(getpid())")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/etc/users.json5"
        let users = Users(users: [.init(name: "anna", hash: try PasswordHash.make("secret-pass"), inboxes: ["shop"])])
        try users.write(to: path)
        var st = stat()
        #expect(stat(path, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o640)
        #expect(try Users.load(path: path) == users)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/etc") == ["users.json5"])
    }
}

struct SessionTests {
    @Test func sessionsEndAtTheirTimeAndAtLogout() {
        let sessions = Sessions(lifetime: .seconds(60))
        let now = Date()
        let token = sessions.open(user: "anna", hash: "h", now: now)
        #expect(token.count == 64)
        #expect(sessions.session(token, now: now + 59)?.user == "anna")
        #expect(sessions.session(token, now: now + 61) == nil)
        let other = sessions.open(user: "anna", hash: "h", now: now)
        #expect(other != token)
        #expect(sessions.session(other, now: now)?.csrf.count == 64)
        #expect(Sessions.matches(sessions.session(other, now: now)!, hash: "h"))
        #expect(!Sessions.matches(sessions.session(other, now: now)!, hash: "h2"))
        sessions.close(other)
        #expect(sessions.session(other, now: now) == nil)
        #expect(sessions.session(nil) == nil && sessions.session("") == nil)
    }

    /// Sessions are kept in a file (0600) that holds neither a token nor a hash: a new
    /// `Sessions` on the same file (a restart) knows them, and forgets the ones that ended.
    @Test func sessionsSurviveARestartAndTheFileHoldsNoToken() throws {
        let dir = try TemporaryFolder.make("sessions")
        let store = dir + "/sessions.json"
        let first = Sessions(lifetime: .seconds(3600), store: store)
        let token = first.open(user: "anna", hash: "$y$secret-hash")
        let gone = first.open(user: "boss", hash: "$y$other")
        first.close(gone)
        let text = try #require(try? String(contentsOfFile: store, encoding: .utf8))
        #expect(!text.contains(token) && !text.contains("secret-hash") && !text.contains(gone))
        var st = stat()
        #expect(stat(store, &st) == 0 && st.st_mode & 0o777 == 0o600)
        let restarted = Sessions(lifetime: .seconds(3600), store: store)
        #expect(restarted.session(token)?.user == "anna")
        #expect(restarted.session(token)?.csrf == first.session(token)?.csrf)
        #expect(restarted.session(gone) == nil)
        #expect(restarted.session(token, now: Date() + 7200) == nil)
    }

    /// One user logging in again and again ends only their own oldest sessions.
    @Test func oneUserCannotEvictTheOthers() {
        let sessions = Sessions(lifetime: .seconds(3600))
        let now = Date()
        let boss = sessions.open(user: "boss", hash: "b", now: now)
        var mine: [String] = []
        for i in 0..<(Sessions.perUser * 5) { mine.append(sessions.open(user: "anna", hash: "a", now: now + Double(i))) }
        #expect(sessions.session(boss, now: now)?.user == "boss")
        #expect(sessions.count == Sessions.perUser + 1)
        #expect(mine.suffix(Sessions.perUser).allSatisfy { sessions.session($0, now: now) != nil })
        #expect(sessions.session(mine[0], now: now) == nil)
        // A new password ends the other sessions of its user, not this one.
        sessions.closeOthers(of: "anna", keeping: mine.last)
        #expect(sessions.count == 2)
    }

    @Test func failedLoginsWaitLongerAndLongerPerAddress() {
        var throttle = LoginThrottle()
        let t0 = ContinuousClock.now
        for i in 1...throttle.free {
            #expect(throttle.wait(for: "a", now: t0) == nil)
            #expect(throttle.failed("a", now: t0).failures == i)
        }
        // The next failures wait 1 s, 2 s, 4 s…
        #expect(throttle.failed("a", now: t0).wait == .seconds(2))
        #expect(throttle.wait(for: "a", now: t0 + .seconds(1)) == .seconds(1))
        #expect(throttle.wait(for: "b", now: t0) == nil)
        #expect(throttle.wait(for: "a", now: t0 + .seconds(3)) == nil)
        for _ in 0..<20 { _ = throttle.failed("a", now: t0) }
        #expect(throttle.wait(for: "a", now: t0) == LoginThrottle.maxDelay)
        throttle.succeeded("a")
        #expect(throttle.wait(for: "a", now: t0) == nil)
    }

    /// 1,500 made-up addresses (more than the table holds) keep it at its size, and the
    /// address that failed last is still slowed.
    @Test func theThrottleTableIsBounded() {
        var throttle = LoginThrottle(free: 0, limit: 1_000)
        let t0 = ContinuousClock.now
        for i in 0..<1_500 { _ = throttle.failed("10.0.\(i / 256).\(i % 256)", now: t0 + .milliseconds(i)) }
        #expect(throttle.entries.count <= 1_000)
        #expect(throttle.wait(for: "10.0.5.219", now: t0 + .milliseconds(1_500)) != nil)
    }

    /// One check at a time per login name and per address; failures slow the address after 3
    /// and the name after 10, from any address.
    @Test func oneCheckAtATimeAndNamesAreSlowedToo() {
        var guard_ = LoginGuard()
        let t0 = ContinuousClock.now
        #expect(guard_.begin(name: "anna", address: "192.0.2.1", now: t0) == nil)
        #expect(guard_.begin(name: "anna", address: "192.0.2.2", now: t0) == .busy)
        #expect(guard_.begin(name: "boss", address: "192.0.2.1", now: t0) == .busy)
        guard_.end(name: "anna", address: "192.0.2.1", ok: false, now: t0)
        #expect(guard_.begin(name: "anna", address: "192.0.2.2", now: t0) == nil)
        guard_.end(name: "anna", address: "192.0.2.2", ok: false, now: t0)
        // Ten failures for anna from ten addresses: the eleventh attempt, from an eleventh, waits.
        for i in 3...10 {
            #expect(guard_.begin(name: "anna", address: "192.0.2.\(i)", now: t0) == nil)
            guard_.end(name: "anna", address: "192.0.2.\(i)", ok: false, now: t0)
        }
        guard case .wait(_, account: true)? = guard_.begin(name: "anna", address: "198.51.100.7", now: t0) else {
            Issue.record("anna's eleventh failure in a row is not slowed")
            return
        }
        #expect(guard_.begin(name: "boss", address: "198.51.100.7", now: t0) == nil)
    }

    @Test func anIPv6ClientIsOneAddressForItsWhole64() {
        #expect(LoginGuard.addressKey("2001:db8:1:2::5") == LoginGuard.addressKey("2001:db8:1:2:ffff::9"))
        #expect(LoginGuard.addressKey("2001:db8:1:2::5") != LoginGuard.addressKey("2001:db8:1:3::5"))
        #expect(LoginGuard.addressKey("::ffff:192.0.2.1") == "192.0.2.1")
        #expect(LoginGuard.addressKey("192.0.2.1") == "192.0.2.1")
    }

    /// `X-Forwarded-For` is believed from the proxies the config names, and from no one else
    /// (loopback included).
    @Test func forwardedForIsBelievedFromTrustedProxiesOnly() throws {
        var request = HTTPRequest(method: "POST", path: "/login", headers: ["x-forwarded-for": "203.0.113.9", "x-forwarded-proto": "https"],
                                  client: "127.0.0.1")
        #expect(ConsoleHandler.Peer(request, trusted: []) == .init(address: "127.0.0.1", secure: false))
        let proxies = [try #require(AddressRange("127.0.0.1")), try #require(AddressRange("10.0.0.0/8"))]
        #expect(ConsoleHandler.Peer(request, trusted: proxies) == .init(address: "203.0.113.9", secure: true))
        request.client = "10.1.2.3"
        #expect(ConsoleHandler.Peer(request, trusted: proxies).address == "203.0.113.9")
        request.client = "192.0.2.1"
        #expect(ConsoleHandler.Peer(request, trusted: proxies).address == "192.0.2.1")
        #expect(try #require(AddressRange("::1")).contains("::1"))
        #expect(try #require(AddressRange("127.0.0.0/8")).contains("::ffff:127.0.0.5"))
        #expect(AddressRange("localhost") == nil && AddressRange("10.0.0.0/33") == nil)
    }

    @Test func nextStaysOnThisServer() {
        #expect(ConsoleHandler.safeNext("/inbox/shop/") == "/inbox/shop/")
        for bad in ["//evil.example/", "https://evil.example/", "/\\evil", "inbox", "/a\nb", nil] {
            #expect(ConsoleHandler.safeNext(bad) == "/")
        }
    }
}

struct NameSafetyTests {
    /// Bidirectional controls and C1 controls leave an uploaded name; the rest of it stays.
    @Test func bidiAndControlCharactersLeaveNames() {
        #expect(UploadNames.clean(Array("photo\u{202E}gpj.exe".utf8)) == .name("photogpj.exe"))
        #expect(UploadNames.clean(Array("a\u{2066}b\u{2069}\u{200F}c\u{0085}.jpg".utf8)) == .name("abc.jpg"))
        #expect(UploadNames.clean(Array("Fête 東京 👍🏽.jpg".utf8)) == .name("Fête 東京 👍🏽.jpg"))
    }

    /// A log line shows them escaped: no escape sequence, no forged line, no text turned around.
    @Test func logTextIsEscaped() {
        let lines = Locked<[String]>([])
        let log = Logger { _, text, fields in lines.update { $0.append(text + " | " + (fields["USER"] ?? "")) } }
        log.warning("failed login as '\u{1B}[31mroot\nFAKE LINE\u{202E}'", ["USER": "\u{1B}]0;x\u{7}"])
        let line = lines.value.first ?? ""
        #expect(!line.unicodeScalars.contains { ControlCharacters.contains($0) }, "\(line)")
        #expect(line.contains("\\x1B[31mroot\\x0AFAKE LINE\\u{202E}"), "\(line)")
        #expect(line.hasSuffix("\\x1B]0;x\\x07"), "\(line)")
    }

    /// ZIP entry names unpack on Windows: no backslash, no reserved characters or device names,
    /// no trailing dots, no two alike (case aside).
    @Test func zipNamesAreSafeOnWindows() {
        let names = ["a\\..\\..\\evil.jpg", "what?.jpg", "CON.jpg", "nul", "x. ", "IMG.jpg", "img.JPG", "t\u{202E}a.jpg"]
            .map { FileName($0)! }
        let entries = ZipNames.entries("20261205-021627-05c3", names.map { [$0] } + [[FileName("thumbs"), FileName("a:b.jpg")]])
        #expect(entries == ["20261205-021627-05c3/a_.._.._evil.jpg", "20261205-021627-05c3/what_.jpg", "20261205-021627-05c3/_CON.jpg",
                            "20261205-021627-05c3/_nul", "20261205-021627-05c3/x", "20261205-021627-05c3/IMG.jpg",
                            "20261205-021627-05c3/img (2).JPG", "20261205-021627-05c3/t_a.jpg", "20261205-021627-05c3/thumbs/a_b.jpg"])
    }
}

struct PageTests {
    static let viewer = Viewer(user: Users.User(name: "anna", hash: "h", inboxes: ["shop"]), csrf: "t\"><x")

    @Test func namesAreEscapedEverywhere() {
        let evil = "<script>alert(1)</script>"
        var folder = ConsoleFolder(name: "shop", layout: .init(root: "/tmp/x"), template: evil)
        folder.notes = [evil + ".jpg is refused"]
        folder.last = .init(batch: "20261129-150405-3f2a", status: "complete", items: 1, ok: 1, failed: 0, finished: "2026-11-29T15:04:05.123Z")
        let viewer = Viewer(user: Users.User(name: evil, hash: "h", admin: true), csrf: "t\"><x", warnings: [evil])
        for html in [Pages.dashboard(viewer, folders: [folder], lasts: [nil], running: true),
                     Pages.folder(viewer, folder, batches: [], more: false, maxFileBytes: 1 << 20, accept: "image/*", hasProof: true),
                     Pages.users(viewer, users: [viewer.user], folders: ["shop"], problem: evil, message: .failure(evil)),
                     Pages.account(viewer, message: .success(evil)),
                     Pages.login(error: evil, name: evil, csrf: "x", next: "/\"><script>")] {
            #expect(!html.contains("<script>alert"), "\(html)")
            #expect(!html.contains("t\"><x") && !html.contains("/\"><script>"), "\(html)")
            #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        }
    }

    /// The counts a folder shows are the service's, in the words `status` and STATUS.txt say.
    @Test func progressSaysWhatIsGoingOn() {
        var f = ConsoleFolder(name: "shop", layout: .init(root: "/tmp/x"), template: "t")
        #expect(Pages.stateLine(f).contains("ready for photos"))
        f.open = .init(batch: "b1", done: 4, total: 6, inProgress: 2, stage: .open)
        #expect(Pages.now(f).contains("4 of 6 done, 2 in progress") && Pages.now(f).contains("more may join"))
        f.open = nil
        f.processing = .init(batch: "b1", done: 6, total: 6, stage: .outputs, makes: ["story"])
        f.waiting = 2
        #expect(Pages.now(f).contains("6 of 6 done, making the report and story"))
        #expect(Pages.now(f).contains("2 files arriving"))
        #expect(Pages.stateLine(f).contains("working"))
        f.state = .refused(why: "root is not a folder", fix: ["mkdir it", "systemctl reload photofinish"])
        #expect(Pages.stateLine(f).contains("refused") && Pages.stateLine(f).contains("<li><code>mkdir it</code></li>"))
        #expect(Pages.stateLine(f).contains("<li><code>systemctl reload photofinish</code></li>"))
        f.state = .lowSpace(why: "only 1.2 GiB free on /srv/shop, under minFreeSpace 2 GiB")
        #expect(Pages.stateLine(f).contains("low on space") && Pages.stateLine(f).contains("only 1.2 GiB free"))
    }

    /// A batch is named by when it started, its first photo and how many: "Tue 5 Dec, 14:32".
    @Test func batchLabelsArePeoples() {
        setenv("TZ", "Europe/Berlin", 1)
        tzset()
        defer { unsetenv("TZ"); tzset() }
        let label = BatchLabel(started: "2026-12-05T13:32:10.000Z", first: "IMG_0001.jpg", count: 6)
        #expect(label.when(now: HumanTime.date(isoUTC: "2026-12-06T00:00:00Z")!) == "Sat 5 Dec, 14:32")
        #expect(label.when(now: HumanTime.date(isoUTC: "2027-01-06T00:00:00Z")!) == "Sat 5 Dec 2026, 14:32")
        #expect(label.photos == "IMG_0001.jpg and 5 more")
        #expect(BatchLabel(started: "x", first: "a.jpg", count: 1).photos == "a.jpg")
    }

    /// The service's folder states as the console shows them.
    @Test func theServicesFolderStatesAreShown() {
        typealias State = ServiceStatus.FolderState
        let refused = State(kind: .refused, why: "cannot write", fix: ["chown photofinish /srv/x"], since: "2026-12-02T01:00:00Z")
        #expect(ServiceSource.state(refused, running: true) == .refused(why: "cannot write", fix: ["chown photofinish /srv/x"]))
        #expect(ServiceSource.state(State(kind: .lowSpace, why: "only 1 MiB free"), running: true) == .lowSpace(why: "only 1 MiB free"))
        #expect(ServiceSource.state(State(kind: .shareUnavailable, why: "EIO", since: "t"), running: true)
                == .unavailable(since: "t", error: "EIO"))
        #expect(ServiceSource.state(State(kind: .starting), running: true) == .starting)
        #expect(ServiceSource.state(State(kind: .watching), running: true) == .watching)
        #expect(ServiceSource.state(nil, running: true) == .watching)
        #expect(ServiceSource.state(State(kind: .watching), running: false) == .stopped)
    }

    @Test func formFieldsAreDecoded() {
        #expect(HTTPRequest.formFields("a=1+2&b=%C3%A9&a=x&c") == ["a": "1 2", "b": "é", "c": ""])
        #expect(HTTPRequest.percentDecoded("%2") == nil)
    }
}
