@testable import Cluster
import Foundation
import PostgresHarness
import Testing

/// The link to the database: connection strings, a server that is not there, one that goes away
/// and comes back under work.
@Suite struct LinkTests {
    @Test func aConnectionStringThatCannotBeParsedIsNamed() {
        #expect(Database.problem(in: "host=/run/postgresql dbname=photofinish") == nil)
        #expect(Database.problem(in: "postgresql://pf@db.example:5433/photofinish?sslmode=verify-full") == nil)
        #expect(Database.problem(in: "photofinish") == nil, "a bare word is a database name")
        let typo = Database.problem(in: "host=/run/postgresql dbnme=photofinish")
        #expect(typo?.contains("dbnme") == true, "\(typo ?? "nil")")
        let database = Database(Database.Settings(conninfo: "host=/x dbnme=y"))
        #expect(throws: ClusterError.self) { try database.execute("SELECT 1") }
    }

    @Test func aServerThatIsNotThereIsUnreachableAndStatementsFailAtOnce() throws {
        let folder = "/tmp/pfpg-none-\(UInt32.random(in: 0...UInt32.max))"
        let events = Tally([Database.Event]())
        var settings = Database.Settings(conninfo: "host=\(folder) dbname=x user=photofinish")
        settings.backoff = Backoff(first: .milliseconds(50), maximum: .milliseconds(200))
        let database = Database(settings) { event in events.update { $0.append(event) } }
        defer { database.close() }
        let health = database.start(waitingUpTo: .seconds(10))
        guard case .down(_, let reason) = health else {
            Issue.record("expected down, got \(health)")
            return
        }
        #expect(reason.contains(folder), "libpq's words name the socket: \(reason)")
        let started = ContinuousClock.now
        do {
            _ = try database.execute("SELECT 1")
            Issue.record("a statement ran without a server")
        } catch {
            #expect(error.kind == .unreachable)
            #expect(error.description.contains("unreachable"))
        }
        #expect(ContinuousClock.now - started < .seconds(1), "no waiting while the link is down")
        #expect(events.current.contains { if case .down = $0 { true } else { false } })
        #expect(database.roundTrips >= 1, "connection attempts are counted")
    }

    @Test func theLinkComesBackWhenTheServerDoesAndNotificationsFlowAgain() throws {
        guard let server = PostgresServer.ownOrSkip() else { return }
        defer { server.destroy() }
        let conninfo = try server.makeDatabase()
        let events = Tally([Database.Event]())
        var settings = Database.Settings(conninfo: conninfo)
        settings.backoff = Backoff(first: .milliseconds(50), maximum: .milliseconds(300))
        settings.channels = ["pf_test"]
        let database = Database(settings) { event in events.update { $0.append(event) } }
        defer { database.close() }
        #expect(database.start(waitingUpTo: .seconds(30)).isUp)
        #expect(Poll.until(.seconds(10)) { events.current.contains(.listening) })
        _ = try database.execute("SELECT pg_notify('pf_test', 'one')")
        #expect(Poll.until(.seconds(10)) { events.current.contains(.notification(channel: "pf_test", payload: "one")) })

        try server.stop()
        // Seen without a statement of ours (the listener's connection closed).
        #expect(Poll.until(.seconds(10)) { !database.health.isUp }, "\(database.health)")
        #expect(throws: ClusterError.self) { try database.execute("SELECT 1") }
        let downs = events.current.filter { if case .down = $0 { true } else { false } }.count
        #expect(downs == 1, "one event for the outage, not one per attempt: \(events.current)")

        try server.start()
        #expect(Poll.until(.seconds(20)) { database.health.isUp }, "\(database.health)")
        #expect(try database.execute("SELECT 41 + 1 AS n")[0].int("n") == 42)
        let listening = events.current.filter { $0 == .listening }.count
        #expect(Poll.until(.seconds(10)) { events.current.filter { $0 == .listening }.count >= 2 },
                "listening again: \(listening)")
        _ = try database.execute("SELECT pg_notify('pf_test', 'two')")
        #expect(Poll.until(.seconds(10)) { events.current.contains(.notification(channel: "pf_test", payload: "two")) })
    }

    @Test func aConnectionKilledUnderneathIsReplacedAndTheStatementFailsAsUnreachable() throws {
        guard let f = ClusterFixture.make() else { return }
        let pid = try #require(try f.database.execute("SELECT pg_backend_pid() AS pid")[0].int("pid"))
        try f.server.psql("SELECT pg_terminate_backend(\(pid))")
        do {
            _ = try f.database.execute("SELECT 1")
            Issue.record("a statement on a killed connection succeeded")
        } catch {
            #expect(error.kind == .unreachable, "\(error)")
        }
        #expect(Poll.until(.seconds(10)) { (try? f.database.execute("SELECT 1")) != nil })
        let newPid = try f.database.execute("SELECT pg_backend_pid() AS pid")[0].int("pid")
        #expect(newPid != pid)
    }

    @Test func aStatementTheServerRefusesIsAQueryErrorWithItsState() throws {
        guard let f = ClusterFixture.make() else { return }
        do {
            _ = try f.database.execute("SELECT * FROM no_such_table")
            Issue.record("no error")
        } catch {
            #expect(error.kind == .query)
            #expect(error.sqlstate == "42P01")
            #expect(error.message.contains("no_such_table"))
        }
        // The connection is still good.
        #expect(try f.database.execute("SELECT $1::int + 1 AS n", ["1"])[0].int("n") == 2)
        // Parameters are never pasted: quotes go through as text.
        #expect(try f.database.execute("SELECT $1::text AS t", ["'; DROP TABLE x; --"])[0]["t"] == "'; DROP TABLE x; --")
        #expect(try f.database.execute("SELECT $1::text IS NULL AS n", [nil])[0].bool("n") == true)
    }
}
