@testable import Cluster
import Foundation
import PostgresHarness
import Testing

/// The task table's rules against a real PostgreSQL: taken once, leases, tokens, attempts, the
/// batch's outputs made by exactly one host.
@Suite struct TaskSemanticsTests {
    @Test func manyWorkersOnSeveralHostsNeverTakeATaskTwice() throws {
        guard let f = ClusterFixture.make() else { return }
        let hosts = try ["alpha", "beta", "gamma"].map { try f.board($0) }
        let batches = ["20261201-100000-aaaa", "20261201-100001-bbbb", "20261201-100002-cccc"]
        for batch in batches {
            try hosts[0].add(f.tasks(100), inbox: "shop", batch: batch)
        }
        for batch in batches { #expect(try hosts[1].close(inbox: "shop", batch: batch, takeOutputs: false) == nil) }
        // 3 hosts × 4 workers, each taking 1–3 at a time until nothing is left.
        let taken = Tally([TaskKey: [String]]())
        let completions = Tally([TaskKey: Int]())
        let failures = Tally([String]())
        ClusterFixture.together(12) { worker in
            let board = hosts[worker % 3]
            var idle = 0
            while idle < 3 {
                do {
                    let tasks = try board.take(from: ["shop"], limit: 1 + worker % 3)
                    if tasks.isEmpty { idle += 1; Thread.sleep(forTimeInterval: 0.02); continue }
                    idle = 0
                    for task in tasks {
                        taken.update { $0[task.key, default: []].append(board.host.name) }
                        let item = #"{"index": \#(task.key.photo), "host": "\#(board.host.name)"}"#
                        switch try board.complete(task, item: item, takeOutputs: false) {
                        case .completed: completions.update { $0[task.key, default: 0] += 1 }
                        case .stale: failures.update { $0.append("\(task.key): stale with its own fresh token") }
                        }
                    }
                } catch {
                    failures.update { $0.append("\(error)") }
                    return
                }
            }
        }
        #expect(failures.current.isEmpty, "\(failures.current)")
        let photos = taken.current.filter { $0.key.photo > 0 }
        #expect(photos.count == 300)
        #expect(photos.values.allSatisfy { $0.count == 1 }, "a task was taken twice")
        #expect(completions.current.filter { $0.key.photo > 0 }.values.allSatisfy { $0 == 1 })
        // Every host took some photos.
        let perHost = Dictionary(grouping: photos.values.map { $0[0] }, by: { $0 }).mapValues(\.count)
        #expect(Set(perHost.keys) == ["alpha", "beta", "gamma"], "\(perHost)")
        // Each batch's outputs were released exactly once and taken by one worker (the closes
        // above left them for any host).
        let outputs = taken.current.filter { $0.key.photo == 0 }
        #expect(outputs.count == 3)
        #expect(outputs.values.allSatisfy { $0.count == 1 })
        for batch in batches {
            let progress = try #require(try hosts[0].progress(inbox: "shop", batch: batch))
            #expect(progress.state == "published")
            #expect(progress.done == 100 && progress.photos == 100)
            let finished = try hosts[0].finished(inbox: "shop", batch: batch)
            #expect(finished.map(\.photo) == Array(1...100))
            // The report item recorded with the completion, and the host that finished it.
            for task in finished {
                let item = try #require(task.item)
                #expect(item.contains("\"index\": \(task.photo)") && item.contains(task.host))
            }
        }
    }

    @Test func aTaskNoHostCanFinishIsLeftToItsBatchsRunAfterTheAttemptsLimit() throws {
        guard let f = ClusterFixture.make() else { return }
        let a = try f.board("alpha"), b = try f.board("beta")
        try a.add(f.tasks(2), inbox: "shop", batch: "b1")
        #expect(try a.close(inbox: "shop", batch: "b1", takeOutputs: false) == nil)
        // Photo 2 is finished; photo 1 cannot be by anyone (its name unreadable everywhere).
        let one = try #require(try b.take(from: ["shop"], limit: 1).first)
        let two = try #require(try a.take(from: ["shop"], limit: 1).first)
        #expect(one.key.photo == 1 && two.key.photo == 2)
        #expect(try a.complete(two, item: "{}", takeOutputs: false) == .completed(outputs: nil))
        // The first refusal gives it back, counted (towards the limit, not as a start that
        // stopped the finisher); another host takes it.
        #expect(try b.refuse(one, reason: "its name cannot be read on host beta") == nil)
        let again = try #require(try a.take(from: ["shop"], limit: 1).first)
        #expect(again.key.photo == 1 && again.earlierAttempts == 0)
        // Refused again (the limit: 2 starts): done, left to the batch's run, the reason kept; and,
        // the batch's last photo, its outputs released to the caller as a completion does.
        guard case .completed(let outputs?) = try a.refuse(again, reason: "its name cannot be read on host alpha") else {
            Issue.record("not done after \(PhotoTask.attemptsLimit) starts")
            return
        }
        #expect(outputs.isBatchOutputs)
        let progress = try #require(try a.progress(inbox: "shop", batch: "b1"))
        #expect(progress.done == 2 && progress.photos == 2)
        let finished = try a.finished(inbox: "shop", batch: "b1")
        #expect(finished.first { $0.photo == 1 }?.item?.contains("its name cannot be read on host alpha") == true)
        let refused = try f.database.execute("SELECT refused FROM photofinish.tasks WHERE batch = 'b1' AND photo = 1")
        #expect(refused.rows.first?["refused"] == "its name cannot be read on host alpha")
        // A stale token refuses nothing.
        #expect(try b.refuse(again, reason: "late") == .stale)
        #expect(try a.take(from: ["shop"], limit: 5).isEmpty)
    }

    @Test func aBatchsTaskRecordsSayWhatWasFinishedAndHowOftenTheFinisherStopped() throws {
        guard let f = ClusterFixture.make() else { return }
        let a = try f.board("alpha", lease: .seconds(1)), b = try f.board("beta", lease: .seconds(1))
        #expect(try a.records(inbox: "shop", batch: "b2") == nil, "a batch the database does not know")
        try a.add(f.tasks(2), inbox: "shop", batch: "b2")
        // Photo 1 completed; photo 2 refused once, then its holder dies (a lease lost) and the
        // next taker sees one earlier start that stopped the finisher, not two.
        let one = try #require(try a.take(from: ["shop"], limit: 1).first)
        #expect(try a.complete(one, item: #"{"stem": "IMG_0001"}"#, takeOutputs: false) == .completed(outputs: nil))
        let two = try #require(try a.take(from: ["shop"], limit: 1).first)
        #expect(two.key.photo == 2)
        #expect(try a.refuse(two, reason: "not here") == nil)
        let again = try #require(try b.take(from: ["shop"], limit: 1).first)
        #expect(again.key.photo == 2 && again.earlierAttempts == 0, "a refusal is no crash")
        var third: PhotoTask?
        #expect(try Poll.until(.seconds(10), every: .milliseconds(100)) {
            third = try a.take(from: ["shop"], limit: 5).first { $0.key.photo == 2 }
            return third != nil
        })
        #expect(third?.earlierAttempts == 1)
        let records = try #require(try a.records(inbox: "shop", batch: "b2"))
        #expect(records.map(\.photo) == [1, 2])
        #expect(records[0].state == "done" && records[0].item?.contains("IMG_0001") == true && records[0].crashes == 0)
        #expect(records[1].state == "running" && records[1].crashes == 1, "\(records[1])")
    }

    @Test func anExpiredLeaseLetsAnotherHostTakeTheTaskAndTheStaleTokenWritesNothing() throws {
        guard let f = ClusterFixture.make() else { return }
        let a = try f.board("alpha", lease: .seconds(1)), b = try f.board("beta", lease: .seconds(1))
        try a.add(f.tasks(1), inbox: "shop", batch: "b1")
        let first = try #require(try a.take(from: ["shop"], limit: 5).first)
        #expect(first.earlierAttempts == 0)
        // While alpha's lease runs, beta gets nothing.
        #expect(try b.take(from: ["shop"], limit: 5).isEmpty)
        // alpha stops renewing (a dead host): beta takes it once the lease has expired.
        var second: PhotoTask?
        let took = try Poll.until(.seconds(10), every: .milliseconds(100)) {
            second = try b.take(from: ["shop"], limit: 5).first
            return second != nil
        }
        #expect(took)
        let retaken = try #require(second)
        #expect(retaken.key == first.key)
        #expect(retaken.token != first.token)
        #expect(retaken.earlierAttempts == 1, "alpha's start ended without a completion: counted")
        // alpha's token holds nothing any more: no renewal, no give-back, no completion.
        #expect(try a.renew([first.token], inboxes: ["shop"]).isEmpty)
        #expect(try a.giveBack([first.token]) == 0)
        #expect(try a.complete(first, item: #"{"by": "alpha"}"#) == .stale)
        // beta's holds.
        #expect(try b.renew([retaken.token], inboxes: ["shop"]) == [retaken.token])
        guard case .completed = try b.complete(retaken, item: #"{"by": "beta"}"#) else {
            Issue.record("beta's completion was refused")
            return
        }
        let finished = try a.finished(inbox: "shop", batch: "b1")
        #expect(finished.count == 1)
        #expect(finished[0].host == "beta")
        #expect(finished[0].item?.contains("beta") == true)
        // A completion whose answer was lost is sent again: a success again, nothing changed.
        #expect(try b.complete(retaken, item: #"{"by": "beta again"}"#) == .completed(outputs: nil))
        #expect(try a.finished(inbox: "shop", batch: "b1")[0].item?.contains("again") == false)
    }

    @Test func attemptsCountStartsThatDidNotEndAndGivingBackIsNotOne() throws {
        guard let f = ClusterFixture.make() else { return }
        let a = try f.board("alpha", lease: .seconds(1))
        try a.add(f.tasks(1), inbox: "shop", batch: "b1")
        // Given back (a stop, a share gone): not an attempt.
        let t1 = try #require(try a.take(from: ["shop"], limit: 1).first)
        #expect(try a.giveBack([t1.token]) == 1)
        let t2 = try #require(try a.take(from: ["shop"], limit: 1).first)
        #expect(t2.earlierAttempts == 0)
        // Expired twice: the third taker learns it stopped two finishers.
        var t3: PhotoTask?
        _ = try Poll.until(.seconds(10), every: .milliseconds(100)) {
            t3 = try a.take(from: ["shop"], limit: 1).first
            return t3 != nil
        }
        #expect(t3?.earlierAttempts == 1)
        var t4: PhotoTask?
        _ = try Poll.until(.seconds(10), every: .milliseconds(100)) {
            t4 = try a.take(from: ["shop"], limit: 1).first
            return t4 != nil
        }
        #expect(t4?.earlierAttempts == 2)
    }

    @Test func theBatchsOutputsStartOnceItIsClosedAndEveryPhotoIsDone() throws {
        guard let f = ClusterFixture.make() else { return }
        let a = try f.board("alpha"), b = try f.board("beta")
        #expect(try a.add(f.tasks(3), inbox: "shop", batch: "b1") == 3)
        // Recorded again (an answer lost): nothing doubles.
        #expect(try a.add(f.tasks(3), inbox: "shop", batch: "b1") == 0)
        let tasks = try b.take(from: ["shop"], limit: 10)
        #expect(tasks.map(\.key.photo).sorted() == [1, 2, 3])
        #expect(try b.complete(tasks[0], item: "{}") == .completed(outputs: nil))
        // Photos still arrive while others are done: the batch is open.
        #expect(try a.add(f.tasks(1, from: 4), inbox: "shop", batch: "b1") == 1)
        #expect(try a.close(inbox: "shop", batch: "b1") == nil, "photos are not done yet")
        #expect(try a.close(inbox: "shop", batch: "b1") == nil, "closing twice does nothing")
        // Closed: nothing more is added.
        #expect(throws: ClusterError.self) { try a.add(f.tasks(1, from: 5), inbox: "shop", batch: "b1") }
        do {
            try a.add(f.tasks(1, from: 5), inbox: "shop", batch: "b1")
        } catch {
            #expect(error.sqlstate == "PF001")
            #expect(error.message.contains("closed"))
        }
        let fourth = try #require(try a.take(from: ["shop"], limit: 10).first)
        #expect(fourth.key.photo == 4)
        #expect(try b.complete(tasks[1], item: "{}") == .completed(outputs: nil))
        #expect(try a.complete(fourth, item: "{}") == .completed(outputs: nil))
        // The last photo's completion starts the outputs, held by its host.
        guard case .completed(let outputs?) = try b.complete(tasks[2], item: "{}") else {
            Issue.record("the last photo did not release the batch's outputs")
            return
        }
        #expect(outputs.isBatchOutputs && outputs.key.batch == "b1")
        #expect(try a.take(from: ["shop"], limit: 10).isEmpty, "the outputs are beta's")
        #expect(try b.progress(inbox: "shop", batch: "b1")?.outputs == "running")
        #expect(try b.complete(outputs, item: nil) == .completed(outputs: nil))
        #expect(try b.progress(inbox: "shop", batch: "b1")?.state == "published")
        // Closing a batch the database does not know is an error of its own.
        do {
            _ = try a.close(inbox: "shop", batch: "nope")
            Issue.record("closing an unknown batch succeeded")
        } catch {
            #expect(error.sqlstate == "PF002")
        }
        // Published batches go after a while, with their tasks.
        #expect(try a.prune(publishedBefore: .seconds(3600)) == 0)
        #expect(try a.prune(publishedBefore: .zero) == 1)
        #expect(try a.progress(inbox: "shop", batch: "b1") == nil)
    }

    @Test func ofTwoHostsCompletingTheLastTwoPhotosAtOnceExactlyOneMakesTheOutputs() throws {
        guard let f = ClusterFixture.make() else { return }
        let hosts = try [f.board("alpha"), f.board("beta")]
        for round in 0..<20 {
            let batch = "race-\(round)"
            try hosts[0].add(f.tasks(2), inbox: "shop", batch: batch)
            _ = try hosts[0].close(inbox: "shop", batch: batch)
            let a = try #require(try hosts[0].take(from: ["shop"], limit: 1).first)
            let b = try #require(try hosts[1].take(from: ["shop"], limit: 1).first)
            let outputs = Tally(0)
            ClusterFixture.together(2) { i in
                if case .completed(let o?) = try? hosts[i].complete(i == 0 ? a : b, item: "{}") {
                    #expect(o.key.batch == batch)
                    outputs.update { $0 += 1 }
                }
            }
            #expect(outputs.current == 1, "round \(round): \(outputs.current) hosts got the outputs")
        }
    }

    @Test func aNewStartOfAHostFreesWhatTheEarlierOneHeldAndACleanStopGivesItBack() throws {
        guard let f = ClusterFixture.make() else { return }
        try f.board("beta").add(f.tasks(4), inbox: "shop", batch: "b1")
        let crashed = try f.board("alpha")
        let held = try crashed.take(from: ["shop"], limit: 2)
        #expect(held.count == 2)
        // alpha is killed and starts again (a new instance of the same host, a new process).
        let again = HostIdentity(name: "alpha", version: "test", workers: 4, pid: getpid() + 100_000)
        let registration = try Hosts.register(again, inboxes: ["shop"], on: f.database)
        #expect(registration.released == 2)
        #expect(registration.previous?.stopped == false)
        // The earlier instance is this machine's and not running any more: no warning.
        #expect(!registration.looksAlive(lease: .seconds(30), identity: again, isRunning: { _ in false }))
        #expect(registration.looksAlive(lease: .seconds(30), identity: again, isRunning: { _ in true }))
        let board = TaskBoard(database: f.database, host: again, lease: .seconds(30))
        let retaken = try board.take(from: ["shop"], limit: 4)
        #expect(retaken.count == 4)
        let counted: [Int] = retaken.filter { $0.earlierAttempts == 1 }.map(\.key.photo).sorted()
        let killed: [Int] = held.map(\.key.photo).sorted()
        #expect(counted == killed, "the killed start's tasks count one attempt")
        // A clean stop gives everything back, not counted.
        #expect(try Hosts.stop(again, on: f.database) == 4)
        let beta = try f.board("beta")
        let after = try beta.take(from: ["shop"], limit: 4)
        #expect(after.count == 4)
        #expect(after.filter { $0.earlierAttempts == 1 }.count == 2)
        #expect(after.filter { $0.earlierAttempts == 0 }.count == 2)
    }

    @Test func tasksAreTakenOnlyFromTheHostsFoldersOldestFirst() throws {
        guard let f = ClusterFixture.make() else { return }
        let a = try f.board("alpha", inboxes: ["shop", "studio"])
        try a.add(f.tasks(2), inbox: "studio", batch: "s1")
        try a.add(f.tasks(2), inbox: "shop", batch: "p1")
        try a.add(f.tasks(2, from: 3), inbox: "studio", batch: "s1")
        #expect(try a.take(from: ["elsewhere"], limit: 10).isEmpty)
        let shop = try a.take(from: ["shop"], limit: 10)
        #expect(shop.map(\.key.inbox) == ["shop", "shop"])
        let studio = try a.take(from: ["shop", "studio"], limit: 10)
        #expect(studio.map(\.key.photo) == [1, 2, 3, 4])
        // Names of any bytes a text can hold go through whole (arrays are quoted, not pasted).
        let odd = #"we"ird\, {folder}"#
        try a.add([NewTask(photo: 1, source: "ü \"x\".jpg", detail: #"{"pair": ["a.cr3", "a.jpg"]}"#)], inbox: odd, batch: "o1")
        let got = try #require(try a.take(from: [odd], limit: 1).first)
        #expect(got.key.inbox == odd)
        #expect(got.source == "ü \"x\".jpg")
        #expect(got.detail == #"{"pair": ["a.cr3", "a.jpg"]}"#)
    }
}
