import System

/// One request as it arrived: its head, complete. Paths and query strings stay as sent
/// (percent-encoded): the router decodes each path segment itself, so an encoded `%2f` inside
/// a segment can never pass for a real `/`.
public struct HTTPRequest: Sendable {
    /// `GET`, `HEAD`, `POST`…
    public var method: String
    /// The path as sent, without the query (`/inbox/shop/batch/20261129-150405-3f2a/`).
    public var path: String
    /// The query's fields, decoded (`+` and `%XX`); the first of each name.
    public var query: [String: String]
    /// The header fields, their names in lower case.
    public var headers: [String: String]
    /// The cookies sent (`Cookie:`), by name.
    public var cookies: [String: String]
    /// The peer's address as text (`127.0.0.1`, `::1`): the reverse proxy's, behind one.
    public var client: String
    /// Whether the connection is HTTPS (the server has a certificate).
    public var isTLS: Bool

    public init(method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
                cookies: [String: String] = [:], client: String = "", isTLS: Bool = false) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.cookies = cookies
        self.client = client
        self.isTLS = isTLS
    }

    /// A header field by name (any case).
    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// `Content-Length`, when sent and a number.
    public var contentLength: Int? { header("content-length").flatMap { Int($0) } }

    /// Decodes `application/x-www-form-urlencoded` text (a query, a small form body): `+` is a
    /// space, `%XX` a byte; the first value of each name; bytes that are no UTF-8 become U+FFFD.
    public static func formFields(_ text: some StringProtocol) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = formDecode(parts[0])
            let value = parts.count > 1 ? formDecode(parts[1]) : ""
            if fields[name] == nil { fields[name] = value }
        }
        return fields
    }

    /// `%XX` decoded (and `+` as a space when `plusIsSpace`); `nil` for a broken escape.
    public static func percentDecoded(_ text: some StringProtocol, plusIsSpace: Bool = false) -> [UInt8]? {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let b = bytes.popFirst() {
            if b == UInt8(ascii: "%") {
                guard bytes.count >= 2, let hi = hexValue(bytes[bytes.startIndex]),
                      let lo = hexValue(bytes[bytes.startIndex + 1]) else { return nil }
                out.append(hi << 4 | lo)
                bytes = bytes.dropFirst(2)
            } else if b == UInt8(ascii: "+") && plusIsSpace {
                out.append(UInt8(ascii: " "))
            } else {
                out.append(b)
            }
        }
        return out
    }

    private static func formDecode(_ text: some StringProtocol) -> String {
        String(decoding: percentDecoded(text, plusIsSpace: true) ?? Array(text.utf8), as: UTF8.self)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// A response: status, header fields and a body that is bytes in memory, a file sent from
/// its descriptor (`sendfile`), or a stream made as it is sent.
public struct HTTPResponse {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: Body

    public enum Body {
        case bytes([UInt8])
        /// `size` bytes of an open file from `offset`.
        case file(FileDescriptor, offset: Int64, size: Int64)
        /// Made as it is sent (chunked: its size is not known before).
        case stream(any HTTPBodyStream)
    }

    public init(status: Int, headers: [(name: String, value: String)] = [], body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A text response (`text/plain` unless `type` says otherwise).
    public init(status: Int, type: String = "text/plain; charset=utf-8", text: String,
                headers: [(name: String, value: String)] = []) {
        self.init(status: status, headers: [("Content-Type", type)] + headers, body: .bytes(Array(text.utf8)))
    }

    /// The first value of a header field (any case).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// A body made as it is sent, pulled by the server a piece at a time (a ZIP of a batch).
public protocol HTTPBodyStream: AnyObject {
    /// Fills the start of `buffer` with the next bytes.
    /// - Returns: how many (more than 0), 0 at the end, or `nil` when it cannot go on: the
    ///   connection is cut, so the client sees a broken download, never a short one that
    ///   looks whole.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int?
}

/// What the handler makes of a request's head.
public enum HTTPReply {
    /// The answer now (a body the client sends anyway is discarded).
    case response(HTTPResponse)
    /// A form follows (`multipart/form-data` or `application/x-www-form-urlencoded`, read by
    /// libmicrohttpd's post processor): `receiver` is given its parts as they arrive and
    /// answers once the body is in. Another content type answers 415.
    ///
    /// `limit` bounds the body as it arrives, whatever its framing: a `Content-Length` says
    /// its size before a byte is read (the handler refuses it then), a chunked body does not,
    /// so its bytes are counted, and the connection is cut the moment they pass `limit` (the
    /// receiver is told to `abandon`): no body, however sent, is read without end.
    case receiveForm(any HTTPFormReceiver, limit: Int = .max)
}

/// Takes one request's form as it arrives, part after part (a field, or a file of a
/// `multipart/form-data` upload, never whole in memory). Called on one server thread at a
/// time. Each call may answer early (an upload over its limit): nothing more is given to the
/// receiver, the rest of the body is read and thrown away (libmicrohttpd 0.9.75 sends a
/// response only before a body or after all of it), then the answer goes. A body known to be
/// too big from its head is refused before it is read: answer `.response` then.
public protocol HTTPFormReceiver: AnyObject {
    /// A part begins: a field called `name`, a file when `filename` is set (the bytes the
    /// client sent, any encoding).
    func partBegins(name: String, filename: [UInt8]?, contentType: String?) -> HTTPResponse?
    /// The next bytes of the part that began last.
    func partData(_ piece: UnsafeRawBufferPointer) -> HTTPResponse?
    /// The part that began last is complete.
    func partEnds() -> HTTPResponse?
    /// The whole body is in and well formed: the answer.
    func finish() -> HTTPResponse
    /// The request ended without `finish`: the client went away, a time-out, a malformed body,
    /// the server stopping, or after an early answer. Undo what is half done (a part begun
    /// and not ended); called once at most.
    func abandon()
}

/// Answers requests: called on the server's threads, several at once.
public protocol HTTPHandler: Sendable {
    func reply(to request: HTTPRequest) -> HTTPReply
}
