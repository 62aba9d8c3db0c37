import Foundation

/// The task table's operations for one host: each one statement, one round trip, one
/// transaction on the server (the functions of `Schema`). Stateless: what this host holds is
/// the lease keeper's to remember (`ClusterMember`); the tests use boards of several "hosts" on
/// one database.
///
/// The rules, all kept by the database:
/// - a batch is open while its claim adds photos; closed, nothing more is added, and once every
///   photo is done its own outputs (photo 0) become a task of their own, which exactly one host
///   takes (the batch's advisory lock decides who saw the last photo done);
/// - a task is taken by one host at a time (`FOR UPDATE SKIP LOCKED`), under a lease that its
///   holder renews; a lease not renewed in time lets any host take the task (counted as an
///   attempt), except within one lease of the server's own start;
/// - every write of a holder carries its token: one whose task was taken over writes nothing.
public struct TaskBoard: Sendable {
    public let database: Database
    public let host: HostIdentity
    /// How long a take or a renewal holds a task.
    public let lease: Duration
    /// Where the statements go: the database's shared connection, or one connection lent for a
    /// while (`on(_:)`).
    private let runner: any StatementRunner & Sendable

    /// The channel every change that makes a task takeable is notified on (payload: the inbox).
    public static let channel = "photofinish_tasks"

    public init(database: Database, host: HostIdentity, lease: Duration) {
        precondition(lease >= .seconds(1), "a lease shorter than a second cannot be renewed in time")
        self.database = database
        self.host = host
        self.lease = lease
        runner = database
    }

    private init(_ board: TaskBoard, runner: any StatementRunner & Sendable) {
        database = board.database
        host = board.host
        lease = board.lease
        self.runner = runner
    }

    /// The same board with its statements on `connection` (lent by the database, or being
    /// prepared by the link).
    func on(_ connection: Connection) -> TaskBoard { TaskBoard(self, runner: connection) }

    private var leaseText: String { PostgresText.interval(lease) }

    /// Adds photos to the open batch `batch` (made if new): the claim's transaction.
    /// - Returns: how many were new (a photo already there is left as it is).
    /// - Throws: `.query` with SQLSTATE `PF001` when the batch is closed.
    /// - Parameter limit: how long it may take all told (on the database's command connection:
    ///   waiting for it and for the answer); nil: the statement timeout.
    @discardableResult
    public func add(_ tasks: [NewTask], inbox: String, batch: String, within limit: Duration? = nil) throws(ClusterError) -> Int {
        let sql = "SELECT photofinish.add_tasks($1, $2, $3, $4) AS added"
        let parameters = [inbox, batch, host.name, PostgresText.json(tasks)]
        let rows: Rows
        if let limit, let database = runner as? Database {
            rows = try database.execute(sql, parameters, within: limit)
        } else {
            rows = try runner.execute(sql, parameters)
        }
        return rows.isEmpty ? 0 : rows[0].int("added") ?? 0
    }

    /// Closes the batch: no photo is added any more. When its photos are all done already, its
    /// outputs start now: held by this host when `takeOutputs` (returned), else left for any.
    /// Closing twice does nothing the second time.
    /// - Throws: `.query` with SQLSTATE `PF002` when the batch is not in the database.
    public func close(inbox: String, batch: String, takeOutputs: Bool = true) throws(ClusterError) -> PhotoTask? {
        let rows = try runner.execute("SELECT photofinish.close_batch($1, $2, $3, $4, $5, $6) AS token",
                                        [inbox, batch, host.name, host.instance, leaseText, takeOutputs ? "t" : "f"])
        return outputs(rows.isEmpty ? nil : rows[0]["token"], inbox: inbox, batch: batch)
    }

    /// How long a host's session must have been gone (the host killed: its socket closed) before
    /// the tasks it holds are taken, their lease or not: longer than a live host's reconnect
    /// after a connection lost (0.1 s, then its leases renewed first).
    public static let gone = Duration.seconds(5)

    /// Takes up to `limit` tasks of the folders `inboxes`, oldest first, each under a fresh lease:
    /// ready ones, and running ones whose lease ran out or whose holder's session has been gone
    /// for `gone`. Never waits for another taker; never returns a task another host holds.
    public func take(from inboxes: [String], limit: Int) throws(ClusterError) -> [PhotoTask] {
        guard limit > 0, !inboxes.isEmpty else { return [] }
        let rows = try runner.execute("SELECT * FROM photofinish.take_tasks($1, $2, $3, $4, $5, $6)",
                                        [host.name, host.instance, PostgresText.array(inboxes), String(limit), leaseText,
                                         PostgresText.interval(Self.gone)])
        return rows.rows.compactMap { row in
            guard let inbox = row["inbox"], let batch = row["batch"], let photo = row.int("photo"),
                  let token = row["token"] else { return nil }
            return PhotoTask(key: TaskKey(inbox: inbox, batch: batch, photo: photo), source: row["source"] ?? "",
                             detail: row["detail"], earlierAttempts: row.int("attempts") ?? 0, token: LeaseToken(token))
        }
    }

