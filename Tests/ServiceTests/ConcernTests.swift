import Batches
import Cluster
import Foundation
import HotFolders
@testable import Service
import System
import Testing

/// A hot folder's concerns driven with plain values: times, names, batches that are a name
/// and a count (docs/architecture.md, The service core).
struct TestBatch: FolderBatch, Equatable {
    var id: String
    var photoCount: Int
}

private func at(_ seconds: Double) -> Duration { .milliseconds(Int64(seconds * 1000)) }

struct TakingUpTests {
    let problem = FolderProblem(why: "/srv/x does not exist", fix: ["photofinish init /srv/x"])

    @Test func aFolderTakenUpIsWatchedAndItsProofMade() {
        var concern = TakingUp(rescanInterval: .seconds(300))
        #expect(concern.handle(.start(noRoom: nil), now: at(0)) == [.takeRoom, .takeUp(attempt: 1)])
        #expect(concern.handle(.start(noRoom: nil), now: at(0)).isEmpty, "one take-up at a time")
        #expect(concern.handle(.takenUp(attempt: 1, problem: nil, stopping: false), now: at(1)) == [.watch, .makeProof])
        #expect(concern.isWatched && concern.hasRoom && concern.nextDeadline == nil)
        #expect(concern.handle(.reloaded(templateChanged: false, noRoom: nil), now: at(2)).isEmpty)
        #expect(concern.handle(.reloaded(templateChanged: true, noRoom: nil), now: at(3)) == [.makeProof])
    }

    @Test func aRefusedFolderIsTriedAgainEveryRescanAndSaidOncePerReason() {
        var concern = TakingUp(rescanInterval: .seconds(300))
        _ = concern.handle(.start(noRoom: nil), now: at(0))
        #expect(concern.handle(.takenUp(attempt: 1, problem: problem, stopping: false), now: at(1))
                == [.giveRoomBack, .refuse(problem, log: true)])
        #expect(concern.nextDeadline == at(301))
        #expect(concern.handle(.due(stopping: false, noRoom: nil), now: at(300)).isEmpty, "not yet")
        #expect(concern.handle(.due(stopping: true, noRoom: nil), now: at(301)).isEmpty, "not while stopping")
        #expect(concern.handle(.due(stopping: false, noRoom: nil), now: at(301)) == [.takeRoom, .takeUp(attempt: 2)])
        // The same reason again: shown, not logged again.
        #expect(concern.handle(.takenUp(attempt: 2, problem: problem, stopping: false), now: at(302))
                == [.giveRoomBack, .refuse(problem, log: false)])
        // A reload tries it at once.
        #expect(concern.handle(.reloaded(templateChanged: false, noRoom: nil), now: at(303)) == [.takeRoom, .takeUp(attempt: 3)])
        #expect(concern.handle(.takenUp(attempt: 2, problem: nil, stopping: false), now: at(304)).isEmpty,
                "an older take-up's answer is stale")
        #expect(concern.handle(.takenUp(attempt: 3, problem: nil, stopping: false), now: at(305)) == [.watch, .makeProof])
    }

    @Test func aFolderBeyondTheOpenFileLimitIsRefusedWithoutATakeUp() {
        var concern = TakingUp(rescanInterval: .seconds(60))
        let noRoom = OpenFiles.Budget(limit: 1024, folders: 1000, work: .init(claimThreads: 4, batchSlots: 4, workers: 2)).problem(systemd: true)
        #expect(concern.handle(.start(noRoom: noRoom), now: at(0)) == [.refuse(noRoom, log: false)])
        #expect(!concern.hasRoom && concern.attempts == 0 && concern.nextDeadline == at(60))
    }
}

struct ClaimingTests {
    typealias Concern = Claiming<TestBatch>
    let alone = Concern.Hold.alone

