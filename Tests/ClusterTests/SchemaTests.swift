@testable import Cluster
import Foundation
import PostgresHarness
import Testing

@Suite struct SchemaTests {
    @Test func anEmptyDatabaseIsMigratedOnceEvenByHostsStartingTogether() throws {
        guard let server = PostgresServer.sharedOrSkip() else { return }
        let conninfo = try server.makeDatabase()
        let links = (0..<4).map { _ in Database(Database.Settings(conninfo: conninfo)) }
        defer { links.forEach { $0.close() } }
        for link in links { #expect(link.start(waitingUpTo: .seconds(30)).isUp) }
        #expect(try Schema.history(links[0]).isEmpty)
        let outcomes = Tally([Schema.Outcome]())
        let failures = Tally([String]())
        ClusterFixture.together(4) { i in
            do {
                let outcome = try Schema.migrate(links[i], host: "host\(i)")
                outcomes.update { $0.append(outcome) }
            } catch {
                failures.update { $0.append("\(error)") }
            }
        }
        #expect(failures.current.isEmpty, "\(failures.current)")
        // One of them made it; the others found it made.
        #expect(outcomes.current.filter { $0 == Schema.Outcome(from: 0, to: Schema.version) }.count == 1)
        #expect(outcomes.current.filter { $0 == Schema.Outcome(from: Schema.version, to: Schema.version) }.count == 3)
        let history = try Schema.history(links[0])
        #expect(history.map(\.version) == Array(1...Schema.version))
        #expect(history[0].host.hasPrefix("host"))
        #expect(history[0].summary == Schema.migrations[0].summary)
        // The functions work: a statement of each kind.
        #expect(try links[1].execute("SELECT count(*) AS n FROM photofinish.tasks")[0].int("n") == 0)
    }

    @Test func aSchemaNewerThanThisProgramIsRefusedWithWhatToDo() throws {
        guard let f = ClusterFixture.make() else { return }
        _ = try f.database.execute("INSERT INTO photofinish.schema_version (version, summary, host) VALUES (99, 'future', 'elsewhere')")
        do {
            _ = try Schema.migrate(f.database, host: "old")
            Issue.record("a newer schema was accepted")
        } catch {
            #expect(error.kind == .schema)
            #expect(error.message.contains("version 99"))
            #expect(error.message.contains("upgrade photofinish"))
        }
        // Nothing was changed by the refusal.
        #expect(try Schema.history(f.database).last?.version == 99)
    }

    @Test func aMigrationThatFailsLeavesNothingOfItself() throws {
        guard let server = PostgresServer.sharedOrSkip() else { return }
        let conninfo = try server.makeDatabase()
        // A table of that name already there (someone's own): version 1 cannot be applied.
        let database = Database(Database.Settings(conninfo: conninfo))
        defer { database.close() }
        #expect(database.start(waitingUpTo: .seconds(30)).isUp)
        _ = try database.execute("CREATE SCHEMA photofinish")
        _ = try database.execute("CREATE TABLE photofinish.tasks (x int)")
        do {
            _ = try Schema.migrate(database, host: "h")
            Issue.record("the migration succeeded over a foreign table")
        } catch {
            #expect(error.kind == .schema)
            #expect(error.message.contains("version 1"))
            #expect(error.message.contains("already exists"))
        }
        // Rolled back whole: no hosts table, no version recorded, the connection still usable.
        #expect(try database.execute("SELECT to_regclass('photofinish.hosts') IS NULL AS gone")[0].bool("gone") == true)
        #expect(try Schema.history(database).isEmpty)
    }
}
