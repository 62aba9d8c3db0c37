import Batches
import Configuration
import Foundation
import HTTP
import HotFolders
import Synchronization
import System

/// Answers the console's requests (called on the server's threads, several at once). Every
/// route but the login page and the assets checks the session first (pages without one
/// redirect to `/login`, actions answer 401), then the user's hot folders (403 for a folder
/// not theirs, before anything about it is looked at), then what the user may do there
/// (deleting a batch and the logins page are for admins). Every action is a POST carrying
/// the session's form token (`csrf`).
///
/// The handlers of each part are in `Handlers/`: logins and passwords, uploads and where they
/// are, batches and their files, the users page.
final class ConsoleHandler: HTTPHandler {
    /// What the file input offers: photos, and the camera raws the hot folders take.
    static let accept = "image/*,.jpg,.jpeg,.png,.heic,.heif,.avif,.webp,.tif,.tiff,.dng,.cr2,.cr3,.nef,.arw,.raf,.orf,.rw2,.pef,.srw"
    /// An upload request may be `maxFileBytes` plus this much (the form around the file): one
    /// photo per request, as the console's script sends them; a browser without script sends
    /// the whole form at once, and its total is held to the same limit.
    static let formAllowance = 1 << 20
    /// Small forms (login, logout, passwords, users) are at most this big.
    static let smallFormLimit = 8 << 10

    let source: any ConsoleSource
    let users: UsersFile
    let sessions: Sessions
    let log: Logger
    let catalog = BatchCatalog()
    /// Who may try a password now (`LoginGuard`).
    let logins = Mutex(LoginGuard())
    /// One password check at a time (yescrypt is made to be slow): logins never take more
    /// than one core from the photos.
    let hashing = Mutex(())
    let movers = Mutex<[String: Mover]>([:])
    /// The reverse proxies whose `X-Forwarded-For` is believed (`web.trustedProxies`).
    let trustedProxies: [AddressRange]
    /// What an administrator is told at the foot of every page (the console in plain HTTP
    /// beyond this machine…), set once the sockets are known.
    let warnings = Mutex<[String]>([])

    init(source: any ConsoleSource, users: UsersFile, sessions: Sessions, log: Logger, trustedProxies: [AddressRange] = []) {
        self.source = source
        self.users = users
        self.sessions = sessions
        self.log = log
        self.trustedProxies = trustedProxies
    }

    /// Who sent a request: behind a reverse proxy named in `web.trustedProxies`, the address it
    /// names last in `X-Forwarded-For` and whether it spoke HTTPS (`X-Forwarded-Proto`); those
    /// headers from anyone else (loopback included) are ignored.
    struct Peer: Equatable {
        var address: String
        var secure: Bool

        init(address: String, secure: Bool) {
            self.address = address
            self.secure = secure
        }

        init(_ r: HTTPRequest, trusted: [AddressRange]) {
            address = r.client
            secure = r.isTLS
            guard trusted.contains(where: { $0.contains(r.client) }) else { return }
            if let forwarded = r.header("x-forwarded-for")?.split(separator: ",").last?.trimmingCharacters(in: .whitespaces),
               !forwarded.isEmpty, forwarded.utf8.count <= 64 {
                address = forwarded
            }
            if r.header("x-forwarded-proto")?.lowercased() == "https" { secure = true }
        }
    }

    func peer(_ r: HTTPRequest) -> Peer { Peer(r, trusted: trustedProxies) }

