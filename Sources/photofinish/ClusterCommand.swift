import Cluster
import Configuration
import Foundation

/// `photofinish cluster status [--config FILE] [--database CONNINFO] [--json]`: the cluster's
/// database as the hosts share it — its schema version, every host (up, stopped or lost; its
/// workers and folders) with the tasks it holds, and the batches not yet published. Reads only:
/// the schema is made and migrated by the daemons.
enum ClusterCommand {
    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        guard let verb = a.positional.first else { throw UsageError("cluster needs a verb: status") }
        guard verb == "status" else { throw UsageError("unknown cluster verb '\(verb)' (known: status)") }
        guard a.positional.count == 1 else { throw UsageError("cluster status takes no more arguments") }
        var conninfo = a[.database] ?? ""
        var lease = ClusterSettings.defaultLease
        if a[.database] == nil {
            let path = a[.config] ?? Commands.defaultConfig
            let config: Config
            do {
                config = try Config.load(path: path)
            } catch {
                for e in error.errors { Terminal.note(e.description) }
                return 2
            }
            guard let cluster = config.cluster else {
                print("\(path) has no cluster key: its daemon works alone (give it cluster: { database: … } to join a cluster)")
                return 1
            }
            conninfo = cluster.database
            lease = cluster.lease
        }
        if let problem = Database.problem(in: conninfo) {
            Terminal.note("cluster.database: \(problem)")
            return 2
        }
        let database = Database(Database.Settings(conninfo: conninfo, applicationName: "photofinish cluster status"))
        defer { database.close() }
        guard case .up = database.start(waitingUpTo: .seconds(15)) else {
            if case .down(_, let reason) = database.health {
                print("the cluster's database is unreachable: \(reason)")
            } else {
                print("the cluster's database did not answer within 15 s")
            }
            return 1
        }
        do throws(ClusterError) {
            let status = try ClusterStatus.read(database)
            if a.has(.json) {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                print(String(decoding: (try? encoder.encode(status)) ?? Data(), as: UTF8.self))
            } else {
                print(status.text(lease: lease), terminator: "")
            }
            return 0
        } catch {
            print(error.description)
            return 1
        }
    }
}
