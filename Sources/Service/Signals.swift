import Foundation
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

    /// - Parameter reload: SIGHUP too (a service); without it SIGHUP keeps its default action
    ///   (a command in a terminal ends when the terminal closes).
    /// - Throws: `SystemError` when the kernel gives no eventfd (no descriptor left).
    public init(reload: Bool = true) throws(SystemError) {
        queue = try SignalQueue(reload ? [SIGHUP, SIGTERM, SIGINT] : [SIGTERM, SIGINT])
    }

    /// The signals received since the last call, in order (empty when none).
    public func read() -> [Kind] {
        received().map(\.kind)
    }

    /// The signals received since the last call, each with its number (SIGINT is Ctrl-C).
    public func received() -> [(kind: Kind, signal: Int32)] {
        queue.read().map { ($0 == SIGHUP ? .reload : .stop, $0) }
    }

    /// Readable while a signal is pending.
    public var pollSource: Poll.Source { queue.pollSource }
}

/// SIGINT and SIGTERM for a command that runs one batch in the foreground (`run`, `redo`):
/// `SignalEvents` read by a thread of its own, which calls `onStop` for each (never inside a
/// handler); a second SIGINT ends the process at once (exit 130, Ctrl-C twice). Dropping the
/// value ends the thread; the signals stay caught (noted, read by the next one made) until
/// the process ends, as they stayed ignored before. The queue underneath is the process's
/// one (`SignalQueue`: the handler has one eventfd), made at the first and kept.
public final class StopSignals: Sendable {
    private let wakeup: Wakeup
    private static let events = Result { () throws(SystemError) in try SignalEvents(reload: false) }

    /// - Throws: `SystemError` when the kernel gives no eventfd (no descriptor left).
    public init(_ onStop: @escaping @Sendable () -> Void) throws(SystemError) {
        let events = try Self.events.get()
        let wakeup = try Wakeup()
        self.wakeup = wakeup
        let thread = Thread {
            var stopped = false
            while true {
                guard let ready = try? Poll.wait([events.pollSource, wakeup.pollSource]), !ready[1] else { return }
                for (_, signal) in events.received() {
                    if stopped && signal == SIGINT { exit(130) }
                    stopped = true
                    onStop()
                }
            }
        }
        thread.name = "pf-stop-signals"
        thread.start()
    }

    deinit { wakeup.signal() }
}
