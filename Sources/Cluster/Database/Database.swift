import Foundation
import Synchronization

/// Something statements can be run on: the database's shared command connection, or one
/// connection of its own (a reconnect's first statements, before the link hands it out).
protocol StatementRunner {
    func execute(_ sql: String, _ parameters: [String?]) throws(ClusterError) -> Rows
}

extension Connection: StatementRunner {
    func execute(_ sql: String, _ parameters: [String?]) throws(ClusterError) -> Rows {
        try execute(sql, parameters, timeout: timeout)
    }
}

/// The cluster's database as this host reaches it: one command connection that callers share
/// (one statement at a time, under a lock: statements are short), and one connection that only
/// listens for `NOTIFY`, both kept by the link's own thread. When the server goes away the link
/// says so (`health`, `Event.down`) and reconnects with backoff; statements meanwhile fail at
/// once with `.unreachable` instead of waiting, so a worker never hangs on the database.
public final class Database: Sendable {
    /// How to reach the database and how patiently.
    public struct Settings: Sendable {
        /// A libpq connection string: `host=/run/postgresql dbname=photofinish`, or a URI.
        public var conninfo: String
        /// What `pg_stat_activity` shows for our connections.
        public var applicationName: String
        /// How long one statement may take to answer before the connection is given up.
        public var timeout: Duration = .seconds(10)
        public var backoff = Backoff()
        /// Channels to `LISTEN` on; notifications come as `Event.notification`.
        public var channels: [String] = []
        /// How often an idle link checks that its connections still answer (a half-open TCP
        /// connection says nothing until something is sent).
        public var keepalive: Duration = .seconds(30)

        public init(conninfo: String, applicationName: String = "photofinish") {
            self.conninfo = conninfo
            self.applicationName = applicationName
        }
    }

    /// Whether statements can be run now.
    public enum Health: Sendable, Equatable {
        /// The first attempt is under way.
        case connecting
        case up(since: Date, server: String)
        case down(since: Date, reason: String)

        public var isUp: Bool {
            if case .up = self { true } else { false }
        }
    }

    /// What the link tells its owner, from its own thread.
    public enum Event: Sendable, Equatable {
        /// Connected (again): statements work.
        case up(server: String)
        /// The database stopped answering (or never did): why, in libpq's words.
        case down(reason: String)
        /// A `NOTIFY` on one of `Settings.channels`.
        case notification(channel: String, payload: String)
        /// Listening (again): anything notified while the listener was away was missed, so
        /// whoever waits on notifications should look for itself now.
        case listening
    }

    public let settings: Settings
    private let command = Mutex<Connection?>(nil)
    private let state = Mutex(LinkState())
    private let bell = Bell()
    private let ended = Bell()
    private let firstAttempt = Bell()
    private let events: @Sendable (Event) -> Void
    private let trips = Atomic<Int>(0)

    private struct LinkState {
        var health = Health.connecting
        var hasCommand = false
        var stopping = false
        var running = false
        /// Run on each new command connection before anyone else gets it (leases renewed first).
        var prepare: (@Sendable (Connection) throws(ClusterError) -> Void)?
    }

    /// - Parameters:
    ///   - events: called from the link's thread (keep it short: hand the work off).
    public init(_ settings: Settings, events: @escaping @Sendable (Event) -> Void = { _ in }) {
        self.settings = settings
        self.events = events
    }

    deinit {
        close()
    }

    /// Checks a connection string without connecting: nil, or what libpq finds wrong with it.
    public static func problem(in conninfo: String) -> String? {
        Connection.problem(in: conninfo)
    }

    /// Starts the link's thread and waits up to `wait` for its first connection.
    /// - Returns: the health then (`.down` with the reason when the first attempt failed: the
    ///   link keeps trying).
    @discardableResult
    public func start(waitingUpTo wait: Duration = .seconds(10)) -> Health {
        let first = state.withLock { s -> Bool in
            defer { s.running = true }
            return !s.running && !s.stopping
        }
        if first {
            let thread = Thread { [self] in runLink() }
            thread.name = "photofinish-db"
            thread.start()
        }
        firstAttempt.wait(wait)
        return health
    }

