/// What went wrong between this host and the cluster's database, in words an administrator can
/// act on. The one error type of the `Cluster` module.
public struct ClusterError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of trouble it is: it decides what the caller does.
    public enum Kind: Sendable, Equatable {
        /// The database does not answer (down, restarting, the network): hosts finish what they
        /// hold, take nothing new and carry on when it is back. Retried with backoff.
        case unreachable
        /// The connection string cannot be used as written (a typo, an unknown key).
        case configuration
        /// The database's schema is newer than this program knows, or cannot be migrated.
        case schema
        /// A statement failed on the server (`sqlstate` says how).
        case query
        /// The link was closed by this process (the daemon is stopping).
        case closed
    }

    public var kind: Kind
    /// The server's or libpq's own words, or ours.
    public var message: String
    /// The five-character SQLSTATE of a failed statement (`"40P01"`), when the server sent one.
    public var sqlstate: String?

    public init(_ kind: Kind, _ message: String, sqlstate: String? = nil) {
        self.kind = kind
        self.message = message
        self.sqlstate = sqlstate
    }

    public var description: String {
        switch kind {
        case .unreachable: "the cluster's database is unreachable: \(message)"
        case .configuration: "cluster.database: \(message)"
        case .schema: "the cluster's schema: \(message)"
        case .query: "the cluster's database refused a statement: \(message)" + (sqlstate.map { " (SQLSTATE \($0))" } ?? "")
        case .closed: "the cluster's database link is closed: \(message)"
        }
    }

    /// SQLSTATEs that mean "the server is going away or not there yet" rather than "this
    /// statement is wrong": connection exceptions (class 08), an administrator's or a crash's
    /// shutdown, a server still starting (57P01, 57P02, 57P03).
    static func isUnreachable(sqlstate: String) -> Bool {
        sqlstate.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(sqlstate)
    }
}
