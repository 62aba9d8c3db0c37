internal import CShims
import Glibc

/// Signals as readable events: a handler that only marks the signal pending and writes an
/// eventfd (the self-pipe trick), so the loop that polls the eventfd does the work — never
/// a handler doing work, never a signal killing the process by its default action (SIGHUP).
/// A signal that comes before anyone reads stays marked until it is read.
///
/// Not a `signalfd`: a signalfd sees only signals blocked in every thread, and a Swift
/// program's main thread waits in `sigsuspend()` with an empty mask (libdispatch's
/// `dispatch_main`), so it takes each signal itself; a handler that sends the signal on again
/// then spins with it between the two (measured: a SIGTERM that never reached the loop).
///
/// Make it first thing in the process, before the config is read: a SIGHUP that comes before
/// its handler kills the process. One per process: the handler has one eventfd.
public final class SignalQueue: Sendable {
    private let descriptor: FileDescriptor
    private let signals: [Int32]

    /// - Parameter signals: `SIGHUP`, `SIGTERM`…
    /// - Throws: `SystemError` when the kernel refuses (no descriptor left).
    public init(_ signals: [Int32]) throws(SystemError) {
        let names = signals.map { String(cString: strsignal($0)) }.joined(separator: ", ")
        let fd = try Syscall.check("handle the signals", names) {
            signals.withUnsafeBufferPointer { pf_signals_open($0.baseAddress, Int32($0.count)) }
        }
        descriptor = FileDescriptor(owning: fd, path: FilePath("the signals' eventfd"))
        self.signals = signals
    }

    /// The signals that came since the last call, in the order they were given to `init`
    /// (empty when none). A signal sent twice before a read is read once.
    public func read() -> [Int32] {
        _ = pf_eventfd_drain(descriptor.raw)
        return signals.filter { pf_signal_take($0) == 1 }
    }

    /// Readable while a signal is pending.
    public var pollSource: Poll.Source { Poll.Source(descriptor.raw) }
}
