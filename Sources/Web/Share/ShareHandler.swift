import Batches
import Configuration
import Foundation
import HTTP
import HotFolders
import QR
import Service
import Sharing
import Synchronization
import System

/// What the share pages need of the service: the hot folders (where each keeps its links, who
/// approves there), `web.publicURL`, and whom to tell of an approval. Asked for at each request.
public struct ShareSite: Sendable {
    public struct Folder: Sendable {
        public var name: String
        public var layout: HotFolderLayout
        public var approve: ApproveMode

        public init(name: String, layout: HotFolderLayout, approve: ApproveMode) {
            self.name = name
            self.layout = layout
            self.approve = approve
        }
    }

    public var folders: @Sendable () -> (folders: [Folder], publicURL: String?)
    /// A batch's approval is in its report: its deliveries and notices follow (returns at once).
    public var approved: @Sendable (_ inbox: String, _ batch: String) -> Void

    public init(folders: @escaping @Sendable () -> (folders: [Folder], publicURL: String?),
                approved: @escaping @Sendable (_ inbox: String, _ batch: String) -> Void) {
        self.folders = folders
        self.approved = approved
    }
}

/// Answers `/s/TOKEN/…` (reference: Share links, QR codes): the client's gallery, its photos,
/// the set as a ZIP, the link's QR code, the password form and the approval form. No login:
/// the token is the key, checked by `ShareGate` (signed under one hot folder's key, compared in
/// constant time, its end and revocation in the record). Nothing but the batch's photos and
/// outputs is served through it — not its report, its thumbnails or any other batch.
///
/// Each address may ask for a few requests a second (`RequestRate`). Guessing is slowed: an address whose tokens are not found waits, doubling, after three; a
/// wrong password waits likewise per share and address, and one password check runs at a time.
final class ShareHandler: HTTPHandler, Sendable {
    /// The unlock cookie's name (its path is the share's own `/s/TOKEN/`).
    static let cookie = "photofinish_share"
    static let formLimit = 64 << 10

    private let site: ShareSite
    private let log: Logger
    /// Requests per address, whatever they ask for.
    private let rate = Mutex(RequestRate())
    /// Addresses that asked for tokens not found.
    private let guesses = Mutex(LoginThrottle())
    /// Wrong passwords, by share and address.
    private let passwords = Mutex(LoginThrottle())
    private let hashing = Mutex(())

    /// The reverse proxies whose `X-Forwarded-For` is believed (`web.trustedProxies`).
    private let trustedProxies: [AddressRange]

    init(site: ShareSite, log: Logger, trustedProxies: [AddressRange] = []) {
        self.site = site
        self.log = log
        self.trustedProxies = trustedProxies
    }

    /// A share found: the hot folder holding it and its key.
    private struct Found {
        var folder: ShareSite.Folder
        var share: Share
        var key: ShareKey
        var store: ShareStore
        var link: String
        var batchFolder: String { folder.layout.out + "/" + share.batch }
    }

    func reply(to request: HTTPRequest) -> HTTPReply {
        let address = ConsoleHandler.Peer(request, trusted: trustedProxies).address
        let now = Date()
        if let wait = rate.withLock({ $0.take(address, now: .now) }) ?? guesses.withLock({ $0.wait(for: address, now: .now) }) {
            return .response(tooMany(wait))
        }
        guard let (tokenText, rest) = ShareGate.route(request.path) else { return .response(guessed(address)) }
        let (folders, publicURL) = site.folders()
        var lookups: [ShareStore.Lookup] = []
        var found: Found?
        for folder in folders {
            let store = ShareStore(root: folder.layout.root)
            do throws(ShareError) {
                let lookup = try store.find(tokenText)
                lookups.append(lookup)
                if case .signed(_, let share?) = lookup, let key = try store.key() {
                    found = Found(folder: folder, share: share, key: key, store: store,
                                  link: ShareGate.link(publicURL: publicURL, token: String(tokenText)))
                }
            } catch {
                log.error("share link: \(error)", ["INBOX": folder.name])
            }
        }
        let cookie = request.cookies[Self.cookie]
        let answer = ShareGate.answer(lookups, published: { share in found.map { Files.exists($0.batchFolder) } ?? false },
                                      unlocked: { share in found.map { ShareGate.isUnlocked(share, cookie: cookie, key: $0.key) } ?? false },
                                      now: now)
        switch answer {
        case .notFound:
            return .response(guessed(address))
        case .gone(let why):
            return .response(ended(410, why.words))
        case .locked(let share):
            guard let found else { return .response(ended(404, SharePages.notFoundWords)) }
            if rest.isEmpty && request.method == "POST" {
                return .receiveForm(ShareForm(limit: Self.formLimit) { [self] fields in unlock(fields, found, share, request, address) })
            }
            return .response(page(401, SharePages.password(refused: false, wait: nil, form: ShareGate.formToken(share, cookie: nil, key: found.key))))
        case .open(let share):
            guard var found else { return .response(ended(404, SharePages.notFoundWords)) }
            found.share = share
            return open(found, rest: String(rest), request, cookie: cookie, address: address)
        }
    }

