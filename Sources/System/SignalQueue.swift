internal import CShims
import Glibc

/// Signals as readable events on a `signalfd(2)`: never a handler doing work, never a signal
/// killing the process by its default action (SIGHUP). Signals that come before anyone reads
/// stay pending, in the kernel, until they are read.
///
/// Make it first thing in the process (before the threads that do work start): it blocks
/// the signals in the calling thread, which every thread made from it inherits; threads made
/// earlier get a handler that blocks the signal where it landed and sends it again to the
/// process (libdispatch's way on Linux), so each signal ends up on the descriptor.
/// A child process must unblock them (`ChildProcess` resets the mask).
public final class SignalQueue: Sendable {
    private let descriptor: FileDescriptor

    /// - Parameter signals: `SIGHUP`, `SIGTERM`…
    /// - Throws: `SystemError` when the kernel refuses.
    public init(_ signals: [Int32]) throws(SystemError) {
        let names = signals.map { String(cString: strsignal($0)) }.joined(separator: ", ")
        let fd = try Syscall.check("make a signalfd for", names) {
            signals.withUnsafeBufferPointer { pf_signalfd_open($0.baseAddress, Int32($0.count)) }
        }
        descriptor = FileDescriptor(owning: fd, path: FilePath("a signalfd"))
    }

    /// The signals pending now, in the order the kernel gives them (empty when none).
    /// A signal sent twice before a read is read once (standard signals do not queue).
    public func read() -> [Int32] {
        var out: [Int32] = []
        while true {
            let signal = pf_signalfd_read(descriptor.raw)
            guard signal > 0 else { return out }
            out.append(signal)
        }
    }

    /// Readable while a signal is pending.
    public var pollSource: Poll.Source { Poll.Source(descriptor.raw) }
}
