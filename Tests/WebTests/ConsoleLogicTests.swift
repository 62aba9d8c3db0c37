import Foundation
import HTTP
import JSON5
import Service
import System
import Testing
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
        let now = ContinuousClock.now
        let token = sessions.open(user: "anna", hash: "h", now: now)
        #expect(token.count == 64)
        #expect(sessions.session(token, now: now + .seconds(59))?.user == "anna")
        #expect(sessions.session(token, now: now + .seconds(61)) == nil)
        let other = sessions.open(user: "anna", hash: "h", now: now)
        #expect(other != token)
        #expect(sessions.session(other, now: now)?.csrf.count == 64)
        sessions.close(other)
        #expect(sessions.session(other, now: now) == nil)
        #expect(sessions.session(nil) == nil && sessions.session("") == nil)
    }

    @Test func failedLoginsWaitLongerAndLongerPerAddress() {
        var throttle = LoginThrottle()
        let t0 = ContinuousClock.now
        for i in 1...LoginThrottle.free {
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

    @Test func nextStaysOnThisServer() {
        #expect(ConsoleHandler.safeNext("/inbox/shop/") == "/inbox/shop/")
        for bad in ["//evil.example/", "https://evil.example/", "/\\evil", "inbox", "/a\nb", nil] {
            #expect(ConsoleHandler.safeNext(bad) == "/")
        }
    }
}

struct PageTests {
    @Test func namesAreEscapedEverywhere() {
        let evil = "<script>alert(1)</script>"
        var folder = ConsoleFolder(name: "shop", layout: .init(root: "/tmp/x"), template: evil)
        folder.notes = [evil + ".jpg is refused"]
        folder.last = .init(batch: "20261129-150405-3f2a", status: "complete", items: 1, ok: 1, failed: 0, finished: "2026-11-29T15:04:05.123Z")
        let viewer = Pages.Viewer(user: evil, csrf: "t\"><x")
        for html in [Pages.dashboard(viewer, folders: [folder], running: true),
                     Pages.folder(viewer, folder, batches: [], more: false, maxFileBytes: 1 << 20, accept: "image/*", hasProof: true),
                     Pages.login(error: evil, name: evil, csrf: "x", next: "/\"><script>")] {
            #expect(!html.contains("<script>alert"), "\(html)")
            #expect(!html.contains("t\"><x") && !html.contains("/\"><script>"), "\(html)")
            #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        }
    }

    @Test func stateLinesSayWhatIsGoingOn() {
        var f = ConsoleFolder(name: "shop", layout: .init(root: "/tmp/x"), template: "t")
        #expect(Pages.stateLine(f).contains(">idle<"))
        f.processing = .init(batch: "b", done: 23, total: 80)
        f.waiting = 2
        #expect(Pages.stateLine(f).contains("processing 23 of 80"))
        #expect(Pages.stateLine(f).contains("2 files pending"))
        f.state = .refused(why: "root is not a folder", fix: ["mkdir it", "systemctl reload photofinish"])
        #expect(Pages.stateLine(f).contains("refused") && Pages.stateLine(f).contains("<li><code>mkdir it</code></li>"))
        #expect(Pages.stateLine(f).contains("<li><code>systemctl reload photofinish</code></li>"))
        f.state = .lowSpace(why: "only 1.2 GiB free on /srv/shop, under minFreeSpace 2 GiB")
        #expect(Pages.stateLine(f).contains("low on space") && Pages.stateLine(f).contains("only 1.2 GiB free"))
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