    /// A token no hot folder signed (or no token at all): 404, counted against the address.
    private func guessed(_ address: String) -> HTTPResponse {
        let (failures, _) = guesses.withLock { $0.failed(address, now: .now) }
        if failures == LoginThrottle().free + 1 {
            log.warning("web: \(address) asks for share links that do not exist (\(failures) in a row): slowed", ["ADDRESS": address])
        }
        return ended(404, SharePages.notFoundWords)
    }

    // MARK: - An open link

    private func open(_ found: Found, rest: String, _ request: HTTPRequest, cookie: String?, address: String) -> HTTPReply {
        let get = request.method == "GET" || request.method == "HEAD"
        let report: Report
        do throws(ReportError) {
            guard let read = try ReportReader.read(batchFolder: found.batchFolder) else { return .response(ended(410, ShareGate.Gone.removed.words)) }
            report = read
        } catch {
            log.error("share link: \(error)", ["INBOX": found.folder.name, "BATCH": found.share.batch])
            return .response(ended(410, ShareGate.Gone.removed.words))
        }
        let photos = Self.photos(report)
        let extras = report.outputs.map(\.file)
        switch rest {
        case "":
            if request.method == "POST" { return .response(redirect("./")) }
            guard get else { return .response(methodNotAllowed("GET")) }
            record(.opened, found, request, address: address)
            let approving: SharePages.Approving
            if let approval = BatchApproval.read(report) {
                approving = .done(approval)
            } else {
                approving = found.folder.approve == .client ? .open : .none
            }
            let zipBytes = (photos.flatMap { [$0.name] + $0.others } + extras).compactMap { Self.size(found.batchFolder + "/" + $0) }.reduce(0, +)
            let html = SharePages.gallery(photos: photos, extras: extras, zipBytes: zipBytes, expires: found.share.expires,
                                          approving: approving, form: ShareGate.formToken(found.share, cookie: cookie, key: found.key),
                                          link: found.link)
            return .response(page(200, html))
        case "approve":
            guard request.method == "POST" else { return .response(methodNotAllowed("POST")) }
            return .receiveForm(ShareForm(limit: Self.formLimit) { [self] fields in
                approve(fields, found, report: report, photos: photos.map(\.name), request, cookie: cookie, address: address)
            })
        case "qr.svg", "qr.png":
            guard get else { return .response(methodNotAllowed("GET")) }
            do {
                let code = try QRCode(found.link)
                let body = rest == "qr.svg" ? Array(code.svg().utf8) : try code.png(pixelsPerModule: 8)
                return .response(HTTPResponse(status: 200, headers: Self.headers + [("Content-Type", rest == "qr.svg" ? "image/svg+xml" : "image/png")],
                                              body: .bytes(body)))
            } catch {
                return .response(HTTPResponse(status: 500, text: "the link's QR code cannot be made: \(error)\n"))
            }
        case "batch.zip":
            guard get else { return .response(methodNotAllowed("GET")) }
            let names = photos.flatMap { [$0.name] + $0.others } + extras
            do throws(SystemError) {
                let folder = try BatchFiles.folder(found.folder.layout, found.share.batch)
                var entries: [BatchFiles.Entry] = []
                for name in names {
                    guard let path = Self.path(name), let size = Self.size(found.batchFolder + "/" + name) else { continue }
                    entries.append(BatchFiles.Entry(path: path, size: Int64(size)))
                }
                let zip = try BatchZip(folder: folder, id: found.share.batch, files: entries, log: log)
                record(.zip, found, request, address: address)
                return .response(HTTPResponse(status: 200, headers: Self.headers + [("Content-Type", "application/zip"),
                                                                                     ("Content-Disposition", ConsoleHandler.attachment(found.share.batch + ".zip"))],
                                              body: .stream(zip)))
            } catch {
                return .response(ended(404, SharePages.notFoundWords))
            }
        default:
            guard get else { return .response(methodNotAllowed("GET")) }
            // One of the set's files, by the name the page links it by: nothing else.
            let decoded = rest.split(separator: "/", omittingEmptySubsequences: false)
                .map { HTTPRequest.percentDecoded($0).map { String(decoding: $0, as: UTF8.self) } }
            guard !decoded.contains(where: { $0 == nil }) else { return .response(ended(404, SharePages.notFoundWords)) }
            let name = decoded.map { $0! }.joined(separator: "/")
            guard Set(photos.flatMap { [$0.name] + $0.others } + extras).contains(name), let path = Self.path(name),
                  let (file, status) = try? BatchFiles.open(found.folder.layout, found.share.batch, path) else {
                return .response(ended(404, SharePages.notFoundWords))
            }
            let (type, _) = BatchFiles.contentType(of: path.last!)
            var headers = Self.headers.filter { $0.name != "Cache-Control" } + [("Content-Type", type), ("Cache-Control", "private, max-age=3600")]
            if request.query["download"] != nil { headers.append(("Content-Disposition", ConsoleHandler.attachment(path.last!.readable))) }
            return .response(HTTPResponse(status: 200, headers: headers, body: .file(file, offset: 0, size: status.size)))
        }
    }

