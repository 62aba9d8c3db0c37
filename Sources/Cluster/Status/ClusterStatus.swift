import Foundation

/// What `photofinish cluster status` prints: the database reached and its schema, every host
/// with its workers and the tasks it holds, which host holds each hot folder's claimer role and
/// since when, and the batches not yet published.
public struct ClusterStatus: Sendable, Codable, Equatable {
    public var server: String
    /// The schema's version in the database (0: none yet) and the one this program makes.
    public var schema: Int
    public var schemaKnown: Int
    public var history: [Schema.Applied]
    public var hosts: [Host]
    /// Each hot folder's claimer role as last taken (`ClaimerRoles`), by folder (nil: read by a
    /// version that did not say it, or a schema without the record).
    public var roles: [Role]? = nil
    public var batches: [BatchProgress]

    /// A hot folder's claimer role: the host that took it last, when, and whether that host's
    /// session still holds it (false: it was let go or its holder is gone, and no host took it since).
    public struct Role: Sendable, Codable, Equatable {
        public var inbox: String
        public var host: String
        /// Seconds since 1970 it was taken.
        public var since: Double
        public var held: Bool
    }

    public struct Host: Sendable, Codable, Equatable {
        public var name: String
        public var pid: Int
        public var version: String
        public var workers: Int
        public var inboxes: [String]
        /// Seconds since it was last heard of (a renewal, a start).
        public var seenAgo: Double
        /// Seconds since 1970 it was started.
        public var started: Double
        public var stopped: Bool
        public var tasks: [Held]

        /// Heard of within `lease`, and not stopped.
        public func isUp(lease: Duration) -> Bool { !stopped && seenAgo < Double(lease / .milliseconds(1)) / 1000 }
    }

    /// A task a host holds.
    public struct Held: Sendable, Codable, Equatable {
        public var inbox: String
        public var batch: String
        public var photo: Int
        public var source: String
        /// Seconds left on its lease (negative: expired, any host may take it).
        public var leaseLeft: Double
    }

    /// Reads it all (five statements).
    public static func read(_ database: Database) throws(ClusterError) -> ClusterStatus {
        let server: String
        if case .up(_, let s) = database.health { server = s } else { server = "?" }
        let history = try Schema.history(database)
        var status = ClusterStatus(server: server, schema: history.last?.version ?? 0, schemaKnown: Schema.version,
                                   history: history, hosts: [], batches: [])
        guard status.schema > 0 else { return status }
        if status.schema >= 3 {
            let roles = try database.execute("""
                SELECT c.inbox, c.host, extract(epoch FROM c.since) AS since,
                       EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                                WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                                  AND l.classid = ($1::int4)::oid AND l.objid = c.key::oid
                                  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                                  AND a.pid = c.pid AND a.application_name = c.app) AS held
                  FROM photofinish.claimers c ORDER BY c.inbox
                """, [String(ClaimerRoles.namespace)])
            status.roles = roles.rows.map { row in
                Role(inbox: row["inbox"] ?? "", host: row["host"] ?? "", since: row.double("since") ?? 0, held: row.bool("held") ?? false)
            }
        }
        let held = try database.execute("""
            SELECT host, inbox, batch, photo, source, extract(epoch FROM lease_until - now()) AS left
              FROM photofinish.tasks WHERE state = 'running' ORDER BY host, seq
            """)
        var byHost: [String: [Held]] = [:]
        for row in held.rows {
            byHost[row["host"] ?? "", default: []].append(Held(inbox: row["inbox"] ?? "", batch: row["batch"] ?? "",
                                                                photo: row.int("photo") ?? 0, source: row["source"] ?? "",
                                                                leaseLeft: row.double("left") ?? 0))
        }
        let hosts = try database.execute("""
            SELECT name, pid, version, workers, to_json(inboxes)::text AS inboxes,
                   extract(epoch FROM now() - seen) AS seen_ago, extract(epoch FROM started) AS started,
                   stopped IS NOT NULL AS stopped
              FROM photofinish.hosts ORDER BY name
            """)
        status.hosts = hosts.rows.map { row in
            let name = row["name"] ?? ""
            return Host(name: name, pid: row.int("pid") ?? 0, version: row["version"] ?? "", workers: row.int("workers") ?? 0,
                        inboxes: row.strings("inboxes") ?? [], seenAgo: row.double("seen_ago") ?? 0,
                        started: row.double("started") ?? 0, stopped: row.bool("stopped") ?? false, tasks: byHost[name] ?? [])
        }
        let batches = try database.execute("""
            SELECT b.inbox, b.batch, b.state, b.claimed_by,
                   count(t.photo) FILTER (WHERE t.photo > 0) AS photos,
                   count(t.photo) FILTER (WHERE t.photo > 0 AND t.state = 'done') AS done,
                   count(t.photo) FILTER (WHERE t.photo > 0 AND t.state = 'running') AS running,
                   count(t.photo) FILTER (WHERE t.photo > 0 AND t.state = 'ready') AS ready,
                   max(t.state) FILTER (WHERE t.photo = 0) AS outputs
              FROM photofinish.batches b LEFT JOIN photofinish.tasks t ON t.inbox = b.inbox AND t.batch = b.batch
             WHERE b.state <> 'published'
             GROUP BY b.inbox, b.batch, b.state, b.claimed_by, b.claimed
             ORDER BY b.claimed, b.inbox, b.batch
            """)
        status.batches = batches.rows.map { row in
            BatchProgress(inbox: row["inbox"] ?? "", batch: row["batch"] ?? "", state: row["state"] ?? "",
                          claimedBy: row["claimed_by"] ?? "", photos: row.int("photos") ?? 0, done: row.int("done") ?? 0,
                          running: row.int("running") ?? 0, ready: row.int("ready") ?? 0, outputs: row["outputs"])
        }
        return status
    }

