import Foundation
import JSON5

// The cluster's keys (reference: Photos as tasks and the cluster), kept apart from the rest of the
// config's rules: cluster: { database: "host=/run/postgresql dbname=photofinish", host: "studio-2",
// lease: "30s", claimerTakeover: "10s" }

/// `cluster`: this daemon is one host of several sharing their hot folders' photos through a
/// PostgreSQL database. Without it, one host as ever.
public struct ClusterSettings: Sendable, Equatable {
    /// `cluster.database`: a libpq connection string (key=value pairs or a URI: TCP, Unix socket,
    /// TLS, a password file, all as libpq documents them).
    public var database: String
    /// `cluster.host`: this host's name in the cluster, unique; nil: the machine's host name.
    public var host: String?
    /// `cluster.lease`: how long a host holds a task without renewing it (renewed every third of
    /// it): how long a dead host's photos wait before another host takes them.
    public var lease: Duration = ClusterSettings.defaultLease
    /// `cluster.claimerTakeover`: how long a dead claimer's role waits before another host
    /// takes it and adopts its open batch; and how long a host without the database waits
    /// before it claims alone.
    public var claimerTakeover: Duration = ClusterSettings.defaultClaimerTakeover

    public static let defaultLease = Duration.seconds(30)
    public static let defaultClaimerTakeover = Duration.seconds(10)

    public init(database: String, host: String? = nil, lease: Duration = ClusterSettings.defaultLease,
                claimerTakeover: Duration = ClusterSettings.defaultClaimerTakeover) {
        self.database = database
        self.host = host
        self.lease = lease
        self.claimerTakeover = claimerTakeover
    }
}

/// The rules of the cluster's keys.
enum ClusterConfigRules {
    static let rootKeys = ["cluster"]
    static let keys = ["database", "host", "lease", "claimerTakeover"]

    static func read(_ root: [String: JSON5Value], into config: inout Config, _ doc: inout JSON5Document) {
        guard let value = root["cluster"] else { return }
        let path: [KeyPathComponent] = [.key("cluster")]
        guard let members = doc.object(value, at: path, allowed: keys) else { return }
        guard let given = members["database"] else {
            doc.fail(path, "missing key 'database' (a libpq connection string, like \"host=/run/postgresql dbname=photofinish\")")
            return
        }
        guard let database = doc.string(given, at: path + [.key("database")]) else { return }
        var settings = ClusterSettings(database: database)
        if let value = members["host"], let host = doc.string(value, at: path + [.key("host")]) {
            if isHostName(host) {
                settings.host = host
            } else {
                doc.fail(path + [.key("host")], "must be letters, digits, '.', '_' or '-' (at most 63, not starting with '.' or '-'), got \"\(host)\"")
            }
        }
        duration(members, "lease", path, into: &settings.lease, from: .seconds(3), to: .seconds(600),
                 why: "renewed every third of it; a dead host's photos wait this long", doc: &doc)
        duration(members, "claimerTakeover", path, into: &settings.claimerTakeover, from: .seconds(5), to: .seconds(600),
                 why: "a dead claimer's role and open batch wait this long for another host", doc: &doc)
        config.cluster = settings
    }

    /// Reads the duration `key` of `members` into `target` when it lies in `from...to`; else names
    /// the range and `why` it is so.
    private static func duration(_ members: [String: JSON5Value], _ key: String, _ path: [KeyPathComponent],
                                 into target: inout Duration, from: Duration, to: Duration, why: String,
                                 doc: inout JSON5Document) {
        guard let value = members[key] else { return }
        var read = target
        guard ConfigRules.duration(value, at: path + [.key(key)], into: &read, doc: &doc) else { return }
        if read < from || read > to {
            doc.fail(path + [.key(key)], "must be from \(Config.words(from)) to \(Config.words(to)) (\(why)), got \(Config.words(read))")
        } else {
            target = read
        }
    }

    private static func isHostName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 63 && !name.hasPrefix(".") && !name.hasPrefix("-")
            && name.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                    || $0 == "." || $0 == "_" || $0 == "-"
            }
    }
}
