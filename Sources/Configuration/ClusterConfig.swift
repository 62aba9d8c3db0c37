import Foundation
import JSON5

// The cluster's keys (reference: Photos as tasks and the cluster), kept apart from the rest of the
// config's rules: cluster: { database: "host=/run/postgresql dbname=photofinish", host: "studio-2",
// lease: "30s" }

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

    public static let defaultLease = Duration.seconds(30)

    public init(database: String, host: String? = nil, lease: Duration = ClusterSettings.defaultLease) {
        self.database = database
        self.host = host
        self.lease = lease
    }
}

/// The rules of the cluster's keys.
enum ClusterConfigRules {
    static let rootKeys = ["cluster"]
    static let keys = ["database", "host", "lease"]

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
        if let value = members["lease"] {
            var lease = settings.lease
            if ConfigRules.duration(value, at: path + [.key("lease")], into: &lease, doc: &doc) {
                if lease < .seconds(3) || lease > .seconds(600) {
                    doc.fail(path + [.key("lease")], "must be from 3s to 10m (renewed every third of it; a dead host's photos wait this long), got \(Config.words(lease))")
                } else {
                    settings.lease = lease
                }
            }
        }
        config.cluster = settings
    }

    private static func isHostName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 63 && !name.hasPrefix(".") && !name.hasPrefix("-")
            && name.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                    || $0 == "." || $0 == "_" || $0 == "-"
            }
    }
}
