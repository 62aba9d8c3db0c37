@testable import Cluster
import Foundation
import PostgresHarness
import Testing

/// Hosts as the daemon will be one: members with their own links, lease keepers and wake-ups.
@Suite struct MemberTests {
    static func member(_ name: String, _ conninfo: String, lease: Duration = .seconds(30), inboxes: [String] = ["shop"],
                       events: Tally<[ClusterMember.Event]>? = nil) -> ClusterMember {
        let member = ClusterMember(conninfo: conninfo, identity: HostIdentity(name: name, version: "test", workers: 2),
                                   inboxes: inboxes, lease: lease,
                                   backoff: Backoff(first: .milliseconds(50), maximum: .milliseconds(300))) { event in
            events?.update { $0.append(event) }
        }
        return member
    }

    @Test func threeHostsFinishEveryTaskOnceWhilePostgreSQLStopsLongerThanALeaseAndComesBack() throws {
        guard let server = PostgresServer.ownOrSkip() else { return }
        defer { server.destroy() }
        let conninfo = try server.makeDatabase()
        let events = (0..<3).map { _ in Tally([ClusterMember.Event]()) }
        let lease = Duration.seconds(3)
        let members = ["alpha", "beta", "gamma"].enumerated().map { i, name in
            Self.member(name, conninfo, lease: lease, events: events[i])
        }
        defer { members.forEach { $0.stop() } }
        for member in members { #expect(member.start(waitingUpTo: .seconds(30)).isUp) }
        let tasks = (1...300).map { NewTask(photo: $0, source: "IMG_\($0).jpg") }
        #expect(try members[0].add(tasks, inbox: "shop", batch: "b1") == 300)
        #expect(try members[0].close(inbox: "shop", batch: "b1") == nil)

        // Per photo: the tokens whose completion was recorded (a completion sent again after a
        // lost answer counts once), and how often a completion was refused as stale.
        let completed = Tally([Int: Set<LeaseToken>]())
        let stale = Tally(0), outputsMade = Tally([String]()), unreachableSeen = Tally(0)
        let done = Tally(false)
        ClusterFixture.together(7) { worker in
            guard worker < 6 else {
                // The 7th thread plays the administrator: PostgreSQL stops once a third is done.
                _ = Poll.until(.seconds(120)) { completed.current.count >= 100 }
                try? server.stop()
                Thread.sleep(forTimeInterval: 4.5)  // the outage: longer than a lease
                try? server.start()
                return
            }
            let member = members[worker % 3]
            while !done.current {
                let taken: [PhotoTask]
                do {
                    taken = try member.take(limit: 1)
                } catch {
                    unreachableSeen.update { $0 += 1 }
                    member.waitForWork(upTo: .milliseconds(200))
                    continue
                }
                guard let task = taken.first else {
                    member.waitForWork(upTo: member.idleWait(poll: .milliseconds(500)))
                    continue
                }
                var current: PhotoTask? = task
                while let work = current {
                    current = nil
                    Thread.sleep(forTimeInterval: work.isBatchOutputs ? 0.05 : 0.01)  // the photo's work
                    if work.isBatchOutputs {
                        // Publishing is for one host only: not while the lease is uncertain.
                        _ = Poll.until(.seconds(60)) { member.isCertain(work) }
                        outputsMade.update { $0.append(member.identity.name) }
                    }
                    // Finished: the result is held until the database takes it.
                    while true {
                        do {
                            switch try member.complete(work, item: #"{"photo": \#(work.key.photo)}"#) {
                            case .completed(let outputs):
                                if work.isBatchOutputs { done.update { $0 = true } }
                                else { completed.update { _ = $0[work.key.photo, default: []].insert(work.token) } }
                                current = outputs
                            case .stale:
                                stale.update { $0 += 1 }
                            }
                            break
                        } catch {
                            unreachableSeen.update { $0 += 1 }
                            Thread.sleep(forTimeInterval: 0.1)
                        }
                    }
                }
            }
        }
        #expect(unreachableSeen.current > 0, "the outage happened under work")
        #expect(completed.current.count == 300)
        #expect(completed.current.values.allSatisfy { $0.count == 1 }, "a photo was completed by two holders")
        #expect(stale.current == 0, "the holders renewed their leases before anyone could take them over")
        #expect(outputsMade.current.count == 1, "\(outputsMade.current)")
        let board = members[0].board
        #expect(try board.progress(inbox: "shop", batch: "b1")?.state == "published")
        #expect(try board.finished(inbox: "shop", batch: "b1").count == 300)
        for (i, tally) in events.enumerated() {
            let seen = tally.current
            #expect(seen.contains { if case .unreachable = $0 { true } else { false } }, "member \(i): \(seen)")
            #expect(seen.filter { if case .connected = $0 { true } else { false } }.count >= 2, "member \(i): \(seen)")
            #expect(seen.filter { if case .registered = $0 { true } else { false } }.count == 1, "registered once per start")
            #expect(!seen.contains { if case .lost = $0 { true } else { false } }, "member \(i) lost tasks: \(seen)")
        }
        // Every host did some of the work.
        let byHost = Dictionary(grouping: try board.finished(inbox: "shop", batch: "b1"), by: \.host).mapValues(\.count)
        #expect(Set(byHost.keys) == ["alpha", "beta", "gamma"], "\(byHost)")
    }

    @Test func aHolderWhoseLeaseWasTakenOverIsToldAndItsCompletionIsRefused() throws {
        guard let f = ClusterFixture.make() else { return }
        let events = Tally([ClusterMember.Event]())
        // alpha's lease is long, so its keeper (every third of a lease) does not renew the lease
        // the test expires below before beta has taken it: a renewal in between would win.
        let a = Self.member("alpha", f.conninfo, lease: .seconds(60), events: events)
        let b = Self.member("beta", f.conninfo, lease: .seconds(3))
        defer { a.stop(); b.stop() }
        #expect(a.start().isUp && b.start().isUp)
        try a.add([NewTask(photo: 1, source: "a.jpg")], inbox: "shop", batch: "b1")
        let task = try #require(try a.take(limit: 1).first)
        #expect(a.held == [task])
        // alpha freezes (as far as the database can tell): its lease runs out and beta takes it.
        _ = try f.database.execute("UPDATE photofinish.tasks SET lease_until = now() - interval '1 second' WHERE token = $1",
                                   [task.token.uuid])
        // An expired lease is not taken within one lease of the server's own start (its holders
        // renew first after an outage): beta looks again until it gets it.
        var taken: PhotoTask?
        #expect(try Poll.until(.seconds(10), every: .milliseconds(100)) {
            taken = try b.take(limit: 1).first
            return taken != nil
        })
        let retaken = try #require(taken)
        #expect(retaken.key == task.key && retaken.earlierAttempts == 1)
        // alpha's next renewal learns it.
        a.keeper.ringNow()
        #expect(Poll.until(.seconds(10)) { events.current.contains(.lost([task])) }, "\(events.current)")
        #expect(a.held.isEmpty)
        #expect(!a.isCertain(task))
        #expect(try a.complete(task, item: "{}") == .stale)
        #expect(b.isCertain(retaken))
    }

    /// A host killed (its socket closed: kill -9, a crash) loses its tasks once its session has
    /// been gone for `TaskBoard.gone`, not after its lease; alive, it keeps them.
    @Test func aKilledHostsTasksAreTakenOnceItsSessionIsGoneNotAfterItsLease() throws {
        guard let f = ClusterFixture.make() else { return }
        let a = Self.member("alpha", f.conninfo, lease: .seconds(120))
        let b = Self.member("beta", f.conninfo, lease: .seconds(3))
        defer { a.stop(); b.stop() }
        #expect(a.start().isUp && b.start().isUp)
        try a.add([NewTask(photo: 1, source: "a.jpg"), NewTask(photo: 2, source: "b.jpg")], inbox: "shop", batch: "gone1")
        let task = try #require(try a.take(limit: 1).first)
        #expect(task.key.photo == 1)
        // Alive, its session there: beta takes only the other, however often it looks.
        #expect(try b.take(limit: 2).map(\.key.photo) == [2])
        #expect(try b.take(limit: 2).isEmpty)
        // Killed: its connections close without a word (no stop, nothing given back).
        a.database.close()
        let killed = ContinuousClock.now
        var taken: PhotoTask?
        #expect(try Poll.until(.seconds(30), every: .milliseconds(200)) {
            taken = try b.take(limit: 1).first
            return taken != nil
        })
        #expect(ContinuousClock.now - killed >= TaskBoard.gone, "taken before its session had been gone for \(TaskBoard.gone)")
        #expect(taken?.key == task.key && taken?.earlierAttempts == 1, "\(String(describing: taken))")
    }

    @Test func aTakeWhoseAnswerWasLostIsGivenBackAtTheReconnect() throws {
        guard let f = ClusterFixture.make() else { return }
        let a = Self.member("alpha", f.conninfo)
        defer { a.stop() }
        #expect(a.start().isUp)
        try a.add([NewTask(photo: 1, source: "a.jpg"), NewTask(photo: 2, source: "b.jpg")], inbox: "shop", batch: "b1")
        let known = try #require(try a.take(limit: 1).first)
        // A take the server did but whose answer never came back: the member does not know it.
        let unknown = try #require(try a.board.take(from: ["shop"], limit: 1).first)
        let pid = try #require(try a.database.execute("SELECT pg_backend_pid() AS pid")[0].int("pid"))
        try f.server.psql("SELECT pg_terminate_backend(\(pid))")
        #expect(throws: ClusterError.self) { try a.database.execute("SELECT 1") }
        #expect(Poll.until(.seconds(10)) { a.health.isUp })
        // The unknown one is ready again (not counted); the known one still held.
        let other = Self.member("beta", f.conninfo)
        defer { other.stop() }
        #expect(other.start().isUp)
        let got = try other.take(limit: 5)
        #expect(got.map(\.key) == [unknown.key])
        #expect(got.first?.earlierAttempts == 0)
        #expect(a.isCertain(known))
        guard case .completed = try a.complete(known, item: "{}") else {
            Issue.record("the known task was lost in the reconnect")
            return
        }
    }

    @Test func aNotificationWakesAWaitingHostAndAShareGoneGivesItsTasksBack() throws {
        guard let f = ClusterFixture.make() else { return }
        let a = Self.member("alpha", f.conninfo, inboxes: ["shop", "studio"])
        let b = Self.member("beta", f.conninfo, inboxes: ["shop", "studio"])
        defer { a.stop(); b.stop() }
        #expect(a.start().isUp && b.start().isUp)
        while a.waitForWork(upTo: .zero) {}  // the wake-ups of the start
        let woken = Tally(false)
        let waiter = Thread { woken.update { $0 = a.waitForWork(upTo: .seconds(20)) } }
        waiter.start()
        try b.add([NewTask(photo: 1, source: "a.jpg")], inbox: "studio", batch: "s1")
        #expect(Poll.until(.seconds(20)) { woken.current })
        try b.add([NewTask(photo: 1, source: "b.jpg")], inbox: "shop", batch: "p1")
        let held = try a.take(limit: 5)
        #expect(held.count == 2)
        // studio's share goes away on alpha: its task goes back at once, the other stays.
        a.setInboxes(["shop"])
        #expect(a.held.map(\.key.inbox) == ["shop"])
        let moved = try b.take(limit: 5)
        #expect(moved.map(\.key.inbox) == ["studio"])
        #expect(moved.first?.earlierAttempts == 0)
        // alpha takes nothing of studio any more.
        try b.add([NewTask(photo: 2, source: "c.jpg")], inbox: "studio", batch: "s1")
        #expect(try a.take(limit: 5).isEmpty)
    }

    @Test func statusShowsTheSchemaEveryHostItsWorkersAndTheTasksItHolds() throws {
        guard let f = ClusterFixture.make() else { return }
        let a = Self.member("alpha", f.conninfo), b = Self.member("beta", f.conninfo)
        defer { a.stop(); b.stop() }
        #expect(a.start().isUp && b.start().isUp)
        try a.add((1...3).map { NewTask(photo: $0, source: "IMG_\($0).jpg") }, inbox: "shop", batch: "20261201-120000-abcd")
        let held = try b.take(limit: 2)
        #expect(held.count == 2)
        let status = try ClusterStatus.read(a.database)
        #expect(status.schema == Schema.version)
        #expect(status.hosts.map(\.name).contains("alpha") && status.hosts.map(\.name).contains("beta"))
        let beta = try #require(status.hosts.first { $0.name == "beta" })
        #expect(beta.workers == 2 && beta.inboxes == ["shop"] && !beta.stopped)
        #expect(beta.tasks.map(\.photo) == [1, 2])
        #expect(beta.tasks.allSatisfy { $0.leaseLeft > 0 })
        #expect(status.batches.count == 1)
        #expect(status.batches[0].running == 2 && status.batches[0].ready == 1 && status.batches[0].state == "open")
        let text = status.text(lease: .seconds(30))
        #expect(text.contains("schema: version \(Schema.version)"))
        #expect(text.contains("beta: up since"))
        #expect(text.contains("2 workers, folders shop"))
        #expect(text.contains("shop 20261201-120000-abcd: photo 1 IMG_1.jpg (lease"))
        #expect(text.contains("alpha: up") && text.contains("holds no task"))
        #expect(text.contains("shop 20261201-120000-abcd: open, claimed by alpha; 3 photos: 0 done, 2 being finished, 1 waiting"))
        // A stop gives back and shows the host stopped.
        b.stop()
        let after = try ClusterStatus.read(a.database)
        #expect(after.hosts.first { $0.name == "beta" }?.stopped == true)
        #expect(after.batches[0].ready == 3)
        #expect(after.text(lease: .seconds(30)).contains("beta: stopped"))
        // JSON for scripts.
        let json = try JSONEncoder().encode(after)
        #expect(try JSONDecoder().decode(ClusterStatus.self, from: json) == after)
    }
}
