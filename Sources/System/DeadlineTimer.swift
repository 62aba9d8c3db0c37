internal import CShims
import Glibc

/// A `timerfd(2)` on the monotonic clock, armed to the next deadline of whatever a poll loop
/// waits for (a batch that closes, a rescan, the watchdog): the loop sleeps until then and
/// no longer, and never wakes in between for nothing (no tick).
public final class DeadlineTimer: Sendable {
    private let descriptor: FileDescriptor

    /// - Throws: `SystemError` (`EMFILE`: no descriptor left).
    public init() throws(SystemError) {
        let fd = try Syscall.check("make", "a timerfd") { pf_timerfd() }
        descriptor = FileDescriptor(owning: fd, path: FilePath("a timerfd"))
    }

    /// Fires once, `delay` from now (at once when it is zero or less), or never with `nil`.
    /// Replaces any earlier setting.
    public func arm(after delay: Duration?) {
        let ns: Int64
        if let delay {
            let (seconds, attoseconds) = delay.components
            ns = max(1, seconds.multipliedReportingOverflow(by: 1_000_000_000).overflow
                     ? Int64.max : seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        } else {
            ns = -1
        }
        _ = pf_timerfd_arm(descriptor.raw, ns)
    }

    /// Clears a fired timer's readiness.
    public func reset() {
        _ = pf_timerfd_drain(descriptor.raw)
    }

    /// Readable once the timer has fired.
    public var pollSource: Poll.Source { Poll.Source(descriptor.raw) }
}
