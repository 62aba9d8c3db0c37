import Cluster
import Foundation
import PostgresHarness
import Testing

/// `photofinish cluster status` against a real PostgreSQL started by the test.
@Suite struct ClusterCommandTests {
    static func server(_ test: String = #function) -> PostgresServer? {
        do {
            return try PostgresServer.shared()
        } catch is PostgresServer.Unavailable {
            print("skipped: \(test): PostgreSQL is not installed (scripts/bootstrap installs postgresql)")
        } catch {
            Issue.record("cannot start the tests' PostgreSQL: \(error)")
        }
        return nil
    }

    @Test func statusPrintsTheSchemaEveryHostAndTheTasksItHolds() throws {
        guard let server = Self.server() else { return }
        let conninfo = try server.makeDatabase()
        // An empty database: nothing made yet.
        let empty = try Harness.run(["cluster", "status", "--database", conninfo])
        #expect(empty.status == 0, "\(empty.stderr)")
        #expect(empty.stdout.contains("schema: none yet"), "\(empty.stdout)")

        // A host as a daemon makes it: the schema migrated, registered, holding a task.
        let member = ClusterMember(conninfo: conninfo, identity: HostIdentity(name: "studio-2", version: "0.9.0", workers: 3),
                                   inboxes: ["shop"])
        defer { member.stop() }
        #expect(member.start(waitingUpTo: .seconds(30)).isUp)
        #expect(Poll.until(.seconds(20)) { (try? Schema.history(member.database).count) == Schema.version })
        try member.add([NewTask(photo: 1, source: "IMG_0001.jpg"), NewTask(photo: 2, source: "IMG_0002.jpg")],
                       inbox: "shop", batch: "20261201-120000-ab12")
        #expect(try member.take(limit: 1).count == 1)
        // It holds the folder's claimer role: the status says which host, and since when.
        let roles = ClaimerRoles(ClaimerRoles.Settings(conninfo: conninfo, host: "studio-2"))
        defer { roles.stop() }
        roles.want(["shop"])
        roles.start(waitingUpTo: .seconds(10))
        #expect(Poll.until(.seconds(10)) { roles.holds("shop") && roles.holderSince(of: "shop") != nil })

        let dir = try Harness.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Harness.write("{ inboxes: [], cluster: { database: \"\(conninfo)\", host: \"studio-1\", lease: \"20s\" } }",
                          to: dir + "/pf.json5")
        let r = try Harness.run(["cluster", "status", "--config", dir + "/pf.json5"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("schema: version \(Schema.version) (applied"), "\(r.stdout)")
        #expect(r.stdout.contains("studio-2: up since"), "\(r.stdout)")
        #expect(r.stdout.contains("3 workers, folders shop, pid \(getpid()), 0.9.0"), "\(r.stdout)")
        #expect(r.stdout.contains("shop 20261201-120000-ab12: photo 1 IMG_0001.jpg (lease"), "\(r.stdout)")
        #expect(r.stdout.contains("claimer roles (the host that claims from each hot folder):\n  shop: host studio-2, since 20"),
                "\(r.stdout)")
        #expect(r.stdout.contains("shop 20261201-120000-ab12: open, claimed by studio-2; 2 photos: 0 done, 1 being finished, 1 waiting"),
                "\(r.stdout)")
        let json = try Harness.run(["cluster", "status", "--database", conninfo, "--json"])
        #expect(json.status == 0)
        let decoded = try JSONDecoder().decode(ClusterStatus.self, from: Data(json.stdout.utf8))
        #expect(decoded.hosts.map(\.name) == ["studio-2"])
        #expect(decoded.hosts[0].tasks.map(\.source) == ["IMG_0001.jpg"])
        #expect(decoded.roles?.map { "\($0.inbox) \($0.host) \($0.held)" } == ["shop studio-2 true"])
        // Its holder gone, no host holds it: said so, with who held it last.
        roles.stop()
        let after = try Harness.run(["cluster", "status", "--database", conninfo])
        #expect(after.stdout.contains("  shop: no host holds it now (last host studio-2, from 20"), "\(after.stdout)")
    }

    @Test func withoutAClusterOrADatabaseItSaysSo() throws {
        let dir = try Harness.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Harness.write("{ inboxes: [] }", to: dir + "/pf.json5")
        let alone = try Harness.run(["cluster", "status", "--config", dir + "/pf.json5"])
        #expect(alone.status == 1)
        #expect(alone.stdout.contains("has no cluster key: its daemon works alone"), "\(alone.stdout)")
        let gone = try Harness.run(["cluster", "status", "--database", "host=\(dir) dbname=x"])
        #expect(gone.status == 1)
        #expect(gone.stdout.contains("the cluster's database is unreachable: connection to server on socket \"\(dir)/.s.PGSQL.5432\" failed"),
                "\(gone.stdout)")
        let typo = try Harness.run(["cluster", "status", "--database", "host=/tmp dbnme=x"])
        #expect(typo.status == 2)
        #expect(typo.stderr.contains("cluster.database: invalid connection option \"dbnme\""), "\(typo.stderr)")
        let verb = try Harness.run(["cluster", "stats"])
        #expect(verb.status == 2 && verb.stderr.contains("unknown cluster verb 'stats' (known: status)"), "\(verb.stderr)")
    }
}
