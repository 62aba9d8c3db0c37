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
        /// Connections at once from one address (one client cannot take them all); none
        /// behind trusted proxies, whose one address carries every client.
        public var perAddressLimit = 64
        /// How long a login lasts.
        public var sessionLifetime = Duration.seconds(12 * 3600)
        /// The reverse proxies whose `X-Forwarded-For` is believed (`web.trustedProxies`).
        public var trustedProxies: [AddressRange] = []
        /// Where the sessions are kept across restarts (nil: in memory only).
        public var sessionsFile: String?

        public init(usersFile: String, tls: (certificate: String, key: String)? = nil) {
            self.usersFile = usersFile
            self.tls = tls
            sessionsFile = Self.sessionsFile(usersFile: usersFile)
        }

        /// The settings a config gives.
        public init(config: Config) {
            self.init(usersFile: config.users,
                      tls: config.web.tlsCertificate.flatMap { c in config.web.tlsKey.map { (c, $0) } })
            trustedProxies = config.web.trustedProxies
            if !trustedProxies.isEmpty { perAddressLimit = 0 }
        }

        /// Where the sessions are kept: the service's state folder (`$STATE_DIRECTORY`, which
        /// systemd sets: /var/lib/photofinish), else beside the users file.
        static func sessionsFile(usersFile: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
            if let state = environment["STATE_DIRECTORY"]?.split(separator: ":").first, !state.isEmpty {
                return String(state) + "/console-sessions.json"
            }
            let folder = (usersFile as NSString).deletingLastPathComponent
            return (folder.isEmpty ? "." : folder) + "/console-sessions.json"
        }
    }

    private let handler: any HTTPHandler
    private let console: ConsoleHandler
    private let source: any ConsoleSource
    private let settings: Settings
    private let log: Logger
    private let servers = Mutex<[HTTPServer]>([])

    /// - Parameter shares: the hot folders' share links (`/s/TOKEN/`); nil: none are served.
    public init(settings: Settings, source: any ConsoleSource, shares: ShareSite? = nil, log: Logger) {
        self.settings = settings
        self.log = log
        self.source = source
        console = ConsoleHandler(source: source, users: UsersFile(path: settings.usersFile, log: log),
                                     sessions: Sessions(lifetime: settings.sessionLifetime, store: settings.sessionsFile, log: log),
                                     log: log, trustedProxies: settings.trustedProxies)
        handler = shares.map { [console] in
            WebRouter(console: console, shares: ShareHandler(site: $0, log: log, trustedProxies: settings.trustedProxies))
        } ?? console
    }

    /// Where the console listens, as `http://0.0.0.0:8732/`, once started.
    public var addresses: [String] { listening.withLock { $0 } }
    private let listening = Mutex<[String]>([])

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
        http.perAddressLimit = settings.perAddressLimit
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
        var urls: [String] = []
        var warnings: [String] = []
        for socket in sockets {
            let address = Self.address(of: socket)
            do throws(HTTPServer.StartError) {
                started.append(try HTTPServer(socket: socket, settings: http, handler: handler) { [log] message in
                    log.info("web: \(message)")
                })
                let url = "\(http.tls == nil ? "http" : "https")://\(address)/"
                urls.append(url)
                log.notice("web console on \(url) (users: \(settings.usersFile))")
                if http.tls == nil, !Self.isLoopback(address) {
                    let warning = Self.plainWarning(url)
                    warnings.append(warning)
                    log.warning("web: \(warning)")
                }
            } catch {
                log.error("web: cannot serve \(address): \(error)")
            }
        }
        servers.withLock { $0 += started }
        listening.withLock { $0 += urls }
        console.warnings.withLock { $0 += warnings }
        return !started.isEmpty
    }

    /// What is said (journal, `check`, the console's foot for administrators) of a console in
    /// plain HTTP beyond this machine.
    public static func plainWarning(_ url: String) -> String {
        "the console at \(url) speaks plain HTTP beyond this machine: passwords, session cookies and photos cross the network unencrypted. "
            + "Set web.tlsCertificate and web.tlsKey (HTTPS), or listen on 127.0.0.1 behind a reverse proxy that speaks HTTPS "
            + "(systemctl edit photofinish-web.socket: ListenStream=127.0.0.1:8732)"
    }

    /// Whether an address (`127.0.0.1:8732`, `[::1]:8732`, `local`) is this machine's only.
    public static func isLoopback(_ address: String) -> Bool {
        var host = address
        if host.hasPrefix("["), let end = host.firstIndex(of: "]") {
            host = String(host[host.index(after: host.startIndex)..<end])
        } else if let colon = host.lastIndex(of: ":"), host.filter({ $0 == ":" }).count == 1 {
            host = String(host[..<colon])
        }
        return host.hasPrefix("127.") || host == "::1" || host.hasPrefix("::ffff:127.") || host == "localhost"
            || host.hasPrefix("socket ") || host.hasPrefix("/") || host == "local"
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

/// The console's routes and the clients' `/s/TOKEN/` beside them: a share link never reaches
/// the console's logins, and the console's pages are never reached through a share link.
struct WebRouter: HTTPHandler {
    let console: ConsoleHandler
    let shares: ShareHandler

    func reply(to request: HTTPRequest) -> HTTPReply {
        request.path.hasPrefix("/s/") ? shares.reply(to: request) : console.reply(to: request)
    }
}