    /// As `cluster status` prints it.
    /// - Parameter lease: the lease hosts renew within (a host not heard of for longer is shown lost).
    public func text(lease: Duration, now: Date = Date()) -> String {
        var lines = ["database: \(server)"]
        if schema == 0 {
            lines.append("schema: none yet (the first daemon started with `cluster` makes it)")
        } else {
            let applied = history.last.map { " (applied \(Self.time($0.applied)) by \($0.host))" } ?? ""
            let note = schema < schemaKnown ? "; this photofinish migrates it to \(schemaKnown) at its start"
                : schema > schemaKnown ? "; newer than this photofinish (\(schemaKnown)): upgrade it" : ""
            lines.append("schema: version \(schema)\(applied)\(note)")
        }
        lines.append("hosts: \(hosts.count)" + (hosts.isEmpty ? "" : ""))
        for host in hosts {
            let state: String
            if host.stopped {
                state = "stopped \(Self.ago(host.seenAgo)) ago"
            } else if host.isUp(lease: lease) {
                state = "up since \(Self.time(host.started)), heard of \(Self.ago(host.seenAgo)) ago"
            } else {
                state = "lost: not heard of for \(Self.ago(host.seenAgo)) (its leases expire; its tasks run elsewhere)"
            }
            let folders = host.inboxes.isEmpty ? "no folders" : "folders " + host.inboxes.joined(separator: ", ")
            lines.append("  \(host.name): \(state); \(host.workers) workers, \(folders), pid \(host.pid), \(host.version)")
            if host.tasks.isEmpty && !host.stopped { lines.append("    holds no task") }
            for task in host.tasks {
                let what = task.photo == 0 ? "the batch's outputs" : "photo \(task.photo) \(task.source)"
                let lease = task.leaseLeft >= 0 ? "lease \(Self.ago(task.leaseLeft)) left" : "lease expired \(Self.ago(-task.leaseLeft)) ago"
                lines.append("    \(task.inbox) \(task.batch): \(what) (\(lease))")
            }
        }
        if let roles, !roles.isEmpty {
            lines.append("claimer roles (the host that claims from each hot folder):")
            for role in roles {
                if role.held {
                    lines.append("  \(role.inbox): host \(role.host), since \(Self.time(role.since)) (\(Self.ago(now.timeIntervalSince1970 - role.since)))")
                } else {
                    lines.append("  \(role.inbox): no host holds it now (last host \(role.host), from \(Self.time(role.since)))")
                }
            }
        }
        lines.append("batches not yet published: \(batches.count)")
        for batch in batches {
            var words = "\(batch.photos) photos: \(batch.done) done, \(batch.running) being finished, \(batch.ready) waiting"
            switch batch.outputs {
            case "running": words += "; its outputs are being made"
            case "ready": words += "; its outputs wait for a host"
            default: break
            }
            lines.append("  \(batch.inbox) \(batch.batch): \(batch.state), claimed by \(batch.claimedBy); \(words)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func ago(_ seconds: Double) -> String {
        let s = max(0, seconds)
        if s < 10 { return String(format: "%.1f s", s) }
        if s < 120 { return "\(Int(s)) s" }
        if s < 7200 { return "\(Int(s / 60)) min" }
        if s < 172_800 { return "\(Int(s / 3600)) h" }
        return "\(Int(s / 86400)) days"
    }

    static func time(_ epoch: Double) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: Date(timeIntervalSince1970: epoch))
    }
}
