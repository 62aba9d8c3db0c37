@testable import Cluster
import Foundation
import PostgresHarness
import Synchronization
import Testing

/// A hot folder's claimer role (`ClaimerRoles`): one host at a time, taken over at once when
/// its holder goes, and what a host may do while the database does not answer.
@Suite struct ClaimerRoleTests {
    static func roles(_ host: String, _ conninfo: String, grace: Duration = .seconds(2)) -> ClaimerRoles {
        var settings = ClaimerRoles.Settings(conninfo: conninfo, host: host)
        settings.grace = grace
        settings.interval = .milliseconds(100)
        settings.timeout = .seconds(5)
        settings.lock = "host=\(host)/machine\nboot=b\npid=1\n"
        return ClaimerRoles(settings)
    }

    /// The holder of `key` as the database records it.
    static func recorded(_ fixture: ClusterFixture, _ key: ClaimerRoles.BatchKey) -> String? {
        (try? fixture.database.execute("SELECT host FROM photofinish.batch_holders WHERE inbox = $1 AND batch = $2",
                                       [key.inbox, key.batch]))?.rows.first?["host"]
    }

    /// What a host's roles' thread found about the open batches' holders, in order.
    final class Findings: Sendable {
        private let found = Mutex<[ClaimerRoles.Holding]>([])
        init(of roles: ClaimerRoles) { roles.onHolding { [self] event in found.withLock { $0.append(event) } } }
        var all: [ClaimerRoles.Holding] { found.withLock { $0 } }
    }

    /// Two hosts of one folder: alpha started and holding `shop`'s role; beta wanting it too, not
    /// started yet (each test starts it where it needs), what its thread finds collected.
    static func alphaClaimingShop(_ fixture: ClusterFixture) -> (alpha: ClaimerRoles, beta: ClaimerRoles, found: Findings) {
        let alpha = roles("alpha", fixture.conninfo), beta = roles("beta", fixture.conninfo)
        let found = Findings(of: beta)
        alpha.want(["shop"])
        alpha.start(waitingUpTo: .seconds(10))
        #expect(Poll.until(.seconds(10)) { alpha.holds("shop") })
        beta.want(["shop"])
        return (alpha, beta, found)
    }

    @Test func aDeadClaimersOpenBatchIsAdoptedByTheNextClaimerAndNothingNewIsClaimedUntilThen() throws {
        guard let fixture = ClusterFixture.make() else { return }
        let (alpha, beta, events) = Self.alphaClaimingShop(fixture)
        defer { [alpha, beta].forEach { $0.stop() } }
        beta.start(waitingUpTo: .seconds(10))
        let key = ClaimerRoles.BatchKey(inbox: "shop", batch: "20261202-101500-3f2a")
        // Written freely until its record is tried; then while its session is confirmed.
        #expect(alpha.mayWrite(key))
        alpha.hold(key)
        #expect(Poll.until(.seconds(10)) { Self.recorded(fixture, key) == "alpha" })
        #expect(Poll.until(.seconds(5)) { alpha.mayWrite(key) })
        #expect(events.all.isEmpty, "alive: nothing to adopt")
        // Its session ends (a kill -9 closes the socket as this does): the next claimer takes the
        // role, claims nothing new while the batch waits, and adopts it `adoptAfter` later.
        alpha.stop()
        let ended = ContinuousClock.now
        #expect(Poll.until(.seconds(10)) { beta.holds("shop") })
        #expect(!beta.mayClaim("shop"), "a dead claimer's open batch waits to be adopted: nothing new is opened")
        #expect(Poll.until(.seconds(20)) { !events.all.isEmpty })
        #expect(ContinuousClock.now - ended >= ClaimerRoles.adoptAfter)
        #expect(events.all == [.adopt(key, from: "alpha", lock: alpha.settings.lock)])
        #expect(Self.recorded(fixture, key) == "beta")
        beta.adoptionEnded(key, adopted: true)
        #expect(beta.mayClaim("shop") && beta.isHeld(key))
        #expect(Poll.until(.seconds(5)) { beta.mayWrite(key) })
        // The old holder back with the same lock (its session was gone, its process alive):
        // it finds the batch adopted and lets it go; it never writes into it.
        let back = Self.roles("alpha", fixture.conninfo)
        defer { back.stop() }
        let lost = Findings(of: back)
        back.hold(key)
        back.start(waitingUpTo: .seconds(10))
        #expect(Poll.until(.seconds(10)) { !lost.all.isEmpty })
        #expect(lost.all == [.lost(key, by: "beta")])
        #expect(!back.isHeld(key) && Self.recorded(fixture, key) == "beta")
        // Closed on the share: its record goes.
        beta.letGo(key)
        #expect(Poll.until(.seconds(10)) { Self.recorded(fixture, key) == nil })
    }

