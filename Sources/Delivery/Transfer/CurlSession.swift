internal import CCurl
import Foundation
import System

/// One libcurl easy handle, owned here and freed once, used for one attempt request after
/// request: libcurl keeps the connection (an SSH session, a TLS connection, an FTP control
/// connection) between them, so a batch of files costs one login. Not shared between threads.
final class CurlSession {
    typealias Failure = DeliveryMachine.Failure

    private let curl: UnsafeMutableRawPointer
    private let settings: DestinationSettings
    private let credential: Credential?
    private let shouldStop: @Sendable () -> Bool
    private var errorText = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)

    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// What a request came back with.
    struct Response {
        /// The HTTP status, or the FTP/SMTP reply code, of the last response (0: none).
        var status: Int
        /// Response headers, names lowercased (HTTP and S3).
        var headers: [String: String]
        /// The start of the body (HTTP errors).
        var body: String
    }

    init(settings: DestinationSettings, credential: Credential?, shouldStop: @escaping @Sendable () -> Bool) throws(Failure) {
        guard Self.globalInit, let curl = curl_easy_init() else { throw Failure("libcurl could not be initialised", retryable: true) }
        self.curl = curl
        self.settings = settings
        self.credential = credential
        self.shouldStop = shouldStop
    }

    deinit { curl_easy_cleanup(curl) }

    /// The protocols a destination's requests may use (a redirect elsewhere is refused).
    private var protocols: String {
        switch settings.destination.kind {
        case .sftp: "sftp"
        case .ftp, .ftps: "ftp,ftps"
        case .webdav: "http"
        case .webdavs: "https"
        case .s3: settings.destination.endpoint?.lowercased().hasPrefix("http://") == true ? "http" : "https"
        case .mailto: "smtp,smtps"
        case .file: "file"
        }
    }

    // MARK: Requests

    /// Writes the file at `local` (`bytes` long) to `url`. `method` (HTTP only): PUT unless given.
    func upload(_ local: String, bytes: Int, to url: String, headers: [String] = [], after: [String] = []) throws(Failure) -> Response {
        let source: FileDescriptor
        do throws(SystemError) {
            source = try FileDescriptor.open(local, .read)
        } catch {
            throw Failure("cannot read \(local): \(error)", retryable: false)
        }
        defer { source.close() }
        let reader = Reader(source)
        return try perform(url, headers: headers, after: after, reader: reader) { curl in
            [pf_curl_setopt_long(curl, CURLOPT_UPLOAD, 1),
             pf_curl_setopt_off(curl, CURLOPT_INFILESIZE_LARGE, curl_off_t(bytes)),
             pf_curl_setopt_long(curl, CURLOPT_FTP_CREATE_MISSING_DIRS, Int(CURLFTP_CREATE_DIR_RETRY.rawValue))]
        }
    }

    /// Reads `url` whole, hashing it as it comes: its SHA-256 and length.
    func download(_ url: String) throws(Failure) -> (sha256: String, bytes: Int, response: Response) {
        let sink = HashingSink()
        // Read in large pieces (libcurl's default is 16 KiB): a read-back of a 5 MB photo is
        // then some ten reads and hash updates, not three hundred (SFTP sets it for every request).
        let response = try perform(url, sink: sink) { curl in [pf_curl_setopt_long(curl, CURLOPT_BUFFERSIZE, Self.readBufferSize)] }
        return (sink.finish(), sink.count, response)
    }

    /// A request without a body: FTP/SFTP commands (`after`, sent once at `url`), an HTTP
    /// `method` (MKCOL, MOVE, HEAD, DELETE).
    func command(_ url: String, method: String? = nil, headers: [String] = [], after: [String] = []) throws(Failure) -> Response {
        try perform(url, headers: headers, after: after) { curl in
            var set = [pf_curl_setopt_long(curl, CURLOPT_NOBODY, 1)]
            if let method, method != "HEAD" {
                set = [pf_curl_setopt_string(curl, CURLOPT_CUSTOMREQUEST, method)]
                if method == "MKCOL" || method == "MOVE" || method == "DELETE" { set.append(pf_curl_setopt_long(curl, CURLOPT_NOBODY, 0)) }
            }
            return set
        }
    }

    /// Sends one mail: `from` to `recipients` through the server at `url` (`smtp://` or
    /// `smtps://`), `headers` (From, To, Subject) and `text`, with `attachments` (local path,
    /// name) base64-encoded.
    func mail(_ url: String, from: String, recipients: [String], headers: [String], text: String,
              attachments: [(path: String, name: String)]) throws(Failure) -> Response {
        guard let mime = curl_mime_init(curl) else { throw Failure("libcurl could not make a message", retryable: true) }
        defer { curl_mime_free(mime) }
        let body = curl_mime_addpart(mime)
        curl_mime_data(body, Self.mailLines(text), Int(CURL_ZERO_TERMINATED))
        curl_mime_type(body, "text/plain; charset=utf-8")
        curl_mime_encoder(body, "quoted-printable")
        for attachment in attachments {
            let part = curl_mime_addpart(mime)
            guard curl_mime_filedata(part, attachment.path) == CURLE_OK else {
                throw Failure("cannot attach \(attachment.path)", retryable: false)
            }
            curl_mime_filename(part, attachment.name)
            curl_mime_type(part, Self.mediaType(attachment.name))
            curl_mime_encoder(part, "base64")
        }
        var rcpt: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(rcpt) }
        for address in recipients { rcpt = curl_slist_append(rcpt, "<\(address)>") }
        return try perform(url, headers: headers) { curl in
            [pf_curl_setopt_string(curl, CURLOPT_MAIL_FROM, "<\(from)>"),
             pf_curl_setopt_slist(curl, CURLOPT_MAIL_RCPT, rcpt),
             pf_curl_setopt_mime(curl, mime)]
        }
    }

    /// A mail's text with CRLF line ends, as libcurl's quoted-printable encoder wants them: it
    /// keeps a CRLF as the line break it is and breaks a longer line softly (`=` at the end) at
    /// 76 characters, which every reader joins again (a link stays whole); a bare LF it would
    /// write as `=0A`, the whole text as one line of soft breaks (reference: Notifications).
    static func mailLines(_ text: String) -> String {
        text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .replacingOccurrences(of: "\n", with: "\r\n")
    }

    static func mediaType(_ name: String) -> String {
        switch (name as NSString).pathExtension.lowercased() {
        case "jpg", "jpeg": "image/jpeg"
        case "png": "image/png"
        case "webp": "image/webp"
        case "heic", "heif": "image/heif"
        case "avif": "image/avif"
        case "tif", "tiff": "image/tiff"
        case "pdf": "application/pdf"
        case "zip": "application/zip"
        case "json": "application/json"
        case "html": "text/html"
        default: "application/octet-stream"
        }
    }

    /// The upload buffers of SFTP and WebDAV transfers, SFTP's download buffer: 512 KiB.
    static let transferBufferSize = 512 * 1024

    /// The buffer a read-back is received in, whatever the protocol: 512 KiB.
    static let readBufferSize = 512 * 1024

    /// The SHA-256 of no bytes.
    static let emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    // MARK: The one place a request is made

    private func perform(_ url: String, headers: [String] = [], after: [String] = [], reader: Reader? = nil,
                         sink: HashingSink? = nil, _ specific: (UnsafeMutableRawPointer) -> [CURLcode]) throws(Failure) -> Response {
        curl_easy_reset(curl)
        var headerList: UnsafeMutablePointer<curl_slist>?
        var afterList: UnsafeMutablePointer<curl_slist>?
        defer {
            curl_slist_free_all(headerList)
            curl_slist_free_all(afterList)
        }
        // No "100-continue" round trip before each file (WebDAV). Not for S3: libcurl's SigV4
        // (7.88) signs the empty "Expect:" it then leaves out, and the server refuses the
        // signature; an S3 request is signed with its payload's hash (x-amz-content-sha256,
        // which S3 requires on every request), an empty one's unless the caller gives its own.
        let kind = settings.destination.kind
        var extra = kind == .webdav || kind == .webdavs ? ["Expect:"] : []
        if kind == .s3, !headers.contains(where: { $0.lowercased().hasPrefix("x-amz-content-sha256:") }) {
            extra.append("x-amz-content-sha256: " + Self.emptySHA256)
        }
        for line in headers + extra { headerList = curl_slist_append(headerList, line) }
        for line in after { afterList = curl_slist_append(afterList, line) }
        let collector = HeaderCollector()
        let stop = StopFlag(shouldStop)
        let body = sink ?? HashingSink(keep: 2048)
        let code: CURLcode = errorText.withUnsafeMutableBufferPointer { errors in
            errors[0] = 0
            var set = common(url: url, errors: errors.baseAddress!)
            set += [
                pf_curl_setopt_slist(curl, CURLOPT_HTTPHEADER, headerList),
                pf_curl_setopt_header(curl, { data, size, count, context in
                    guard let data, let context else { return 0 }
                    Unmanaged<HeaderCollector>.fromOpaque(context).takeUnretainedValue()
                        .add(UnsafeRawBufferPointer(start: data, count: size * count))
                    return size * count
                }, Unmanaged.passUnretained(collector).toOpaque()),
                pf_curl_setopt_write(curl, { data, size, count, context in
                    guard let data, let context else { return 0 }
                    Unmanaged<HashingSink>.fromOpaque(context).takeUnretainedValue()
                        .add(UnsafeRawBufferPointer(start: data, count: size * count))
                    return size * count
                }, Unmanaged.passUnretained(body).toOpaque()),
                pf_curl_setopt_progress(curl, { context, _, _, _, _ in
                    guard let context else { return 0 }
                    return Unmanaged<StopFlag>.fromOpaque(context).takeUnretainedValue().asked() ? 1 : 0
                }, Unmanaged.passUnretained(stop).toOpaque()),
            ]
            if afterList != nil { set.append(pf_curl_setopt_slist(curl, CURLOPT_POSTQUOTE, afterList)) }
            if let reader {
                set.append(pf_curl_setopt_read(curl, { buffer, size, count, context in
                    guard let buffer, let context else { return Int(CURL_READFUNC_ABORT) }
                    return Unmanaged<Reader>.fromOpaque(context).takeUnretainedValue()
                        .read(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
                }, Unmanaged.passUnretained(reader).toOpaque()))
            }
            set += specific(curl)
            if let refused = set.first(where: { $0 != CURLE_OK }) { return refused }
            return curl_easy_perform(curl)
        }
        withExtendedLifetime((collector, stop, body, reader)) {}
        var status = 0
        _ = pf_curl_response_code(curl, &status)
        let response = Response(status: status, headers: collector.headers, body: body.text)
        if let problem = reader?.problem { throw Failure(problem, retryable: false) }
        guard code == CURLE_OK else { throw failure(code, status: status, stopped: stop.wasAsked) }
        return response
    }

    /// The options every request has: where, who, how safely, how patiently.
    private func common(url: String, errors: UnsafeMutablePointer<CChar>) -> [CURLcode] {
        let kind = settings.destination.kind
        var set = [
            pf_curl_setopt_string(curl, CURLOPT_URL, url),
            pf_curl_setopt_pointer(curl, CURLOPT_ERRORBUFFER, errors),
            pf_curl_setopt_long(curl, CURLOPT_NOSIGNAL, 1),
            pf_curl_setopt_string(curl, CURLOPT_PROTOCOLS_STR, protocols),
            pf_curl_setopt_string(curl, CURLOPT_USERAGENT, "photofinish"),
            pf_curl_setopt_long(curl, CURLOPT_CONNECTTIMEOUT, 30),
            // A connection that moves under 1 byte/s for the stall timeout has stalled.
            pf_curl_setopt_long(curl, CURLOPT_LOW_SPEED_LIMIT, 1),
            pf_curl_setopt_long(curl, CURLOPT_LOW_SPEED_TIME, max(1, Int(settings.stallTimeout.components.seconds))),
            pf_curl_setopt_long(curl, CURLOPT_TCP_KEEPALIVE, 1),
        ]
        if kind == .sftp {
            // Larger than libcurl's 64 KiB (16 KiB for reads): over SFTP each buffer is one
            // write (or read) request libssh2 sends in pipelined packets, so a small one leaves
            // the link idle between requests — the upload and the read-back alike. (Not for
            // FTPS: vsftpd then answers far more uploads 426.)
            set.append(pf_curl_setopt_long(curl, CURLOPT_UPLOAD_BUFFERSIZE, Self.transferBufferSize))
            set.append(pf_curl_setopt_long(curl, CURLOPT_BUFFERSIZE, Self.transferBufferSize))
        }
        if kind == .webdav || kind == .webdavs {
            // A PUT read and sent in 512 KiB pieces, not libcurl's 64 KiB: bench/deliver's run
            // (8 files of 5 MB to Apache) makes 105 sends and 353 polls, not 649 and 1,462.
            set.append(pf_curl_setopt_long(curl, CURLOPT_UPLOAD_BUFFERSIZE, Self.transferBufferSize))
        }
        if let bandwidth = settings.bandwidth {
            set.append(pf_curl_setopt_off(curl, CURLOPT_MAX_SEND_SPEED_LARGE, curl_off_t(bandwidth)))
        }
        if let caFile = settings.caFile { set.append(pf_curl_setopt_string(curl, CURLOPT_CAINFO, caFile)) }
        let user = credential?.user ?? settings.destination.user
        switch kind {
        case .s3:
            if let key = credential?.accessKey, let secret = credential?.secretKey {
                set.append(pf_curl_setopt_string(curl, CURLOPT_USERNAME, key))
                set.append(pf_curl_setopt_string(curl, CURLOPT_PASSWORD, secret))
                set.append(pf_curl_setopt_string(curl, CURLOPT_AWS_SIGV4, "aws:amz:\(settings.destination.region):s3"))
            }
        case .sftp:
            set.append(pf_curl_setopt_string(curl, CURLOPT_SSH_KNOWNHOSTS, settings.knownHosts))
            if let user { set.append(pf_curl_setopt_string(curl, CURLOPT_USERNAME, user)) }
            var auth = 0
            if let key = credential?.privateKey {
                auth |= Int(CURLSSH_AUTH_PUBLICKEY)
                set.append(pf_curl_setopt_string(curl, CURLOPT_SSH_PRIVATE_KEYFILE, key))
                let publicKey = credential?.publicKey ?? (Files.exists(key + ".pub") ? key + ".pub" : nil)
                if let publicKey { set.append(pf_curl_setopt_string(curl, CURLOPT_SSH_PUBLIC_KEYFILE, publicKey)) }
                if let passphrase = credential?.passphrase { set.append(pf_curl_setopt_string(curl, CURLOPT_KEYPASSWD, passphrase)) }
            }
            if let password = credential?.password {
                auth |= Int(CURLSSH_AUTH_PASSWORD | CURLSSH_AUTH_KEYBOARD)
                set.append(pf_curl_setopt_string(curl, CURLOPT_PASSWORD, password))
            }
            set.append(pf_curl_setopt_long(curl, CURLOPT_SSH_AUTH_TYPES, auth == 0 ? Int(CURLSSH_AUTH_AGENT) : auth))
        case .ftps, .mailto:
            // ftps:// (explicit) and smtp:// with a login: TLS is required, never skipped.
            if !settings.destination.implicitTLS && !url.hasPrefix("smtps:") {
                let level = kind == .ftps || credential?.password != nil ? CURLUSESSL_ALL : CURLUSESSL_TRY
                set.append(pf_curl_setopt_long(curl, CURLOPT_USE_SSL, Int(level.rawValue)))
            }
            fallthrough
        default:
            if let user { set.append(pf_curl_setopt_string(curl, CURLOPT_USERNAME, user)) }
            if let password = credential?.password { set.append(pf_curl_setopt_string(curl, CURLOPT_PASSWORD, password)) }
        }
        return set
    }

    /// A failed request in words a user can act on, and whether asking again may help.
    private func failure(_ code: CURLcode, status: Int, stopped: Bool) -> Failure {
        let detail = String(decoding: errorText.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        if stopped { return Failure("stopped (the service is stopping); resumed at the next start", retryable: true) }
        switch code {
        case CURLE_LOGIN_DENIED:
            return Failure("the server refused the login (\(reason)): check the credentials entry \(settings.credentials ?? "(none named)")",
                           retryable: false)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM:
            let which = settings.destination.kind == .sftp
                ? "the server's host key is not the one in \(settings.knownHosts) (or not there): add it with ssh-keyscan, after checking it"
                : "the server's certificate could not be verified" + (settings.caFile.map { " against \($0)" } ?? " against the system's CAs (caFile names others)")
            return Failure("\(which) (\(reason))", retryable: false)
        case CURLE_REMOTE_ACCESS_DENIED:
            return Failure("the server denied access (\(reason)): check the destination's folder and its rights", retryable: false)
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            return Failure(reason, retryable: false)
        case CURLE_REMOTE_DISK_FULL:
            return Failure("the server's disk is full (\(reason))", retryable: true)
        case _ where [.ftp, .ftps].contains(settings.destination.kind) && [" 451", " 452", " 552"].contains(where: detail.hasSuffix):
            // The FTP server's answer to STOR or to the end of an upload: 452 "insufficient
            // storage", 552 "exceeded storage allocation", 451 "local error" (vsftpd's "Failure
            // writing to local file").
            let which = detail.hasSuffix(" 451") ? "the FTP server could not write the file (its disk full or a quota reached, most often)"
                : "the server's disk is full"
            return Failure("\(which) (\(reason))", retryable: true)
        case CURLE_SSH where detail.isEmpty:
            // SFTP v3 has no "disk full": OpenSSH's server answers a write that found no room
            // SSH_FX_FAILURE, and libcurl says no more of it than of a connection cut.
            return Failure("\(reason): the SFTP server failed the request (its disk full or a quota reached, or the connection cut)",
                           retryable: true)
        case CURLE_WEIRD_SERVER_REPLY where settings.destination.kind == .mailto && status > 0:
            // libcurl keeps the SMTP server's code, not its words: 452 and 552 are its "no room".
            let room = status == 452 || status == 552 ? " (its disk or the mailbox full)" : ""
            return Failure("the mail server answered \(status)\(room) (\(reason))", retryable: true)
        case CURLE_SEND_ERROR where settings.destination.kind == .ftp || settings.destination.kind == .ftps:
            // An FTP server that cannot write an upload (no room, a quota) closes its data
            // connection and says why (451, 452, 552) on the control connection, which libcurl
            // no longer reads once the data connection is cut.
            return Failure("\(reason): the FTP server cut the upload off (its disk full or a quota reached, or the server stopped)",
                           retryable: true)
        default:
            return Failure(reason, retryable: true)
        }
    }

    /// The HTTP answer `response` as a failure (nil for 2xx): 401 and 403 are the login's, and
    /// final; other client errors are final too, save timeouts and "too many requests".
    func httpProblem(_ response: Response, doing what: String) -> Failure? {
        let code = response.status
        guard !(200..<300).contains(code) else { return nil }
        let said = Self.words(response.body)
        let text = "\(what): the server answered \(code)" + (said.isEmpty ? "" : ": " + String(said.prefix(300)))
        // S3 answers a key it does not know, or a wrong secret, 403 with its code in the body.
        let login = code == 401 || (code == 403 && ["InvalidAccessKeyId", "SignatureDoesNotMatch"].contains { response.body.contains($0) })
        switch code {
        case _ where login:
            return Failure("\(what): the server refused the login (\(code)" + (said.isEmpty ? "" : ": " + String(said.prefix(300)))
                           + "): check the credentials entry \(settings.credentials ?? "(none named)")", retryable: false)
        case 403:
            return Failure(text + " (check the credentials entry \(settings.credentials ?? "(none named)"))", retryable: false)
        case 507:
            return Failure(text + " (its disk is full)", retryable: true)
        case 400..<500 where code != 408 && code != 429 && code != 423 && code != 409:
            return Failure(text, retryable: false)
        default:
            return Failure(text, retryable: true)
        }
    }
}

extension CurlSession {
    /// A response body in a few words: an HTML page's title, else the text without tags.
    static func words(_ body: String) -> String {
        if let open = body.range(of: "<title>", options: .caseInsensitive),
           let close = body.range(of: "</title>", options: .caseInsensitive, range: open.upperBound..<body.endIndex) {
            return body[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
        }
        var text = ""
        var inTag = false
        for c in body {
            if c == "<" { inTag = true } else if c == ">" { inTag = false } else if !inTag { text.append(c) }
        }
        return text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }
}

extension Destination.Kind {
    var isHTTP: Bool { self == .webdav || self == .webdavs || self == .s3 }
}

/// Feeds an upload from a file.
private final class Reader {
    private let source: FileDescriptor
    var problem: String?

    init(_ source: FileDescriptor) { self.source = source }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        do throws(SystemError) {
            return try source.read(into: buffer)
        } catch {
            problem = "cannot read \(source.path): \(error)"
            return Int(CURL_READFUNC_ABORT)
        }
    }
}

/// Hashes what a download brings (and keeps its first bytes, for an error's body).
final class HashingSink {
    private var hash: SHA256? = SHA256()
    private(set) var count = 0
    private var kept: [UInt8] = []
    private let keep: Int

    init(keep: Int = 0) { self.keep = keep }

    func add(_ chunk: UnsafeRawBufferPointer) {
        hash!.update(chunk)
        count += chunk.count
        if kept.count < keep { kept += chunk.prefix(keep - kept.count) }
    }

    var text: String { String(decoding: kept, as: UTF8.self) }

    func finish() -> String {
        hash.take()!.finalize()
    }
}

/// Response headers by lowercased name (the last response's: a redirect's or a 100's are replaced).
private final class HeaderCollector {
    var headers: [String: String] = [:]

    func add(_ line: UnsafeRawBufferPointer) {
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("HTTP/") { headers = [:]; return }
        guard let colon = text.firstIndex(of: ":") else { return }
        headers[text[..<colon].lowercased()] = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
}

/// Asks, from libcurl's progress callback, whether to stop the transfer.
private final class StopFlag {
    private let shouldStop: @Sendable () -> Bool
    private(set) var wasAsked = false

    init(_ shouldStop: @escaping @Sendable () -> Bool) { self.shouldStop = shouldStop }

    func asked() -> Bool {
        if shouldStop() { wasAsked = true }
        return wasAsked
    }
}
