import Foundation
import Synchronization

/// Which host of the cluster claims from each hot folder: the folder's *claimer* role, a
/// PostgreSQL session-level advisory lock held on a connection of its own. Exactly one host
/// holds a folder's role at a time, so only it claims settled photos into an open batch: a drop
/// is one batch, not one per host whose `quiet` ran out at the same moment. The others take
/// the batch's tasks from the database as ever (every host still finishes some photos).
///
/// - The key: `(namespace, FNV-1a of the folder's name)`: every host computes it alike from
///   the hot folder's name, the name its tasks carry in the task table.
/// - A host killed (`kill -9`, a crash) loses its roles the moment its socket closes: another
///   host takes them at its next try (every `interval`, and at once when it has settled
///   photos to claim: `tryNow`).
/// - The role is wanted for the folders a host watches and can use (`want`); one it no
///   longer wants (a reload removed the folder, its share went away) and every one at `stop`
///   is released at once.
/// - The database unreachable: the host that held a role when the link went keeps claiming
///   (a server gone frees every role: nobody else can hold it meanwhile); a host that did not
///   claims too once the database has not answered for `grace` — claims then race on the share
///   as without a cluster (each photo is still claimed once) rather than wait for the database.
public final class ClaimerRoles: Sendable {
    public struct Settings: Sendable {
        public var conninfo: String
        public var host: String
        /// How long a host that did not hold a role waits, the database unreachable, before
        /// claiming anyway (the cluster's lease).
        public var grace: Duration
        /// How often the roles not held are tried and the holders read for the status (and at
        /// once when `tryNow` rings, or the connection's socket says something: its end).
        public var interval: Duration = .seconds(5)
        public var timeout: Duration = .seconds(10)

        public init(conninfo: String, host: String, grace: Duration) {
            self.conninfo = conninfo
            self.host = host
            self.grace = grace
        }
    }

    /// The first key of every role's lock ("pfcr").
    public static let namespace: Int32 = 0x7066_6372
    /// What `pg_stat_activity` shows for a role connection (the holder's name follows).
    static let applicationPrefix = "photofinish-claimer "

    /// The second key of a folder's role: FNV-1a (32 bits) of its name's UTF-8.
    public static func key(_ folder: String) -> Int32 {
        var hash: UInt32 = 2_166_136_261
        for byte in folder.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return Int32(bitPattern: hash)
    }

    public let settings: Settings
    private let state = Mutex(State())
    private let bell = Bell()
    private let ended = Bell()
    private let changed = Mutex<(@Sendable () -> Void)?>(nil)
    private let lastAsk = Mutex<ContinuousClock.Instant?>(nil)

    private struct State {
        var wanted: Set<String> = []
        var held: Set<String> = []
        /// Each folder's holder as last read (host names), for the status.
        var holders: [String: String] = [:]
        var connected = false
        /// Since when the database has not answered (nil: it answers, or not tried yet).
        var downSince: ContinuousClock.Instant?
        /// The roles held when the link went (kept while it is down).
        var heldWhenLost: Set<String> = []
        var running = false
        var stopping = false
    }

    public init(_ settings: Settings) {
        self.settings = settings
    }

    /// Called (from the roles' thread) when a role is taken or lost, or a holder changes.
    public func onChange(_ body: @escaping @Sendable () -> Void) { changed.withLock { $0 = body } }

    /// Starts the roles' thread; waits up to `wait` for its first try.
    public func start(waitingUpTo wait: Duration = .seconds(3)) {
        let first = state.withLock { s -> Bool in
            defer { s.running = true }
            return !s.running && !s.stopping
        }
        guard first else { return }
        let tried = Bell()
        let thread = Thread { [self] in run(firstTry: tried) }
        thread.name = "photofinish-roles"
        thread.start()
        _ = tried.wait(wait)
    }

    /// Releases every role and closes the connection (safe to call twice).
    public func stop() {
        let wasRunning = state.withLock { s -> Bool in
            defer { s.stopping = true; s.wanted = [] }
            return s.running && !s.stopping
        }
        guard wasRunning else { return }
        bell.ring()
        _ = ended.wait(settings.timeout + .seconds(2))
    }

    /// The folders whose role this host wants now (the rest are released at once).
    public func want(_ folders: Set<String>) {
        let changed = state.withLock { s -> Bool in
            guard !s.stopping, s.wanted != folders else { return false }
            s.wanted = folders
            return true
        }
        if changed { bell.ring() }
    }

    /// Tries the roles not held now (a host about to claim that does not hold its folder's), at
    /// most every `askEvery`: a host that may not claim asks at each of its folder's turns, one
    /// per settling file during a burst, and each try is a round trip to the database.
    public func tryNow(now: ContinuousClock.Instant = .now) {
        let ring = lastAsk.withLock { last -> Bool in
            if let last, now - last < Self.askEvery { return false }
            last = now
            return true
        }
        if ring { bell.ring() }
    }

