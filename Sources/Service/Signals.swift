import Dispatch
import Foundation

/// Signals as events in the normal flow (never work inside a signal handler): each signal is
/// ignored at the C level and delivered through a `DispatchSource` into an `AsyncStream`.
/// Install before `READY=1`: a SIGHUP that arrives earlier would otherwise kill the process.
public final class SignalEvents {
    /// The signals a service reacts to.
    public enum Kind: Sendable, Equatable {
        /// SIGHUP: reload the config.
        case reload
        /// SIGTERM or SIGINT: drain and exit.
        case stop
    }

    /// The signals, in arrival order.
    public let events: AsyncStream<Kind>
    private let sources: [any DispatchSourceSignal]

    public init() {
        let (stream, continuation) = AsyncStream<Kind>.makeStream()
        events = stream
        var made: [any DispatchSourceSignal] = []
        for (sig, kind) in [(SIGHUP, Kind.reload), (SIGTERM, .stop), (SIGINT, .stop)] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { continuation.yield(kind) }
            source.resume()
            made.append(source)
        }
        sources = made
    }

    deinit {
        for s in sources { s.cancel() }
    }
}
