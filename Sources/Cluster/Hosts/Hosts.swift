import Foundation

/// The cluster's hosts as the database knows them: each daemon registers at start (as a new
/// instance of its host name), says it is alive with every renewal, and marks itself stopped
/// when it stops.
public enum Hosts {
    /// What a registration found.
    public struct Registration: Sendable, Equatable {
        /// Tasks an earlier start of this host held, ready again now (it stopped without
        /// giving them back: a crash, a kill, a power cut).
        public var released: Int
        /// The earlier start of this host name, when there was one.
        public var previous: Previous?

        public struct Previous: Sendable, Equatable {
            public var pid: Int32
            public var boot: String
            /// How long before this registration it was last heard of.
            public var seen: Duration
            public var stopped: Bool
        }

        /// True when the earlier start looks alive: not stopped, heard of within a lease, and not
        /// this machine's own dead process — likely a second daemon given the same
        /// `cluster.host`, which would take this one's tasks back at each of its starts.
        public func looksAlive(lease: Duration, identity: HostIdentity, isRunning: (Int32) -> Bool = Hosts.isRunning) -> Bool {
            guard let previous, !previous.stopped, previous.seen < lease else { return false }
            if previous.boot == identity.boot { return previous.pid != identity.pid && isRunning(previous.pid) }
            return true
        }
    }

    /// Registers this start of the host.
    /// - Parameter inboxes: the hot folders it takes tasks of.
    public static func register(_ identity: HostIdentity, inboxes: [String], on database: Database) throws(ClusterError) -> Registration {
        try register(identity, inboxes: inboxes, runner: database)
    }

    static func register(_ identity: HostIdentity, inboxes: [String], runner: some StatementRunner) throws(ClusterError) -> Registration {
        let rows = try runner.execute("SELECT * FROM photofinish.register_host($1, $2, $3, $4, $5, $6, $7)",
                                      [identity.name, identity.instance, String(identity.pid), identity.boot, identity.version,
                                       String(identity.workers), PostgresText.array(inboxes)])
        guard let row = rows.rows.first else { return Registration(released: 0) }
        var registration = Registration(released: row.int("released") ?? 0)
        if row["previous_instance"] != nil {
            registration.previous = .init(pid: Int32(row.int("previous_pid") ?? 0), boot: row["previous_boot"] ?? "",
                                          seen: .milliseconds(Int64((row.double("previous_seen") ?? 0) * 1000)),
                                          stopped: row.bool("previous_stopped") ?? false)
        }
        return registration
    }

    /// Records this connection as the host's session (at each connection, before anything else):
    /// the others take its tasks once that session has been gone a few seconds.
    static func session(_ identity: HostIdentity, runner: some StatementRunner) throws(ClusterError) {
        _ = try runner.execute("SELECT photofinish.host_session($1, $2)", [identity.name, identity.instance])
    }

    /// This start of the host stops: what it holds goes back (not counted as attempts).
    /// - Returns: how many tasks it gave back.
    @discardableResult
    public static func stop(_ identity: HostIdentity, on database: Database, within limit: Duration? = nil) throws(ClusterError) -> Int {
        let sql = "SELECT photofinish.stop_host($1, $2) AS given", parameters = [identity.name, identity.instance]
        let rows: Rows
        if let limit { rows = try database.execute(sql, parameters, within: limit) } else { rows = try database.execute(sql, parameters) }
        return rows.rows.first?.int("given") ?? 0
    }

    /// Whether a process of this machine is running (`kill(pid, 0)`: EPERM is someone else's, alive).
    public static func isRunning(_ pid: Int32) -> Bool {
        pid > 0 && (kill(pid, 0) == 0 || errno == EPERM)
    }
}