    @Test func photosAreClaimedIntoTheOpenBatchAsTheySettleAndItClosesIntoTheQueue() {
        var concern = Concern()
        #expect(concern.mayClaim(stopping: false, lowSpace: false, roles: .alone))
        #expect(concern.handle(.settled(["a.jpg"], closes: false, stopping: false, hold: alone), now: at(0))
                == [.claim(["a.jpg"], into: nil, closes: false)])
        #expect(!concern.mayClaim(stopping: false, lowSpace: false, roles: .alone), "one claim at a time")
        let opened = TestBatch(id: "b1", photoCount: 1)
        #expect(concern.handle(.claimed(opened: opened, whole: nil, unreadable: [], stopping: false, hold: alone), now: at(1)).isEmpty)
        #expect(concern.open == opened && concern.mayClaim(stopping: false, lowSpace: false, roles: .alone))
        #expect(concern.handle(.settled(["b.jpg"], closes: true, stopping: false, hold: alone), now: at(2))
                == [.claim(["b.jpg"], into: opened, closes: true)])
        let grown = TestBatch(id: "b1", photoCount: 2)
        #expect(concern.handle(.claimed(opened: grown, whole: nil, unreadable: [], stopping: false, hold: alone), now: at(3))
                == [.closed(grown), .log(.info("claimed batch of 2 photos (claimed as they settled)", batch: "b1")), .queue(grown)])
        #expect(concern.open == nil && concern.claimedAhead == 1)
        #expect(!concern.mayClaim(stopping: false, lowSpace: false, roles: .alone), "one batch ahead of the one being finished")
        #expect(concern.handle(.started, now: at(4)).isEmpty)
        #expect(concern.mayClaim(stopping: false, lowSpace: false, roles: .alone))
        #expect(!concern.mayClaim(stopping: false, lowSpace: true, roles: .alone), "below minFreeSpace")
        #expect(!concern.mayClaim(stopping: true, lowSpace: false, roles: .alone))
    }

    @Test func aBatchClaimedWholeIsQueuedAndItsUnreadableFilesSaid() {
        var concern = Concern()
        _ = concern.handle(.settled(["a.jpg", "b.jpg"], closes: true, stopping: false, hold: alone), now: at(0))
        let whole = TestBatch(id: "b2", photoCount: 2)
        let unreadable = Concern.Unreadable(batch: "b2", file: "b.jpg", error: "cannot read: Input/output error")
        #expect(concern.handle(.claimed(opened: nil, whole: whole, unreadable: [unreadable], stopping: false, hold: alone), now: at(1))
                == [.log(.info("claimed batch of 2 photos", batch: "b2")),
                    .log(.warning("cannot read: Input/output error: it is claimed and will fail as io-error unless it can be read by then",
                                  batch: "b2", file: "b.jpg")),
                    .queue(whole)])
    }

    @Test func aStopClosesTheOpenBatchOnceTheClaimUnderWayEnds() {
        var concern = Concern()
        _ = concern.handle(.settled(["a.jpg"], closes: false, stopping: false, hold: alone), now: at(0))
        #expect(concern.handle(.stop(hold: alone), now: at(1)).isEmpty, "the claim under way closes it")
        let opened = TestBatch(id: "b3", photoCount: 1)
        #expect(concern.handle(.claimed(opened: opened, whole: nil, unreadable: [], stopping: true, hold: alone), now: at(2))
                == [.closed(opened), .log(.info("claimed batch of 1 photo (claimed as they settled)", batch: "b3")), .queue(opened)])
    }

    /// In a cluster an open batch held in the database closes only while that hold is certain,
    /// and on the share first.
    @Test func aHeldBatchWhoseHoldIsNotCertainClosesWhenItIs() {
        var concern = Concern()
        _ = concern.handle(.settled(["a.jpg"], closes: false, stopping: false, hold: alone), now: at(0))
        let opened = TestBatch(id: "b4", photoCount: 1)
        _ = concern.handle(.claimed(opened: opened, whole: nil, unreadable: [], stopping: false, hold: alone), now: at(1))
        let uncertain = Concern.Hold(held: true, writable: false)
        #expect(concern.handle(.settled([], closes: true, stopping: false, hold: uncertain), now: at(2)).isEmpty)
        #expect(concern.closeDue && concern.nextDeadline == at(2.25))
        #expect(!concern.mayClaim(stopping: false, lowSpace: false, roles: .alone), "nothing is added to a batch due to close")
        #expect(concern.handle(.due(hold: .init(held: true, writable: true)), now: at(2.1)).isEmpty, "not yet")
        #expect(concern.handle(.due(hold: .init(held: true, writable: true)), now: at(2.25))
                == [.closed(opened), .log(.info("claimed batch of 1 photo (claimed as they settled)", batch: "b4")), .closeOnShare(opened)])
        #expect(concern.claiming && concern.nextDeadline == nil)
        #expect(concern.handle(.closedOnShare(opened), now: at(3)) == [.queue(opened)])
        #expect(!concern.claiming && concern.claimedAhead == 1)
    }

    @Test func anOpenBatchAdoptedByAnotherHostIsForgottenHere() {
        var concern = Concern()
        _ = concern.handle(.settled(["a.jpg"], closes: false, stopping: false, hold: alone), now: at(0))
        let opened = TestBatch(id: "b5", photoCount: 1)
        _ = concern.handle(.claimed(opened: opened, whole: nil, unreadable: [], stopping: false, hold: alone), now: at(1))
        #expect(concern.handle(.lost(id: "other", by: "pf-b"), now: at(2)).isEmpty)
        #expect(concern.handle(.lost(id: "b5", by: "pf-b"), now: at(2))
                == [.forget(opened), .log(.warning("batch b5 was adopted by host pf-b while this host's database session was gone: it is left to it",
                                                   batch: "b5"))])
        #expect(concern.open == nil)
        // An adopted batch becomes the open batch; one adopted while another is open is queued.
        let adopted = TestBatch(id: "b6", photoCount: 3)
        #expect(concern.handle(.adopted(adopted, stopping: false, hold: alone), now: at(3)).isEmpty && concern.open == adopted)
        #expect(concern.handle(.adopted(TestBatch(id: "b7", photoCount: 1), stopping: false, hold: alone), now: at(4))
                == [.queue(TestBatch(id: "b7", photoCount: 1))])
        #expect(!concern.mayClaim(stopping: false, lowSpace: false, roles: .init(mayClaim: true, mayWriteOpen: false)),
                "the open batch is written only while its hold is certain")
    }
}

