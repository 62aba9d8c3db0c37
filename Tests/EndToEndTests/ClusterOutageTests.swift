import Foundation
import PostgresHarness
import Testing

/// A cluster that survives its database and its hosts, on three daemons as three hosts
/// (ClusterRig) and one PostgreSQL of this suite's own, stopped and started by the tests: with
/// the database away a host works alone, joins when it answers and spreads its work again; a
/// stop is a stop whatever the database does.
@Suite(.serialized) struct ClusterOutageTests {
    /// This suite's server (stopped and started by its tests: none of them shares it).
    static let server: PostgresServer? = ClusterRig.server(own: true, test: "ClusterOutageTests")

    @Test func theDatabaseDownAtStartTheHostsFinishAloneThenJoinAndSpreadTheWork() throws {
        guard let server = Self.server else { return }
        // A quiet long enough that a batch claimed while the database is away is still open when
        // the hosts have joined (they try again every 5 s at most).
        let rig = try ClusterRig(server: server, own: false, quiet: "10s")
        // After a power cut the photo hosts boot before the database host.
        try server.stop()
        defer { try? server.ensureRunning() }
        let daemons = try (0..<3).map { try rig.start($0) }
        for d in daemons { d.waitUntilReady() }
        let alone = try rig.dropPhotos("A", count: 150)
        let dropped = ContinuousClock.now
        // The contract: finished within 60 s of the drop, each photo once, with no database at all.
        #expect(Poll.until(.seconds(60)) { rig.allFinished(alone) }, "\(rig.logs(daemons))")
        print("database down at start: 150 photos finished \(ContinuousClock.now - dropped) after the drop, in \(rig.hot.reports().count) batch(es)")
        rig.expectEachOnce(alone, daemons)
        #expect((0..<3).allSatisfy { rig.clusterState($0)?["database"] as? String == "unreachable" })

        // Photos claimed while it is still away, then the database starts: every host joins and
        // the batch claimed without it is spread (its photos become tasks every host takes).
        func missed() -> Int { daemons.map { $0.log.components(separatedBy: "cannot add the photos of batch").count - 1 }.reduce(0, +) }
        let missedBefore = missed()
        let away = try rig.dropPhotos("W", count: 90, width: 600)
        // Claimed, and the database missed (the claimant finishes them alone meanwhile).
        #expect(Poll.until(.seconds(30)) { rig.hot.names(in: rig.hot.drop).isEmpty && missed() > missedBefore }, "\(rig.logs(daemons))")
        try server.start()
        for n in 0..<3 {
            #expect(Poll.until(.seconds(30)) { rig.clusterState(n)?["database"] as? String == "reachable" }, "\(daemons[n].log)")
            #expect(daemons[n].log.contains("cluster: joined as host \(rig.names[n])"), "\(daemons[n].log)")
            #expect(Poll.until(.seconds(20)) { rig.metrics(n)?["photofinish_cluster_database_up", ["host": rig.names[n]]] == 1 })
        }
        #expect(Poll.until(.seconds(20)) { rig.statusText.contains("of a cluster of 3 hosts up") }, "\(rig.statusText)")
        #expect(Poll.until(.seconds(120)) { rig.allFinished(alone.merging(away) { a, _ in a }) }, "\(rig.logs(daemons))")
        rig.expectEachOnce(alone.merging(away) { a, _ in a }, daemons)
        // A batch claimed without the database was spread: its photos became tasks of the table
        // (whichever hosts were free took them: which ones is the machine's timing), all done.
        let spread = daemons.flatMap { $0.log.split(separator: "\n") }.compactMap { line -> String? in
            guard let range = line.range(of: ", claimed while the database did not answer, is spread again") else { return nil }
            return line[..<range.lowerBound].split(separator: " ").last.map(String.init)
        }
        #expect(!spread.isEmpty, "\(rig.logs(daemons))")
        for batch in spread {
            let done = try server.psql("SELECT count(*) FROM photofinish.tasks WHERE batch = '\(batch)' AND photo > 0 AND state = 'done' AND item IS NOT NULL",
                                       database: rig.databaseName)
            let photos = (rig.hot.reports()[batch]?["items"] as? [[String: Any]])?.count
            #expect(Int(done) == photos, "batch \(batch): \(done) tasks done, \(photos.map(String.init) ?? "no report") photos")
        }
        let awayHosts = Set(SharesTests.items(rig.hot).filter { ($0.item["source"] as? String)?.hasPrefix("W") == true }
            .compactMap { $0.item["host"] as? String })
        print("database started: \(spread.count) batch(es) claimed without it spread; its photos finished by \(awayHosts.sorted())")

        // The next drop: one claimer again, its photos spread over the hosts.
        let before = Set(rig.hot.reports().keys)
        let next = try rig.dropPhotos("N", count: 60, width: 600)
        let all = alone.merging(away) { a, _ in a }.merging(next) { a, _ in a }
        #expect(Poll.until(.seconds(120)) { rig.allFinished(all) }, "\(rig.logs(daemons))")
        rig.expectEachOnce(all, daemons)
        let nextBatches = Set(rig.hot.reports().keys).subtracting(before)
        #expect(nextBatches.count == 1, "the next drop became \(nextBatches.sorted())")
        let nextHosts = Set(SharesTests.items(rig.hot).filter { ($0.item["source"] as? String)?.hasPrefix("N") == true }
            .compactMap { $0.item["host"] as? String })
        #expect(nextHosts.count >= 2, "the next drop was finished by \(nextHosts.sorted())")
        for d in daemons { d.signal(SIGTERM) }
        for d in daemons { #expect(d.wait() == 0) }
    }

    @Test func aStopWithTheDatabaseDownAndBatchesHeldEndsWithinTenSecondsAndLosesNothing() throws {
        guard let server = Self.server else { return }
        try server.ensureRunning()
        defer { try? server.ensureRunning() }
        let rig = try ClusterRig(server: server, own: false, quiet: "3s")
        var daemons = try (0..<3).map { try rig.start($0) }
        for d in daemons { d.waitUntilReady() }
        let dropped = try rig.dropPhotos("T", count: 300, width: 800)
        // Batches held: the claimer's batch under way (open or running) and tasks held by hosts.
        #expect(Poll.until(.seconds(120)) { !rig.hostsRunningTasks().isEmpty && !rig.hot.names(in: rig.hot.root + "/.work").filter { !$0.hasPrefix(".") }.isEmpty },
                "\(rig.logs(daemons))")
        try server.stop()
        #expect(Poll.until(.seconds(30)) { (0..<3).contains { rig.clusterState($0)?["database"] as? String == "unreachable" } },
                "\(rig.logs(daemons))")
        // The contract: SIGTERM ends each daemon within 10 s whatever the database does.
        for d in daemons { d.signal(SIGTERM) }
        let signalled = ContinuousClock.now
        for (n, d) in daemons.enumerated() {
            #expect(Poll.until(.seconds(10) - (ContinuousClock.now - signalled)) { !d.process.isRunning },
                    "host \(rig.names[n]) did not exit within 10 s of SIGTERM:\n\(d.log)")
        }
        print("SIGTERM with the database down: every host exited \(ContinuousClock.now - signalled) after the signal")
        for d in daemons { #expect(d.wait() == 0) }
        // Nothing lost at the next start: the database back, every photo finished once.
        try server.start()
        daemons = try (0..<3).map { try rig.start($0) }
        #expect(Poll.until(.seconds(300)) { rig.allFinished(dropped) }, "\(rig.logs(daemons))")
        rig.expectEachOnce(dropped, daemons)
        for d in daemons { d.signal(SIGTERM) }
        for d in daemons { #expect(d.wait() == 0) }
    }

    @Test func theDatabaseReachableFromOneHostOnlyEveryPhotoIsFinishedOnce() throws {
        guard let server = Self.server else { return }
        try server.ensureRunning()
        // Quiet long enough that the claimer's batch is still open when it is cut off.
        let rig = try ClusterRig(server: server, own: false, quiet: "6s")
        // Each host reaches the database through a proxy of its own, which the test cuts.
        let proxies = try (0..<3).map { _ in try PostgresProxy(to: server) }
        for n in 0..<3 { try rig.reach(n, at: proxies[n].conninfo(rig.databaseName)) }
        let daemons = try (0..<3).map { try rig.start($0) }
        for d in daemons { d.waitUntilReady() }
        #expect(Poll.until(.seconds(120)) { let c = rig.claimers(); return c[0] != nil && Set(c).count == 1 }, "claimers: \(rig.claimers())")
        guard let name = rig.claimers()[0], let claimer = rig.names.firstIndex(of: name) else { return }
        let other = (claimer + 1) % 3, connected = (claimer + 2) % 3
        let first = try rig.dropPhotos("F", count: 60, width: 600)
        // The claimer holds its open batch (recorded with its claimer session): then the claimer
        // and one more host lose the database; the share they all keep.
        #expect(Poll.until(.seconds(120)) {
            rig.openBatch(heldBy: daemons[claimer]).map { rig.recordedHolder(of: $0) == name } ?? false
        }, "\(rig.logs(daemons))")
        proxies[claimer].cut()
        proxies[other].cut()
        let second = try rig.dropPhotos("S", count: 90, width: 600)
        let dropped = first.merging(second) { a, _ in a }
        // The host with the database takes the folder's role (the server ended the claimer's
        // session); the claimer cut off takes its open batch back on the share and goes on alone.
        #expect(Poll.until(.seconds(120)) { rig.claimers()[connected] == rig.names[connected] }, "claimers: \(rig.claimers())")
        #expect(Poll.until(.seconds(180)) { rig.allFinished(dropped) }, "\(rig.logs(daemons))")
        rig.expectEachOnce(dropped, daemons)
        #expect(daemons[claimer].log.contains("takes its open batch"), "\(daemons[claimer].log)")
        #expect(rig.clusterState(connected)?["database"] as? String == "reachable")
        print("cut off: \(rig.hot.reports().count) batch(es), finished by \(rig.finishingHosts.sorted())")

        // Back: every host joins again, and the next drop is finished once too.
        proxies[claimer].restore()
        proxies[other].restore()
        for n in 0..<3 {
            #expect(Poll.until(.seconds(60)) { rig.clusterState(n)?["database"] as? String == "reachable" }, "\(daemons[n].log)")
        }
        let next = try rig.dropPhotos("N", count: 60, width: 600)
        let all = dropped.merging(next) { a, _ in a }
        #expect(Poll.until(.seconds(180)) { rig.allFinished(all) }, "\(rig.logs(daemons))")
        rig.expectEachOnce(all, daemons)
        for d in daemons { d.signal(SIGTERM) }
        for d in daemons { #expect(d.wait() == 0) }
        proxies.forEach { $0.stop() }
    }
}