    /// The least time between two tries asked for by `tryNow`.
    static let askEvery = Duration.milliseconds(250)

    /// Whether this host holds `folder`'s role.
    public func holds(_ folder: String) -> Bool { state.withLock { $0.held.contains(folder) } }

    /// Whether this host may claim from `folder` (open a batch there) now: it holds the role,
    /// or the database does not answer and it held the role when it went or `grace` has passed.
    public func mayClaim(_ folder: String, now: ContinuousClock.Instant = .now) -> Bool {
        state.withLock { s in
            if s.held.contains(folder) { return true }
            guard !s.connected, let since = s.downSince else { return false }
            return s.heldWhenLost.contains(folder) || now - since >= settings.grace
        }
    }

    /// Whether the roles' database answers (false: claims race on the share after `grace`).
    public var isConnected: Bool { state.withLock { $0.connected } }

    /// The host holding `folder`'s role as last read; nil when none does (or unknown).
    public func holder(of folder: String) -> String? {
        state.withLock { s in s.held.contains(folder) ? settings.host : (s.connected ? s.holders[folder] : nil) }
    }

    // MARK: - The roles' thread

    private func run(firstTry: Bell) {
        defer { ended.ring() }
        var connection: Connection?
        var first = true
        while true {
            let (stopping, wanted, held) = state.withLock { ($0.stopping, $0.wanted, $0.held) }
            if stopping {
                if let connection, !held.isEmpty {
                    _ = try? connection.execute("SELECT pg_advisory_unlock_all()", [], timeout: .seconds(2))
                }
                connection?.close()
                state.withLock { $0.held = []; $0.connected = false }
                return
            }
            var note = false
            do throws(ClusterError) {
                let c: Connection
                if let connection { c = connection } else { c = try connect() }
                connection = c
                var nowHeld = held
                for folder in held.subtracting(wanted) {
                    _ = try c.execute("SELECT pg_advisory_unlock($1::int4, $2::int4)",
                                      [String(Self.namespace), String(Self.key(folder))], timeout: settings.timeout)
                    nowHeld.remove(folder)
                }
                for folder in wanted.subtracting(held).sorted() {
                    let rows = try c.execute("SELECT pg_try_advisory_lock($1::int4, $2::int4) AS got",
                                             [String(Self.namespace), String(Self.key(folder))], timeout: settings.timeout)
                    if rows.rows.first?.bool("got") == true { nowHeld.insert(folder) }
                }
                let holders = try readHolders(c, folders: wanted.union(held))
                note = state.withLock { s in
                    let news = s.held != nowHeld || s.holders != holders || !s.connected
                    s.held = nowHeld
                    s.holders = holders
                    s.connected = true
                    s.downSince = nil
                    s.heldWhenLost = []
                    return news
                }
            } catch {
                connection?.close()
                connection = nil
                note = state.withLock { s in
                    let news = s.connected || s.downSince == nil || !s.held.isEmpty
                    if s.connected || s.downSince == nil {
                        s.downSince = .now
                        s.heldWhenLost = s.held
                    }
                    s.connected = false
                    s.held = []
                    s.holders = [:]
                    return news
                }
            }
            if note { changed.withLock { $0 }?() }
            if first {
                first = false
                firstTry.ring()
            }
            // A holder's connection says nothing until it ends (the server stopped, the network):
            // its socket is waited on too, so the loss is seen at once, not at the next look.
            let ready = Bell.poll([bell.descriptor, connection?.socket ?? -1], timeout: settings.interval)
            if ready[0] { bell.clear() }
        }
    }

    private func connect() throws(ClusterError) -> Connection {
        let defaults = [
            ("application_name", Self.applicationPrefix + settings.host),
            ("connect_timeout", "5"),
            ("keepalives", "1"), ("keepalives_idle", "10"), ("keepalives_interval", "5"), ("keepalives_count", "3"),
            ("tcp_user_timeout", "20000"),
            ("target_session_attrs", "read-write"),
        ]
        return try Connection(conninfo: settings.conninfo, defaults: defaults, timeout: settings.timeout)
    }

    /// Each of `folders`' role holders, by the application name of the session holding the lock.
    private func readHolders(_ c: Connection, folders: Set<String>) throws(ClusterError) -> [String: String] {
        guard !folders.isEmpty else { return [:] }
        let rows = try c.execute("""
            SELECT l.objid::text AS key, a.application_name AS name
              FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
             WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.classid = ($1::int4)::oid
               AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """, [String(Self.namespace)], timeout: settings.timeout)
        var byKey: [String: String] = [:]
        for row in rows.rows {
            guard let key = row["key"], let name = row["name"], name.hasPrefix(Self.applicationPrefix) else { continue }
            byKey[key] = String(name.dropFirst(Self.applicationPrefix.count))
        }
        var holders: [String: String] = [:]
        for folder in folders {
            if let host = byKey[String(UInt32(bitPattern: Self.key(folder)))] { holders[folder] = host }
        }
        return holders
    }
}