    /// Renews the leases of `tokens`, and says this host is alive and takes tasks of `inboxes`.
    /// - Returns: the tokens still held (the others were taken over: drop their work).
    public func renew(_ tokens: [LeaseToken], inboxes: [String]) throws(ClusterError) -> Set<LeaseToken> {
        let rows = try runner.execute("SELECT token FROM photofinish.renew_leases($1, $2, $3, $4, $5)",
                                        [host.name, host.instance, PostgresText.array(tokens.map(\.uuid)), leaseText,
                                         PostgresText.array(inboxes)])
        return Set(rows.rows.compactMap { $0["token"].map(LeaseToken.init) })
    }

    /// Completes a task: its report item (JSON) recorded, in the same transaction, if `task`'s
    /// token still holds it. Completing the batch's outputs (photo 0) marks it published.
    /// - Parameter takeOutputs: when this is the batch's last photo, hold its outputs now.
    public func complete(_ task: PhotoTask, item: String?, takeOutputs: Bool = true) throws(ClusterError) -> Completion {
        let rows = try runner.execute("SELECT * FROM photofinish.complete_task($1, $2, $3, $4, $5, $6)",
                                        [task.token.uuid, item, host.name, host.instance, leaseText, takeOutputs ? "t" : "f"])
        guard !rows.isEmpty, rows[0].bool("completed") == true else { return .stale }
        return .completed(outputs: outputs(rows[0]["outputs_token"], inbox: task.key.inbox, batch: task.key.batch))
    }

    /// A photo task this host cannot finish (its name unreadable here, its batch not to be
    /// opened here, not a photo): given back counted, for another host — or, started `limit`
    /// times, done and left to the batch's run, `reason` kept with it.
    /// - Returns: nil when given back; the completion when it is done (or `.stale`).
    public func refuse(_ task: PhotoTask, reason: String, limit: Int = PhotoTask.attemptsLimit,
                       takeOutputs: Bool = true) throws(ClusterError) -> Completion? {
        let rows = try runner.execute("SELECT * FROM photofinish.refuse_task($1, $2, $3, $4, $5, $6, $7)",
                                      [task.token.uuid, reason, String(limit), host.name, host.instance, leaseText,
                                       takeOutputs ? "t" : "f"])
        switch rows.rows.first?["outcome"] {
        case "again": return nil
        case "done": return .completed(outputs: outputs(rows[0]["outputs_token"], inbox: task.key.inbox, batch: task.key.batch))
        default: return .stale
        }
    }

    /// Gives tasks back (a stop, a share gone away): ready for any host at once, the start not
    /// counted as an attempt.
    /// - Returns: how many were still held.
    @discardableResult
    public func giveBack(_ tokens: [LeaseToken]) throws(ClusterError) -> Int {
        guard !tokens.isEmpty else { return 0 }
        let rows = try runner.execute("SELECT photofinish.give_back($1) AS count", [PostgresText.array(tokens.map(\.uuid))])
        return rows.isEmpty ? 0 : rows[0].int("count") ?? 0
    }

    /// Gives back the tasks this start of the host holds but does not know of (a take whose
    /// answer was lost with the connection), not counted as attempts.
    @discardableResult
    func releaseUnknown(keeping known: [LeaseToken]) throws(ClusterError) -> Int {
        let rows = try runner.execute("SELECT photofinish.release_unknown($1, $2, $3) AS count",
                                      [host.name, host.instance, PostgresText.array(known.map(\.uuid))])
        return rows.isEmpty ? 0 : rows[0].int("count") ?? 0
    }

    /// The finished photos of a batch with their report items and hosts, in photo order.
    public func finished(inbox: String, batch: String) throws(ClusterError) -> [FinishedTask] {
        let rows = try runner.execute("SELECT photo, item::text AS item, host FROM photofinish.tasks"
                                        + " WHERE inbox = $1 AND batch = $2 AND photo > 0 AND state = 'done' ORDER BY photo",
                                        [inbox, batch])
        return rows.rows.map { FinishedTask(photo: $0.int("photo") ?? 0, item: $0["item"], host: $0["host"] ?? "") }
    }