struct HousekeepingTests {
    @Test func retentionSweepsAtTakeUpThenHourlyOrSoonAfterAClaimHeldItBack() {
        var concern = Housekeeping(keepsForever: false)
        _ = concern.handle(.watching, now: at(10))
        #expect(concern.nextDeadline == at(10))
        #expect(concern.handle(.due(stopping: false), now: at(10)) == [.sweep])
        #expect(concern.nextDeadline == nil, "none while a sweep runs")
        _ = concern.handle(.swept(deferred: true), now: at(11))
        #expect(concern.nextDeadline == at(71))
        _ = concern.handle(.swept(deferred: false), now: at(71))
        #expect(concern.nextDeadline == at(3671))
        _ = concern.handle(.keepChanged(forever: true), now: at(80))
        #expect(concern.nextDeadline == nil)
        _ = concern.handle(.swept(deferred: false), now: at(90))
        #expect(concern.nextDeadline == nil, "kept for ever: never swept")
    }

    @Test func belowMinFreeSpaceClaimsStopUntilThereIsRoom() {
        var concern = Housekeeping(keepsForever: true)
        let low = "only 1.2 GiB free on /srv/shop, under minFreeSpace 2 GiB"
        #expect(concern.handle(.space(low: low), now: at(0)) == [.lowSpace(low, log: true)])
        #expect(concern.lowSpace == low && concern.nextDeadline == at(5))
        #expect(concern.handle(.due(stopping: false), now: at(5)) == [.checkSpace])
        #expect(concern.handle(.space(low: low), now: at(6)) == [.lowSpace(low, log: false)], "said once")
        #expect(concern.handle(.space(low: nil), now: at(11)) == [.roomAgain])
        #expect(concern.lowSpace == nil && concern.nextDeadline == nil)
        #expect(concern.handle(.space(low: nil), now: at(12)).isEmpty)
    }
}

struct RecoveringTests {
    @Test func onAShareTheLeasesAreLookedAtEveryPollAndRecoveryRunsWhenOneRunsOut() {
        var concern = Recovering(pollInterval: .seconds(2), rescanInterval: .seconds(300))
        _ = concern.handle(.watching(shared: true), now: at(0))
        #expect(concern.nextDeadline == at(2))
        #expect(concern.handle(.due(stopping: false, available: true, shareReturned: false), now: at(2)) == [.lookAtLeases])
        #expect(concern.handle(.due(stopping: false, available: true, shareReturned: false), now: at(4)).isEmpty,
                "one look at a time")
        #expect(concern.handle(.leasesLooked(due: false, waiting: ["Batch x of b waits to be taken over"], stopping: false,
                                             available: true), now: at(5)) == [.showTakeovers(["Batch x of b waits to be taken over"])])
        #expect(concern.handle(.due(stopping: false, available: false, shareReturned: false), now: at(6)).isEmpty,
                "not while the share does not answer")
        #expect(concern.handle(.due(stopping: false, available: true, shareReturned: false), now: at(8)) == [.lookAtLeases])
        #expect(concern.handle(.leasesLooked(due: true, waiting: [], stopping: false, available: true), now: at(9))
                == [.showTakeovers([]), .recover])
    }

    @Test func recoveryRunsEveryRescanAndAtOnceWhenTheShareAnswersAgain() {
        var concern = Recovering(pollInterval: .seconds(2), rescanInterval: .seconds(300))
        _ = concern.handle(.watching(shared: false), now: at(0))
        #expect(concern.nextDeadline == at(300), "a local folder's leases are not looked at")
        #expect(concern.handle(.due(stopping: false, available: true, shareReturned: true), now: at(10)) == [.recover])
        #expect(concern.handle(.due(stopping: false, available: true, shareReturned: false), now: at(300)) == [.recover])
        #expect(concern.nextDeadline == at(600))
        // A finished batch's work folder left over: recovery runs a minute later, not at the rescan.
        _ = concern.handle(.leftOver, now: at(310))
        #expect(concern.nextDeadline == at(375))
        #expect(concern.handle(.due(stopping: false, available: true, shareReturned: false), now: at(375)) == [.recover])
        #expect(concern.handle(.due(stopping: true, available: true, shareReturned: true), now: at(675)).isEmpty)
    }
}