    @Test func aDeadHoldersClosedBatchIsToldToTheNextClaimerNotAdopted() throws {
        guard let fixture = ClusterFixture.make() else { return }
        let (alpha, beta, events) = Self.alphaClaimingShop(fixture)
        defer { [alpha, beta].forEach { $0.stop() } }
        beta.start(waitingUpTo: .seconds(10))
        let key = ClaimerRoles.BatchKey(inbox: "shop", batch: "20261202-101500-5c4d")
        alpha.hold(key)
        alpha.closed(key)
        let open = { (try? fixture.database.execute("SELECT open FROM photofinish.batch_holders WHERE batch = $1", [key.batch]))?.rows.first?.bool("open") }
        #expect(Poll.until(.seconds(10)) { open() == false })
        alpha.stop()
        // Its run was under way: told at once, for the lease rule (no adoption, claims go on).
        #expect(Poll.until(.seconds(10)) { !events.all.isEmpty })
        #expect(events.all == [.deadHolder(key, from: "alpha", lock: alpha.settings.lock)])
        #expect(beta.mayClaim("shop"))
        #expect(Self.recorded(fixture, key) == "alpha")
        beta.drop(key, lock: alpha.settings.lock)
        #expect(Poll.until(.seconds(10)) { Self.recorded(fixture, key) == nil })
        #expect(events.all.count == 1)
    }

    @Test func aHolderWhoseSessionEndsStopsWritingAndTakesItsBatchBackInTime() throws {
        guard let fixture = ClusterFixture.make() else { return }
        let (alpha, beta, events) = Self.alphaClaimingShop(fixture)
        defer { [alpha, beta].forEach { $0.stop() } }
        let key = ClaimerRoles.BatchKey(inbox: "shop", batch: "20261202-101500-4b3c")
        alpha.hold(key)
        #expect(Poll.until(.seconds(10)) { Self.recorded(fixture, key) == "alpha" && alpha.mayWrite(key) })
        beta.start(waitingUpTo: .seconds(10))
        // The server ends the holder's session while the holder lives (an administrator, a
        // network cut the server noticed first): no write starts until it is recorded again.
        _ = try fixture.database.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'photofinish-claimer alpha'")
        #expect(Poll.until(.seconds(5)) { !alpha.mayWrite(key) })
        // Back within `adoptAfter` (its next try): recorded on its new session, nobody adopts.
        #expect(Poll.until(.seconds(10)) { alpha.mayWrite(key) })
        let back = ContinuousClock.now
        Poll.until(ClaimerRoles.adoptAfter + .seconds(2)) { ContinuousClock.now - back > ClaimerRoles.adoptAfter + .seconds(1) }
        #expect(events.all.isEmpty, "\(events.all)")
        #expect(Self.recorded(fixture, key) == "alpha")
    }

    @Test func keysAreTheSameOnEveryHostAndDifferByFolder() {
        #expect(ClaimerRoles.key("shop") == ClaimerRoles.key("shop"))
        #expect(ClaimerRoles.key("shop") != ClaimerRoles.key("studio"))
        // FNV-1a of "a": 0xe40c292c.
        #expect(UInt32(bitPattern: ClaimerRoles.key("a")) == 0xE40C_292C)
    }

