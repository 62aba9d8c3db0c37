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
/// - A host killed (`kill -9`, a crash) loses its roles the moment its socket closes; one cut
///   off or powered off, once the server's TCP keepalives (set on the role session from
///   `takeover`) find it gone. Another host takes them at its next try (every quarter of
///   `takeover`, and at once when it has settled photos to claim: `tryNow`).
/// - A role is held only by a host that can act on it: one that watches and can use the folder
///   (`want`) and whose own link to the database answers (`setLinkUp`: it adds its claims'
///   photos as tasks there). One no longer wanted and every one at `stop` is released at once.
/// - Without the database (this host cannot reach it, or its link does not answer) a host is a
///   host: the one that held a role when it went keeps claiming (a server gone frees every
///   role: nobody else can hold it meanwhile), and every other claims too once it has been
///   alone for `grace` — claims then race on the share as without a cluster (each photo is
///   still claimed once) rather than wait for the database. The loop hears when that time
///   comes (`onChange`).
/// - The open batches a host claimed are recorded with its claimer session (`hold`,
///   `photofinish.batch_holders`): when that session is gone from the server (the host killed),
///   the folder's claimer adopts the batch after `adoptAfter` (`Holding.adopt`), and claims
///   nothing new there until it has — so the photos dropped after a claimer's death join its
///   batch. A holder writes into such a batch only while its session was confirmed within
///   `permit` (`mayWrite`): a host cut off from the database stops writing before another can
///   adopt, and when it is back and finds the batch adopted it lets it go (`Holding.lost`).
///   Cut off for `fenceAfter`, it takes the batch back on the share instead of waiting for the
///   database: its lock file is written again with words of its own (`onFence`), which no
///   adopter matches, and it writes into the batch alone from then on.
public final class ClaimerRoles: Sendable {
    public struct Settings: Sendable {
        public var conninfo: String
        public var host: String
        /// How long a host that did not hold a role waits, without the database, before
        /// claiming alone (`cluster.claimerTakeover`).
        public var grace: Duration
        /// `cluster.claimerTakeover`: how long a dead claimer's role waits before another host
        /// takes it (and adopts its open batch). Sets how often the roles not held are tried
        /// (`interval`) and the server's keepalives on the role session (`keepalives`).
        public var takeover: Duration
        /// How often the roles not held are tried and the holders read for the status (and at
        /// once when `tryNow` rings, or the connection's socket says something: its end).
        public var interval: Duration
        /// How long one statement of the roles may take before the connection is given up.
        public var timeout: Duration
        /// This process's lock file text on the shares (`BatchLock.ownerText`): recorded with the
        /// batches it holds and adopts.
        public var lock: String = ""

        public init(conninfo: String, host: String, takeover: Duration = ClaimerRoles.defaultTakeover) {
            self.conninfo = conninfo
            self.host = host
            self.takeover = takeover
            grace = takeover
            interval = min(.seconds(5), takeover / 4)
            timeout = min(.seconds(10), max(.seconds(2), takeover / 2))
        }

        /// The server's TCP keepalives on the role session (`SET tcp_keepalives_idle` …, in
        /// seconds, and `tcp_user_timeout` in ms): a claimer whose host dies or is cut off from a
        /// remote database loses its session, and so its roles, within about a third of
        /// `takeover` — the rest is the others' next try and the adoption's wait. (Ignored by
        /// the server on a Unix socket, where a dead process's session ends at once.)
        public var keepalives: (idle: Int, interval: Int, count: Int, userTimeout: Int) {
            let budget = max(2, Int((takeover / 3) / .seconds(1)))
            let idle = max(1, budget / 2)
            return (idle, 1, max(1, budget - idle), budget * 1000)
        }
    }

