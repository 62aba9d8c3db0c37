import Configuration
import Foundation
import HTTP
import HotFolders
import Synchronization
import System

/// The web console (reference: The web console): served by the daemon (and `watch --config`) on the
/// sockets systemd passes as `web` (`photofinish-web.socket`, port 8732), or
/// `systemd-socket-activate --fdname=web -l ADDR`. Logins from the users file, pages for the hot
/// folders a user may see, uploads into their `drop/`, each batch's report and files, and the batch
/// as one ZIP.
///
/// It never stands in the way of the photos: while the service finishes or has queued a batch
/// its threads run at nice 10 (at nice 0 while it has none, so an upload is not held back by
/// nothing), they wait in `epoll` (an idle or slow connection holds no thread), it reads the service's status through
/// `ConsoleSource` (a snapshot, never a lock held across work), and a console that cannot
/// start is logged while the hot folders go on.
public final class WebConsole: Sendable {
    /// How the console runs.
    public struct Settings: Sendable {
        /// The users file (config key `users`).
        public var usersFile: String
        /// HTTPS: the certificate and key files (config `web: { tlsCertificate, tlsKey }`).
        public var tls: (certificate: String, key: String)?
        /// Polling threads per socket.
        public var threads = 4
        /// A connection idle this long is closed.
        public var idleSeconds = 60
        /// Connections at once per socket.
        public var connectionLimit = 1000
        /// How long a login lasts.
        public var sessionLifetime = Duration.seconds(12 * 3600)

        public init(usersFile: String, tls: (certificate: String, key: String)? = nil) {
            self.usersFile = usersFile
            self.tls = tls
        }

        /// The settings a config gives.
        public init(config: Config) {
            self.init(usersFile: config.users,
                      tls: config.web.tlsCertificate.flatMap { c in config.web.tlsKey.map { (c, $0) } })
        }
    }

    private let handler: ConsoleHandler
    private let source: any ConsoleSource
    private let settings: Settings
    private let log: Logger
    private let servers = Mutex<[HTTPServer]>([])

    public init(settings: Settings, source: any ConsoleSource, log: Logger) {
        self.settings = settings
        self.log = log
        self.source = source
        handler = ConsoleHandler(source: source, users: UsersFile(path: settings.usersFile, log: log),
                                 sessions: Sessions(lifetime: settings.sessionLifetime), log: log)
    }

    /// The listening sockets systemd passed as `web` (none: no console).
    public static func socketsFromSystemd() -> [Int32] {
        PassedSockets.take("web")
    }

    /// Serves `sockets` (each now the console's: closed by `stop`).
    /// - Returns: false when none could be served (the reasons are logged).
    @discardableResult
    public func start(sockets: [Int32]) -> Bool {
        guard !sockets.isEmpty else { return false }
        var http = HTTPServer.Settings()
        http.threads = settings.threads
        http.idleSeconds = settings.idleSeconds
        http.connectionLimit = settings.connectionLimit
        http.connectionMemory = 64 << 10
        http.nice = 10
        http.busy = { [source] in source.snapshot().isFinishing }
        if let tls = settings.tls {
            do throws(SystemError) {
                func text(_ path: String) throws(SystemError) -> String {
                    guard let text = try Files.text(of: path) else { throw SystemError("read", path, errno: ENOENT) }
                    return text
                }
                http.tls = (key: try text(tls.key), certificate: try text(tls.certificate))
            } catch {
                log.error("web: cannot read the TLS key or certificate (\(tls.key), \(tls.certificate)): \(error.reason); the console is not served")
                for socket in sockets { close(socket) }
                return false
            }
        }
        var started: [HTTPServer] = []
        for socket in sockets {
            let address = Self.address(of: socket)
            do throws(HTTPServer.StartError) {
                started.append(try HTTPServer(socket: socket, settings: http, handler: handler) { [log] message in
                    log.info("web: \(message)")
                })
                log.notice("web console on \(http.tls == nil ? "http" : "https")://\(address)/ (users: \(settings.usersFile))")
            } catch {
                log.error("web: cannot serve \(address): \(error)")
            }
        }
        servers.withLock { $0 += started }
        return !started.isEmpty
    }

    /// Stops accepting and closes every connection (an upload under way is removed).
    public func stop() {
        for server in servers.withLock({ s in defer { s = [] }; return s }) { server.stop() }
    }

    /// `127.0.0.1:8732`, `[::]:8732` — where a listening socket listens.
    static func address(of socket: Int32) -> String {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) == 0 }
        }
        guard ok else { return "socket \(socket)" }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var port = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let r = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), &port, socklen_t(port.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard r == 0 else { return "socket \(socket)" }
        func text(_ c: [CChar]) -> String { String(decoding: c.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        let h = text(host)
        return (h.contains(":") ? "[\(h)]" : h) + ":" + text(port)
    }
}