struct AdoptingTests {
    typealias Concern = Adopting<TestBatch>
    let key = ClaimerRoles.BatchKey(inbox: "shop", batch: "20261201-101500-3f2a")

    @Test func aDeadClaimersOpenBatchIsAdoptedWhenTheFolderCanTakeIt() {
        var concern = Concern(inbox: "shop")
        #expect(concern.handle(.holding(.adopt(key, from: "pf-a", lock: "host=a"), canAdopt: false), now: at(0))
                == [.adoptionEnded(key, adopted: false)])
        #expect(concern.handle(.holding(.adopt(key, from: "pf-a", lock: "host=a"), canAdopt: true), now: at(0))
                == [.lookToAdopt(key, from: "pf-a", lock: "host=a")])
        let batch = TestBatch(id: key.batch, photoCount: 4)
        #expect(concern.handle(.adopted(key, from: "pf-a", .success(batch), canOpen: true), now: at(1))
                == [.adoptionEnded(key, adopted: true),
                    .log(.notice("adopted open batch \(key.batch) (4 photos) of host pf-a, whose database session ended: the photos dropped from now join it",
                                 batch: key.batch)),
                    .open(batch)])
        #expect(concern.handle(.adopted(key, from: "pf-a", .success(batch), canOpen: false), now: at(1))
                == [.adoptionEnded(key, adopted: true), .queue(batch)])
        #expect(concern.handle(.adopted(key, from: "pf-a", .failure(AdoptionRefused(why: "it is closed or gone")), canOpen: true), now: at(1))
                == [.adoptionEnded(key, adopted: false),
                    .log(.info("did not adopt batch \(key.batch) of host pf-a: it is closed or gone; it is taken over as without a cluster",
                               batch: key.batch))])
    }

    @Test func aDeadHoldersClosedBatchIsLookedAtUntilItsLockGoesUnrenewed() {
        var concern = Concern(inbox: "shop")
        _ = concern.handle(.holding(.deadHolder(key, from: "pf-a", lock: "host=a"), canAdopt: true), now: at(5))
        #expect(concern.nextDeadline == at(5))
        #expect(concern.handle(.due(stopping: false, available: true), now: at(5)) == [.lookAtDead(key, from: "pf-a", lock: "host=a")])
        #expect(concern.nextDeadline == at(7))
        #expect(concern.handle(.due(stopping: false, available: true), now: at(7)).isEmpty, "one look at a time")
        _ = concern.handle(.deadLooked(key, from: "pf-a", .notYet), now: at(8))
        #expect(concern.handle(.due(stopping: false, available: true), now: at(9)) == [.lookAtDead(key, from: "pf-a", lock: "host=a")])
        let batch = TestBatch(id: key.batch, photoCount: 2)
        #expect(concern.handle(.deadLooked(key, from: "pf-a", .takenOver(batch)), now: at(10))
                == [.dropRecord(key, lock: "host=a"),
                    .log(.notice("taking over batch \(key.batch) (2 photos) from pf-a: its database session ended and its lease went unrenewed for 20 s",
                                 batch: key.batch)),
                    .queue(batch)])
        #expect(concern.handle(.due(stopping: false, available: true), now: at(11)).isEmpty)
        #expect(concern.nextDeadline == nil, "nothing left to look at")
    }
}

struct BatchLifeTests {
    func report(failed: Int) -> Report {
        var items = [Report.Item(index: 1, source: "a.jpg", status: .ok)]
        for n in 0..<failed {
            var item = Report.Item(index: 2 + n, source: "bad\(n).jpg", status: .failed)
            item.error = .init(code: "corrupt-image", message: "JPEG data ends early")
            items.append(item)
        }
        return Report(batch: "20261201-101500-3f2a", inbox: "shop", template: .init(name: "web", sha256: "00"),
                      started: "2026-12-01T10:15:00.000Z", finished: "2026-12-01T10:15:09.000Z", items: items)
    }

