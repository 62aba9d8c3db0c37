import Glibc
import System

/// The signals a service reacts to, as events on a descriptor its loop polls (never work
/// inside a signal handler, never a thread of its own): SIGHUP reloads, SIGTERM and SIGINT
/// stop. `SignalQueue` underneath: a handler that only notes the signal and writes an eventfd.
///
/// Make it first thing (before loading the config, before any thread that works): a SIGHUP
/// arriving before the service listens would otherwise kill the process (install signal
/// handling before `READY=1`). Signals that come before the loop runs stay noted and
/// are read by its first turn.
public final class SignalEvents: Sendable {
    /// The signals a service reacts to.
    public enum Kind: Sendable, Equatable {
        /// SIGHUP: reload the config.
        case reload
        /// SIGTERM or SIGINT: drain and exit.
        case stop
    }

    private let queue: SignalQueue

    /// - Throws: `SystemError` when the kernel gives no eventfd (no descriptor left).
    public init() throws(SystemError) {
        queue = try SignalQueue([SIGHUP, SIGTERM, SIGINT])
    }

    /// The signals received since the last call, in order (empty when none).
    public func read() -> [Kind] {
        queue.read().map { $0 == SIGHUP ? .reload : .stop }
    }

    /// Readable while a signal is pending.
    public var pollSource: Poll.Source { queue.pollSource }
}