    /// Stops the link: the thread ends, both connections close. Statements then fail with
    /// `.closed`. Safe to call twice. Waits at most `wait` for the link's thread (one waiting on
    /// a connection or a statement the server does not answer ends by itself at its timeout),
    /// and leaves the command connection to a statement still under way on it (it closes with
    /// its owner, at the latest with the process).
    public func close(waitingUpTo wait: Duration? = nil) {
        let wasRunning = state.withLock { s -> Bool in
            defer { s.stopping = true }
            return s.running && !s.stopping
        }
        if wasRunning {
            bell.ring()
            ended.wait(wait ?? settings.timeout + .seconds(5))
        }
        if wait == nil {
            command.withLock { $0?.close(); $0 = nil }
        } else {
            _ = command.withLockIfAvailable { $0?.close(); $0 = nil }
        }
    }

    public var health: Health { state.withLock { $0.health } }

    /// Statements answered (and connections made) since the start: the cluster's cost in round
    /// trips, as the benchmark counts it.
    public var roundTrips: Int { trips.load(ordering: .relaxed) }

    /// Runs one statement on the command connection.
    /// - Throws: `.unreachable` at once while the link is down (it is reconnecting), or when
    ///   the connection breaks under this statement; `.query` when the server refuses it.
    public func execute(_ sql: String, _ parameters: [String?] = []) throws(ClusterError) -> Rows {
        try withConnection { c throws(ClusterError) in try c.execute(sql, parameters, timeout: settings.timeout) }
    }

