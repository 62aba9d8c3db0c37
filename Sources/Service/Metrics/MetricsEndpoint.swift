import Foundation
import HTTP
import HotFolders
import Synchronization

/// `GET /metrics` over HTTP on the listening sockets systemd passed in
/// (`photofinish-metrics.socket`, `FileDescriptorName=metrics`), so the service itself keeps
/// `PrivateNetwork=yes`: it never opens a network socket, it only accepts on one it was given.
///
/// Served by libmicrohttpd (`HTTPServer`): one polling thread per socket, at a low CPU
/// priority; idle connections are closed after 10 s, heads larger than 8 KiB refused.
final class MetricsEndpoint: Sendable {
    private let sockets: [Int32]
    private let handler: Handler
    private let log: Logger
    private let servers = Mutex<[HTTPServer]>([])

    /// The listening sockets systemd passed: those named `metrics`, or all of them when none
    /// has a name (as `systemd-socket-activate` without `--fdname` passes them).
    static func socketsFromSystemd() -> [Int32] {
        PassedSockets.take("metrics", orUnnamed: true)
    }

    /// - Parameter render: the metrics text, made fresh for each request.
    init?(sockets: [Int32], log: Logger, render: @escaping @Sendable () -> String) {
        guard !sockets.isEmpty else { return nil }
        self.sockets = sockets
        self.log = log
        handler = Handler(render: render)
    }

    /// Serves every socket (one that cannot be served is logged and left).
    func start() {
        var settings = HTTPServer.Settings()
        settings.threads = 1
        settings.connectionLimit = 64
        settings.idleSeconds = 10
        settings.connectionMemory = 8 << 10
        var started: [HTTPServer] = []
        for socket in sockets {
            do throws(HTTPServer.StartError) {
                started.append(try HTTPServer(socket: socket, settings: settings, handler: handler) { [log] message in
                    log.info("metrics: \(message)")
                })
            } catch {
                log.error("metrics: \(error); not serving metrics on socket \(socket)")
            }
        }
        servers.withLock { $0 = started }
        guard !started.isEmpty else { return }
        log.info("serving metrics on \(started.count) socket\(started.count == 1 ? "" : "s") from systemd (GET /metrics)")
    }

    /// Stops accepting and closes the connections.
    func stop() {
        for server in servers.withLock({ $0 }) { server.stop() }
    }

    private struct Handler: HTTPHandler {
        let render: @Sendable () -> String

        func reply(to request: HTTPRequest) -> HTTPReply {
            let response: HTTPResponse = switch MetricsRequest.route(method: request.method, path: request.path) {
            // libmicrohttpd sends no body for HEAD, only the length it would have.
            case .metrics: HTTPResponse(status: 200, type: "text/plain; version=0.0.4; charset=utf-8", text: render())
            case .notFound: HTTPResponse(status: 404, text: "only /metrics is here\n")
            case .methodNotAllowed: HTTPResponse(status: 405, text: "GET /metrics\n", headers: [("Allow", "GET, HEAD")])
            }
            return .response(response)
        }
    }
}

/// What a request asks for (pure: tested with plain values).
enum MetricsRequest: Equatable {
    /// `GET /metrics` or `HEAD /metrics`.
    case metrics
    case notFound
    case methodNotAllowed

    static func route(method: String, path: String) -> MetricsRequest {
        guard path == "/metrics" || path == "/metrics/" else { return .notFound }
        return method == "GET" || method == "HEAD" ? .metrics : .methodNotAllowed
    }
}
