import Foundation
import PostgresHarness
import Testing

/// Three daemons as three hosts of one cluster (issue 21): a real PostgreSQL started by the
/// test (`PostgresServer`: initdb and pg_ctl into a temporary folder, a Unix socket only), one
/// hot folder they all watch, and each daemon with a config of its own (its own `cluster.host`,
/// runtime folder, metrics file) — in a mount and UTS namespace of its own where the machine
/// allows (root, `unshare`: `LabHost`, as the share rigs' hosts), so each has its own host name
/// and flock does not reach from one to another, as between machines. Where it does not, the
/// daemons are plain processes of this machine with different `cluster.host` names.
final class ClusterRig {
    let dir: String
    /// The database, the test's own (so a test may stop it) or the process's shared one.
    let server: PostgresServer
    let conninfo: String
    /// The hot folder every host watches.
    let hot: HotFolderFixture
    let names: [String]
    /// Each host's namespaces, when the machine allows them.
    let hosts: [LabHost]?
    private let ownServer: Bool

    /// Why three daemons cannot be three hosts of a cluster here (PostgreSQL not installed), or nil.
    static func server(own: Bool, test: String = #function) -> PostgresServer? {
        do {
            return own ? try PostgresServer() : try PostgresServer.shared()
        } catch is PostgresServer.Unavailable {
            print("skipped: \(test): PostgreSQL is not installed (scripts/bootstrap installs postgresql)")
        } catch {
            Issue.record("cannot start the tests' PostgreSQL: \(error)")
        }
        return nil
    }

    /// Whether the hosts get namespaces of their own (root, unshare and nsenter there).
    static var namespaces: Bool {
        getuid() == 0 && ["/usr/bin/unshare", "/usr/bin/nsenter"].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// - Parameters:
    ///   - server: from `server(own:)`.
    ///   - lease: `cluster.lease` of every host.
    ///   - extra: more config keys for every host.
    init(server: PostgresServer, own: Bool, name: String = #function, hosts count: Int = 3, lease: String = "3s",
         settle: String = "300ms", quiet: String = "400ms", maxBatch: Int = 500, workers: Int = 2, extra: String = "") throws {
        self.server = server
        ownServer = own
        conninfo = try server.makeDatabase(name)
        hot = try HotFolderFixture(name: name, settle: settle, quiet: quiet, maxBatch: maxBatch)
        dir = hot.dir
        let names = (0..<count).map { "pf-\(["a", "b", "c", "d"][$0])" }
        self.names = names
        let folder = hot.dir
        if Self.namespaces {
            hosts = try names.enumerated().map { n, name in try LabHost(name: name, log: folder + "/host-\(n).log") }
        } else {
            print("note: \(name): the hosts share this machine's namespaces (\(getuid() == 0 ? "no unshare/nsenter" : "not root")); each has its own cluster.host")
            hosts = nil
        }
        for (n, host) in names.enumerated() {
            try Harness.write("""
                { templatesDir: "\(hot.dir)/templates", inboxes: [ { name: "shop", root: "\(hot.root)", template: "small" } ],
                  settle: "\(settle)", quiet: "\(quiet)", maxWait: "20s", maxBatch: \(maxBatch),
                  rescanInterval: "2s", staleAfter: "24h", workers: \(workers), metricsFile: "\(metricsPath(n))",
                  cluster: { database: "\(conninfo)", host: "\(host)", lease: "\(lease)" }, \(extra) }
                """, to: config(n))
        }
    }

    deinit { if ownServer { server.destroy() } }

    func config(_ n: Int) -> String { dir + "/host-\(n).json5" }
    func runtime(_ n: Int) -> String { dir + "/run-\(n)" }
    func metricsPath(_ n: Int) -> String { dir + "/metrics-\(n).prom" }

    /// Starts host `n`'s daemon (in its namespaces, when it has them).
    func start(_ n: Int) throws -> DaemonProcess {
        try DaemonProcess(["daemon", "--config", config(n)], notify: nil, runtime: runtime(n), logPath: dir + "/daemon-\(n).log",
                          wrapper: hosts?[n].wrapper ?? [])
    }

    /// `photofinish status` as host `n`'s administrator runs it (its runtime folder).
    func status(_ n: Int, _ args: [String] = []) throws -> Harness.Result {
        try Harness.run(["status"] + args, deadline: .seconds(30), extraEnvironment: ["RUNTIME_DIRECTORY": runtime(n)])
    }

    /// What host `n`'s daemon wrote in its status file, decoded (nil until it wrote one).
    func statusFile(_ n: Int) -> [String: Any]? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: runtime(n))) ?? []
        for name in names where name.hasSuffix(".json") && !name.hasPrefix(".") {
            if let data = FileManager.default.contents(atPath: runtime(n) + "/" + name),
               let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any] { return json }
        }
        return nil
    }

    /// The `cluster` object of host `n`'s status file.
    func clusterState(_ n: Int) -> [String: Any]? { statusFile(n)?["cluster"] as? [String: Any] }

    /// The hosts of the cluster as host `n` last read them (names).
    func hostsSeen(by n: Int) -> [String] {
        ((clusterState(n)?["view"] as? [String: Any])?["hosts"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
    }

    /// Host `n`'s metrics file, parsed (nil until written).
    func metrics(_ n: Int) -> PrometheusSamples? {
        (try? String(contentsOfFile: metricsPath(n), encoding: .utf8)).flatMap { try? PrometheusSamples($0) }
    }

    var statusText: String { (try? String(contentsOfFile: hot.root + "/STATUS.txt", encoding: .utf8)) ?? "" }

    func logs(_ daemons: [DaemonProcess]) -> String {
        daemons.enumerated().map { "--- \(names[$0.offset]):\n\($0.element.log)" }.joined(separator: "\n")
    }
}