    @Test func oneHostHoldsAFolderAndAnotherTakesItTheMomentItGoes() throws {
        guard let fixture = ClusterFixture.make() else { return }
        let hosts = ["alpha", "beta", "gamma"].map { Self.roles($0, fixture.conninfo) }
        defer { hosts.forEach { $0.stop() } }
        for host in hosts {
            host.want(["shop", "studio"])
            host.start(waitingUpTo: .seconds(10))
        }
        func holders(_ folder: String) -> [Int] { hosts.indices.filter { hosts[$0].holds(folder) } }
        #expect(Poll.until(.seconds(10)) { holders("shop").count == 1 && holders("studio").count == 1 })
        #expect(holders("shop").count == 1, "shop held by \(holders("shop"))")
        let first = try #require(holders("shop").first)
        // Every host sees who claims.
        let name = hosts[first].settings.host
        #expect(Poll.until(.seconds(10)) { hosts.allSatisfy { $0.holder(of: "shop") == name } },
                "\(hosts.map { $0.holder(of: "shop") ?? "-" })")
        // And since when, as the holder recorded it (every host reads the same instant).
        #expect(Poll.until(.seconds(10)) { Set(hosts.map { $0.holderSince(of: "shop") }).count == 1 && hosts[0].holderSince(of: "shop") != nil })
        let since = try #require(hosts[first].holderSince(of: "shop"))
        #expect(abs(since.timeIntervalSinceNow) < 60)
        #expect(hosts.indices.allSatisfy { hosts[$0].mayClaim("shop") == ($0 == first) })
        // Its holder lets it go (a stop, a reload without the folder): another takes it.
        hosts[first].want(["studio"])
        #expect(Poll.until(.seconds(10)) { holders("shop").count == 1 && holders("shop") != [first] }, "\(holders("shop"))")
        let second = try #require(holders("shop").first)
        hosts[second].stop()
        #expect(Poll.until(.seconds(10)) { holders("shop").count == 1 && !holders("shop").contains(second) }, "\(holders("shop"))")
        #expect(holders("shop").count == 1)
    }

    /// Two stops at once (the drain's and the daemon's end): each returns only once the roles
    /// are released on the server (`pg_advisory_unlock_all` answered), not only the first.
    @Test func everyStopReturnsOnlyOnceTheRolesAreReleased() throws {
        guard let fixture = ClusterFixture.make() else { return }
        // A host name of its own: the suite's other tests hold roles on the same server meanwhile.
        let alpha = Self.roles("stopper", fixture.conninfo)
        alpha.want(["stopping"])
        alpha.start(waitingUpTo: .seconds(10))
        #expect(Poll.until(.seconds(10)) { alpha.holds("stopping") })
        @Sendable func advisoryLocks() -> Int {
            let rows = try? fixture.database.execute("""
                SELECT count(*) AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                 WHERE l.locktype = 'advisory' AND a.application_name = 'photofinish-claimer stopper'
                """)
            return rows?.rows.first?.int("n") ?? -1
        }
        #expect(advisoryLocks() == 1)
        let seen = Mutex<[Int]>([])
        let group = DispatchGroup()
        for _ in 0..<2 {
            DispatchQueue.global().async(group: group) {
                alpha.stop()
                let n = advisoryLocks()
                seen.withLock { $0.append(n) }
            }
        }
        #expect(group.wait(timeout: .now() + 20) == .success)
        #expect(seen.withLock { $0 } == [0, 0], "the advisory locks each stop saw held on its return")
    }

    @Test func theDatabaseGoneTheHolderKeepsClaimingAndTheOthersAfterTheGrace() throws {
        guard let server = PostgresServer.ownOrSkip() else { return }
        defer { server.destroy() }
        let conninfo = try server.makeDatabase()
        let grace = Duration.seconds(2)
        let hosts = ["alpha", "beta"].map { Self.roles($0, conninfo, grace: grace) }
        defer { hosts.forEach { $0.stop() } }
        for host in hosts {
            host.want(["shop"])
            host.start(waitingUpTo: .seconds(10))
        }
        #expect(Poll.until(.seconds(10)) { hosts.filter { $0.holds("shop") }.count == 1 })
        let holder = try #require(hosts.firstIndex { $0.holds("shop") })
        let other = 1 - holder
        try server.stop()
        let stopped = ContinuousClock.now
        #expect(Poll.until(.seconds(20)) { hosts.allSatisfy { !$0.isConnected } })
        #expect(hosts[holder].mayClaim("shop"))
        if ContinuousClock.now - stopped < grace - .milliseconds(500) { #expect(!hosts[other].mayClaim("shop")) }
        #expect(Poll.until(.seconds(10)) { hosts[other].mayClaim("shop") })
        try server.start()
        // Back: one holder again, and only it claims.
        #expect(Poll.until(.seconds(30)) { hosts.allSatisfy(\.isConnected) && hosts.filter { $0.holds("shop") }.count == 1 })
        #expect(hosts.filter { $0.mayClaim("shop") }.count == 1)
    }

    /// A host whose own link to the database does not answer holds no role (it could not add
    /// its claims' photos as tasks): another host takes it, and this one leaves the folder to
    /// it; with no host able to act, each claims alone once the grace has passed — and the loop
    /// hears when that comes.
    @Test func aHostThatCannotActHoldsNoRoleAndAHostAloneClaimsAfterTheGrace() throws {
        guard let fixture = ClusterFixture.make() else { return }
        let (alpha, beta, _) = Self.alphaClaimingShop(fixture)
        defer { [alpha, beta].forEach { $0.stop() } }
        beta.start(waitingUpTo: .seconds(10))
        // Alpha's link goes: the role moves to beta, which can act on it; alpha claims nothing.
        alpha.setLinkUp(false)
        #expect(Poll.until(.seconds(10)) { beta.holds("shop") && !alpha.holds("shop") && alpha.holder(of: "shop") == "beta" })
        #expect(alpha.isAlone && !alpha.mayClaim("shop") && beta.mayClaim("shop"))
        #expect(!alpha.mayClaim("shop", now: .now + .seconds(60)), "past its grace too, beta claims for it")
        // Beta's link goes too: nobody can act on the role; once alone for the grace, each
        // claims (told by `onChange`), as without a cluster.
        beta.setLinkUp(false)
        #expect(Poll.until(.seconds(10)) { !beta.holds("shop") && alpha.holder(of: "shop") == nil })
        #expect(beta.mayClaim("shop"), "the role it held when it went alone: it keeps claiming")
        #expect(Poll.until(.seconds(10)) { alpha.mayClaim("shop") })
        // Back: one holder again, and only it claims.
        alpha.setLinkUp(true)
        beta.setLinkUp(true)
        #expect(Poll.until(.seconds(10)) { [alpha, beta].filter { $0.holds("shop") }.count == 1 && !alpha.isAlone && !beta.isAlone })
        #expect([alpha, beta].filter { $0.mayClaim("shop") }.count == 1)
        // A host that never reaches the database (started before it, as after a power cut): the
        // loop is told when its grace is over (it looks at its folders again), and it claims.
        let lonely = Self.roles("gamma", "host=/nonexistent-\(getpid()) dbname=x user=photofinish", grace: .seconds(5))
        defer { lonely.stop() }
        let told = Tally(0)
        lonely.onChange { told.update { $0 += 1 } }
        lonely.want(["shop"])
        lonely.start(waitingUpTo: .seconds(5))
        #expect(!lonely.mayClaim("shop") && told.current == 0, "alone, within its grace")
        #expect(Poll.until(.seconds(15)) { told.current == 1 })
        #expect(lonely.mayClaim("shop"))
    }

    /// A holder cut off from the database takes its open batch back on the share `fenceAfter`
    /// after its last confirmation (its lock's words changed, which no adopter matches) and
    /// writes into it alone; when the database answers, the batch is recorded again with the
    /// new words.
    @Test func aHolderCutOffTakesItsOpenBatchBackOnTheShareAndRecordsItAgainLater() throws {
        guard let server = PostgresServer.ownOrSkip() else { return }
        defer { server.destroy() }
        let conninfo = try server.makeDatabase()
        let database = Database(Database.Settings(conninfo: conninfo))
        defer { database.close() }
        _ = database.start(waitingUpTo: .seconds(30))
        _ = try Schema.migrate(database, host: "test")
        let alpha = Self.roles("alpha", conninfo)
        defer { alpha.stop() }
        let fenced = Tally<[String]>([])
        alpha.onFence { key, words in
            fenced.update { $0.append(words) }
            return .taken(words: words + "fence=1\n")
        }
        alpha.want(["shop"])
        alpha.start(waitingUpTo: .seconds(10))
        let key = ClaimerRoles.BatchKey(inbox: "shop", batch: "20261205-101500-7e7e")
        alpha.hold(key)
        let recorded = { (try? database.execute("SELECT lock FROM photofinish.batch_holders WHERE batch = $1", [key.batch]))?.rows.first?["lock"] }
        #expect(Poll.until(.seconds(10)) { recorded() == alpha.settings.lock && alpha.mayWrite(key) })
        #expect(fenced.current.isEmpty, "confirmed: nothing taken back")
        try server.stop()
        let stopped = ContinuousClock.now
        #expect(Poll.until(.seconds(5)) { !alpha.mayWrite(key) }, "past its permit, no write starts")
        #expect(Poll.until(.seconds(10)) { !fenced.current.isEmpty })
        #expect(ContinuousClock.now - stopped >= ClaimerRoles.fenceAfter - .seconds(1))
        #expect(fenced.current == [alpha.settings.lock])
        #expect(alpha.mayWrite(key), "taken back on the share: written alone")
        try server.start()
        #expect(Poll.until(.seconds(30)) { recorded() == alpha.settings.lock + "fence=1\n" }, "recorded again with its new words")
        #expect(alpha.isHeld(key) && alpha.mayWrite(key))
        alpha.letGo(key)
        #expect(Poll.until(.seconds(10)) { recorded() == nil })
    }
}
