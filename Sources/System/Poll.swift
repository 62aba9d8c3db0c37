import Glibc

/// `poll(2)`: one thread waits on several descriptors at once (inotify, a `Wakeup`, a
/// `DeadlineTimer`, a `SignalQueue`) and learns which became readable.
public enum Poll {
    /// A descriptor to wait on, for reading; made by the type that owns it.
    public struct Source: Sendable, Equatable {
        let fd: Int32

        init(_ fd: Int32) {
            self.fd = fd
        }
    }

    /// Waits until one of `sources` is readable, or `timeout` has passed (`nil`: no limit).
    /// - Returns: for each source, whether it is readable now (or has an error a read will
    ///   report); all false after the timeout.
    /// - Throws: `SystemError` when `poll` itself fails (not on `EINTR`: retried).
    public static func wait(_ sources: [Source], timeout: Duration? = nil) throws(SystemError) -> [Bool] {
        var fds = sources.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        let ms: Int32 = timeout.map { t in
            // Rounded up: a deadline 0.4 ms away must not spin with a 0 ms poll.
            let ms = (t + .nanoseconds(999_999)) / .milliseconds(1)
            return Int32(max(0, min(Int64(Int32.max), Int64(ms))))
        } ?? -1
        let count = fds.count
        _ = try Syscall.check("wait on", "\(count) descriptors") { fds.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t(count), ms) } }
        return fds.map { $0.revents != 0 }
    }
}

extension Inotify.Instance {
    /// Readable when events are queued.
    public var pollSource: Poll.Source { Poll.Source(descriptor.raw) }
}