    /// Published, a batch is finished: said in the journal, shown as the last batch, counted,
    /// its hooks run — once, whatever asks again.
    @Test func aPublishedBatchIsAnnouncedOnce() {
        var life = BatchLife(id: "20261201-101500-3f2a", inbox: "shop", folder: "/srv/shop/out/20261201-101500-3f2a")
        #expect(life.stage == .closed)
        let effects = life.handle(.published(report(failed: 1)))
        #expect(life.stage == .finished)
        let logged = effects.compactMap { if case .log(let line) = $0 { line } else { nil } }
        #expect(logged == [.warning("batch partial: 1 of 2 finished, 1 failed → out/20261201-101500-3f2a/", batch: "20261201-101500-3f2a"),
                           .warning("corrupt-image: JPEG data ends early", batch: "20261201-101500-3f2a", file: "bad0.jpg")])
        let last = effects.compactMap { if case .showLast(let last) = $0 { last } else { nil } }
        #expect(last == [.init(batch: "20261201-101500-3f2a", status: "partial", items: 2, ok: 1, failed: 1,
                               finished: "2026-12-01T10:15:09.000Z")])
        let hooks = effects.compactMap { if case .runHooks(let batch) = $0 { batch } else { nil } }
        #expect(hooks.map(\.folder) == ["/srv/shop/out/20261201-101500-3f2a"] && hooks.map(\.inbox) == ["shop"])
        #expect(effects.contains { if case .count(_, let folder) = $0 { folder == "/srv/shop/out/20261201-101500-3f2a" } else { false } })
        #expect(life.handle(.published(report(failed: 1))).isEmpty, "announced once")
    }

    /// A batch that awaits something (its approval, a delivery) is held once finished: the
    /// approval and delivery work make it so; its announcement is the same.
    @Test func aBatchThatAwaitsItsApprovalIsHeld() {
        var life = BatchLife(id: "b", inbox: "shop", folder: "/srv/shop/out/b", awaiting: [.approval])
        let effects = life.handle(.published(report(failed: 0)))
        #expect(life.stage == .held && life.awaiting == [.approval])
        #expect(effects.compactMap { if case .log(let line) = $0 { line.text } else { nil } } == ["batch complete: 1 of 1 finished → out/b/"])
    }

    /// A finished batch whose deliveries are planned is held until each destination verified it
    /// (and the approval one waits for came), then delivered — said once, whatever comes again.
    @Test func aHeldBatchIsDeliveredOnceEachDestinationVerifiedIt() {
        var life = BatchLife(id: "b", inbox: "shop", folder: "/srv/shop/out/b")
        #expect(life.handle(.awaits([.delivery("client")])).isEmpty)
        #expect(life.stage == .closed, "nothing is held before it is finished")
        _ = life.handle(.published(report(failed: 0)))
        #expect(life.stage == .finished)
        #expect(life.handle(.awaits([.delivery("archive"), .delivery("client"), .approval])).isEmpty)
        #expect(life.stage == .held)
        #expect(life.handle(.came(.delivery("archive"))).isEmpty)
        #expect(life.handle(.came(.delivery("archive"))).isEmpty, "told twice")
        #expect(life.handle(.came(.approval)).isEmpty)
        #expect(life.stage == .held && life.awaiting == [.delivery("client")])
        let effects = life.handle(.came(.delivery("client")))
        #expect(life.stage == .delivered)
        let logged = effects.compactMap { if case .log(let line) = $0 { line } else { nil } }
        #expect(logged == [.notice("batch delivered: every destination verified it (archive, client)", batch: "b")])
        #expect(life.handle(.came(.delivery("client"))).isEmpty && life.handle(.awaits([.delivery("late")])).isEmpty)
        #expect(life.stage == .delivered)

        // Found finished at a start, verified by one destination, another still to verify it.
        var resumed = BatchLife(id: "c", inbox: "shop", folder: "/srv/shop/out/c", stage: .finished, deliveredTo: ["archive"])
        _ = resumed.handle(.awaits([.delivery("client")]))
        #expect(resumed.stage == .held)
        let said = resumed.handle(.came(.delivery("client"))).compactMap { if case .log(let line) = $0 { line.text } else { nil } }
        #expect(said == ["batch delivered: every destination verified it (archive, client)"] && resumed.stage == .delivered)
    }
}