    func reply(to request: HTTPRequest) -> HTTPReply {
        let route = Route.parse(request.path)
        let get = request.method == "GET" || request.method == "HEAD"
        let post = request.method == "POST"
        switch route {
        case .asset(let name):
            guard get, let asset = Assets.named(name) else { return .response(notFound(nil, request)) }
            return .response(HTTPResponse(status: 200, headers: [("Content-Type", asset.type), ("Cache-Control", "public, max-age=86400"),
                                                               ("X-Content-Type-Options", "nosniff")],
                                          body: .bytes(Array(asset.text.utf8))))
        case .login:
            if get { return .response(loginPage(request)) }
            if post { return smallForm { [self] fields in login(fields, request) } }
            return .response(methodNotAllowed("GET, POST"))
        case .notFound:
            return .response(notFound(viewer(request), request))
        default:
            break
        }
        guard let viewer = viewer(request) else {
            if post || request.header("x-live") != nil || !get || route.isData {
                return .response(page(401, Pages.error(nil, title: "Log in first", message: "Your session has ended or you are not logged in."),
                                      request, extra: [("X-Console-Session", "ended")]))
            }
            var next = request.path
            if let query = request.query["before"] { next += "?before=" + Paths.encode(query) }
            return .response(redirect("/login?next=" + Paths.encode(next)))
        }
        switch route {
        case .logout:
            guard post else { return .response(methodNotAllowed("POST")) }
            return smallForm { [self] fields in logout(fields, viewer, request) }
        case .account:
            if get { return .response(page(200, Pages.account(viewer, message: nil), request)) }
            if post { return smallForm { [self] fields in changeOwnPassword(fields, viewer, request) } }
            return .response(methodNotAllowed("GET, POST"))
        case .users, .user:
            guard viewer.admin else {
                return .response(page(403, Pages.error(viewer, title: "For administrators",
                                                       message: "Only an administrator may see and change the logins."), request))
            }
            if case .user(let name) = route {
                guard post else { return .response(methodNotAllowed("POST")) }
                return smallForm { [self] fields in changeUser(name, fields, viewer, request) }
            }
            if get { return .response(usersPage(viewer, request, message: nil)) }
            if post { return smallForm { [self] fields in addUser(fields, viewer, request) } }
            return .response(methodNotAllowed("GET, POST"))
        default:
            break
        }
        let snapshot = source.snapshot()
        if route == .dashboard {
            guard get else { return .response(methodNotAllowed("GET")) }
            let folders = snapshot.folders.filter { viewer.user.mayUse($0.name) }.map(published)
            let lasts = folders.map { folder in
                folder.last.flatMap { catalog.summary(folder.layout, $0.batch) } ?? catalog.batches(of: folder.layout, limit: 1).batches.first
            }
            return .response(page(200, Pages.dashboard(viewer, folders: folders, lasts: lasts, running: snapshot.running), request))
        }
        guard let inbox = route.inbox else { return .response(notFound(viewer, request)) }
        // Not theirs: 403, before anything about the folder (even whether it exists) is told.
        guard viewer.user.mayUse(inbox) else {
            log.notice("web: \(viewer.name) asked for \(request.path), in a hot folder not theirs: 403", ["INBOX": inbox, "USER": viewer.name])
            return .response(page(403, Pages.error(viewer, title: "Not your hot folder",
                                                   message: "\(viewer.name) may not see the hot folder \(inbox)."), request))
        }
        guard let folder = snapshot[inbox].map(published) else { return .response(notFound(viewer, request)) }
        switch route {
        case .upload:
            guard post else { return .response(methodNotAllowed("POST")) }
            return upload(request, viewer, folder, maxFileBytes: snapshot.maxFileBytes)
        case .batchAction(_, let id, let action):
            guard post else { return .response(methodNotAllowed("POST")) }
            // An approval names each photo chosen, and a note: as big as the share page's form.
            return smallForm(limit: action == .approve ? ShareHandler.formLimit : Self.smallFormLimit) { [self] fields in
                batchAction(action, id, fields, viewer, folder, request)
            }
        case _ where !get:
            return .response(methodNotAllowed("GET"))
        case .folderWithoutSlash, .batchWithoutSlash:
            return .response(redirect(request.path + "/", status: 301))
        case .folder:
            return .response(folderPage(request, viewer, folder, maxFileBytes: snapshot.maxFileBytes))
        case .track:
            return .response(track(request, folder))
        case .proof:
            guard let (file, st) = BatchFiles.proof(folder.layout, template: folder.template) else { return .response(notFound(viewer, request)) }
            return .response(HTTPResponse(status: 200, headers: [("Content-Type", "image/png"), ("Cache-Control", "private, max-age=60"),
                                                               ("X-Content-Type-Options", "nosniff")],
                                          body: .file(file, offset: 0, size: st.size)))
        case .batch(_, let id):
            return .response(batchPage(request, viewer, folder, id: id))
        case .batchFile(_, let id, let path):
            return .response(batchFile(request, viewer, folder, id: id, path: path))
        case .original(_, let id, let name):
            return .response(original(request, viewer, folder, id: id, name: name))
        case .zip(_, let id):
            return .response(zip(request, viewer, folder, id: id))
        default:
            return .response(notFound(viewer, request))
        }
    }