    /// Every photo task of a batch, in photo order, for its run (the events the batch's
    /// `tasks` journal holds on one host); nil when the database does not know the batch.
    public func records(inbox: String, batch: String) throws(ClusterError) -> [TaskRecord]? {
        let rows = try runner.execute("""
            SELECT t.photo, t.source, t.detail::text AS detail, t.state, t.item::text AS item, t.attempts, t.refusals,
                   (t.state = 'done' AND NOT coalesce(t.item ? 'refused', false)) AS completed
              FROM photofinish.batches b JOIN photofinish.tasks t ON t.inbox = b.inbox AND t.batch = b.batch
             WHERE b.inbox = $1 AND b.batch = $2 AND t.photo > 0
             ORDER BY t.photo
            """, [inbox, batch])
        if rows.isEmpty, try progress(inbox: inbox, batch: batch) == nil { return nil }
        return rows.rows.map { row in
            let state = row["state"] ?? ""
            let ended = (row.bool("completed") == true ? 1 : 0) + (state == "running" ? 1 : 0)
            let crashes = max(0, (row.int("attempts") ?? 0) - (row.int("refusals") ?? 0) - ended)
            return TaskRecord(photo: row.int("photo") ?? 0, source: row["source"] ?? "", detail: row["detail"], state: state,
                              item: row["item"], crashes: crashes)
        }
    }

    /// Where a batch stands, or nil when the database does not know it.
    public func progress(inbox: String, batch: String) throws(ClusterError) -> BatchProgress? {
        let rows = try runner.execute("""
            SELECT b.state, b.claimed_by,
                   count(t.photo) FILTER (WHERE t.photo > 0) AS photos,
                   count(t.photo) FILTER (WHERE t.photo > 0 AND t.state = 'done') AS done,
                   count(t.photo) FILTER (WHERE t.photo > 0 AND t.state = 'running') AS running,
                   count(t.photo) FILTER (WHERE t.photo > 0 AND t.state = 'ready') AS ready,
                   max(t.state) FILTER (WHERE t.photo = 0) AS outputs
              FROM photofinish.batches b LEFT JOIN photofinish.tasks t ON t.inbox = b.inbox AND t.batch = b.batch
             WHERE b.inbox = $1 AND b.batch = $2
             GROUP BY b.state, b.claimed_by
            """, [inbox, batch])
        guard let row = rows.rows.first else { return nil }
        return BatchProgress(inbox: inbox, batch: batch, state: row["state"] ?? "", claimedBy: row["claimed_by"] ?? "",
                             photos: row.int("photos") ?? 0, done: row.int("done") ?? 0, running: row.int("running") ?? 0,
                             ready: row.int("ready") ?? 0, outputs: row["outputs"])
    }

    /// How long until the first lease held on these folders expires (a task any host may take
    /// then, without a notification): nil when none is held.
    public func nextExpiry(inboxes: [String]) throws(ClusterError) -> Duration? {
        guard !inboxes.isEmpty else { return nil }
        let rows = try runner.execute("""
            SELECT extract(epoch FROM min(lease_until) - now()) AS left FROM photofinish.tasks
             WHERE state = 'running' AND inbox = ANY ($1)
            """, [PostgresText.array(inboxes)])
        guard let seconds = rows.rows.first?.double("left") else { return nil }
        return .milliseconds(max(0, Int64(seconds * 1000)))
    }

    /// A batch its claimant finished alone (the database did not answer when its run began):
    /// published in the database too, its tasks not started withdrawn so no host takes them.
    /// - Returns: how many tasks were withdrawn.
    @discardableResult
    public func finishedAlone(inbox: String, batch: String) throws(ClusterError) -> Int {
        let rows = try runner.execute("SELECT photofinish.finished_alone($1, $2) AS withdrawn", [inbox, batch])
        return rows.isEmpty ? 0 : rows[0].int("withdrawn") ?? 0
    }

    /// Removes batches published longer than `age` ago, with their tasks.
    /// - Returns: how many batches.
    @discardableResult
    public func prune(publishedBefore age: Duration) throws(ClusterError) -> Int {
        let rows = try runner.execute("DELETE FROM photofinish.batches WHERE state = 'published' AND published < now() - $1::interval",
                                        [PostgresText.interval(age)])
        return rows.affected
    }

    private func outputs(_ token: String?, inbox: String, batch: String) -> PhotoTask? {
        token.map { PhotoTask(key: TaskKey(inbox: inbox, batch: batch, photo: 0), source: "", token: LeaseToken($0)) }
    }
}
