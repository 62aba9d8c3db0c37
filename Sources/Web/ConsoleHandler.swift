import Batches
import Foundation
import HTTP
import HotFolders
import Synchronization
import System

/// Answers the console's requests (called on the server's threads, several at once). Every
/// route but the login page and the assets checks the session first (pages without one
/// redirect to `/login`, actions answer 401), then the user's hot folders (403 for a folder
/// not theirs, before anything about it is looked at).
final class ConsoleHandler: HTTPHandler {
    /// What the file input offers: photos, and the camera raws the hot folders take.
    static let accept = "image/*,.jpg,.jpeg,.png,.heic,.heif,.avif,.webp,.tif,.tiff,.dng,.cr2,.cr3,.nef,.arw,.raf,.orf,.rw2,.pef,.srw"
    /// An upload request may be `maxFileBytes` plus this much (the form around the file): one
    /// photo per request, as the console's script sends them; a browser without script sends
    /// the whole form at once, and its total is held to the same limit.
    static let formAllowance = 1 << 20
    /// Small forms (login, logout) are at most this big.
    static let smallFormLimit = 8 << 10

    private let source: any ConsoleSource
    private let users: UsersFile
    private let sessions: Sessions
    private let log: Logger
    private let catalog = BatchCatalog()
    private let throttle = Mutex(LoginThrottle())
    /// One password check at a time (yescrypt is made to be slow): logins never take more
    /// than one core from the photos.
    private let hashing = Mutex(())
    private let movers = Mutex<[String: Mover]>([:])

    init(source: any ConsoleSource, users: UsersFile, sessions: Sessions, log: Logger) {
        self.source = source
        self.users = users
        self.sessions = sessions
        self.log = log
    }

    /// Who sent a request: behind a reverse proxy on this machine (a loopback peer), the
    /// address it names last in `X-Forwarded-For` and whether it spoke HTTPS
    /// (`X-Forwarded-Proto`); those headers from anyone else are ignored.
    struct Peer: Equatable {
        var address: String
        var secure: Bool