    /// `cluster.claimerTakeover`'s default.
    public static let defaultTakeover = Duration.seconds(10)

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
    private let fencing = Mutex<(@Sendable (BatchKey, String) -> Fence)?>(nil)
    /// The fences' thread: wakes while open batches are recorded, to take back in time one whose
    /// session was not confirmed for `fenceAfter` (the roles' own thread may be waiting on a
    /// statement that does not answer meanwhile).
    private let fenceBell = Bell()

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
    /// How long after its last confirmed round trip a holder takes its open batch back on the
    /// share (`onFence`) and writes into it alone: past `permit`, before `adoptAfter`.
    public static let fenceAfter = Duration.seconds(3)
    /// How long a holder's session must have been seen gone before its batch is adopted: more
    /// than `permit` (a write its holder began before its permit ran out has ended) and than
    /// `fenceAfter` (a holder cut off has changed its lock's words by then).
    public static let adoptAfter = Duration.seconds(4)
    /// How often the session is confirmed while this host holds batches or waits to adopt one.
    static let confirmEvery = Duration.seconds(1)

    private struct HeldBatch {
        /// This host's lock file text (what the database records with the batch).
        var lock: String
        /// Taken back on the share while the session was not confirmed (`fenceAfter`): the lock
        /// file says `lock` now, the database may still record `previous`. Written freely until
        /// it is recorded again on a confirmed session.
        var fenced = false
        var previous: String?
        /// When this host began holding it (a batch never confirmed is taken back that long after).
        var since = ContinuousClock.now
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
        /// Each folder's holder as last read (host names), for the status, and since when it
        /// holds the role (as it recorded it).
        var holders: [String: String] = [:]
        var holderSince: [String: Date] = [:]
        /// The roles whose taking is recorded (`photofinish.claimers`) on the session now open.
        var sinceRecorded: Set<String> = []
        /// The roles' connection answers.
        var connected = false
        /// This host's own link to the database answers (its claims' photos can be added as tasks;
        /// a daemon says so with `setLinkUp`, roles used alone need no link).
        var linkUp = true
        /// Since when this host cannot act on a role (the roles' connection or its link down; at
        /// start until both answer): it claims alone once this is `grace` old.
        var aloneSince: ContinuousClock.Instant? = .now
        /// The loop was told that `grace` has passed.
        var aloneTold = false
        /// The roles held when this host went alone (it keeps claiming: nobody else holds them).
        var heldWhenLost: Set<String> = []
        var running = false
        var stopping = false
        /// The roles were let go for good (a drain): the connection stays for the batches held.
        var lettingGo = false
        /// The open batches this host holds on the share, and the rows to remove.
        var batches: [BatchKey: HeldBatch] = [:]
        var letGo: [BatchKey: [String]] = [:]
        /// Batches of the folders whose role this host holds whose holder's session is gone.
        var orphans: [BatchKey: Orphan] = [:]
        /// When the last round trip that succeeded on the open session was sent.
        var confirmed: ContinuousClock.Instant?
        /// The same on any session (kept when a session ends): open batches are taken back on
        /// the share `fenceAfter` later.
        var lastConfirmed: ContinuousClock.Instant?
        /// Closed batches of holders gone, told to the daemon (once each).
        var reportedDead: Set<BatchKey> = []
        /// Other holders' records to remove (their batches taken over by the lease), with their lock.
        var drops: [BatchKey: String] = [:]
    }

    public init(_ settings: Settings) {
        self.settings = settings
    }

    /// Whether this host is alone now: it cannot act on a role (the roles' connection or its
    /// link does not answer).
    private static func isAlone(_ s: State) -> Bool { !s.connected || !s.linkUp }

    /// Notes that this host went alone (at most once until it is back): the roles it held it
    /// keeps claiming with, the grace starts.
    private static func wentAlone(_ s: inout State, now: ContinuousClock.Instant = .now) {
        guard s.aloneSince == nil else { return }
        s.aloneSince = now
        s.aloneTold = false
        s.heldWhenLost = s.held
    }

    /// Called (from the roles' thread) when a role is taken or lost, or a holder changes.
    public func onChange(_ body: @escaping @Sendable () -> Void) { changed.withLock { $0 = body } }

    /// Called (from the roles' thread) with what it found about the batches' holders.
    public func onHolding(_ body: @escaping @Sendable (Holding) -> Void) { holding.withLock { $0 = body } }

