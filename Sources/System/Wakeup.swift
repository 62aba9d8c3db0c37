internal import CShims
import Glibc

/// An `eventfd(2)` that other threads write to wake a thread waiting in `Poll.wait`: work
/// handed back, a stop or a reload asked for (swift-nio's event loop wakes itself the same
/// way). Any number of `signal()`s before the waiter looks are one wake-up.
public final class Wakeup: Sendable {
    private let descriptor: FileDescriptor

    /// - Throws: `SystemError` (`EMFILE`: no descriptor left).
    public init() throws(SystemError) {
        let fd = try Syscall.check("make", "an eventfd") { pf_eventfd() }
        descriptor = FileDescriptor(owning: fd, path: FilePath("an eventfd"))
    }

    /// Wakes the waiter (now, or at its next wait). Safe from any thread; never blocks.
    public func signal() {
        _ = pf_eventfd_signal(descriptor.raw)
    }

    /// Clears the wake-ups so far: call before looking at what was handed over, so a
    /// `signal()` made meanwhile wakes the next wait.
    public func reset() {
        _ = pf_eventfd_drain(descriptor.raw)
    }

    /// Readable while a wake-up is pending.
    public var pollSource: Poll.Source { Poll.Source(descriptor.raw) }
}