    /// Runs one statement on the command connection within `limit` all told: waiting for the
    /// connection while another statement holds it, then for the answer (a stop's last word,
    /// which must not hold the stop up).
    /// - Throws: `.unreachable` when `limit` passes first, as `execute` otherwise.
    public func execute(_ sql: String, _ parameters: [String?] = [], within limit: Duration) throws(ClusterError) -> Rows {
        let deadline = ContinuousClock.now + limit
        while true {
            let outcome: Result<Rows, ClusterError>? = command.withLockIfAvailable { slot in
                guard let connection = slot else { return .failure(notConnected()) }
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return .failure(ClusterError(.unreachable, "no answer within \(limit)")) }
                do throws(ClusterError) {
                    return .success(try connection.execute(sql, parameters, timeout: left))
                } catch {
                    if error.kind == .unreachable || !connection.isOpen {
                        connection.close()
                        slot = nil
                    }
                    return .failure(error)
                }
            }
            if let outcome {
                if case .failure(let error) = outcome, error.kind == .unreachable { lost(error.message) }
                return try outcome.get()
            }
            guard ContinuousClock.now < deadline else {
                throw ClusterError(.unreachable, "the connection was busy for \(limit)")
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    /// Sets what runs on every new command connection before it is used (the lease keeper
    /// renews this host's leases there first, so no other host can take them in the gap).
    func onConnect(_ prepare: @escaping @Sendable (Connection) throws(ClusterError) -> Void) {
        state.withLock { $0.prepare = prepare }
    }

    /// Lends the command connection to `body` for several statements in a row (a transaction).
    func withConnection<T: Sendable>(_ body: (Connection) throws(ClusterError) -> T) throws(ClusterError) -> T {
        let outcome: Result<T, ClusterError> = command.withLock { slot in
            guard let connection = slot else { return .failure(notConnected()) }
            do throws(ClusterError) {
                return .success(try body(connection))
            } catch {
                if error.kind == .unreachable || !connection.isOpen {
                    connection.close()
                    slot = nil
                }
                return .failure(error)
            }
        }
        if case .failure(let error) = outcome, error.kind == .unreachable { lost(error.message) }
        return try outcome.get()
    }

    private func notConnected() -> ClusterError {
        state.withLock { s in
            if s.stopping { return ClusterError(.closed, "the daemon is stopping") }
            if case .down(let since, let reason) = s.health {
                return ClusterError(.unreachable, "\(reason) (since \(Self.clock(since)))")
            }
            return ClusterError(.unreachable, "not connected yet")
        }
    }

    /// The command connection broke under a statement: down, and the link reconnects.
    private func lost(_ reason: String) {
        let changed = state.withLock { s -> Bool in
            s.hasCommand = false
            guard s.health.isUp || s.health == .connecting else { return false }
            s.health = .down(since: Date(), reason: reason)
            return true
        }
        if changed { events(.down(reason: reason)) }
        bell.ring()
    }

    // MARK: - The link's thread

    private var isStopping: Bool { state.withLock { $0.stopping } }

    private func connect() throws(ClusterError) -> Connection {
        // Ours first, so the connection string overrides any of them.
        let defaults = [
            ("application_name", settings.applicationName),
            ("connect_timeout", "5"),
            // A dead peer on TCP is found in about 25 s instead of the kernel's two hours.
            ("keepalives", "1"), ("keepalives_idle", "10"), ("keepalives_interval", "5"), ("keepalives_count", "3"),
            ("tcp_user_timeout", "20000"),
            // Of several hosts listed, the writable one (a primary, not a standby).
            ("target_session_attrs", "read-write"),
        ]
        let connection = try Connection(conninfo: settings.conninfo, defaults: defaults, timeout: settings.timeout) { [weak self] in
            self?.trips.add(1, ordering: .relaxed)
        }
        let limit = Int(settings.timeout / .milliseconds(1))
        _ = try connection.run(script: "SET statement_timeout = \(limit); SET idle_in_transaction_session_timeout = \(limit * 6)",
                               timeout: settings.timeout)
        return connection
    }

    private func setHealth(_ health: Health) {
        let changed = state.withLock { s -> Bool in
            s.hasCommand = health.isUp
            switch (s.health, health) {
            case (.up, .up), (.down, .down): return false
            default:
                s.health = health
                return true
            }
        }
        guard changed else { return }
        switch health {
        case .up(_, let server): events(.up(server: server))
        case .down(_, let reason): events(.down(reason: reason))
        case .connecting: break
        }
    }

    private func runLink() {
        defer { ended.ring() }
        var listener: Connection?
        var commandFailures = 0, listenFailures = 0
        var commandRetry = ContinuousClock.now, listenRetry = ContinuousClock.now
        var lastCheck = ContinuousClock.now
        let listens = !settings.channels.isEmpty
        while !isStopping {
            let now = ContinuousClock.now
            let hasCommand = state.withLock { $0.hasCommand }
            if !hasCommand && now >= commandRetry {
                do throws(ClusterError) {
                    let connection = try connect()
                    if let prepare = state.withLock({ $0.prepare }) {
                        try prepare(connection)
                    }
                    let server = connection.server
                    command.withLock { $0?.close(); $0 = connection }
                    commandFailures = 0
                    setHealth(.up(since: Date(), server: server))
                } catch {
                    setHealth(.down(since: Date(), reason: error.message))
                    commandRetry = now + settings.backoff.delay(after: commandFailures)
                    commandFailures += 1
                }
                firstAttempt.ring()
            }
            if listens && listener == nil && now >= listenRetry {
                do throws(ClusterError) {
                    let connection = try connect()
                    for channel in settings.channels {
                        _ = try connection.execute("LISTEN \(PostgresText.identifier(channel))", timeout: settings.timeout)
                    }
                    listener = connection
                    listenFailures = 0
                    events(.listening)
                } catch {
                    listenRetry = now + settings.backoff.delay(after: listenFailures)
                    listenFailures += 1
                }
            }
            var timeout = settings.keepalive - (now - lastCheck)
            if !state.withLock({ $0.hasCommand }) { timeout = min(timeout, commandRetry - now) }
            if listens && listener == nil { timeout = min(timeout, listenRetry - now) }
            let ready = Bell.poll([bell.descriptor, listener?.socket ?? -1], timeout: max(timeout, .milliseconds(1)))
            if ready[0] { bell.clear() }
            if let connection = listener, ready[1] {
                do throws(ClusterError) {
                    try connection.consumeInput()
                } catch {
                    listener = nil
                    listenRetry = ContinuousClock.now + settings.backoff.delay(after: 0)
                    // The server itself may have gone: find out now, not at the next statement.
                    _ = try? execute("SELECT 1")
                }
                for note in connection.notifications() {
                    events(.notification(channel: note.channel, payload: note.payload))
                }
            }
            if ContinuousClock.now - lastCheck >= settings.keepalive {
                lastCheck = ContinuousClock.now
                if let connection = listener, (try? connection.execute("SELECT 1", timeout: settings.timeout)) == nil {
                    listener = nil
                }
                if state.withLock({ $0.hasCommand }) { _ = try? execute("SELECT 1") }
            }
        }
        listener?.close()
        firstAttempt.ring()
    }

    static func clock(_ date: Date) -> String {
        let seconds = Int(date.timeIntervalSince1970) % 86_400
        return String(format: "%02d:%02d:%02d UTC", seconds / 3600, seconds / 60 % 60, seconds % 60)
    }
}

extension Database: StatementRunner {}
