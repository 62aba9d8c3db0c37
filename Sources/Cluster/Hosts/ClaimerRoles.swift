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
/// - The open batches a host claimed are recorded with its claimer session (`hold`,
///   `photofinish.batch_holders`): when that session is gone from the server (the host killed),
///   the folder's claimer adopts the batch after `adoptAfter` (`Holding.adopt`), and claims
///   nothing new there until it has — so the photos dropped after a claimer's death join its
///   batch. A holder writes into such a batch only while its session was confirmed within
///   `permit` (`mayWrite`): a host cut off from the database stops writing before another can
///   adopt, and when it is back and finds the batch adopted it lets it go (`Holding.lost`).
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
        /// This process's lock file text on the shares (`BatchLock.ownerText`): recorded with the
        /// batches it holds and adopts.
        public var lock: String = ""

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
    private let holding = Mutex<(@Sendable (Holding) -> Void)?>(nil)

    /// One batch of a hot folder.
    public struct BatchKey: Hashable, Sendable, CustomStringConvertible {
        public var inbox: String
        public var batch: String
        public init(inbox: String, batch: String) {
            self.inbox = inbox
            self.batch = batch
        }
        public var description: String { inbox + "/" + batch }
    }

    /// What the roles' thread found about the open batches' holders.
    public enum Holding: Sendable, Equatable {
        /// This host now holds, in the database, `key`'s batch of `host`, whose claimer session is
        /// gone: take its lock on the share if it still says `lock` (the dead holder's) and the
        /// batch is still open, then say so with `adoptionEnded`.
        case adopt(BatchKey, from: String, lock: String)
        /// A batch this host held was adopted by `by` while this host's session was gone: it is
        /// not written any more (left to its new holder).
        case lost(BatchKey, by: String?)
        /// A batch closed on the share (its run under way) whose holder `host`'s session is gone:
        /// taken over by its lease once that has gone unrenewed for `deadLease` (not 60 s), if
        /// its lock still says `lock`; `drop` its record then.
        case deadHolder(BatchKey, from: String, lock: String)
    }

    /// How long the lock of a closed batch whose holder's session is gone must go unrenewed on
    /// the share (two renewals missed) before it is taken over: the holder alive and cut off
    /// from the database still renews it every 10 s.
    public static let deadLease = Duration.seconds(20)

    /// How long after its last confirmed round trip a holder still starts a write into its batch.
    public static let permit = Duration.seconds(2)
    /// How long a holder's session must have been seen gone before its batch is adopted: more
    /// than `permit` (a write its holder began before its permit ran out has ended).
    public static let adoptAfter = Duration.seconds(5)
    /// How often the session is confirmed while this host holds batches or waits to adopt one.
    static let confirmEvery = Duration.seconds(1)

    private struct HeldBatch {
        /// This host's lock file text (what the database records with the batch).
        var lock: String
        /// A statement recording it was sent (its answer may have been lost: the row may exist).
        var tried = false
        /// Recorded on the session now open.
        var recorded = false
        /// Closed on the share (its run under way): recorded so, once `closedSent`.
        var closed = false
        var closedSent = false
    }

    private struct Orphan {
        var host: String
        var pid: Int
        var lock: String
        var deadSince: ContinuousClock.Instant
        /// Adopted in the database: the daemon is taking it on the share.
        var handedOver = false
    }

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
        /// The roles were let go for good (a drain): the connection stays for the batches held.
        var lettingGo = false
        /// The open batches this host holds on the share, and the rows to remove.
        var batches: [BatchKey: HeldBatch] = [:]
        var letGo: [BatchKey: String] = [:]
        /// Batches of the folders whose role this host holds whose holder's session is gone.
        var orphans: [BatchKey: Orphan] = [:]
        /// When the last round trip that succeeded on the open session was sent.
        var confirmed: ContinuousClock.Instant?
        /// Closed batches of holders gone, told to the daemon (once each).
        var reportedDead: Set<BatchKey> = []
        /// Other holders' records to remove (their batches taken over by the lease), with their lock.
        var drops: [BatchKey: String] = [:]
    }

    public init(_ settings: Settings) {
        self.settings = settings
    }

    /// Called (from the roles' thread) when a role is taken or lost, or a holder changes.
    public func onChange(_ body: @escaping @Sendable () -> Void) { changed.withLock { $0 = body } }

    /// Called (from the roles' thread) with what it found about the batches' holders.
    public func onHolding(_ body: @escaping @Sendable (Holding) -> Void) { holding.withLock { $0 = body } }

    // MARK: - The open batches held

    /// This host holds the open batch `key` on the share (its lock file says `settings.lock`):
    /// recorded with its claimer session, so the folder's next claimer adopts it at once should
    /// the session end.
    public func hold(_ key: BatchKey) {
        state.withLock { s in
            guard s.batches[key] == nil else { return }
            s.letGo[key] = nil
            s.batches[key] = HeldBatch(lock: settings.lock)
        }
        bell.ring()
    }

    /// `hold`, then waits up to `wait` for the record (while the database answers): a batch
    /// just opened is recorded before its first photos are handed on, so a claimer killed a
    /// moment after opening it leaves the database's word, not only the share's lease.
    /// - Returns: whether it is recorded.
    @discardableResult
    public func holdNow(_ key: BatchKey, waitingUpTo wait: Duration = .seconds(1)) -> Bool {
        hold(key)
        let until = Date().addingTimeInterval(Double(wait / .milliseconds(1)) / 1000)
        recordedSignal.lock()
        defer { recordedSignal.unlock() }
        while true {
            let (recorded, connected) = state.withLock { ($0.batches[key]?.recorded ?? false, $0.connected) }
            if recorded { return true }
            guard connected, recordedSignal.wait(until: until) else { return false }
        }
    }

    /// Signalled by the roles' thread after each turn of recording.
    private let recordedSignal = NSCondition()

    /// The batch is no longer open here (closed on the share, or let go): its record goes.
    public func letGo(_ key: BatchKey) {
        state.withLock { s in
            guard let held = s.batches.removeValue(forKey: key) else { return }
            if held.tried { s.letGo[key] = held.lock }
        }
        bell.ring()
    }

    /// The batch `key` this host holds was closed on the share: its run is under way (its record
    /// stays until `letGo`, so the folder's claimer takes it over soon should this host die).
    public func closed(_ key: BatchKey) {
        state.withLock { s in
            s.batches[key]?.closed = true
            s.batches[key]?.closedSent = false
        }
        bell.ring()
    }

    /// Removes another holder's record of `key` (its batch was taken over on the share).
    public func drop(_ key: BatchKey, lock: String) {
        state.withLock { $0.drops[key] = lock }
        bell.ring()
    }

    /// Whether the batch is recorded (or being recorded) as this host's: its writes need `mayWrite`.
    public func isHeld(_ key: BatchKey) -> Bool { state.withLock { $0.batches[key] != nil } }

    /// Whether this host may write into the batch `key` now (add photos, close it): always for a
    /// batch not recorded in the database; for one recorded, only while its claimer session was
    /// confirmed within `permit` — else another host may adopt it.
    public func mayWrite(_ key: BatchKey, now: ContinuousClock.Instant = .now) -> Bool {
        state.withLock { s in
            guard let held = s.batches[key], held.tried else { return true }
            guard s.connected, held.recorded, let confirmed = s.confirmed else { return false }
            return now - confirmed < Self.permit
        }
    }

    /// The daemon's answer to `Holding.adopt`: `adopted` — the batch is open here now (this
    /// host's lock on the share); else it was not (closed, gone, its lock another's): its record goes.
    public func adoptionEnded(_ key: BatchKey, adopted: Bool) {
        state.withLock { s in
            s.orphans[key] = nil
            if adopted {
                s.batches[key] = HeldBatch(lock: settings.lock, tried: true, recorded: s.connected)
            } else {
                s.batches[key] = nil
                s.letGo[key] = settings.lock
            }
        }
        bell.ring()
    }

    /// Whether a dead holder's batch of `folder` waits to be adopted (nothing new is claimed there until then).
    public func adopting(_ folder: String) -> Bool { state.withLock { s in s.orphans.keys.contains { $0.inbox == folder } } }

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
        let started = state.withLock { s -> Bool in
            defer { s.stopping = true; s.wanted = [] }
            return s.running
        }
        guard started else { return }
        bell.ring()
        // Every caller waits for the thread's end (a second stop too); the ring stays, so a
        // stop after the end returns at once.
        _ = ended.waitLeavingRing(settings.timeout + .seconds(2))
    }

    /// Lets every role go for good (a drain: the others claim while this host finishes); the
    /// connection stays, for the batches this host still holds, until `stop`.
    public func letGoRoles() {
        state.withLock { s in
            s.lettingGo = true
            s.wanted = []
        }
        bell.ring()
    }

    /// The folders whose role this host wants now (the rest are released at once).
    public func want(_ folders: Set<String>) {
        let changed = state.withLock { s -> Bool in
            guard !s.stopping, !s.lettingGo, s.wanted != folders else { return false }
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
            if s.held.contains(folder) { return !s.orphans.keys.contains { $0.inbox == folder } }
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
            var found: [Holding] = []
            do throws(ClusterError) {
                let c: Connection
                if let connection { c = connection } else {
                    c = try connect()
                    // A new session: every batch held is recorded on it before it is written again.
                    state.withLock { s in
                        s.confirmed = nil
                        for key in s.batches.keys { s.batches[key]?.recorded = false }
                    }
                }
                connection = c
                let sent = ContinuousClock.now
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
                found = try holdings(c, roles: nowHeld)
                note = state.withLock { s in
                    s.confirmed = sent
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
                    s.confirmed = nil
                    s.orphans = s.orphans.filter { $0.value.handedOver }
                    s.held = []
                    s.holders = [:]
                    return news
                }
            }
            recordedSignal.lock()
            recordedSignal.broadcast()
            recordedSignal.unlock()
            if note { changed.withLock { $0 }?() }
            if !found.isEmpty, let tell = holding.withLock({ $0 }) { for event in found { tell(event) } }
            if first {
                first = false
                firstTry.ring()
            }
            // A holder's connection says nothing until it ends (the server stopped, the network):
            // its socket is waited on too, so the loss is seen at once, not at the next look.
            let busy = state.withLock { !$0.batches.isEmpty || !$0.orphans.isEmpty || !$0.letGo.isEmpty }
            let ready = Bell.poll([bell.descriptor, connection?.socket ?? -1],
                                  timeout: busy ? min(settings.interval, Self.confirmEvery) : settings.interval)
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

    /// The open batches' holders, on the roles' connection: the rows of the batches let go
    /// removed, those held recorded on this session (one found another host's: `lost`), and —
    /// for the folders whose role this host holds — the batches whose holder's session is gone
    /// watched and, `adoptAfter` later, adopted (`adopt`). A schema without the table yet (the
    /// member migrates it) is no trouble: tried again at the next turn.
    private func holdings(_ c: Connection, roles: Set<String>) throws(ClusterError) -> [Holding] {
        var found: [Holding] = []
        do throws(ClusterError) {
            let (letGo, toRecord, toClose, drops) = state.withLock { s in
                let pending = s.batches.filter { !$0.value.recorded }.map { ($0.key, $0.value.lock, $0.value.closed) }
                for (key, _, _) in pending { s.batches[key]?.tried = true }
                let closing = s.batches.filter { $0.value.recorded && $0.value.closed && !$0.value.closedSent }.map { ($0.key, $0.value.lock) }
                return (s.letGo, pending, closing, s.drops)
            }
            for (key, lock) in letGo {
                _ = try c.execute("DELETE FROM photofinish.batch_holders WHERE inbox = $1 AND batch = $2 AND host = $3 AND lock = $4",
                                  [key.inbox, key.batch, settings.host, lock], timeout: settings.timeout)
                state.withLock { s in if s.letGo[key] == lock { s.letGo[key] = nil } }
            }
            for (key, lock) in drops {
                _ = try c.execute("DELETE FROM photofinish.batch_holders WHERE inbox = $1 AND batch = $2 AND lock = $3",
                                  [key.inbox, key.batch, lock], timeout: settings.timeout)
                state.withLock { s in
                    if s.drops[key] == lock { s.drops[key] = nil }
                    s.reportedDead.remove(key)
                }
            }
            for (key, lock) in toClose {
                _ = try c.execute("UPDATE photofinish.batch_holders SET open = false WHERE inbox = $1 AND batch = $2 AND host = $3 AND lock = $4",
                                  [key.inbox, key.batch, settings.host, lock], timeout: settings.timeout)
                state.withLock { s in if s.batches[key]?.lock == lock { s.batches[key]?.closedSent = true } }
            }
            for (key, lock, closed) in toRecord {
                let rows = try c.execute("""
                    INSERT INTO photofinish.batch_holders (inbox, batch, host, pid, app, lock, open)
                    VALUES ($1, $2, $3, pg_backend_pid(), current_setting('application_name'), $4, $5)
                    ON CONFLICT (inbox, batch) DO UPDATE SET pid = excluded.pid, app = excluded.app, open = excluded.open
                     WHERE photofinish.batch_holders.host = excluded.host AND photofinish.batch_holders.lock = excluded.lock
                    RETURNING host
                    """, [key.inbox, key.batch, settings.host, lock, closed ? "f" : "t"], timeout: settings.timeout)
                if rows.isEmpty {
                    let by = try c.execute("SELECT host FROM photofinish.batch_holders WHERE inbox = $1 AND batch = $2",
                                           [key.inbox, key.batch], timeout: settings.timeout).rows.first?["host"]
                    state.withLock { _ = $0.batches.removeValue(forKey: key) }
                    found.append(.lost(key, by: by))
                } else {
                    state.withLock { s in
                        if s.batches[key]?.lock == lock {
                            s.batches[key]?.recorded = true
                            if closed { s.batches[key]?.closedSent = true }
                        }
                    }
                }
            }
            // Nobody to tell yet (the daemon not listening): nothing is adopted, nor looked for.
            guard !roles.isEmpty, holding.withLock({ $0 != nil }) else {
                state.withLock { s in s.orphans = s.orphans.filter { $0.value.handedOver } }
                return found
            }
            let rows = try c.execute("""
                SELECT h.inbox, h.batch, h.host, h.pid, h.lock, h.open FROM photofinish.batch_holders h
                 WHERE h.inbox = ANY ($1::text[])
                   AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = h.pid AND a.application_name = h.app)
                """, [PostgresText.array(roles.sorted())], timeout: settings.timeout)
            let now = ContinuousClock.now
            var dead: [BatchKey: Orphan] = [:]
            var deadClosed: [BatchKey: Orphan] = [:]
            for row in rows.rows {
                guard let inbox = row["inbox"], let batch = row["batch"], let host = row["host"], let pid = row.int("pid"),
                      let lock = row["lock"] else { continue }
                let orphan = Orphan(host: host, pid: pid, lock: lock, deadSince: now)
                if row.bool("open") == false {
                    deadClosed[BatchKey(inbox: inbox, batch: batch)] = orphan
                } else {
                    dead[BatchKey(inbox: inbox, batch: batch)] = orphan
                }
            }
            let tell = state.withLock { s -> [(BatchKey, Orphan)] in
                let new = deadClosed.filter { s.batches[$0.key] == nil && !s.reportedDead.contains($0.key) && s.drops[$0.key] == nil }
                s.reportedDead = s.reportedDead.intersection(deadClosed.keys).union(new.keys)
                return new.map { ($0.key, $0.value) }
            }
            for (key, orphan) in tell { found.append(.deadHolder(key, from: orphan.host, lock: orphan.lock)) }
            let due = state.withLock { s -> [(BatchKey, Orphan)] in
                var next: [BatchKey: Orphan] = s.orphans.filter { $0.value.handedOver }
                for (key, orphan) in dead where s.batches[key] == nil && next[key] == nil {
                    // Seen gone before by this look (same holder): its time runs on.
                    if let seen = s.orphans[key], seen.pid == orphan.pid, seen.lock == orphan.lock { next[key] = seen } else { next[key] = orphan }
                }
                s.orphans = next
                return next.filter { !$0.value.handedOver && now - $0.value.deadSince >= Self.adoptAfter }.map { ($0.key, $0.value) }
            }
            let mine = settings.lock
            for (key, orphan) in due {
                let taken = try c.execute("""
                    UPDATE photofinish.batch_holders h
                       SET host = $3, pid = pg_backend_pid(), app = current_setting('application_name'), lock = $4, since = now()
                     WHERE h.inbox = $1 AND h.batch = $2 AND h.pid = $5 AND h.lock = $6
                       AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = h.pid AND a.application_name = h.app)
                    RETURNING h.batch
                    """, [key.inbox, key.batch, settings.host, mine, String(orphan.pid), orphan.lock], timeout: settings.timeout)
                state.withLock { s in
                    if taken.isEmpty { s.orphans[key] = nil } else { s.orphans[key]?.handedOver = true }
                }
                if !taken.isEmpty { found.append(.adopt(key, from: orphan.host, lock: orphan.lock)) }
            }
        } catch where error.kind == .query {
            // The table not made yet (an older schema while the member migrates): next turn.
        }
        return found
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
