import Foundation
import Synchronization

/// A TCP port on loopback in front of a `PostgresServer` (whose own socket is a Unix one): one
/// host of a test cluster reaches the database through it, and the test cuts that host off and
/// lets it back as a network would. Each connection accepted is one to the server's socket,
/// bytes copied both ways by one thread.
///
/// `cut()`: nothing passes any more, either way, and nothing is closed — the host's statements
/// go unanswered (it finds out by its own timeouts and keepalives), its new connections are
/// accepted and never answered; `serverNotices` later the server side of each connection is
/// closed, as the server's own TCP keepalives would end a session whose peer stopped answering
/// (its advisory locks go with it). `restore()`: the connections of the cut are dropped (a
/// network back does not revive them) and new ones pass again.
public final class PostgresProxy: @unchecked Sendable {
    /// The port on 127.0.0.1 to give the host (`host=127.0.0.1 port=…`).
    public let port: UInt16
    private let listener: Int32
    private let target: String
    private let wake: [Int32]
    private let state = Mutex(State())
    private let ended = DispatchSemaphore(value: 0)

    private struct State {
        var cut = false
        /// When the server side of the connections cut is to be closed.
        var closeServerAt: ContinuousClock.Instant?
        var stopping = false
    }

    /// One connection through the proxy: the host's end and the server's, and what is waiting
    /// to be written to each.
    private final class Pair {
        var client: Int32
        var server: Int32
        var toServer: [UInt8] = []
        var toClient: [UInt8] = []
        /// Made while cut, or there when the cut came: nothing passes, it is dropped at the restore.
        var dead = false
        init(client: Int32, server: Int32) {
            self.client = client
            self.server = server
        }
    }

    /// - Parameter server: the server to reach (its Unix socket in its folder).
    public init(to server: PostgresServer) throws {
        target = server.folder + "/.s.PGSQL.5432"
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw PostgresServer.CommandFailed(description: "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0  // a free port, chosen by the kernel
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 64) == 0 else {
            close(listener)
            throw PostgresServer.CommandFailed(description: "bind/listen: \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        port = UInt16(bigEndian: address.sin_port)
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw PostgresServer.CommandFailed(description: "pipe: \(String(cString: strerror(errno)))") }
        wake = ends
        for fd in [listener] + ends { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        let thread = Thread { [self] in
            run()
            ended.signal()
        }
        thread.name = "pg-proxy"
        thread.start()
    }

    deinit { stop() }

    /// A connection string for `database` through this proxy.
    public func conninfo(_ database: String) -> String {
        "host=127.0.0.1 port=\(port) dbname=\(database) user=photofinish"
    }

    /// Cuts the host off (see the type's comment); the server notices `serverNotices` later.
    public func cut(serverNotices: Duration = .seconds(3)) {
        state.withLock { s in
            s.cut = true
            s.closeServerAt = ContinuousClock.now + serverNotices
        }
        poke()
    }

    /// Lets the host reach the database again (new connections pass; those of the cut are dropped).
    public func restore() {
        state.withLock { s in
            s.cut = false
            s.closeServerAt = nil
        }
        poke()
    }

    /// Stops the proxy: every connection closes (safe to call twice).
    public func stop() {
        let first = state.withLock { s -> Bool in
            defer { s.stopping = true }
            return !s.stopping
        }
        guard first else { return }
        poke()
        ended.wait()
        close(listener)
        close(wake[0])
        close(wake[1])
    }

    private func poke() {
        var one: UInt8 = 1
        _ = write(wake[1], &one, 1)
    }

    private func connectToServer() -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        _ = withUnsafeMutableBytes(of: &address.sun_path) { raw in
            target.utf8CString.withUnsafeBytes { raw.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(raw.count - 1))) }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    private func run() {
        var pairs: [Pair] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        func drop(_ pair: Pair) {
            if pair.client >= 0 { close(pair.client) }
            if pair.server >= 0 { close(pair.server) }
            pair.client = -1
            pair.server = -1
        }
        while true {
            let (stopping, cut, closeServerAt) = state.withLock { ($0.stopping, $0.cut, $0.closeServerAt) }
            if stopping { break }
            if cut {
                for pair in pairs { pair.dead = true }
                if let at = closeServerAt, ContinuousClock.now >= at {
                    for pair in pairs where pair.server >= 0 {
                        close(pair.server)
                        pair.server = -1
                    }
                }
            } else {
                for pair in pairs where pair.dead { drop(pair) }
            }
            pairs.removeAll { $0.client < 0 && $0.server < 0 }
            // What to wait for: new connections, and each live pair's reads (and writes pending).
            var fds = [pollfd(fd: wake[0], events: Int16(POLLIN), revents: 0), pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            var owners: [(Pair, Bool)] = []  // (pair, is the client end)
            for pair in pairs where !pair.dead {
                if pair.client >= 0 {
                    fds.append(pollfd(fd: pair.client, events: Int16(POLLIN) | (pair.toClient.isEmpty ? 0 : Int16(POLLOUT)), revents: 0))
                    owners.append((pair, true))
                }
                if pair.server >= 0 {
                    fds.append(pollfd(fd: pair.server, events: Int16(POLLIN) | (pair.toServer.isEmpty ? 0 : Int16(POLLOUT)), revents: 0))
                    owners.append((pair, false))
                }
            }
            var timeout: Int32 = 1000
            if cut, let at = closeServerAt, pairs.contains(where: { $0.server >= 0 }) {
                timeout = Int32(clamping: max(1, Int64((at - ContinuousClock.now) / .milliseconds(1)) + 1))
            }
            let ready = fds.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), timeout) }
            guard ready >= 0 || errno == EINTR else { break }
            if fds[0].revents != 0 { while read(wake[0], &buffer, buffer.count) > 0 {} }
            if fds[1].revents != 0 {
                while true {
                    let client = accept(listener, nil, nil)
                    guard client >= 0 else { break }
                    _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
                    if cut {
                        // Accepted by the kernel as a cut network would not: never answered.
                        let pair = Pair(client: client, server: -1)
                        pair.dead = true
                        pairs.append(pair)
                    } else if let server = connectToServer() {
                        pairs.append(Pair(client: client, server: server))
                    } else {
                        close(client)
                    }
                }
            }
            for (index, (pair, isClient)) in owners.enumerated() {
                let entry = fds[index + 2]
                guard entry.revents != 0, !pair.dead else { continue }
                let fd = isClient ? pair.client : pair.server
                guard fd >= 0 else { continue }
                if entry.revents & Int16(POLLOUT) != 0 {
                    let pending = isClient ? pair.toClient : pair.toServer
                    let sent = pending.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                    if sent > 0 {
                        if isClient { pair.toClient.removeFirst(sent) } else { pair.toServer.removeFirst(sent) }
                    }
                }
                if entry.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                    let got = read(fd, &buffer, buffer.count)
                    if got > 0 {
                        if isClient { pair.toServer += buffer[0..<got] } else { pair.toClient += buffer[0..<got] }
                    } else if got == 0 || (errno != EAGAIN && errno != EINTR) {
                        drop(pair)
                    }
                }
            }
        }
        for pair in pairs { drop(pair) }
    }
}
