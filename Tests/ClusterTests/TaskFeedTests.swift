@testable import Cluster
import Foundation
import PostgresHarness
import TestSupport
import Testing

/// The workers' way to the task table (TaskFeed): tasks taken ahead, completions sent from a
/// thread of their own and held while the database does not answer, what was taken ahead
/// given back at a stop.
@Suite(.ownThreads) struct TaskFeedTests {
    @Test func workersOfTwoHostsFinishEveryTaskOnceThroughTheirFeeds() async throws {
        guard let server = PostgresServer.sharedOrSkip() else { return }
        let conninfo = try server.makeDatabase()
        let members = ["alpha", "beta"].map { MemberTests.member($0, conninfo) }
        for member in members { #expect(member.start(waitingUpTo: .seconds(30)).isUp) }
        let feeds = members.map { TaskFeed(member: $0, ahead: 1, poll: .milliseconds(500)) }
        try members[0].add((1...60).map { NewTask(photo: $0, source: "IMG_\($0).jpg") }, inbox: "shop", batch: "b1")
        _ = try members[0].close(inbox: "shop", batch: "b1")
        let outputs = Tally([String]())
        let taken = Tally([Int]())
        await withTaskGroup(of: Void.self) { group in
            for (h, feed) in feeds.enumerated() {
                for _ in 0..<3 {
                    group.addTask {
                        while taken.current.filter({ $0 > 0 }).count < 60, let task = await feed.next() {
                            taken.update { $0.append(task.key.photo) }
                            if task.key.photo == 0 {
                                feed.complete(task, item: nil) { _ in outputs.update { $0.append("\(h)") } }
                                continue
                            }
                            feed.complete(task, item: "{\"index\": \(task.key.photo)}") { outcome in
                                if case .completed(let o?) = outcome {
                                    outputs.update { $0.append("held by \(h)") }
                                    _ = try? members[h].complete(o, item: nil)
                                }
                            }
                        }
                    }
                }
            }
            // The workers still waiting once every photo is taken are let go by the stop (from a
            // thread of its own: it waits). The workers run on `OwnThreads`: on the cooperative
            // pool (two threads on CI, held by the suite's synchronous tests) 60 tasks once took
            // 342 s in the full suite on two loaded cores; alone, or on their own threads, 1–2 s.
            Thread {
                _ = Poll.until(.seconds(120)) { taken.current.filter { $0 > 0 }.count >= 60 && feeds.allSatisfy { $0.pending == 0 } }
                for feed in feeds { feed.stop() }
            }.start()
        }
        let photos = taken.current.filter { $0 > 0 }
        #expect(photos.sorted() == Array(1...60), "each photo taken once: \(photos.sorted())")
        let finished = try members[0].board.finished(inbox: "shop", batch: "b1")
        #expect(finished.map(\.photo) == Array(1...60))
        #expect(Set(finished.map(\.host)) == ["alpha", "beta"], "every host finished some")
        #expect(outputs.current.filter { $0.hasPrefix("held by") }.count == 1, "\(outputs.current)")
        #expect(try members[0].board.progress(inbox: "shop", batch: "b1")?.state == "published")
        for member in members { member.stop() }
    }

    @Test func completionsWaitForTheDatabaseAndWhatWasTakenAheadGoesBackAtAStop() async throws {
        guard let server = PostgresServer.ownOrSkip() else { return }
        defer { server.destroy() }
        let conninfo = try server.makeDatabase()
        let member = MemberTests.member("alpha", conninfo, lease: .seconds(3))
        let other = MemberTests.member("beta", conninfo)
        #expect(member.start(waitingUpTo: .seconds(30)).isUp)
        #expect(other.start(waitingUpTo: .seconds(30)).isUp)
        defer { member.stop(); other.stop() }
        try member.add((1...8).map { NewTask(photo: $0, source: "IMG_\($0).jpg") }, inbox: "shop", batch: "b1")
        let feed = TaskFeed(member: member, ahead: 2, poll: .milliseconds(200))
        var held: [PhotoTask] = []
        for _ in 0..<4 { if let task = await feed.next() { held.append(task) } }
        #expect(held.count == 4)
        // Two more taken ahead for the next workers (the feeder's own pace).
        #expect(Poll.until(.seconds(20)) { feed.buffered == 2 })

        // The database goes away: the completions are kept, none lost, none sent twice.
        try server.stop()
        #expect(Poll.until(.seconds(20)) { !member.health.isUp })
        let outcomes = Tally([Completion]())
        for task in held { feed.complete(task, item: "{\"index\": \(task.key.photo)}") { c in outcomes.update { $0.append(c) } } }
        #expect(feed.pending == 4)
        try server.start()
        #expect(Poll.until(.seconds(60)) { feed.pending == 0 }, "pending \(feed.pending)")
        #expect(outcomes.current.count == 4 && outcomes.current.allSatisfy { $0 == .completed(outputs: nil) }, "\(outcomes.current)")
        #expect(try member.board.finished(inbox: "shop", batch: "b1").map(\.photo).sorted() == held.map(\.key.photo).sorted())

        // Stopped, the two taken ahead are ready for any host at once (no attempt counted).
        feed.stop()
        #expect(feed.buffered == 0)
        let progress = try #require(try member.board.progress(inbox: "shop", batch: "b1"))
        #expect(progress.done == 4 && progress.ready == 4 && progress.running == 0, "\(progress)")
        // (The other host's first statement after the outage may meet its old connection: again.)
        var next: [PhotoTask] = []
        #expect(Poll.until(.seconds(20)) { next += (try? other.take(limit: 10)) ?? []; return next.count >= 4 })
        #expect(next.count == 4 && next.allSatisfy { $0.earlierAttempts == 0 }, "\(next)")
        // A feed stopped hands out nothing more.
        #expect(await feed.next() == nil)
    }

    @Test func completionsGivenAfterTheTakingStoppedAreRecordedBeforeTheMemberLeaves() async throws {
        guard let server = PostgresServer.sharedOrSkip() else { return }
        let conninfo = try server.makeDatabase()
        let member = MemberTests.member("alpha", conninfo)
        let other = MemberTests.member("beta", conninfo)
        #expect(member.start(waitingUpTo: .seconds(30)).isUp)
        #expect(other.start(waitingUpTo: .seconds(30)).isUp)
        defer { other.stop() }
        try member.add((1...6).map { NewTask(photo: $0, source: "IMG_\($0).jpg") }, inbox: "shop", batch: "b1")
        let feed = TaskFeed(member: member, ahead: 1, poll: .milliseconds(200))
        var held: [PhotoTask] = []
        for _ in 0..<4 { if let task = await feed.next() { held.append(task) } }
        #expect(held.count == 4)
        // A daemon's stop: its workers get no more tasks, those finishing a photo complete it after.
        feed.stopTaking()
        #expect(await feed.next() == nil)
        for task in held { feed.complete(task, item: "{\"index\": \(task.key.photo)}") }
        #expect(feed.stop(flush: .seconds(30)) == 0, "every completion sent before the member leaves")
        member.stop()
        // Recorded as done, not given back by the member's stop: another host takes only the rest.
        let progress = try #require(try other.board.progress(inbox: "shop", batch: "b1"))
        #expect(progress.done == 4 && progress.running == 0, "\(progress)")
        #expect(try other.board.finished(inbox: "shop", batch: "b1").map(\.photo).sorted() == held.map(\.key.photo).sorted())
        var next: [PhotoTask] = []
        #expect(Poll.until(.seconds(20)) { next += (try? other.take(limit: 10)) ?? []; return next.count >= 2 })
        #expect(Set(next.map(\.key.photo)) == Set(1...6).subtracting(held.map(\.key.photo)), "\(next)")
    }

    @Test func aStopWhileTheDatabaseDoesNotAnswerWaitsForItOnlyUpToTheFlush() async throws {
        guard let server = PostgresServer.ownOrSkip() else { return }
        defer { server.destroy() }
        let conninfo = try server.makeDatabase()
        let member = MemberTests.member("alpha", conninfo)
        #expect(member.start(waitingUpTo: .seconds(30)).isUp)
        defer { member.stop() }
        try member.add((1...3).map { NewTask(photo: $0, source: "IMG_\($0).jpg") }, inbox: "shop", batch: "b1")
        let feed = TaskFeed(member: member, ahead: 0, poll: .milliseconds(200))
        var held: [PhotoTask] = []
        for _ in 0..<3 { if let task = await feed.next() { held.append(task) } }
        feed.stopTaking()
        try server.stop()
        #expect(Poll.until(.seconds(20)) { !member.health.isUp })
        for task in held { feed.complete(task, item: nil) }
        // The stop returns (the flush's bound), saying what it could not send.
        #expect(feed.stop(flush: .milliseconds(500)) == 3)
        try server.start()
    }

    @Test func aGiveBackTheDatabaseDidNotRecordIsNoLongerRenewedAndAnotherHostTakesTheTask() async throws {
        guard let server = PostgresServer.ownOrSkip() else { return }
        defer { server.destroy() }
        let conninfo = try server.makeDatabase()
        let member = MemberTests.member("alpha", conninfo, lease: .seconds(3))
        let other = MemberTests.member("beta", conninfo, lease: .seconds(3))
        #expect(member.start(waitingUpTo: .seconds(30)).isUp)
        #expect(other.start(waitingUpTo: .seconds(30)).isUp)
        defer { member.stop(); other.stop() }
        try member.add([NewTask(photo: 1, source: "IMG_1.jpg")], inbox: "shop", batch: "b1")
        let feed = TaskFeed(member: member, ahead: 0, poll: .milliseconds(200))
        defer { feed.stop(flush: .seconds(1)) }
        let task = try #require(await feed.next())
        #expect(member.held.map(\.token) == [task.token])

        // Given back (a worker stopping) while the database does not answer: not recorded, and
        // no longer this host's to renew — it used to stay held and renewed, never finished.
        try server.stop()
        #expect(Poll.until(.seconds(20)) { !member.health.isUp })
        feed.giveBack(task)
        #expect(member.held.isEmpty, "\(member.held)")

        // The database back: the other host takes it (given back at this host's reconnect, or
        // once its lease ran out).
        try server.start()
        var next: [PhotoTask] = []
        #expect(Poll.until(.seconds(60)) { next += (try? other.take(limit: 1)) ?? []; return !next.isEmpty })
        #expect(next.map(\.key.photo) == [1], "\(next)")
        #expect(member.held.isEmpty)
    }
}
