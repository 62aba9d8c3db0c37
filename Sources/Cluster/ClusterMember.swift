import Foundation
import Synchronization

/// This daemon as a host of the cluster: its link to the database, the task board, the leases
/// it holds (renewed on their own thread) and a bell that rings when there may be work (a
/// `NOTIFY`, the link back, a task given back). What a daemon in cluster mode holds one of.
///
/// At every connection — the first and each after the database came back — before anything
/// else runs on it: the schema is migrated (once per start), the host registered (once per
/// start: what an earlier start of it held is ready again at once), the leases it holds renewed
/// and the tasks it holds without knowing it (a take whose answer was lost) given back. So the
/// database coming back after an outage finds each host's leases renewed before any host can
/// take another's.
public final class ClusterMember: Sendable {
    public let identity: HostIdentity
    public let database: Database
    public let board: TaskBoard
    let keeper: LeaseKeeper
    private let work = Bell()
    private let folders: Folders
    private let state = Mutex(State())
    private let events: @Sendable (Event) -> Void

    private struct State {
        var migrated = false
        var registered = false
    }

    /// The folders taken from, shared with the link's event handler.
    private final class Folders: Sendable {
        let names: Mutex<[String]>
        init(_ names: [String]) { self.names = Mutex(names) }
        var all: [String] { names.withLock { $0 } }
    }

    /// What the member tells the daemon (to log it, show it, act on it), from the link's or the
    /// lease keeper's thread.
    public enum Event: Sendable, Equatable {
        /// Statements work (again).
        case connected(server: String)
        /// The database stopped answering: hosts finish what they hold and take nothing new.
        case unreachable(reason: String)
        /// The schema was brought to the current version (`from` == `to`: it already was).
        case migrated(Schema.Outcome)
        case registered(Hosts.Registration)
        /// Tasks this host held were taken over (its lease had expired): drop their work.
        case lost([PhotoTask])
        /// Something a connection's preparation met that is not the network (a schema newer
        /// than this program): the link keeps trying, this is why it is not joining.
        case refused(ClusterError)
    }

    /// - Parameters:
    ///   - conninfo: `cluster.database`, a libpq connection string.
    ///   - lease: how long a task is held without a renewal (renewed every third of it).
    ///   - inboxes: the hot folders whose tasks this host takes (its shares that answer).
    public init(conninfo: String, identity: HostIdentity, inboxes: [String], lease: Duration = .seconds(30),
                timeout: Duration = .seconds(10), backoff: Backoff = Backoff(),
                events: @escaping @Sendable (Event) -> Void = { _ in }) {
        self.identity = identity
        self.events = events
        folders = Folders(inboxes)
        keeper = LeaseKeeper(lease: lease)
        var settings = Database.Settings(conninfo: conninfo, applicationName: "photofinish \(identity.name)")
        settings.timeout = timeout
        settings.backoff = backoff
        settings.channels = [TaskBoard.channel]
        let work = self.work, folders = self.folders
        database = Database(settings) { event in
            switch event {
            case .up(let server):
                events(.connected(server: server))
                work.ring()
            case .down(let reason):
                events(.unreachable(reason: reason))
            case .notification(_, let inbox):
                if folders.all.contains(inbox) { work.ring() }
            case .listening:
                work.ring()
            }
        }
        board = TaskBoard(database: database, host: identity, lease: lease)
        database.onConnect { [weak self] connection throws(ClusterError) in
            try self?.prepare(connection)
        }
    }

    /// Connects (waiting up to `wait` for the first attempt) and starts renewing leases. When the
    /// database does not answer, the link keeps trying and the daemon works without taking
    /// tasks meanwhile.
    @discardableResult
    public func start(waitingUpTo wait: Duration = .seconds(10)) -> Database.Health {
        keeper.start { [weak self] in self?.renew() }
        return database.start(waitingUpTo: wait)
    }

    /// Stops: what this host holds goes back to the others at once (not counted as attempts),
    /// the host is marked stopped, the link closes — within `wait` (nil: each step's own
    /// timeout), whatever the database does: unanswered, what it held is left to the leases.
    public func stop(waitingUpTo wait: Duration? = nil) {
        let deadline = wait.map { ContinuousClock.now + $0 }
        func left() -> Duration? { deadline.map { max(.zero, $0 - .now) } }
        keeper.stop(waitingUpTo: left().map { min($0, .seconds(1)) } ?? .seconds(30))
        if database.health.isUp { _ = try? Hosts.stop(identity, on: database, within: left()) }
        keeper.release(keeper.tasks.map(\.token))
        database.close(waitingUpTo: left())
    }

    public var health: Database.Health { database.health }
    public var lease: Duration { keeper.lease }

    /// The hot folders whose tasks this host takes.
    public var inboxes: [String] { folders.all }

    /// Changes the folders taken from (a share went away, or came back; a reload). Tasks held of
    /// folders no longer taken are given back at once.
    public func setInboxes(_ inboxes: [String]) {
        folders.names.withLock { $0 = inboxes }
        let dropped = keeper.tasks.filter { !inboxes.contains($0.key.inbox) }
        if !dropped.isEmpty { _ = try? giveBack(dropped) }
        keeper.ringNow()
        work.ring()
    }

    // MARK: - Work

    /// Records photos claimed into the open batch `batch` (made if new), within `limit` all told
    /// (nil: the statement timeout): a claim does not wait long for a database that does not
    /// answer — its batch is spread once it does.
    @discardableResult
    public func add(_ tasks: [NewTask], inbox: String, batch: String, within limit: Duration? = nil) throws(ClusterError) -> Int {
        try board.add(tasks, inbox: inbox, batch: batch, within: limit)
    }

