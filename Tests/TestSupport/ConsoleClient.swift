import Foundation

/// A small HTTP/1.1 client for the console's tests, over a plain socket so a test controls
/// every byte: paths sent exactly as written (`%2e%2e` stays `%2e%2e`), bodies made piece by
/// piece (a 2 GiB upload is never held), connections left open on purpose. One request per
/// connection (`Connection: close`), a cookie jar, chunked answers decoded.
public final class ConsoleClient {
    public let port: UInt16
    public var cookies: [String: String] = [:]

    public struct Response {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]
        /// Bytes of the request body sent before the answer came (a refused upload).
        public var sent: Int64 = 0

        public func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
        public func headers(_ name: String) -> [String] { headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value) }
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public init(port: UInt16) {
        self.port = port
    }

    /// A connected socket (retried for a while: `systemd-socket-activate` starts the daemon at
    /// the first connection).
    public static func connect(port: UInt16, from source: String? = nil) throws -> Int32 {
        for _ in 0..<500 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            if let source {
                // Another loopback address as this client's own (the whole 127/8 is this machine).
                var local = sockaddr_in()
                local.sin_family = sa_family_t(AF_INET)
                local.sin_addr.s_addr = inet_addr(source)
                _ = withUnsafePointer(to: &local) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
            }
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            addr.sin_port = port.bigEndian
            let ok = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            if ok {
                var tv = timeval(tv_sec: 120, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
                return fd
            }
            close(fd)
            usleep(20_000)
        }
        throw Failure(description: "nothing listens on 127.0.0.1:\(port)")
    }

    /// One request with a body in memory (or none).
    @discardableResult
    public func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) throws -> Response {
        var sentBody = false
        return try request(method, path, headers: headers, length: Int64(body.count) as Int64?) { piece in
            guard !sentBody else { return false }
            sentBody = true
            piece = body
            return !body.isEmpty
        }
    }

    /// One request whose body of `length` bytes comes from `next` (it fills its argument and
    /// returns false at the end); `length` nil: sent chunked (`Transfer-Encoding: chunked`, a
    /// chunk a piece, no size said in advance). Sending stops as soon as the server answers
    /// or closes the connection; a connection closed with no answer is `Response.status` 0.
    public func request(_ method: String, _ path: String, headers: [(String, String)] = [], length: Int64?,
                        body next: (inout [UInt8]) -> Bool) throws -> Response {
        let fd = try Self.connect(port: port)
        defer { close(fd) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !cookies.isEmpty { head += "Cookie: " + cookies.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ") + "\r\n" }
        if let length {
            if method == "POST" || length > 0 { head += "Content-Length: \(length)\r\n" }
        } else {
            head += "Transfer-Encoding: chunked\r\n"
        }
        head += "\r\n"
        guard send(fd, Array(head.utf8)) else { throw Failure(description: "cannot send the head of \(method) \(path)") }
        var sent: Int64 = 0
        var piece: [UInt8] = []
        var whole = true
        while next(&piece) {
            // The answer may come before the body is sent (an upload refused at its limit).
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, 0) > 0 { whole = false; break }
            let framed = length == nil ? Array((String(piece.count, radix: 16) + "\r\n").utf8) + piece + Array("\r\n".utf8) : piece
            guard send(fd, framed) else { whole = false; break }
            sent += Int64(piece.count)
        }
        if length == nil && whole { _ = send(fd, Array("0\r\n\r\n".utf8)) }
        var response: Response
        do {
            response = try read(fd)
        } catch where length == nil || !whole {
            // Cut by the server without an answer (a body past its limit).
            response = Response(status: 0, headers: [], body: [])
        }
        response.sent = sent
        for value in response.headers("set-cookie") {
            let pair = value.split(separator: ";", maxSplits: 1)[0].split(separator: "=", maxSplits: 1)
            let name = String(pair[0]).trimmingCharacters(in: .whitespaces)
            let v = pair.count > 1 ? String(pair[1]) : ""
            if v.isEmpty || value.contains("Max-Age=0") { cookies[name] = nil } else { cookies[name] = v }
        }
        return response
    }

    private func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + done, $0.count - done, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            done += n
        }
        return true
    }

    /// The response, read to its end: its Content-Length, its last chunk, or the connection's
    /// close (a peer that keeps the connection alive, as chromedriver does, is not waited for).
    private func read(_ fd: Int32) throws -> Response {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var head: (end: Int, status: Int, headers: [(name: String, value: String)])?
        func complete() -> Bool {
            if head == nil, let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) {
                let lines = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
                let status = lines[0].split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
                let headers = lines.dropFirst().compactMap { line -> (name: String, value: String)? in
                    guard let colon = line.firstIndex(of: ":") else { return nil }
                    return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
                }
                head = (end.upperBound, status, headers)
            }
            guard let head else { return false }
            let field = { (name: String) in head.headers.first { $0.name.lowercased() == name }?.value }
            if let length = field("content-length").flatMap({ Int($0) }) { return bytes.count - head.end >= length }
            if field("transfer-encoding")?.lowercased().contains("chunked") == true {
                return bytes.suffix(5).elementsEqual(Array("0\r\n\r\n".utf8))
            }
            return head.status == 304 || head.status == 204
        }
        while !complete() {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        guard let head else { throw Failure(description: "no answer (\(bytes.count) bytes)") }
        var body = Array(bytes[head.end...])
        if head.headers.contains(where: { $0.name.lowercased() == "transfer-encoding" && $0.value.lowercased().contains("chunked") }) {
            body = try Self.dechunk(body)
        }
        return Response(status: head.status, headers: head.headers, body: body)
    }

    public static func dechunk(_ bytes: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        var rest = bytes[...]
        while true {
            guard let lineEnd = rest.firstRange(of: Array("\r\n".utf8)) else { throw Failure(description: "a chunked body ends early") }
            let sizeText = String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";")[0]
            guard let size = Int(sizeText, radix: 16) else { throw Failure(description: "bad chunk size \(sizeText)") }
            rest = rest[lineEnd.upperBound...]
            if size == 0 { return out }
            guard rest.count >= size + 2 else { throw Failure(description: "a chunk ends early") }
            out += rest.prefix(size)
            rest = rest.dropFirst(size + 2)
        }
    }

    // MARK: - The console's forms

    /// The value of the first `name="csrf"` field on the page at `path`.
    public func csrf(on path: String) throws -> String {
        let page = try request("GET", path)
        guard let match = page.text.firstMatch(of: #/name="csrf" value="([0-9a-f]+)"/#) else {
            throw Failure(description: "no csrf field on \(path) (\(page.status)): \(page.text.prefix(300))")
        }
        return String(match.1)
    }

    /// Logs in through the form (its token first); the answer to the POST.
    @discardableResult
    public func login(_ user: String, _ password: String, next: String = "/") throws -> Response {
        let token = try csrf(on: "/login")
        let form = "csrf=\(token)&user=\(Self.formEncode(user))&password=\(Self.formEncode(password))&next=\(Self.formEncode(next))"
        return try request("POST", "/login", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(form.utf8))
    }

    /// A multipart upload of `files` (name, bytes) in field `photos`, the token first.
    @discardableResult
    public func upload(_ inbox: String, _ files: [(name: String, bytes: [UInt8])], csrf: String?, json: Bool = true,
                       chunked: Bool = false) throws -> Response {
        let boundary = "pfboundary\(UInt32.random(in: 0...UInt32.max))"
        var body: [UInt8] = []
        if let csrf { body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n\(csrf)\r\n".utf8) }
        for file in files {
            let name = file.name.replacingOccurrences(of: "\"", with: "%22")
            body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"photos\"; filename=\"\(name)\"\r\nContent-Type: image/jpeg\r\n\r\n".utf8)
            body += file.bytes + Array("\r\n".utf8)
        }
        body += Array("--\(boundary)--\r\n".utf8)
        var headers = [("Content-Type", "multipart/form-data; boundary=\(boundary)")]
        if json { headers.append(("Accept", "application/json")) }
        guard chunked else { return try request("POST", "/inbox/\(inbox)/upload", headers: headers, body: body) }
        // 64 KiB a chunk, as a client streaming a form it does not measure first.
        var offset = 0
        return try request("POST", "/inbox/\(inbox)/upload", headers: headers, length: nil) { piece in
            guard offset < body.count else { return false }
            piece = Array(body[offset..<min(body.count, offset + 65_536)])
            offset += piece.count
            return true
        }
    }

    public static func formEncode(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? s
    }
}
