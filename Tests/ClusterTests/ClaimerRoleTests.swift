@testable import Cluster
import Foundation
import PostgresHarness
import Testing

/// A hot folder's claimer role (`ClaimerRoles`): one host at a time, taken over at once when
/// its holder goes, and what a host may do while the database does not answer.
@Suite struct ClaimerRoleTests {
    static func roles(_ host: String, _ conninfo: String, grace: Duration = .seconds(2)) -> ClaimerRoles {
        var settings = ClaimerRoles.Settings(conninfo: conninfo, host: host, grace: grace)
        settings.interval = .milliseconds(100)
        settings.timeout = .seconds(5)
        return ClaimerRoles(settings)
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
        #expect(hosts.indices.allSatisfy { hosts[$0].mayClaim("shop") == ($0 == first) })
        // Its holder lets it go (a stop, a reload without the folder): another takes it.
        hosts[first].want(["studio"])
        #expect(Poll.until(.seconds(10)) { holders("shop").count == 1 && holders("shop") != [first] }, "\(holders("shop"))")
        let second = try #require(holders("shop").first)
        hosts[second].stop()
        #expect(Poll.until(.seconds(10)) { holders("shop").count == 1 && !holders("shop").contains(second) }, "\(holders("shop"))")
        #expect(holders("shop").count == 1)
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
}