    /// The session's viewer, while the session lives and its user is still in the users file
    /// with the same password.
    func viewer(_ request: HTTPRequest) -> Viewer? {
        let token = request.cookies[Sessions.cookie]
        guard let session = sessions.session(token) else { return nil }
        guard let user = users.current().users[session.user], Sessions.matches(session, hash: user.hash) else {
            sessions.close(token)
            return nil
        }
        return Viewer(user: user, csrf: session.csrf, token: token, warnings: user.admin ? adminWarnings() : [])
    }

    /// `folder` with a batch that is published no longer shown on its way: its folder in out/
    /// appears a moment before the service, done filing, says so, and a page must not show it
    /// both ready and being finished.
    func published(_ folder: ConsoleFolder) -> ConsoleFolder {
        guard let p = folder.processing, p.stage == .outputs, catalog.summary(folder.layout, p.batch) != nil else { return folder }
        var done = folder
        done.processing = nil
        return done
    }

    /// What administrators are told at the foot of every page.
    private func adminWarnings() -> [String] {
        var out = warnings.withLock { $0 }
        if let problem = users.writeProblem { out.append(problem) }
        return out
    }

    // MARK: - Forms

    /// A small form (login, logout, passwords, users, a batch's actions): its fields, at most
    /// `smallFormLimit` bytes, then `answer`.
    func smallForm(limit: Int = smallFormLimit, _ answer: @escaping ([String: [String]]) -> HTTPResponse) -> HTTPReply {
        .receiveForm(SmallForm(limit: limit, answer: answer), limit: limit * 2)
    }

    /// Whether a form carries the session's token.
    static func checked(_ fields: [String: [String]], _ viewer: Viewer) -> Bool {
        Sessions.tokensMatch(fields["csrf"]?.first, viewer.csrf)
    }

    /// The answer to a form whose token is not the session's: the page it came from is older
    /// than the session (a login since, in another tab).
    func staleForm(_ viewer: Viewer, _ request: HTTPRequest) -> HTTPResponse {
        page(403, Pages.error(viewer, title: "This page is out of date",
                              message: "It was opened before your last login. Reload it, then try again."), request,
             extra: [("X-Console-Stale", "1")])
    }

    // MARK: - Responses

