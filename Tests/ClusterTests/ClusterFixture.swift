@testable import Cluster
import Foundation
import PostgresHarness
import Synchronization
import Testing

extension PostgresServer {
    /// The shared server; nil after printing why there is none (PostgreSQL not installed), or
    /// after failing the test (it is installed but would not start).
    static func sharedOrSkip(_ test: String = #function) -> PostgresServer? {
        do {
            return try shared()
        } catch {
            return skipOrFail(test, error)
        }
    }

    /// A server of the test's own (one it may stop and start), or nil as `sharedOrSkip`.
    static func ownOrSkip(_ test: String = #function) -> PostgresServer? {
        do {
            return try PostgresServer()
        } catch {
            return skipOrFail(test, error)
        }
    }

    private static func skipOrFail(_ test: String, _ error: any Error) -> PostgresServer? {
        if error is Unavailable {
            print("skipped: \(test): \(error)")
        } else {
            Issue.record("cannot start the tests' PostgreSQL: \(error)")
        }
        return nil
    }
}

/// A database of the test's own on the tests' PostgreSQL, migrated, and boards for as many
/// "hosts" as the test wants (each a registered host with its own identity; they share one
/// link, which is all the task semantics need: the database decides).
struct ClusterFixture {
    let server: PostgresServer
    let conninfo: String
    let database: Database

    /// nil after printing why (PostgreSQL not installed) or failing the test.
    static func make(_ test: String = #function, server: PostgresServer? = nil) -> ClusterFixture? {
        guard let server = server ?? PostgresServer.sharedOrSkip(test) else { return nil }
        do {
            let conninfo = try server.makeDatabase(test)
            let database = Database(Database.Settings(conninfo: conninfo, applicationName: "test"))
            guard database.start(waitingUpTo: .seconds(30)).isUp else {
                Issue.record("cannot connect to the tests' PostgreSQL: \(database.health)")
                return nil
            }
            _ = try Schema.migrate(database, host: "test")
            return ClusterFixture(server: server, conninfo: conninfo, database: database)
        } catch {
            Issue.record("cannot make a database: \(error)")
            return nil
        }
    }

    /// A registered host's board.
    func board(_ name: String, lease: Duration = .seconds(30), workers: Int = 4, inboxes: [String] = ["shop"]) throws -> TaskBoard {
        let identity = HostIdentity(name: name, version: "test", workers: workers)
        _ = try Hosts.register(identity, inboxes: inboxes, on: database)
        return TaskBoard(database: database, host: identity, lease: lease)
    }

    /// `count` photos as tasks of a new open batch.
    func tasks(_ count: Int, from first: Int = 1) -> [NewTask] {
        (first..<(first + count)).map { NewTask(photo: $0, source: String(format: "IMG_%04d.jpg", $0)) }
    }

    /// Runs `body(i)` for i in 0..<count on threads of their own, all started together.
    static func together(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        let gate = DispatchSemaphore(value: 0)
        for i in 0..<count {
            group.enter()
            Thread {
                gate.wait()
                body(i)
                group.leave()
            }.start()
        }
        for _ in 0..<count { gate.signal() }
        group.wait()
    }
}

/// A tally the threads of a test write into.
final class Tally<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func update<R: Sendable>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
    var current: Value { value.withLock { $0 } }
}