    private func approve(_ fields: [(String, String)], _ found: Found, report: Report, photos: [String], _ request: HTTPRequest,
                         cookie: String?, address: String) -> HTTPResponse {
        let fields: [(name: String, value: String)] = fields
        guard ShareGate.isFormToken(fields.first { $0.name == "csrf" }?.value, share: found.share, cookie: cookie, key: found.key) else {
            return page(403, SharePages.refused("This page had expired: reload it and choose again."))
        }
        guard found.folder.approve == .client else {
            return page(403, SharePages.refused("These photos need no approval here."))
        }
        guard report.approval == nil else {
            return page(409, SharePages.refused("Your choice was received already."))
        }
        let approval: Approval
        do throws(ShareError) {
            approval = try Approval.make(photos: photos, chosen: fields.filter { $0.name == "approve" }.map(\.value),
                                         note: fields.first { $0.name == "note" }?.value, by: Approval.client, at: Date())
        } catch {
            return page(400, SharePages.refused(error.message))
        }
        let fieldsForLog: LogFields = ["INBOX": found.folder.name, "BATCH": found.share.batch]
        let first: Bool
        do throws(ReportError) {
            first = try BatchApproval.record(approval, batchFolder: found.batchFolder)
        } catch {
            log.error("the client's approval cannot be written: \(error)", fieldsForLog)
            return page(500, SharePages.refused("Your choice could not be saved. Please try again in a moment."))
        }
        guard first else { return page(409, SharePages.refused("Your choice was received already.")) }
        record(.approved, found, request, address: address)
        log.notice("the client approved \(approval.approved.count) of \(photos.count) photos" + (approval.note == nil ? "" : ", with a note"), fieldsForLog)
        site.approved(found.folder.name, found.share.batch)
        return redirect("./")
    }

    private func unlock(_ fields: [(String, String)], _ found: Found, _ share: Share, _ request: HTTPRequest, _ address: String) -> HTTPResponse {
        let fields: [(name: String, value: String)] = fields
        let form = ShareGate.formToken(share, cookie: nil, key: found.key)
        let key = share.name + " " + address
        if let wait = passwords.withLock({ $0.wait(for: key, now: .now) }) {
            let seconds = Self.seconds(wait)
            var response = page(429, SharePages.password(refused: true, wait: seconds, form: form))
            response.headers.append(("Retry-After", "\(seconds)"))
            return response
        }
        guard ShareGate.isFormToken(fields.first { $0.name == "csrf" }?.value, share: share, cookie: nil, key: found.key) else {
            return page(403, SharePages.refused("This page had expired: reload it and enter the password again."))
        }
        let password = fields.first { $0.name == "password" }?.value ?? ""
        let ok = hashing.withLock { _ in PasswordHash.verify(password, against: share.password ?? "") }
        guard ok else {
            let (failures, wait) = passwords.withLock { $0.failed(key, now: .now) }
            record(.refused, found, request, address: address)
            log.warning("web: a wrong password for a share link of batch \(share.batch) from \(address) (\(failures) in a row"
                        + (wait > .zero ? "; the next try waits \(Self.seconds(wait)) s" : "") + ")",
                        ["INBOX": found.folder.name, "BATCH": share.batch, "ADDRESS": address])
            return page(401, SharePages.password(refused: true, wait: nil, form: form))
        }
        passwords.withLock { $0.succeeded(key) }
        var response = redirect("./")
        let path = "/s/" + String(ShareGate.route(request.path)?.token ?? "") + "/"
        response.headers.append(("Set-Cookie", ConsoleHandler.cookie(Self.cookie, ShareGate.unlockValue(share, key: found.key), path: path,
                                                                     maxAge: max(0, Int(share.expires.timeIntervalSinceNow)),
                                                                     secure: ConsoleHandler.Peer(request, trusted: trustedProxies).secure)))
        return response
    }