    /// How an open batch is taken back on the share (from the fences' thread): given the batch
    /// and the words its lock file should still say, writes words of this process's own there.
    public func onFence(_ body: @escaping @Sendable (BatchKey, String) -> Fence) { fencing.withLock { $0 = body } }

    /// How taking an open batch back on the share ended (`onFence`).
    public enum Fence: Sendable, Equatable {
        /// Its lock file says `words` now (this process's, which no adopter matches).
        case taken(words: String)
        /// Its lock file says another's words: adopted by another host (the batch is lost here).
        case adopted
        /// It could not be looked at or written (the share): tried again.
        case failed
    }

    /// This host's own link to the database answers (or not): a role is held only while it
    /// does — a host that cannot add its claims' photos as tasks does not keep the others from
    /// claiming.
    public func setLinkUp(_ up: Bool) {
        let changed = state.withLock { s -> Bool in
            guard s.linkUp != up else { return false }
            if !up { Self.wentAlone(&s) }
            s.linkUp = up
            return true
        }
        if changed { bell.ring() }
    }

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
            if held.tried { s.letGo[key] = [held.lock] + (held.previous.map { [$0] } ?? []) }
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
            guard let held = s.batches[key], held.tried, !held.fenced else { return true }
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
                s.letGo[key] = [settings.lock]
            }
        }
        bell.ring()
    }

    /// Whether a dead holder's batch of `folder` waits to be adopted (nothing new is claimed there until then).
    public func adopting(_ folder: String) -> Bool { state.withLock { s in s.orphans.keys.contains { $0.inbox == folder } } }

    /// Starts the roles' thread (and the fences'); waits up to `wait` for its first try.
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
        let fences = Thread { [self] in fence() }
        fences.name = "photofinish-fences"
        fences.start()
        _ = tried.wait(wait)
    }

    /// Releases every role and closes the connection (safe to call twice), waiting at most
    /// `wait` for the roles' thread: one waiting on a statement the database does not answer
    /// ends by itself at its timeout (the server frees the roles when the connection goes,
    /// at the latest with the process).
    public func stop(waitingUpTo wait: Duration = .seconds(3)) {
        let started = state.withLock { s -> Bool in
            defer { s.stopping = true; s.wanted = [] }
            return s.running
        }
        guard started else { return }
        bell.ring()
        fenceBell.ring()
        // Every caller waits for the thread's end (a second stop too); the ring stays, so a
        // stop after the end returns at once.
        _ = ended.waitLeavingRing(wait)
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
            if !Self.isAlone(s) {
                return s.held.contains(folder) && !s.orphans.keys.contains { $0.inbox == folder }
            }
            // The server seen, and another host holding the role (it can act on it): this one,
            // whose own link does not answer, leaves the folder to it.
            if s.connected, let holder = s.holders[folder], holder != settings.host { return false }
            guard let since = s.aloneSince else { return false }
            return s.heldWhenLost.contains(folder) || now - since >= settings.grace
        }
    }

    /// Whether this host is alone (the database does not answer it): it claims as without a
    /// cluster once that has lasted `grace`.
    public var isAlone: Bool { state.withLock { Self.isAlone($0) } }

    /// Whether the roles' database answers (false: claims race on the share after `grace`).
    public var isConnected: Bool { state.withLock { $0.connected } }

    /// The host holding `folder`'s role as last read; nil when none does (or unknown).
    public func holder(of folder: String) -> String? {
        state.withLock { s in s.held.contains(folder) ? settings.host : (s.connected ? s.holders[folder] : nil) }
    }

    /// Since when `folder`'s holder (`holder(of:)`) holds its role, as it recorded it (nil: not
    /// known — a schema without the record yet).
    public func holderSince(of folder: String) -> Date? {
        state.withLock { s in s.connected && (s.held.contains(folder) || s.holders[folder] != nil) ? s.holderSince[folder] : nil }
    }

    // MARK: - The roles' thread

    private func run(firstTry: Bell) {
        defer { ended.ring() }
        var connection: Connection?
        var first = true
        while true {
            let (stopping, wanted, held, linkUp) = state.withLock { ($0.stopping, $0.wanted, $0.held, $0.linkUp) }
            if stopping {
                if let connection, !held.isEmpty {
                    _ = try? connection.execute("SELECT pg_advisory_unlock_all()", [], timeout: .seconds(2))
                }
                connection?.close()
                state.withLock { $0.held = []; $0.connected = false }
                return
            }
            // A host whose link does not answer cannot act on a role: it holds none.
            let wantedNow = linkUp ? wanted : []
            var note = false
            var found: [Holding] = []
            do throws(ClusterError) {
                let c: Connection
                if let connection { c = connection } else {
                    c = try connect()
                    // A new session: every batch held is recorded on it before it is written again.
                    state.withLock { s in
                        s.confirmed = nil
                        s.sinceRecorded = []
                        for key in s.batches.keys { s.batches[key]?.recorded = false }
                    }
                }
                connection = c
                let sent = ContinuousClock.now
                var nowHeld = held
                for folder in held.subtracting(wantedNow) {
                    _ = try c.execute("SELECT pg_advisory_unlock($1::int4, $2::int4)",
                                      [String(Self.namespace), String(Self.key(folder))], timeout: settings.timeout)
                    nowHeld.remove(folder)
                }
                for folder in wantedNow.subtracting(held).sorted() {
                    let rows = try c.execute("SELECT pg_try_advisory_lock($1::int4, $2::int4) AS got",
                                             [String(Self.namespace), String(Self.key(folder))], timeout: settings.timeout)
                    if rows.rows.first?.bool("got") == true { nowHeld.insert(folder) }
                }
                try recordTaking(c, held: nowHeld)
                let (holders, since) = try readHolders(c, folders: wanted.union(held))
                found = try holdings(c, roles: nowHeld)
                note = state.withLock { s in
                    s.confirmed = sent
                    s.lastConfirmed = sent
                    let news = s.held != nowHeld || s.holders != holders || s.holderSince != since || !s.connected
                    s.held = nowHeld
                    s.holders = holders
                    s.holderSince = since
                    s.connected = true
                    if !Self.isAlone(s) {
                        s.aloneSince = nil
                        s.heldWhenLost = []
                    }
                    return news
                }
            } catch {
                connection?.close()
                connection = nil
                note = state.withLock { s in
                    let news = s.connected || !s.held.isEmpty
                    Self.wentAlone(&s)
                    s.connected = false
                    s.confirmed = nil
                    s.orphans = s.orphans.filter { $0.value.handedOver }
                    s.held = []
                    s.holders = [:]
                    s.holderSince = [:]
                    return news
                }
            }
            // Alone for `grace`: the loop hears it (its folders may claim alone now).
            let now = ContinuousClock.now
            let graceEnds = state.withLock { s -> ContinuousClock.Instant? in
                guard Self.isAlone(s), !s.aloneTold, let since = s.aloneSince else { return nil }
                if now - since >= settings.grace {
                    s.aloneTold = true
                    note = true
                    return nil
                }
                return since + settings.grace
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
            let busy = state.withLock { !$0.batches.isEmpty || !$0.orphans.isEmpty || !$0.letGo.isEmpty || !$0.drops.isEmpty }
            if busy { fenceBell.ring() }
            var timeout = busy ? min(settings.interval, Self.confirmEvery) : settings.interval
            if let graceEnds { timeout = min(timeout, max(.milliseconds(1), graceEnds - ContinuousClock.now)) }
            // A dead holder's batch is adopted the moment its wait is over, not at the next turn.
            let adoptAt = state.withLock { s in s.orphans.values.filter { !$0.handedOver }.map { $0.deadSince + Self.adoptAfter }.min() }
            if let adoptAt { timeout = min(timeout, max(.milliseconds(1), adoptAt - ContinuousClock.now)) }
            let ready = Bell.poll([bell.descriptor, connection?.socket ?? -1], timeout: timeout)
            if ready[0] { bell.clear() }
        }
    }

    /// The fences' thread: while open batches are recorded, looks every half second for one
    /// whose session was not confirmed for `fenceAfter` and takes it back on the share
    /// (`onFence`), so a holder cut off from the database closes and fills it alone instead of
    /// waiting for the database — before any host may adopt it (`adoptAfter`).
    private func fence() {
        while !state.withLock({ $0.stopping }) {
            let now = ContinuousClock.now
            let due = state.withLock { s -> [(BatchKey, String)] in
                s.batches.filter { key, held in
                    guard held.tried, !held.fenced, !held.closed else { return false }
                    let last = max(s.lastConfirmed ?? held.since, held.since)
                    return s.confirmed.map { now - $0 >= Self.fenceAfter } ?? true && now - last >= Self.fenceAfter
                }.map { ($0.key, $0.value.lock) }
            }
            if !due.isEmpty, let fence = fencing.withLock({ $0 }) {
                for (key, words) in due {
                    let outcome = fence(key, words)
                    let lost = state.withLock { s -> Bool in
                        guard var held = s.batches[key], held.lock == words, !held.fenced else { return false }
                        switch outcome {
                        case .failed:
                            return false
                        case .adopted:
                            s.batches[key] = nil
                            return true
                        case .taken(let fenced):
                            held.previous = held.lock
                            held.lock = fenced
                            held.fenced = true
                            held.recorded = false
                            s.batches[key] = held
                            return false
                        }
                    }
                    if lost, let tell = holding.withLock({ $0 }) { tell(.lost(key, by: nil)) }
                }
                bell.ring()
            }
            let idle = state.withLock { $0.batches.isEmpty }
            _ = fenceBell.wait(idle ? settings.interval : .milliseconds(500))
        }
    }

    /// The role session: its TCP keepalives (both ways) short enough that a claimer dead or cut
    /// off loses its roles within about a third of `takeover` (`Settings.keepalives`).
    private func connect() throws(ClusterError) -> Connection {
        let k = settings.keepalives
        let defaults = [
            ("application_name", Self.applicationPrefix + settings.host),
            ("connect_timeout", String(max(2, min(5, Int((settings.takeover / 2) / .seconds(1)))))),
            ("keepalives", "1"), ("keepalives_idle", String(k.idle)), ("keepalives_interval", String(k.interval)),
            ("keepalives_count", String(k.count)), ("tcp_user_timeout", String(k.userTimeout)),
            ("target_session_attrs", "read-write"),
        ]
        let c = try Connection(conninfo: settings.conninfo, defaults: defaults, timeout: settings.timeout)
        do throws(ClusterError) {
            _ = try c.run(script: "SET tcp_keepalives_idle = \(k.idle); SET tcp_keepalives_interval = \(k.interval);"
                          + " SET tcp_keepalives_count = \(k.count); SET tcp_user_timeout = \(k.userTimeout)",
                          timeout: settings.timeout)
        } catch where error.kind == .query {
            // A server or pooler that refuses them: the client's keepalives still end the session's use here.
        }
        return c
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
                let pending = s.batches.filter { !$0.value.recorded }.map { ($0.key, $0.value.lock, $0.value.closed, $0.value.previous) }
                for (key, _, _, _) in pending { s.batches[key]?.tried = true }
                let closing = s.batches.filter { $0.value.recorded && $0.value.closed && !$0.value.closedSent }.map { ($0.key, $0.value.lock) }
                return (s.letGo, pending, closing, s.drops)
            }
            for (key, locks) in letGo {
                _ = try c.execute("DELETE FROM photofinish.batch_holders WHERE inbox = $1 AND batch = $2 AND host = $3 AND lock = ANY ($4::text[])",
                                  [key.inbox, key.batch, settings.host, PostgresText.array(locks)], timeout: settings.timeout)
                state.withLock { s in if s.letGo[key] == locks { s.letGo[key] = nil } }
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
            for (key, lock, closed, previous) in toRecord {
                // A batch taken back on the share (fenced) is recorded with its new words over
                // its own earlier record.
                let rows = try c.execute("""
                    INSERT INTO photofinish.batch_holders (inbox, batch, host, pid, app, lock, open)
                    VALUES ($1, $2, $3, pg_backend_pid(), current_setting('application_name'), $4, $5)
                    ON CONFLICT (inbox, batch) DO UPDATE
                       SET pid = excluded.pid, app = excluded.app, open = excluded.open, lock = excluded.lock
                     WHERE photofinish.batch_holders.host = excluded.host
                       AND photofinish.batch_holders.lock = ANY (ARRAY[excluded.lock, $6])
                    RETURNING host
                    """, [key.inbox, key.batch, settings.host, lock, closed ? "f" : "t", previous ?? lock], timeout: settings.timeout)
                if rows.isEmpty, previous != nil {
                    // Fenced, and another host's record meanwhile: an adoption that fails on the
                    // share (the lock's words are this host's now) and removes it. Tried again.
                    state.withLock { s in if s.batches[key]?.lock == lock { s.batches[key]?.tried = true } }
                } else if rows.isEmpty {
                    let by = try c.execute("SELECT host FROM photofinish.batch_holders WHERE inbox = $1 AND batch = $2",
                                           [key.inbox, key.batch], timeout: settings.timeout).rows.first?["host"]
                    state.withLock { _ = $0.batches.removeValue(forKey: key) }
                    found.append(.lost(key, by: by))
                } else {
                    state.withLock { s in
                        if s.batches[key]?.lock == lock {
                            s.batches[key]?.recorded = true
                            s.batches[key]?.fenced = false
                            s.batches[key]?.previous = nil
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

    /// Each of `folders`' role holders, by the application name of the session holding the lock,
    /// and since when each holds it (as its holder recorded it: `recordTaking`).
    private func readHolders(_ c: Connection, folders: Set<String>) throws(ClusterError) -> ([String: String], [String: Date]) {
        guard !folders.isEmpty else { return ([:], [:]) }
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
        var since: [String: Date] = [:]
        guard !holders.isEmpty else { return (holders, since) }
        do throws(ClusterError) {
            let taken = try c.execute("""
                SELECT c.inbox, c.host, extract(epoch FROM c.since) AS since
                  FROM photofinish.claimers c JOIN pg_stat_activity a ON a.pid = c.pid AND a.application_name = c.app
                 WHERE c.inbox = ANY ($1::text[])
                """, [PostgresText.array(holders.keys.sorted())], timeout: settings.timeout)
            for row in taken.rows {
                guard let inbox = row["inbox"], let date = row.date("since"), holders[inbox] == row["host"] else { continue }
                since[inbox] = date
            }
        } catch where error.kind == .query {
            // A schema without the record yet (the member migrates it): no time to show.
        }
        return (holders, since)
    }

    /// Records when this host took each role it holds (`photofinish.claimers`, once per role
    /// and session): what `cluster status` and the status say as "since".
    private func recordTaking(_ c: Connection, held: Set<String>) throws(ClusterError) {
        let new = state.withLock { s in held.subtracting(s.sinceRecorded) }
        state.withLock { s in s.sinceRecorded.formIntersection(held) }
        for folder in new.sorted() {
            do throws(ClusterError) {
                _ = try c.execute("""
                    INSERT INTO photofinish.claimers (inbox, key, host, pid, app)
                    VALUES ($1, $2, $3, pg_backend_pid(), current_setting('application_name'))
                    ON CONFLICT (inbox) DO UPDATE
                       SET key = excluded.key, host = excluded.host, pid = excluded.pid, app = excluded.app, since = now()
                    """, [folder, String(UInt32(bitPattern: Self.key(folder))), settings.host], timeout: settings.timeout)
                state.withLock { _ = $0.sinceRecorded.insert(folder) }
            } catch where error.kind == .query {
                // A schema without the table yet: tried again at the next turn.
            }
        }
    }
}