    /// Closes a batch; returns its outputs task when they can start now (held by this host).
    public func close(inbox: String, batch: String) throws(ClusterError) -> PhotoTask? {
        try holding { board throws(ClusterError) in
            let outputs = try board.close(inbox: inbox, batch: batch, takeOutputs: true)
            return (outputs.map { [$0] } ?? [], outputs)
        }
    }

    /// Takes up to `limit` tasks of this host's folders (each held under a lease from now).
    public func take(limit: Int) throws(ClusterError) -> [PhotoTask] {
        let inboxes = self.inboxes
        guard limit > 0, !inboxes.isEmpty else { return [] }
        return try holding { board throws(ClusterError) in
            let tasks = try board.take(from: inboxes, limit: limit)
            return (tasks, tasks)
        }
    }

    /// Completes a task this host holds, with its report item (JSON). When it was the batch's
    /// last photo, the batch's outputs are held by this host now and returned in the completion.
    public func complete(_ task: PhotoTask, item: String?) throws(ClusterError) -> Completion {
        let completion = try holding { board throws(ClusterError) in
            let completion = try board.complete(task, item: item, takeOutputs: true)
            if case .completed(let outputs?) = completion { return ([outputs], completion) }
            return ([], completion)
        }
        keeper.release([task.token])
        return completion
    }

    /// Runs `body` on the command connection and holds the tasks it got before the connection is
    /// let go: a reconnect gives back what the host holds without knowing it, and a task taken
    /// here is known before any reconnect can look.
    private func holding<T: Sendable>(_ body: (TaskBoard) throws(ClusterError) -> ([PhotoTask], T)) throws(ClusterError) -> T {
        try database.withConnection { connection throws(ClusterError) in
            let sent = ContinuousClock.now
            let (tasks, result) = try body(board.on(connection))
            keeper.hold(tasks, sent: sent)
            return result
        }
    }

    /// A photo task this host cannot finish: given back counted, or — started too often — done
    /// and left to its batch's run (`TaskBoard.refuse`). The completion when it is done; when
    /// that was the batch's last photo, its outputs are held by this host now.
    @discardableResult
    public func refuse(_ task: PhotoTask, reason: String) throws(ClusterError) -> Completion? {
        let completion = try holding { board throws(ClusterError) in
            let completion = try board.refuse(task, reason: reason)
            if case .completed(let outputs?) = completion { return ([outputs], completion) }
            return ([], completion)
        }
        keeper.release([task.token])
        return completion
    }

    /// Stops renewing `task`'s lease (what could not be given back or refused): it is taken
    /// again once the lease runs out.
    public func letLapse(_ task: PhotoTask) { keeper.release([task.token]) }

    /// Gives tasks back (ready for any host now, not counted as attempts). Their leases are no
    /// longer renewed either way: a give-back the database did not record (it does not answer)
    /// leaves them to run out — another host takes them then (counted), or this host's reconnect
    /// gives them back (`releaseUnknown`: not counted) — instead of held here for ever.
    @discardableResult
    public func giveBack(_ tasks: [PhotoTask]) throws(ClusterError) -> Int {
        defer { keeper.release(tasks.map(\.token)) }
        return try board.giveBack(tasks.map(\.token))
    }

    /// The tasks this host holds now.
    public var held: [PhotoTask] { keeper.tasks }

    /// Whether this host certainly still holds `task` (its last renewal is recent enough): what
    /// only one host may do — publishing a batch — waits until it is.
    public func isCertain(_ task: PhotoTask) -> Bool { keeper.isCertain(task.token) }

    /// Waits until there may be work (a notification for one of this host's folders, the link
    /// back, a change of folders) or `timeout` passes; true when woken.
    @discardableResult
    public func waitForWork(upTo timeout: Duration) -> Bool { work.wait(timeout) }

    /// Readable when there may be work, for a loop that waits in `poll` on other things too
    /// (read it with `waitForWork(upTo: .zero)`).
    public var workDescriptor: Int32 { work.descriptor }

    /// How long a taker with nothing to do may wait before looking again without a
    /// notification: until the first lease on its folders expires (a dead host's tasks), at
    /// most `poll`.
    public func idleWait(poll: Duration) -> Duration {
        guard let expiry = try? board.nextExpiry(inboxes: inboxes) else { return poll }
        return min(poll, expiry + .milliseconds(50))
    }

    // MARK: - The link's and the keeper's threads

    private func prepare(_ connection: Connection) throws(ClusterError) {
        let (migrated, registered) = state.withLock { ($0.migrated, $0.registered) }
        do throws(ClusterError) {
            if !migrated {
                let outcome = try Schema.migrate(connection, host: identity.name)
                state.withLock { $0.migrated = true }
                events(.migrated(outcome))
            }
            if !registered {
                let registration = try Hosts.register(identity, inboxes: inboxes, runner: connection)
                state.withLock { $0.registered = true }
                events(.registered(registration))
            }
        } catch where error.kind != .unreachable {
            events(.refused(error))
            throw error
        }
        try Hosts.session(identity, runner: connection)
        let inboxes = self.inboxes
        let board = self.board.on(connection)
        let lost = try keeper.renewAll { tokens throws(ClusterError) in
            try board.renew(tokens, inboxes: inboxes)
        }
        try board.releaseUnknown(keeping: keeper.tasks.map(\.token))
        if !lost.isEmpty { events(.lost(lost)) }
    }

    private func renew() {
        let inboxes = self.inboxes
        guard database.health.isUp else { return }
        guard let lost = try? keeper.renewAll({ tokens throws(ClusterError) in
            try board.renew(tokens, inboxes: inboxes)
        }) else { return }
        if !lost.isEmpty { events(.lost(lost)) }
    }
}