        init(_ r: HTTPRequest) {
            let loopback = r.client.hasPrefix("127.") || r.client == "::1" || r.client.hasPrefix("::ffff:127.") || r.client == "local"
            address = r.client
            secure = r.isTLS
            if loopback {
                if let forwarded = r.header("x-forwarded-for")?.split(separator: ",").last?.trimmingCharacters(in: .whitespaces),
                   !forwarded.isEmpty {
                    address = forwarded
                }
                if r.header("x-forwarded-proto")?.lowercased() == "https" { secure = true }
            }
        }
    }

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
            if post { return .receiveForm(SmallForm(limit: Self.smallFormLimit) { [self] fields in login(fields, request) }) }
            return .response(methodNotAllowed("GET, POST"))
        case .notFound:
            return .response(notFound(viewer(request)?.viewer, request))
        default:
            break
        }
        guard let (viewer, user) = viewer(request) else {
            if post || request.header("x-live") != nil || !get {
                return .response(page(401, Pages.error(nil, title: "Log in first", message: "Your session has ended or you are not logged in."), request))
            }
            var next = request.path
            if let query = request.query["before"] { next += "?before=" + Paths.encode(query) }
            return .response(redirect("/login?next=" + Paths.encode(next)))
        }
        if route == .logout {
            guard post else { return .response(methodNotAllowed("POST")) }
            return .receiveForm(SmallForm(limit: Self.smallFormLimit) { [self] fields in logout(fields, viewer, request) })
        }
        let snapshot = source.snapshot()
        if route == .dashboard {
            guard get else { return .response(methodNotAllowed("GET")) }
            let folders = snapshot.folders.filter { user.mayUse($0.name) }
            return .response(page(200, Pages.dashboard(viewer, folders: folders, running: snapshot.running), request))
        }
        guard let inbox = route.inbox else { return .response(notFound(viewer, request)) }
        // Not theirs: 403, before anything about the folder (even whether it exists) is told.
        guard user.mayUse(inbox) else {
            log.notice("web: \(user.name) asked for \(request.path), in a hot folder not theirs: 403", ["INBOX": inbox, "USER": user.name])
            return .response(page(403, Pages.error(viewer, title: "Not your hot folder",
                                                   message: "\(user.name) may not see the hot folder \(inbox)."), request))
        }
        guard let folder = snapshot[inbox] else { return .response(notFound(viewer, request)) }
        switch route {
        case .upload:
            guard post else { return .response(methodNotAllowed("POST")) }
            return upload(request, viewer, folder, maxFileBytes: snapshot.maxFileBytes)
        case _ where !get:
            return .response(methodNotAllowed("GET"))
        case .folderWithoutSlash, .batchWithoutSlash:
            return .response(redirect(request.path + "/", status: 301))
        case .folder:
            let before = request.query["before"].flatMap { BatchID.isValid($0) ? $0 : nil }
            let (batches, more) = catalog.batches(of: folder.layout, limit: 30, before: before)
            let hasProof = BatchFiles.proof(folder.layout, template: folder.template) != nil
            return .response(page(200, Pages.folder(viewer, folder, batches: batches, more: more, maxFileBytes: snapshot.maxFileBytes,
                                                    accept: Self.accept, hasProof: hasProof), request))
        case .proof:
            guard let (file, st) = BatchFiles.proof(folder.layout, template: folder.template) else { return .response(notFound(viewer, request)) }
            return .response(HTTPResponse(status: 200, headers: [("Content-Type", "image/png"), ("Cache-Control", "private, max-age=60"),
                                                               ("X-Content-Type-Options", "nosniff")],
                                          body: .file(file, offset: 0, size: st.size)))
        case .batch(_, let id):
            guard let files = try? BatchFiles.list(folder.layout, id) else { return .response(notFound(viewer, request)) }
            let summary = catalog.summary(folder.layout, id)
            return .response(page(200, Pages.batch(viewer, inbox: inbox, summary, id: id, files: files), request))
        case .batchFile(_, let id, let path):
            guard let (file, st) = try? BatchFiles.open(folder.layout, id, path) else { return .response(notFound(viewer, request)) }
            let (type, inline) = BatchFiles.contentType(of: path.last!)
            var headers: [(name: String, value: String)] = [
                ("Content-Type", type), ("Cache-Control", "private, max-age=3600"), ("X-Content-Type-Options", "nosniff"),
                ("Content-Security-Policy", HTML.filesContentSecurityPolicy), ("Referrer-Policy", "same-origin"),
            ]
            if !inline { headers.append(("Content-Disposition", Self.attachment(path.last!.readable))) }
            return .response(HTTPResponse(status: 200, headers: headers, body: .file(file, offset: 0, size: st.size)))
        case .zip(_, let id):
            do throws(SystemError) {
                let files = try BatchFiles.list(folder.layout, id)
                let zip = try BatchZip(folder: try BatchFiles.folder(folder.layout, id), id: id, files: files, log: log)
                log.info("web: \(user.name) downloads batch \(id) as a ZIP (\(files.count) files)", ["INBOX": inbox, "BATCH": id, "USER": user.name])
                return .response(HTTPResponse(status: 200, headers: [("Content-Type", "application/zip"),
                                                                   ("Content-Disposition", Self.attachment(id + ".zip")),
                                                                   ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")],
                                              body: .stream(zip)))
            } catch {
                return .response(notFound(viewer, request))
            }
        default:
            return .response(notFound(viewer, request))
        }
    }

    // MARK: - Logins

    private func loginPage(_ request: HTTPRequest, error: String? = nil, name: String = "", status: Int = 200,
                           extra: [(name: String, value: String)] = []) -> HTTPResponse {
        if error == nil, viewer(request) != nil { return redirect(Self.safeNext(request.query["next"])) }
        let token = Sessions.randomToken()
        var response = page(status, Pages.login(error: error, name: name, csrf: token, next: Self.safeNext(request.query["next"])), request)
        response.headers.append(("Set-Cookie", Self.cookie(Sessions.loginCookie, token, path: "/login", maxAge: 3600, secure: Peer(request).secure)))
        response.headers += extra
        return response
    }

    private func login(_ fields: [String: String], _ request: HTTPRequest) -> HTTPResponse {
        let peer = Peer(request)
        var r = request
        r.query["next"] = fields["next"]
        guard let expected = request.cookies[Sessions.loginCookie], !expected.isEmpty,
              Sessions.tokensMatch(fields["csrf"], expected) else {
            return loginPage(r, error: "The login form had expired: please log in again.", status: 403)
        }
        let now = ContinuousClock.now
        if let wait = throttle.withLock({ $0.wait(for: peer.address, now: now) }) {
            let seconds = Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up))
            return loginPage(r, error: "Too many failed logins from your address: try again in \(seconds) s.", name: fields["user"] ?? "",
                             status: 429, extra: [("Retry-After", "\(seconds)")])
        }
        let name = fields["user"] ?? ""
        let password = fields["password"] ?? ""
        let (users, problem) = self.users.current()
        let user = users[name]
        let ok = hashing.withLock { _ in
            guard let user else {
                PasswordHash.verifyNothing(password)
                return false
            }
            return PasswordHash.verify(password, against: user.hash)
        }
        guard ok, let user else {
            let (failures, wait) = throttle.withLock { $0.failed(peer.address, now: .now) }
            let shown = String(name.prefix(64)).unicodeScalars.map { $0.value < 0x20 ? "?" : String($0) }.joined()
            log.warning("web: failed login as '\(shown)' from \(peer.address) (\(failures) in a row"
                        + (wait > .zero ? "; the next attempt waits \(wait.components.seconds) s" : "") + ")",
                        ["USER": shown, "ADDRESS": peer.address])
            let message = problem.map { _ in "Logins are not set up on this server yet." } ?? "Wrong user or password."
            return loginPage(r, error: message, name: name, status: 401)
        }
        throttle.withLock { $0.succeeded(peer.address) }
        let token = sessions.open(user: user.name, hash: user.hash)
        log.notice("web: \(user.name) logged in from \(peer.address)", ["USER": user.name, "ADDRESS": peer.address])
        var response = redirect(Self.safeNext(fields["next"]))
        response.headers.append(("Set-Cookie", Self.cookie(Sessions.cookie, token, path: "/", maxAge: Int(sessions.lifetime.components.seconds), secure: peer.secure)))
        response.headers.append(("Set-Cookie", Self.cookie(Sessions.loginCookie, "", path: "/login", maxAge: 0, secure: peer.secure)))
        return response
    }

    private func logout(_ fields: [String: String], _ viewer: Pages.Viewer, _ request: HTTPRequest) -> HTTPResponse {
        guard Sessions.tokensMatch(fields["csrf"], viewer.csrf) else {
            return page(403, Pages.error(viewer, title: "Form expired", message: "Reload the page and log out again."), request)
        }
        sessions.close(request.cookies[Sessions.cookie])
        log.info("web: \(viewer.user) logged out", ["USER": viewer.user])
        var response = redirect("/login")
        response.headers.append(("Set-Cookie", Self.cookie(Sessions.cookie, "", path: "/", maxAge: 0, secure: Peer(request).secure)))
        return response
    }

    /// The session's viewer and user, while the session lives and its user is still in the
    /// users file with the same password.
    private func viewer(_ request: HTTPRequest) -> (viewer: Pages.Viewer, user: Users.User)? {
        let token = request.cookies[Sessions.cookie]
        guard let session = sessions.session(token) else { return nil }
        guard let user = users.current().users[session.user], user.hash == session.hash else {
            sessions.close(token)
            return nil
        }
        return (Pages.Viewer(user: user.name, csrf: session.csrf), user)
    }

    // MARK: - Uploads

    private func upload(_ request: HTTPRequest, _ viewer: Pages.Viewer, _ folder: ConsoleFolder, maxFileBytes: Int) -> HTTPReply {
        guard request.header("content-type")?.lowercased().hasPrefix("multipart/form-data") == true else {
            return .response(HTTPResponse(status: 415, text: "an upload is multipart/form-data (field photos, csrf first)\n"))
        }
        let wantsJSON = request.header("accept")?.contains("application/json") == true
        // The whole request is known to be too big from its head: refused before a byte of it is read.
        if let length = request.contentLength, length > maxFileBytes + Self.formAllowance {
            log.notice("web: \(viewer.user) sent an upload of \(length) bytes, larger than maxFileBytes (\(maxFileBytes)): refused before reading it",
                       ["INBOX": folder.name, "USER": viewer.user])
            let reason = "larger than the limit of \(Upload.limitWords(maxFileBytes)) (maxFileBytes)"
            if wantsJSON {
                let object: [String: Any] = ["accepted": [], "refused": [["name": "", "reason": reason]],
                                             "note": "the upload is refused as a whole: \(length) bytes"]
                let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
                return .response(HTTPResponse(status: 413, headers: [("Content-Type", "application/json"), ("Connection", "close")], body: .bytes(Array(data))))
            }
            var response = page(413, Pages.error(viewer, title: "Too large",
                                                 message: "This upload (\(HTML.bytes(Int64(length)))) is \(reason). Send fewer photos at a time, or smaller ones."), request)
            response.headers.append(("Connection", "close"))
            return .response(response)
        }
        do throws(SystemError) {
            let upload = try Upload(inbox: folder.name, layout: folder.layout, mover: try mover(for: folder.layout),
                                    maxFileBytes: maxFileBytes, csrf: viewer.csrf, wantsJSON: wantsJSON,
                                    user: viewer.user, log: log) { [self] upload in
                page(200, Pages.uploaded(viewer, inbox: folder.name, upload), request)
            }
            return .receiveForm(upload)
        } catch where error.code == ENOENT {
            // Its drop/ or .work/ not made yet: the daemon is still taking the folder up (the
            // console answers from its socket before that), or someone removed them.
            log.notice("web: \(viewer.user) uploaded into \(folder.name) before its folders exist (\(error)): asked to try again",
                       ["INBOX": folder.name, "USER": viewer.user])
            var response = page(503, Pages.error(viewer, title: "Uploads are not possible yet",
                                                 message: "The hot folder \(folder.name) is not ready yet (PhotoFinish is starting, or its drop/ folder is being made again). Try again in a few seconds."), request)
            response.headers.append(("Retry-After", "5"))
            return .response(response)
        } catch {
            log.error("web: cannot take uploads into \(folder.name): \(error)", ["INBOX": folder.name])
            return .response(page(503, Pages.error(viewer, title: "Uploads are not possible now",
                                                   message: "The hot folder \(folder.name) cannot be written: \(error.reason)."), request))
        }
    }

    /// How names move in this hot folder (probed once: rename flags, or link on a share).
    private func mover(for layout: HotFolderLayout) throws(SystemError) -> Mover {
        if let known = movers.withLock({ $0[layout.root] }) { return known }
        let mover = try FolderSystem.probe(layout).mover
        movers.withLock { $0[layout.root] = mover }
        return mover
    }

    // MARK: - Responses

    /// A page with the console's headers; 304 when the client has the same page (`ETag`).
    private func page(_ status: Int, _ html: String, _ request: HTTPRequest) -> HTTPResponse {
        let bytes = Array(html.utf8)
        let tag = "\"" + Self.fingerprint(bytes) + "\""
        var headers: [(name: String, value: String)] = [
            ("Content-Type", "text/html; charset=utf-8"), ("Content-Security-Policy", HTML.contentSecurityPolicy),
            ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "same-origin"),
            ("X-Frame-Options", "DENY"),
        ]
        if status == 200 {
            headers.append(("ETag", tag))
            if request.header("if-none-match") == tag { return HTTPResponse(status: 304, headers: headers) }
        }
        return HTTPResponse(status: status, headers: headers, body: .bytes(bytes))
    }

    private func notFound(_ viewer: Pages.Viewer?, _ request: HTTPRequest) -> HTTPResponse {
        page(404, Pages.error(viewer, title: "Not found", message: "There is nothing at this address."), request)
    }

    private func methodNotAllowed(_ allowed: String) -> HTTPResponse {
        HTTPResponse(status: 405, text: "use \(allowed)\n", headers: [("Allow", allowed)])
    }

    private func redirect(_ location: String, status: Int = 303) -> HTTPResponse {
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

/// A small form (login, logout): its fields, at most `limit` bytes in all; no files.
final class SmallForm: HTTPFormReceiver {
    private let limit: Int
    private let answer: ([String: String]) -> HTTPResponse
    private var fields: [String: [UInt8]] = [:]
    private var current: String?
    private var total = 0

    init(limit: Int, answer: @escaping ([String: String]) -> HTTPResponse) {
        self.limit = limit
        self.answer = answer
    }

    func partBegins(name: String, filename: [UInt8]?, contentType: String?) -> HTTPResponse? {
        guard filename == nil else { return HTTPResponse(status: 400, text: "this form takes no files\n") }
        current = fields[name] == nil ? name : nil
        if let current { fields[current] = [] }
        return nil
    }

    func partData(_ piece: UnsafeRawBufferPointer) -> HTTPResponse? {
        total += piece.count
        guard total <= limit else { return HTTPResponse(status: 413, text: "the form is larger than \(limit) bytes\n") }
        if let current { fields[current]! += piece }
        return nil
    }

    func partEnds() -> HTTPResponse? {
        current = nil
        return nil
    }

    func finish() -> HTTPResponse {
        answer(fields.mapValues { String(decoding: $0, as: UTF8.self) })
    }

    func abandon() {
        fields = [:]
    }
}
