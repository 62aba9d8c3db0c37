internal import CShims
import Glibc

/// Listening stream sockets another process opened and passed in (systemd's socket
/// activation), each owned here, and the connections accepted on them, one at a time.
///
/// `serve` waits in `poll` on the sockets and a wake-up pipe (`stop` writes to it): no timer.
public final class ListeningSockets: Sendable {
    private let sockets: [FileDescriptor]
    private let wake: (read: FileDescriptor, write: FileDescriptor)

    /// Takes ownership of `raw` (listening stream sockets): closed on exec from now on and
    /// non-blocking (a connection another process took first is no reason to wait).
    /// - Throws: `SystemError` when the wake-up pipe cannot be made.
    public init(adopting raw: [Int32]) throws(SystemError) {
        sockets = raw.map { fd in
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            return FileDescriptor(owning: fd, path: FilePath("listening socket \(fd)"))
        }
        wake = try FileDescriptor.pipe()
    }

    public var count: Int { sockets.count }

    /// Accepts connections until `stop`, and hands each to `handle` (closed when it returns).
    /// - Throws: `SystemError` when `poll` fails (then nothing more is accepted).
    public func serve(_ handle: (Connection) -> Void) throws(SystemError) {
        while true {
            var fds = sockets.map { pollfd(fd: $0.raw, events: Int16(POLLIN), revents: 0) }
            fds.append(pollfd(fd: wake.read.raw, events: Int16(POLLIN), revents: 0))
            _ = try Syscall.check("wait for connections on", "\(sockets.count) sockets") { poll(&fds, nfds_t(fds.count), -1) }
            if fds.last!.revents != 0 { return }
            for (socket, fd) in zip(sockets, fds) where fd.revents != 0 {
                // EAGAIN: another process accepted it first, or the peer gave up.
                guard case .success(let client) = Syscall.run({ pf_accept_cloexec(socket.raw) }) else { continue }
                handle(Connection(FileDescriptor(owning: client, path: FilePath("a connection on \(socket.path)"))))
            }
        }
    }

    /// Ends `serve` (after the connection it is handling, if any).
    public func stop() {
        try? wake.write.write([1])
    }

    /// One accepted connection.
    public struct Connection {
        private let descriptor: FileDescriptor

        init(_ descriptor: FileDescriptor) {
            self.descriptor = descriptor
        }

        /// A receive or send that waits longer than `seconds` fails (a client that stalls
        /// cannot hold the server).
        public func setTimeouts(seconds: Int) {
            var timeout = timeval(tv_sec: seconds, tv_usec: 0)
            setsockopt(descriptor.raw, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(descriptor.raw, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        /// Up to `limit` bytes as they come; empty at the end, on a timeout or an error.
        public func receive(limit: Int) -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: limit)
            let n = buffer.withUnsafeMutableBytes { b in Syscall.run { recv(descriptor.raw, b.baseAddress, b.count, 0) } }
            guard case .success(let count) = n, count > 0 else { return [] }
            return Array(buffer[0..<count])
        }

        /// Sends all of `bytes` (no SIGPIPE when the peer has gone); false when it could not.
        @discardableResult
        public func send(_ bytes: [UInt8]) -> Bool {
            var sent = 0
            while sent < bytes.count {
                let n = bytes.withUnsafeBytes { b in
                    Syscall.run { Glibc.send(descriptor.raw, b.baseAddress! + sent, b.count - sent, Int32(MSG_NOSIGNAL)) }
                }
                guard case .success(let count) = n, count > 0 else { return false }
                sent += count
            }
            return true
        }
    }
}
