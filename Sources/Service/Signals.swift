import Dispatch
import Foundation
import Synchronization

/// Signals as events in the normal flow (never work inside a signal handler): each signal is
/// ignored at the C level and delivered by a `DispatchSource` on its own dispatch queue to the
/// service's handler.
///
/// Why not an `AsyncStream` read by a task: photo work is CPU-bound and fills Swift's
/// cooperative thread pool (one thread per core), so a task waiting for SIGTERM would only
/// run once a photo finished — minutes, for a big batch on a small machine. A dispatch queue
/// has threads of its own.
///
/// Make it first thing (before loading the config): a SIGHUP arriving before the handler
/// is installed would kill the process, and events that come before the service is ready
/// are kept and delivered when it sets its handler.
public final class SignalEvents {
    /// The signals a service reacts to.
    public enum Kind: Sendable, Equatable {
        /// SIGHUP: reload the config.
        case reload
        /// SIGTERM or SIGINT: drain and exit.
        case stop
    }

    private struct State {
        var handler: (@Sendable (Kind) -> Void)?
        var early: [Kind] = []
    }

    /// Shared with the dispatch handlers.
    private final class Shared: Sendable {
        let state = Mutex(State())
    }

    private let shared = Shared()
    private let sources: [any DispatchSourceSignal]
    private let queue = DispatchQueue(label: "photofinish.signals")

    public init() {
        var made: [any DispatchSourceSignal] = []
        let shared = self.shared
        for (sig, kind) in [(SIGHUP, Kind.reload), (SIGTERM, .stop), (SIGINT, .stop)] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler {
                let handler = shared.state.withLock { s -> (@Sendable (Kind) -> Void)? in
                    if s.handler == nil { s.early.append(kind) }
                    return s.handler
                }
                handler?(kind)
            }
            source.resume()
            made.append(source)
        }
        sources = made
    }

    /// Sets who hears the signals (on the signal queue, one at a time); signals that came
    /// earlier are delivered now, in order.
    public func setHandler(_ handler: @escaping @Sendable (Kind) -> Void) {
        queue.sync {
            let early = shared.state.withLock { s in
                s.handler = handler
                defer { s.early = [] }
                return s.early
            }
            for kind in early { handler(kind) }
        }
    }

    deinit {
        for source in sources { source.cancel() }
    }
}
