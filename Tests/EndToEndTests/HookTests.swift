import Foundation
import Testing

/// `onBatch`: after a batch, the `exec` program runs with the report's path, and the webhook
/// receives report.json (retried, then logged, when the server fails).
struct HookTests {
    @Test func execHookReceivesTheReportPathAfterABatch() throws {
        let dir = try Harness.tempDir()
        let record = dir + "/hook.txt"
        let script = dir + "/hook.sh"
        try Harness.write("#!/bin/sh\nprintf '%s\\n' \"$1\" \"$2\" \"$PHOTOFINISH_BATCH\" \"$PHOTOFINISH_OK\" > \(record)\necho said hello\n",
                          to: script)
        chmod(script, 0o755)
        let hot = try HotFolderFixture(extra: """
            onBatch: { exec: ["\(script)", "{report}", "{status}"], timeout: "30s" },
            """)
        let daemon = try hot.start()
        daemon.waitUntilReady()
        try hot.drop(try HotFolderFixture.photo(1), as: "one.jpg")
        #expect(Poll.until(.seconds(120)) { FileManager.default.fileExists(atPath: record) }, "log:\n\(daemon.log)")
        let batch = try #require(hot.reports().keys.first)
        #expect(Poll.until(.seconds(10)) { daemon.log.contains("said hello") }, "log:\n\(daemon.log)")
        let lines = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines == [hot.root + "/out/" + batch + "/report.json", "complete", batch, "1"])
        #expect(FileManager.default.fileExists(atPath: lines[0]))
        #expect(daemon.log.contains("onBatch exec \(script) exited 0"), "log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    @Test func webhookReceivesTheReport() throws {
        let server = try TestHTTPServer(status: 200)
        let hot = try HotFolderFixture(extra: """
            onBatch: { webhook: { url: "http://127.0.0.1:\(server.port)/hook", headers: { "X-Token": "secret" } } },
            """)
        let daemon = try hot.start()
        daemon.waitUntilReady()
        try hot.drop(try HotFolderFixture.photo(2), as: "two.jpg")
        #expect(Poll.until(.seconds(120)) { !server.requests.isEmpty }, "log:\n\(daemon.log)")
        let batch = try #require(hot.reports().keys.first)
        let request = try #require(server.requests.first)
        #expect(request.head.hasPrefix("POST /hook HTTP/1.1"))
        #expect(request.head.lowercased().contains("x-token: secret"))
        #expect(request.head.lowercased().contains("content-type: application/json"))
        #expect(request.body == (try Harness.read(hot.root + "/out/" + batch + "/report.json")))
        #expect(Poll.until(.seconds(10)) { daemon.log.contains("answered 200") }, "log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
        server.close()
    }

    @Test func failingWebhookIsRetriedThenLogged() throws {
        let server = try TestHTTPServer(status: 503)
        let hot = try HotFolderFixture(extra: """
            onBatch: { webhook: { url: "http://127.0.0.1:\(server.port)/hook", retries: 2, timeout: "5s" } },
            """)
        let daemon = try hot.start()
        daemon.waitUntilReady()
        try hot.drop(try HotFolderFixture.photo(3), as: "three.jpg")
        #expect(Poll.until(.seconds(120)) { daemon.log.contains("gave up after 3 attempts") }, "log:\n\(daemon.log)")
        #expect(server.requests.count == 3)
        #expect(daemon.log.contains("answered 503: ok; trying again in 1 s"), "log:\n\(daemon.log)")
        // The batch itself is done and fine; the daemon goes on.
        #expect(hot.reports().values.first?["status"] as? String == "complete")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
        server.close()
    }
}

/// An HTTP server on 127.0.0.1 for one test: records each request (head and body) and answers
/// every one with `status`.
final class TestHTTPServer: @unchecked Sendable {
    struct Request {
        var head: String
        var body: [UInt8]
    }

    let port: UInt16
    private let fd: Int32
    private let recorded = Locked<[Request]>([])
    private let thread: Thread

    init(status: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        self.fd = fd
        port = UInt16(bigEndian: addr.sin_port)
        let recorded = self.recorded
        thread = Thread {
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }  // closed
                if let request = Self.read(client) { recorded.update { $0 += [request] } }
                let reason = status == 200 ? "OK" : "Service Unavailable"
                let answer = "HTTP/1.1 \(status) \(reason)\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                _ = answer.withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                Glibc.close(client)
            }
        }
        thread.start()
    }

    var requests: [Request] { recorded.value }

    func close() {
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }

    /// The request head up to the blank line, then `Content-Length` bytes of body.
    private static func read(_ client: Int32) -> Request? {
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var headEnd: Int?
        var needed = Int.max
        while bytes.count < needed {
            let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            bytes += buffer[0..<n]
            if headEnd == nil, let end = bytes.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound {
                headEnd = end
                let head = String(decoding: bytes[0..<end], as: UTF8.self).lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                needed = end + length
            }
        }
        guard let headEnd else { return nil }
        return Request(head: String(decoding: bytes[0..<headEnd], as: UTF8.self), body: Array(bytes[headEnd...]))
    }
}
