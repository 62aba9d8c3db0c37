/// The cluster's tables and functions in the schema `photofinish`, created and migrated by the
/// daemons themselves at start: versioned (`photofinish.schema_version` lists each version
/// applied, when and by which host), applied under an advisory lock so hosts starting together
/// migrate once, each version in its own transaction (PostgreSQL's DDL is transactional: a
/// failed migration leaves the schema as it was).
public enum Schema {
    /// One version of the schema: what it adds, as SQL run in one transaction.
    struct Migration: Sendable {
        var version: Int
        var summary: String
        var sql: String
    }

    /// The version this program makes and works with.
    public static var version: Int { migrations.last!.version }

    /// The advisory lock migrations are made under (any constant of ours: "pfschema").
    static let lockKey = 0x7066_7363_6865_6d61

    /// A version the schema has, as the database records it.
    public struct Applied: Sendable, Equatable, Codable {
        public var version: Int
        public var summary: String
        public var host: String
        /// When, in seconds since 1970.
        public var applied: Double
    }

    /// What `migrate` did.
    public struct Outcome: Sendable, Equatable {
        /// The version found (0: an empty database).
        public var from: Int
        public var to: Int
    }

    /// Brings the database's schema to `version`.
    /// - Parameter host: recorded beside each version this host applies.
    /// - Throws: `.schema` when the database is newer than this program (another host was
    ///   upgraded first: upgrade this one), or when a migration fails (with the server's words;
    ///   nothing of that version is left); `.unreachable` when the link is down.
    public static func migrate(_ database: Database, host: String) throws(ClusterError) -> Outcome {
        try database.withConnection { connection throws(ClusterError) in try migrate(connection, host: host) }
    }

    /// `migrate` on a connection of its own (a transaction of several statements).
    static func migrate(_ connection: Connection, host: String) throws(ClusterError) -> Outcome {
        let timeout = Duration.seconds(120)
        _ = try connection.run(script: "BEGIN", timeout: timeout)
        do throws(ClusterError) {
            _ = try connection.run(script: "SET LOCAL statement_timeout = 0; SELECT pg_advisory_xact_lock(\(lockKey));"
                                   + " CREATE SCHEMA IF NOT EXISTS photofinish;"
                                   + " CREATE TABLE IF NOT EXISTS photofinish.schema_version ("
                                   + " version integer PRIMARY KEY, summary text NOT NULL, host text NOT NULL,"
                                   + " applied timestamptz NOT NULL DEFAULT now())",
                                   timeout: timeout)
            let found = try installed(connection, timeout: timeout)
            guard found <= version else {
                throw ClusterError(.schema, "the database's schema is version \(found), made by a newer photofinish; this one knows up to \(version): upgrade photofinish on this host")
            }
            for migration in migrations where migration.version > found {
                do throws(ClusterError) {
                    _ = try connection.run(script: migration.sql, timeout: timeout)
                } catch where error.kind == .query {
                    throw ClusterError(.schema, "version \(migration.version) (\(migration.summary)) cannot be applied: \(error.message)",
                                       sqlstate: error.sqlstate)
                }
                _ = try connection.execute("INSERT INTO photofinish.schema_version (version, summary, host) VALUES ($1, $2, $3)",
                                           [String(migration.version), migration.summary, host], timeout: timeout)
            }
            _ = try connection.run(script: "COMMIT", timeout: timeout)
            return Outcome(from: found, to: max(found, version))
        } catch {
            if connection.isOpen { _ = try? connection.run(script: "ROLLBACK", timeout: timeout) }
            throw error
        }
    }

    private static func installed(_ connection: Connection, timeout: Duration) throws(ClusterError) -> Int {
        let rows = try connection.execute("SELECT coalesce(max(version), 0) AS version FROM photofinish.schema_version", timeout: timeout)
        return rows.isEmpty ? 0 : rows[0].int("version") ?? 0
    }

    /// The versions the database has, oldest first (empty: no schema yet).
    public static func history(_ database: Database) throws(ClusterError) -> [Applied] {
        let exists = try database.execute("SELECT to_regclass('photofinish.schema_version') IS NOT NULL AS present")
        guard exists.count == 1, exists[0].bool("present") == true else { return [] }
        let rows = try database.execute("SELECT version, summary, host, extract(epoch FROM applied) AS applied"
                                        + " FROM photofinish.schema_version ORDER BY version")
        return rows.rows.map { row in
            Applied(version: row.int("version") ?? 0, summary: row["summary"] ?? "", host: row["host"] ?? "",
                    applied: row.double("applied") ?? 0)
        }
    }
}
