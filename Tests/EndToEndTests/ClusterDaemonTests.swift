import Foundation
import PostgresHarness
import Testing

/// Daemons as hosts of a cluster (issue 21, part B), against a real PostgreSQL the tests start:
/// three hosts join and every place people look shows them; a daemon without `cluster` beside
/// them is as it was; the database stopped and started again is said and carried through.
@Suite(.serialized) struct ClusterDaemonTests {
    @Test func threeHostsJoinAndEveryPlaceShowsThemAndADaemonAloneIsUnchanged() throws {
        guard let server = ClusterRig.server(own: false) else { return }
        let rig = try ClusterRig(server: server, own: false)
        let daemons = try (0..<3).map { try rig.start($0) }
        for d in daemons { d.waitUntilReady() }
        // Beside them, a daemon without `cluster` on a hot folder of its own.
        let alone = try HotFolderFixture(name: "aloneBesideTheCluster", extra: "metricsFile: \"\(rig.dir)/alone.prom\",")
        let lonely = try alone.start()
        lonely.waitUntilReady()

        // Every host joined, and each one's status shows the three (read within a refresh).
        for n in 0..<3 {
            #expect(Poll.until(.seconds(30)) { Set(rig.hostsSeen(by: n)) == Set(rig.names) },
                    "host \(n) sees \(rig.hostsSeen(by: n)); logs:\n\(rig.logs(daemons))")
            #expect(daemons[n].log.contains("cluster: joined as host \(rig.names[n])"), "\(daemons[n].log)")
            #expect(rig.clusterState(n)?["database"] as? String == "reachable")
            #expect(rig.clusterState(n)?["host"] as? String == rig.names[n])
        }
        let text = try rig.status(0)
        #expect(text.status == 0, "\(text.stdout)\(text.stderr)")
        #expect(text.stdout.contains("cluster host pf-a: the database answers"), "\(text.stdout)")
        for name in rig.names { #expect(text.stdout.contains("    \(name): up since"), "\(text.stdout)") }
        #expect(text.stdout.contains("2 workers, folders shop"), "\(text.stdout)")
        let json = try rig.status(1, ["--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let statuses = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let mine = try #require(statuses.first { ($0["cluster"] as? [String: Any])?["host"] as? String == "pf-b" }, "\(json.stdout)")
        let view = try #require((mine["cluster"] as? [String: Any])?["view"] as? [String: Any])
        #expect(Set((view["hosts"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }) == Set(rig.names))
        // STATUS.txt (written by whichever host wrote it last) names a host of three up.
        #expect(Poll.until(.seconds(20)) { rig.statusText.contains("of a cluster of 3 hosts up") }, "\(rig.statusText)")
        // The metrics: every series with its host, the database up.
        for n in 0..<3 {
            #expect(Poll.until(.seconds(20)) { rig.metrics(n)?["photofinish_cluster_database_up", ["host": rig.names[n]]] == 1 },
                    "\((try? String(contentsOfFile: rig.metricsPath(n), encoding: .utf8)) ?? "no metrics")")
            #expect(rig.metrics(n)?["photofinish_pending_files", ["host": rig.names[n], "inbox": "shop"]] != nil)
        }

        // The photos are finished once (each batch by the host that claimed it: the photos are
        // not tasks yet), each item naming the host that finished it.
        let dropped = try rig.dropPhotos("c", count: 4)
        try alone.drop(try HotFolderFixture.photo(9), as: "alone.jpg")
        #expect(Poll.until(.seconds(120)) { rig.allFinished(dropped) && alone.reports().count == 1 }, "\(rig.logs(daemons))")
        rig.expectEachOnce(dropped, daemons)
        let items = SharesTests.items(rig.hot).map(\.item)
        #expect(items.allSatisfy { rig.names.contains($0["host"] as? String ?? "") }, "\(items)")
        let c2 = items.first { $0["source"] as? String == "c002.jpg" }?["host"] as? String
        let explained = try Harness.run(["explain", "c002.jpg", rig.hot.root])
        #expect(explained.stdout.contains("c002.jpg was finished at ") && explained.stdout.contains(" by host \(c2 ?? "?") into "),
                "\(explained.stdout)")

        // The daemon alone: no cluster anywhere, its item names this machine.
        let aloneStatus = try Harness.run(["status", "--json"], extraEnvironment: ["RUNTIME_DIRECTORY": alone.runtime])
        let aloneJSON = try #require(try JSONSerialization.jsonObject(with: Data(aloneStatus.stdout.utf8)) as? [[String: Any]])
        #expect(aloneJSON.count == 1 && aloneJSON[0]["cluster"] == nil, "\(aloneStatus.stdout)")
        #expect(!lonely.log.contains("cluster"), "\(lonely.log)")
        let aloneMetrics = (try? String(contentsOfFile: rig.dir + "/alone.prom", encoding: .utf8)) ?? ""
        #expect(!aloneMetrics.contains("host=") && !aloneMetrics.contains("photofinish_cluster_"), "\(aloneMetrics)")
        #expect(!((try? String(contentsOfFile: alone.root + "/STATUS.txt", encoding: .utf8)) ?? "").contains("cluster"))
        let aloneItems = alone.reports().values.first?["items"] as? [[String: Any]] ?? []
        #expect(aloneItems.map { $0["host"] as? String } == [Harness.hostName], "\(aloneItems)")

        // Stopped, each host leaves: marked stopped in the database, the journal says so.
        for d in daemons { d.signal(SIGTERM) }
        lonely.signal(SIGTERM)
        for d in daemons { #expect(d.wait() == 0) }
        #expect(lonely.wait() == 0)
        for d in daemons {
            #expect(d.log.contains("left the cluster"), "\(d.log)")
            #expect(!d.log.contains("NOTICE"), "the server's notices stay out of the journal: \(d.log)")
        }
        let after = try Harness.run(["cluster", "status", "--database", rig.conninfo])
        for name in rig.names { #expect(after.stdout.contains("  \(name): stopped"), "\(after.stdout)") }
    }

    @Test func aFolderTheHostCannotUseIsNoLongerOneItTakesTasksOf() throws {
        guard let server = ClusterRig.server(own: false) else { return }
        let rig = try ClusterRig(server: server, own: false, hosts: 1)
        let daemon = try rig.start(0)
        daemon.waitUntilReady()
        // The folders the host takes tasks of, as the database knows them (renewed every third of a lease).
        func inboxes() -> [String]? {
            guard let r = try? Harness.run(["cluster", "status", "--database", rig.conninfo, "--json"], deadline: .seconds(30)),
                  let status = try? JSONDecoder().decode(ClusterStatusShape.self, from: Data(r.stdout.utf8)) else { return nil }
            return status.hosts.first { $0.name == "pf-a" }?.inboxes
        }
        #expect(Poll.until(.seconds(30), every: .milliseconds(300)) { inboxes() == ["shop"] }, "\(daemon.log)")
        // Its root gone (moved away): the folder is refused, and no longer one it takes tasks of.
        #expect(rename(rig.hot.root, rig.hot.root + "-away") == 0)
        #expect(Poll.until(.seconds(30), every: .milliseconds(300)) { inboxes() == [] }, "\(daemon.log)")
        #expect(daemon.log.contains("cluster: takes no tasks of shop while this host cannot use it"), "\(daemon.log)")
        #expect(rename(rig.hot.root + "-away", rig.hot.root) == 0)
        #expect(Poll.until(.seconds(30), every: .milliseconds(300)) { inboxes() == ["shop"] }, "\(daemon.log)")
        #expect(daemon.log.contains("cluster: takes tasks of shop again"), "\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    /// What the test reads of `cluster status --json`.
    struct ClusterStatusShape: Decodable {
        struct Host: Decodable {
            var name: String
            var inboxes: [String]
        }
        var hosts: [Host]
    }

    @Test func theDatabaseStoppedIsSaidEverywhereAndItsReturnToo() throws {
        guard let server = ClusterRig.server(own: true) else { return }
        let rig = try ClusterRig(server: server, own: true, hosts: 1)
        let daemon = try rig.start(0)
        daemon.waitUntilReady()
        #expect(Poll.until(.seconds(30)) { rig.clusterState(0)?["database"] as? String == "reachable" }, "\(daemon.log)")

        try server.stop()
        #expect(Poll.until(.seconds(40)) { rig.clusterState(0)?["database"] as? String == "unreachable" }, "\(daemon.log)")
        #expect(Poll.until(.seconds(10)) { daemon.log.contains("cluster: the database does not answer") }, "\(daemon.log)")
        let down = try rig.status(0)
        #expect(down.stdout.contains("cluster host pf-a: the database does not answer (since"), "\(down.stdout)")
        #expect(down.stdout.contains("this host works alone until it answers"), "\(down.stdout)")
        #expect(Poll.until(.seconds(20)) { rig.statusText.contains("The cluster's database does not answer") }, "\(rig.statusText)")
        #expect(Poll.until(.seconds(20)) { rig.metrics(0)?["photofinish_cluster_database_up", ["host": "pf-a"]] == 0 })
        // Meanwhile the daemon watches as ever (a photo dropped now waits for no database).
        try rig.hot.drop(try HotFolderFixture.photo(1), as: "meanwhile.jpg")
        #expect(Poll.until(.seconds(60)) { rig.hot.reports().count == 1 }, "\(daemon.log)")

        try server.start()
        #expect(Poll.until(.seconds(60)) { rig.clusterState(0)?["database"] as? String == "reachable" }, "\(daemon.log)")
        #expect(daemon.log.contains("cluster: the database answers again after"), "\(daemon.log)")
        // One line when it went away, one when it came back.
        let lines = daemon.log.split(separator: "\n")
        #expect(lines.filter { $0.contains("cluster: the database does not answer") }.count == 1, "\(daemon.log)")
        #expect(lines.filter { $0.contains("cluster: the database answers again") }.count == 1, "\(daemon.log)")
        #expect(Poll.until(.seconds(20)) { rig.metrics(0)?["photofinish_cluster_database_up", ["host": "pf-a"]] == 1 })
        #expect(Poll.until(.seconds(20)) { rig.statusText.contains("of a cluster of 1 host up") }, "\(rig.statusText)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    /// The folder's claimer role: one host claims, says so in every host's status; stopped
    /// (SIGTERM) it lets the role go at the start of its drain and another host claims the
    /// photos dropped next; killed (-9), its role is taken as soon as photos wait.
    @Test func oneHostClaimsAndAnotherTakesTheRoleWhenItStopsOrDies() throws {
        guard let server = ClusterRig.server(own: false) else { return }
        let rig = try ClusterRig(server: server, own: false, quiet: "1s")
        let daemons = try (0..<3).map { try rig.start($0) }
        for d in daemons { d.waitUntilReady() }
        func claimer(_ n: Int) -> String? {
            ((rig.statusFile(n)?["inboxes"] as? [[String: Any]])?.first)?["claimer"] as? String
        }
        func agreed(among hosts: [Int]) -> String? {
            let seen = Set(hosts.map(claimer))
            return seen.count == 1 ? seen.first! : nil
        }
        #expect(Poll.until(.seconds(30)) { agreed(among: [0, 1, 2]) != nil }, "\((0..<3).map(claimer))")
        let first = try #require(agreed(among: [0, 1, 2]).flatMap { rig.names.firstIndex(of: $0) })
        // Which host, and since when (the status file as its holder recorded the role's taking).
        #expect(Poll.until(.seconds(10)) { ((rig.statusFile(first)?["inboxes"] as? [[String: Any]])?.first)?["claimerSince"] != nil })
        let text = try rig.status(first)
        #expect(text.stdout.contains("claimed by host \(rig.names[first]) since "), "\(text.stdout)")
        #expect(Poll.until(.seconds(20)) { rig.statusText.contains("New photos are claimed by host \"\(rig.names[first])\" since ") },
                "\(rig.statusText)")
        daemons[first].signal(SIGTERM)
        #expect(daemons[first].wait() == 0)
        let others = (0..<3).filter { $0 != first }
        #expect(Poll.until(.seconds(30)) { agreed(among: others).map { $0 != rig.names[first] } ?? false },
                "\(others.map(claimer))")
        let dropped = try rig.dropPhotos("S", count: 10, width: 400)
        #expect(Poll.until(.seconds(120)) { rig.allFinished(dropped) }, "\(rig.logs(daemons))")
        rig.expectEachOnce(dropped, daemons)
        // The new claimer killed: the last host takes the role for the next photos.
        let second = try #require(agreed(among: others).flatMap { rig.names.firstIndex(of: $0) })
        daemons[second].signal(SIGKILL)
        daemons[second].wait()
        let last = others.first { $0 != second }!
        let more = try rig.dropPhotos("T", count: 10, width: 400)
        #expect(Poll.until(.seconds(120)) { rig.allFinished(more) }, "\(rig.logs(daemons))")
        #expect(Poll.until(.seconds(30)) { claimer(last) == rig.names[last] },
                "\(claimer(last) ?? "none"): \(String(describing: rig.statusFile(last)))\n\(rig.logs(daemons))")
        #expect(rig.hot.reports().keys.count == 2, "batches: \(rig.hot.reports().keys.sorted())")
        daemons[last].signal(SIGTERM)
        #expect(daemons[last].wait() == 0)
    }
}
