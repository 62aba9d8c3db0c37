import Glibc

/// A non-blocking pipe one thread rings and another waits on (in `poll`, beside a socket, or
/// alone with a timeout). Rings before the waiter looks are one ring. The one owner of its two
/// descriptors.
final class Bell: Sendable {
    /// The end to wait on (readable while rung).
    let descriptor: Int32
    private let ringer: Int32

    init() {
        var ends: [Int32] = [-1, -1]
        precondition(pipe(&ends) == 0, "pipe: \(String(cString: strerror(errno))) (no descriptor left)")
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        descriptor = ends[0]
        ringer = ends[1]
    }

    deinit {
        Glibc.close(descriptor)
        Glibc.close(ringer)
    }

    /// Rings it: the waiter wakes now, or at once at its next wait. Never blocks (a full pipe
    /// is rung already).
    func ring() {
        var one: UInt8 = 1
        _ = write(ringer, &one, 1)
    }

    /// Clears the rings so far (before looking at what changed, so a ring made meanwhile wakes
    /// the next wait).
    func clear() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(descriptor, &buffer, buffer.count) == buffer.count {}
    }

    /// Waits until it rings or `timeout` passes; true when it rang (the ring is cleared).
    @discardableResult
    func wait(_ timeout: Duration) -> Bool {
        let ready = Self.poll([descriptor], timeout: timeout)
        if ready[0] { clear() }
        return ready[0]
    }

    /// Waits until it rings or `timeout` passes, leaving the ring for every other waiter (a bell
    /// rung once for good, as an end): true when it rang.
    @discardableResult
    func waitLeavingRing(_ timeout: Duration) -> Bool { Self.poll([descriptor], timeout: timeout)[0] }

    /// `poll(2)` for reading on `fds` (-1 entries are skipped) up to `timeout`, retried on EINTR
    /// with the time left: which are readable (or in error, which a read then reports).
    static func poll(_ fds: [Int32], timeout: Duration) -> [Bool] {
        let deadline = ContinuousClock.now + timeout
        var entries = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        while true {
            let left = max(.zero, deadline - ContinuousClock.now)
            let ms = Int32(clamping: Int64((left + .nanoseconds(999_999)) / .milliseconds(1)))
            let r = entries.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), ms) }
            if r >= 0 || errno != EINTR { break }
        }
        return entries.map { $0.revents != 0 }
    }
}