    // MARK: - Pieces

    /// The set's photos as the page shows them: each finished photo's first output, its others.
    static func photos(_ report: Report) -> [SharePages.Photo] {
        report.items.compactMap { item in
            guard let outputs = item.outputs, let first = outputs.first, item.status == .ok else { return nil }
            return SharePages.Photo(name: first.file, size: first.size, bytes: first.bytes, others: outputs.dropFirst().map(\.file))
        }
    }

    /// A name of the report as file names, a folder each (none starting with `.`).
    static func path(_ name: String) -> [FileName]? {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false).map { FileName(String($0)) }
        guard !parts.isEmpty, parts.allSatisfy({ $0 != nil && $0!.bytes.first != UInt8(ascii: ".") }) else { return nil }
        return parts.map { $0! }
    }

    private func record(_ what: Opening.Kind, _ found: Found, _ request: HTTPRequest, address: String) {
        let agent = request.header("user-agent").map { String($0.prefix(200)) }
        do throws(ShareError) {
            try found.store.record(Opening(at: Date(), what: what, address: address, agent: agent), of: found.share.name)
        } catch {
            log.warning("share link: cannot count an opening: \(error)", ["INBOX": found.folder.name, "BATCH": found.share.batch])
        }
    }

    /// A regular file's size, or nil.
    static func size(_ path: String) -> Int? {
        guard let status = try? Files.status(path), status.isRegular else { return nil }
        return Int(status.size)
    }

    static let headers: [(name: String, value: String)] = SharePages.headers.map { (name: $0.0, value: $0.1) }

    private func page(_ status: Int, _ html: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: Self.headers + [("Content-Type", "text/html; charset=utf-8")], body: .bytes(Array(html.utf8)))
    }

    private func ended(_ status: Int, _ words: String) -> HTTPResponse { page(status, SharePages.ended(words)) }

    private func tooMany(_ wait: Duration) -> HTTPResponse {
        var response = page(429, SharePages.ended("Too many requests from your address: try again in \(Self.seconds(wait)) s."))
        response.headers.append(("Retry-After", "\(Self.seconds(wait))"))
        return response
    }

    private func redirect(_ location: String) -> HTTPResponse {
        HTTPResponse(status: 303, headers: Self.headers + [("Location", location)])
    }

    private func methodNotAllowed(_ allowed: String) -> HTTPResponse {
        HTTPResponse(status: 405, text: "use \(allowed)\n", headers: [("Allow", allowed)])
    }

    static func seconds(_ wait: Duration) -> Int {
        max(1, Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up)))
    }
}

/// A share page's form (the password, the approval): every field in order, a name repeated as
/// often as it was sent (`approve`, a box per photo), at most `limit` bytes in all; no files.
final class ShareForm: HTTPFormReceiver {
    private let limit: Int
    private let answer: ([(String, String)]) -> HTTPResponse
    private var fields: [(String, [UInt8])] = []
    private var total = 0

    init(limit: Int, answer: @escaping ([(String, String)]) -> HTTPResponse) {
        self.limit = limit
        self.answer = answer
    }

    func partBegins(name: String, filename: [UInt8]?, contentType: String?) -> HTTPResponse? {
        guard filename == nil else { return HTTPResponse(status: 400, text: "this form takes no files\n") }
        guard fields.count < 10_000 else { return HTTPResponse(status: 413, text: "too many fields\n") }
        fields.append((name, []))
        return nil
    }

    func partData(_ piece: UnsafeRawBufferPointer) -> HTTPResponse? {
        total += piece.count
        guard total <= limit else { return HTTPResponse(status: 413, text: "the form is larger than \(limit) bytes\n") }
        if !fields.isEmpty { fields[fields.count - 1].1 += piece }
        return nil
    }

    func partEnds() -> HTTPResponse? { nil }

    func finish() -> HTTPResponse {
        answer(fields.map { ($0.0, String(decoding: $0.1, as: UTF8.self)) })
    }

    func abandon() {
        fields = []
    }
}