    /// A page with the console's headers; 304 when the client has the same page (`ETag`).
    func page(_ status: Int, _ html: String, _ request: HTTPRequest, extra: [(name: String, value: String)] = []) -> HTTPResponse {
        let bytes = Array(html.utf8)
        let tag = "\"" + Self.fingerprint(bytes) + "\""
        var headers: [(name: String, value: String)] = [
            ("Content-Type", "text/html; charset=utf-8"), ("Content-Security-Policy", HTML.contentSecurityPolicy),
            ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "same-origin"),
            ("X-Frame-Options", "DENY"), ("X-Console-Version", Assets.version),
        ] + extra
        if status == 200 {
            headers.append(("ETag", tag))
            if request.header("if-none-match") == tag { return HTTPResponse(status: 304, headers: headers) }
        }
        return HTTPResponse(status: status, headers: headers, body: .bytes(bytes))
    }

    /// A JSON answer (the script's).
    func json(_ status: Int, _ object: [String: Any], extra: [(name: String, value: String)] = []) -> HTTPResponse {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store"),
                                                      ("X-Content-Type-Options", "nosniff"), ("X-Console-Version", Assets.version)] + extra,
                            body: .bytes(Array(data)))
    }

    func notFound(_ viewer: Viewer?, _ request: HTTPRequest) -> HTTPResponse {
        page(404, Pages.error(viewer, title: "Not found", message: "There is nothing at this address."), request)
    }

    func methodNotAllowed(_ allowed: String) -> HTTPResponse {
        HTTPResponse(status: 405, text: "use \(allowed)\n", headers: [("Allow", allowed)])
    }

    func redirect(_ location: String, status: Int = 303) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Location", location), ("Cache-Control", "no-store")])
    }

    /// A cookie: HttpOnly, SameSite=Strict, Secure under HTTPS.
    static func cookie(_ name: String, _ value: String, path: String, maxAge: Int, secure: Bool) -> String {
        "\(name)=\(value); Path=\(path); Max-Age=\(maxAge); HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    /// Where to go after the login: a path on this server only (never `//host` or a URL).
    static func safeNext(_ next: String?) -> String {
        guard let next, next.hasPrefix("/"), !next.hasPrefix("//"), !next.hasPrefix("/\\"),
              !next.unicodeScalars.contains(where: { $0.value < 0x20 }) else { return "/" }
        return next
    }

    /// `attachment; filename="…"; filename*=UTF-8''…` (RFC 6266).
    static func attachment(_ name: String) -> String {
        let ascii = String(name.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0 != "\"" && $0 != "\\" ? Character($0) : "_" })
        return "attachment; filename=\"\(ascii)\"; filename*=UTF-8''\(Paths.encode(name))"
    }

    /// FNV-1a, 64 bits, as hex: a page's `ETag`.
    static func fingerprint(_ bytes: [UInt8]) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return String(h, radix: 16)
    }
}

/// Who is looking: their login, their session's form token and cookie, and what an
/// administrator is told at the foot of each page.
struct Viewer {
    var user: Users.User
    var csrf: String
    /// The session cookie (a new password keeps this session, ends the others).
    var token: String?
    var warnings: [String] = []

    var name: String { user.name }
    var admin: Bool { user.admin }
}

extension Route {
    /// Routes a script asks for (JSON): never redirected to the login page.
    var isData: Bool {
        if case .track = self { return true }
        return false
    }
}

/// A small form: its fields (every value of a name repeated, in order), at most `limit` bytes
/// in all; no files.
final class SmallForm: HTTPFormReceiver {
    private let limit: Int
    private let answer: ([String: [String]]) -> HTTPResponse
    private var fields: [String: [[UInt8]]] = [:]
    private var current: String?
    private var total = 0
    /// Fields at most (a form of checkboxes: one per hot folder).
    static let maxFields = 256
    private var count = 0

    init(limit: Int, answer: @escaping ([String: [String]]) -> HTTPResponse) {
        self.limit = limit
        self.answer = answer
    }

    func partBegins(name: String, filename: [UInt8]?, contentType: String?) -> HTTPResponse? {
        guard filename == nil else { return HTTPResponse(status: 400, text: "this form takes no files\n") }
        count += 1
        guard count <= Self.maxFields, name.utf8.count <= 64 else { return HTTPResponse(status: 413, text: "the form has too many fields\n") }
        current = name
        fields[name, default: []].append([])
        return nil
    }

    func partData(_ piece: UnsafeRawBufferPointer) -> HTTPResponse? {
        total += piece.count
        guard total <= limit else { return HTTPResponse(status: 413, text: "the form is larger than \(limit) bytes\n") }
        if let current, var values = fields[current], !values.isEmpty {
            fields[current] = nil  // one owner while it grows
            values[values.count - 1] += piece
            fields[current] = values
        }
        return nil
    }

    func partEnds() -> HTTPResponse? {
        current = nil
        return nil
    }

    func finish() -> HTTPResponse {
        answer(fields.mapValues { $0.map { String(decoding: $0, as: UTF8.self) } })
    }

    func abandon() {
        fields = [:]
    }
}
