import Glibc
import HTTP
import Synchronization
import System
import Testing

/// The server's threads step back (nice 10) only while `busy` says the CPU is wanted
/// elsewhere: what the thread serving a request runs at, seen from inside the handler.
@Suite struct HTTPPriorityTests {
    final class NiceHandler: HTTPHandler {
        func reply(to request: HTTPRequest) -> HTTPReply {
            .response(HTTPResponse(status: 200, text: "\(ProcessResources.threadNice())"))
        }
    }

    /// A listening socket on a spare port of `host` (loopback by default).
    static func listener(address host: String = "127.0.0.1") throws -> (socket: Int32, port: UInt16) {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(s >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(s, $0, length) == 0 && listen(s, 16) == 0 && getsockname(s, $0, &length) == 0
            }
        }
        try #require(bound)
        return (s, UInt16(bigEndian: address.sin_port))
    }

    /// The body of `GET /` on a fresh connection.
    static func get(_ port: UInt16) throws -> String {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(s) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        try #require(connected)
        let request = Array("GET / HTTP/1.0\r\nHost: x\r\n\r\n".utf8)
        try #require(send(s, request, request.count, 0) == request.count)
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(s, &buffer, buffer.count, 0)
            if n <= 0 { break }
            answer += buffer[..<n]
        }
        let text = String(decoding: answer, as: UTF8.self)
        return String(text[try #require(text.range(of: "\r\n\r\n")).upperBound...])
    }

    @Test func threadsRunAtNiceZeroUnlessBusy() throws {
        guard getuid() == 0 || Self.mayRaisePriority else {
            print("skipped: this process may not raise a thread's priority again (RLIMIT_NICE 0, not root)")
            return
        }
        let box = BusyBox()
        let (socket, port) = try Self.listener()
        var settings = HTTPServer.Settings()
        settings.threads = 1
        settings.busy = { box.flag.load(ordering: .relaxed) }
        let server = try HTTPServer(socket: socket, settings: settings, handler: NiceHandler()) { _ in }
        defer { server.stop() }
        #expect(try Self.get(port) == "0")
        box.flag.store(true, ordering: .relaxed)
        #expect(try Self.get(port) == "10")
        #expect(try Self.get(port) == "10")
        box.flag.store(false, ordering: .relaxed)
        #expect(try Self.get(port) == "0")
    }

    @Test func withoutBusyTheThreadsAlwaysStepBack() throws {
        let (socket, port) = try Self.listener()
        let server = try HTTPServer(socket: socket, handler: NiceHandler()) { _ in }
        defer { server.stop() }
        #expect(try Self.get(port) == "10")
    }

    final class BusyBox: Sendable {
        let flag = Atomic(false)
    }

    static var mayRaisePriority: Bool {
        var limit = rlimit()
        return getrlimit(__rlimit_resource_t(__RLIMIT_NICE.rawValue), &limit) == 0 && limit.rlim_cur >= 20
    }
}
