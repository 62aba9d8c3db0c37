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
        let dir = dir
        configText = { n, inboxes, conninfo in
            """
            { templatesDir: "\(dir)/templates", inboxes: [ \(inboxes) ],
              settle: "\(settle)", quiet: "\(quiet)", maxWait: "20s", maxBatch: \(maxBatch),
              rescanInterval: "2s", staleAfter: "24h", workers: \(workers), metricsFile: "\(dir)/metrics-\(n).prom",
              cluster: { database: "\(conninfo)", host: "\(names[n])", lease: "\(lease)" }, \(extra) }
            """
        }
        try writeConfigs()
    }

    /// Host `n`'s config, given its `inboxes` (the JSON5 of the array's elements) and database.
    private let configText: (Int, String, String) -> String

    /// The database as each host reaches it, where it is not `conninfo` (through a proxy).
    private var databases: [Int: String] = [:]

    /// Host `n` reaches the database at `conninfo` (a `PostgresProxy`'s) from its next start.
    func reach(_ n: Int, at conninfo: String) throws {
        databases[n] = conninfo
        try writeConfigs()
    }

    /// The name of the test's database (in `conninfo`).
    var databaseName: String {
        conninfo.split(separator: " ").first { $0.hasPrefix("dbname=") }.map { String($0.dropFirst(7)) } ?? "postgres"
    }

    /// Writes every host's config: the hot folder `shop` and `more` (name and fixture).
    func writeConfigs(more: [(name: String, hot: HotFolderFixture)] = []) throws {
        let inboxes = ([("shop", hot)] + more).map { "{ name: \"\($0.0)\", root: \"\($0.1.root)\", template: \"small\" }" }
        for n in names.indices {
            try Harness.write(configText(n, inboxes.joined(separator: ", "), databases[n] ?? conninfo), to: config(n))
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

    /// `count` photos named PREFIX000.jpg, PREFIX001.jpg, … dropped as one set: each written
    /// whole beside `drop/` first, then all renamed in at once (they arrive within a
    /// moment, well inside the batch's quiet, however loaded the machine).
    /// - Returns: each name and its bytes.
    func dropPhotos(_ prefix: String, count: Int, width: Int = 40, into other: HotFolderFixture? = nil) throws -> [String: [UInt8]] {
        let hot = other ?? hot
        var dropped: [String: [UInt8]] = [:]
        let staging = hot.root + "/incoming"
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        for n in 0..<count {
            let name = String(format: "\(prefix)%03d.jpg", n)
            dropped[name] = try HotFolderFixture.photo(n, width: width)
            try Harness.write(dropped[name]!, to: staging + "/" + name)
        }
        for name in dropped.keys.sorted() where rename(staging + "/" + name, hot.drop + "/" + name) != 0 {
            throw POSIXError(.EIO)
        }
        return dropped
    }

    /// Every photo in `dropped` is in a published report and nothing is under way (no batch
    /// folder left in `.work/`: a published one is removed just after its report appears).
    func allFinished(_ dropped: [String: [UInt8]], in other: HotFolderFixture? = nil) -> Bool {
        let hot = other ?? hot
        return Set(SharesTests.items(hot).compactMap { $0.item["source"] as? String }).isSuperset(of: dropped.keys)
            && hot.names(in: hot.root + "/.work").allSatisfy { $0.hasPrefix(".") } && hot.names(in: hot.drop).isEmpty
    }

    /// The batches in `.work/` under way (their journal begun).
    var batchesUnderWay: [String] {
        let work = hot.root + "/.work"
        return hot.names(in: work).filter { FileManager.default.fileExists(atPath: "\(work)/\($0)/journal") }
    }

    /// The host (index) whose daemon holds a batch under way, as its lock says (its pid).
    func holder(of daemons: [DaemonProcess]) -> Int? { holders(of: daemons).min() }

    /// The daemons holding the locks of the batches under way (those that claimed them).
    func holders(of daemons: [DaemonProcess]) -> Set<Int> {
        var found: Set<Int> = []
        for id in batchesUnderWay {
            let lock = (try? String(contentsOfFile: "\(hot.root)/.work/\(id)/lock", encoding: .utf8)) ?? ""
            if let n = daemons.firstIndex(where: { lock.contains("pid=\($0.pid)\n") }) { found.insert(n) }
        }
        return found
    }

    /// The open batch (its manifest says so) whose lock `daemon` holds, if there is one.
    func openBatch(heldBy daemon: DaemonProcess) -> String? {
        let work = hot.root + "/.work"
        return hot.names(in: work).first { id in
            let lock = (try? String(contentsOfFile: "\(work)/\(id)/lock", encoding: .utf8)) ?? ""
            guard lock.contains("pid=\(daemon.pid)\n"), let manifest = hot.manifest(id) else { return false }
            return manifest["open"] as? Bool == true
        }
    }

    /// The claimer of the hot folder as each host's status names it (nil where one names none).
    func claimers() -> [String?] {
        names.indices.map { n in ((statusFile(n)?["inboxes"] as? [[String: Any]])?.first)?["claimer"] as? String }
    }

    /// The hosts holding a running task now, as the task table says (a host's status file says
    /// what it holds at most every half second: a batch of small photos can end in between).
    func hostsRunningTasks() -> Set<String> {
        let database = conninfo.split(separator: " ").first { $0.hasPrefix("dbname=") }.map { String($0.dropFirst(7)) }
        let rows = (try? server.psql("SELECT DISTINCT host FROM photofinish.tasks WHERE state = 'running'",
                                     database: database ?? "postgres")) ?? ""
        return Set(rows.split(separator: "\n").map(String.init))
    }

    /// The host the database records as holding `batch` open (`batch_holders`), if any.
    func recordedHolder(of batch: String) -> String? {
        let database = conninfo.split(separator: " ").first { $0.hasPrefix("dbname=") }.map { String($0.dropFirst(7)) }
        let rows = (try? server.psql("SELECT host FROM photofinish.batch_holders WHERE batch = '\(batch)'",
                                     database: database ?? "postgres")) ?? ""
        return rows.split(separator: "\n").first.map(String.init)
    }

    /// The hosts the report items name.
    var finishingHosts: Set<String> { finishingHosts(of: hot) }

    /// The hosts the report items of hot folder `hot` name.
    func finishingHosts(of hot: HotFolderFixture) -> Set<String> {
        Set(SharesTests.items(hot).compactMap { $0.item["host"] as? String })
    }

    /// Each photo in `dropped` finished exactly once, ok, in one report of all; its original
    /// filed byte for byte and its outputs intact (as many bytes as the report says, a whole
    /// JPEG); nothing left in `drop/`, `.work/` or `failed/`.
    func expectEachOnce(_ dropped: [String: [UInt8]], _ daemons: [DaemonProcess], in other: HotFolderFixture? = nil,
                        sourceLocation: SourceLocation = #_sourceLocation) {
        let hot = other ?? hot
        let items = SharesTests.items(hot)
        let sources = items.compactMap { $0.item["source"] as? String }
        #expect(sources.count == dropped.count && Set(sources) == Set(dropped.keys),
                "finished \(sources.count) of \(dropped.count): twice \(Set(sources.filter { s in sources.filter { $0 == s }.count > 1 }).sorted()), missing \(Set(dropped.keys).subtracting(sources).sorted())\n\(logs(daemons))",
                sourceLocation: sourceLocation)
        var broken: [String] = []
        for (batch, item) in items {
            let name = item["source"] as? String ?? "?"
            if item["status"] as? String != "ok" || (try? Harness.read(hot.root + "/originals/\(batch)/\(name)")) != dropped[name] {
                broken.append("\(name): \(item["status"] ?? "?"), original \((try? Harness.read(hot.root + "/originals/\(batch)/\(name)")) == dropped[name] ? "filed" : "not filed")")
            }
            for output in item["outputs"] as? [[String: Any]] ?? [] {
                let file = output["file"] as? String ?? "?"
                let bytes = (try? Harness.read(hot.root + "/out/\(batch)/\(file)")) ?? []
                if bytes.count != output["bytes"] as? Int || !bytes.starts(with: [0xFF, 0xD8]) || bytes.suffix(2) != [0xFF, 0xD9] {
                    broken.append("\(file): \(bytes.count) bytes, the report says \(output["bytes"] ?? "?")")
                }
            }
        }
        #expect(broken.isEmpty, "\(broken.prefix(10))", sourceLocation: sourceLocation)
        #expect(hot.names(in: hot.drop).isEmpty, "left in drop/: \(hot.names(in: hot.drop))", sourceLocation: sourceLocation)
        let left = hot.names(in: hot.root + "/.work").filter { !$0.hasPrefix(".pf-probe-") && !$0.hasPrefix(".new-") }
        #expect(left.isEmpty, "left in .work/: \(left)", sourceLocation: sourceLocation)
        #expect(hot.allFiles(under: hot.root + "/failed").isEmpty, sourceLocation: sourceLocation)
    }

    func logs(_ daemons: [DaemonProcess]) -> String {
        daemons.enumerated().map { "--- \(names[$0.offset]):\n\($0.element.log)" }.joined(separator: "\n")
    }
}
