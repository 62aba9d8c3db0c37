internal import CSystemd
import Foundation
import HotFolders
import System

/// `GET /metrics` over HTTP on the listening sockets systemd passed in
/// (`photofinish-metrics.socket`, `FileDescriptorName=metrics`), so the service itself keeps
/// `PrivateNetwork=yes`: it never opens a network socket, it only accepts on one it was given.
///
/// One thread serves the sockets (`ListeningSockets`: `poll` on them and a wake-up pipe); each
/// connection is answered in turn: one request (its head at most 8 KiB, within 5 s), one
/// response, closed.
final class MetricsEndpoint: @unchecked Sendable {
    private let sockets: ListeningSockets
    private let render: @Sendable () -> String
    private let log: Logger
    private var thread: Thread?

    /// The listening sockets systemd passed: those named `metrics`, or all of them when none
    /// has a name (as `systemd-socket-activate` without `--fdname` passes them). The
    /// `LISTEN_*` variables are removed, so hooks do not see them.
    static func socketsFromSystemd() -> [Int32] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(1, &names)
        guard count > 0 else { return [] }
        defer {
            for i in 0..<Int(count) { free(names?[i]) }
            free(names)
        }
        let all = (0..<count).map { (fd: SD_LISTEN_FDS_START + $0, name: names?[Int($0)].map { String(cString: $0) } ?? "unknown") }
        let named = all.filter { $0.name == "metrics" }
        let chosen = named.isEmpty && all.allSatisfy({ $0.name == "unknown" }) ? all : named
        return chosen.map(\.fd).filter { sd_is_socket($0, AF_UNSPEC, Int32(SOCK_STREAM.rawValue), 1) > 0 }
    }

    /// - Parameter render: the metrics text, made fresh for each request.
    init?(sockets raw: [Int32], log: Logger, render: @escaping @Sendable () -> String) {
        guard !raw.isEmpty else { return nil }
        do throws(SystemError) {
            sockets = try ListeningSockets(adopting: raw)
        } catch {
            log.error("metrics: \(error); not serving metrics")
            return nil
        }
        self.render = render
        self.log = log
    }

    func start() {
        let thread = Thread { [self] in
            do throws(SystemError) {
                try sockets.serve { answer($0) }
            } catch {
                log.error("metrics: \(error); no longer serving metrics")
            }
        }
        thread.name = "photofinish-metrics"
        self.thread = thread
        thread.start()
        log.info("serving metrics on \(sockets.count) socket\(sockets.count == 1 ? "" : "s") from systemd (GET /metrics)")
    }

    /// Stops accepting; the thread ends after the connection it is answering, if any.
    func stop() {
        sockets.stop()
    }

    private func answer(_ client: ListeningSockets.Connection) {
        client.setTimeouts(seconds: 5)
        guard let head = Self.readHead(client) else { return }
        let response: (status: String, type: String, body: String)
        switch MetricsRequest.parse(head) {
        case .metrics(let withBody):
            let text = render()
            response = ("200 OK", "text/plain; version=0.0.4; charset=utf-8", withBody ? text : "")
        case .notFound:
            response = ("404 Not Found", "text/plain; charset=utf-8", "only /metrics is here\n")
        case .methodNotAllowed:
            response = ("405 Method Not Allowed", "text/plain; charset=utf-8", "GET /metrics\n")
        case .bad:
            response = ("400 Bad Request", "text/plain; charset=utf-8", "not an HTTP request\n")
        }
        let body = Array(response.body.utf8)
        let header = "HTTP/1.1 \(response.status)\r\nContent-Type: \(response.type)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        client.send(Array(header.utf8) + body)
    }

    /// The request up to its blank line (`nil` after 8 KiB, 5 s, or a closed connection).
    private static func readHead(_ client: ListeningSockets.Connection) -> String? {
        var bytes: [UInt8] = []
        while bytes.count < 8192 {
            let piece = client.receive(limit: 2048)
            guard !piece.isEmpty else { return nil }
            bytes += piece
            if bytes.firstRange(of: [13, 10, 13, 10]) != nil || bytes.firstRange(of: [10, 10]) != nil {
                return String(decoding: bytes, as: UTF8.self)
            }
        }
        return nil
    }
}

/// What a request asks for (pure: tested with plain text).
enum MetricsRequest: Equatable {
    /// `GET /metrics` (with a body) or `HEAD /metrics` (without).
    case metrics(withBody: Bool)
    case notFound
    case methodNotAllowed
    case bad

    static func parse(_ head: String) -> MetricsRequest {
        // "\r\n" is one Character in Swift: split on newlines, whatever their kind.
        let line = head.split(maxSplits: 1, omittingEmptySubsequences: false, whereSeparator: \.isNewline).first ?? ""
        let parts = line.split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return .bad }
        let path = parts[1].split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        guard path == "/metrics" || path == "/metrics/" else { return .notFound }
        switch parts[0] {
        case "GET": return .metrics(withBody: true)
        case "HEAD": return .metrics(withBody: false)
        default: return .methodNotAllowed
        }
    }
}
