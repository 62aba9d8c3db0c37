import Testing
@testable import Delivery

/// The delivery's state machine with plain values: no server, no file, no clock.
struct DeliveryMachineTests {
    typealias Effect = DeliveryMachine.Effect

    static func journal(_ names: [String] = ["b1/a.jpg", "b1/b.jpg"], approval: Bool = false) -> DeliveryJournal {
        DeliveryJournal(batch: "b1", inbox: "shop", destination: "client", to: "sftp://u@h/in/", token: "0a1b2c3d",
                        files: names.map { .init(name: $0, local: "/x/" + $0, bytes: 10, sha256: String(repeating: "0", count: 64)) },
                        awaitingApproval: approval)
    }

    static let policy = RetryPolicy(first: .seconds(10), atMost: .seconds(60), giveUpAfter: .seconds(3600))

    @Test func eachFileIsWrittenUnderItsTemporaryNameRenamedThenVerified() {
        var m = DeliveryMachine(journal: Self.journal(), policy: Self.policy, renames: true, whole: false)
        // One save a file: the attempt's start (and each file verified) saves the next file's
        // temporary name with it.
        #expect(m.handle(.begin, now: 100) == [.save, .receipt, .write(0, as: "b1/.a.jpg.pf-0a1b2c3d.part")])
        #expect(m.journal.files[0].stage == .sending)
        #expect(m.handle(.written(0), now: 101) == [.rename(0, from: "b1/.a.jpg.pf-0a1b2c3d.part")])
        #expect(m.handle(.renamed(0), now: 102) == [.verify(0)])
        #expect(m.journal.files[0].stage == .sent && m.journal.files[0].temporary == nil)
        #expect(m.handle(.verified(0, .sha256), now: 103) == [.save, .write(1, as: "b1/.b.jpg.pf-0a1b2c3d.part")])
        _ = m.handle(.written(1), now: 104)
        _ = m.handle(.renamed(1), now: 105)
        #expect(m.handle(.verified(1, .size), now: 106) == [.save, .receipt, .done])
        #expect(m.journal.phase == .delivered && m.journal.at == 106 && m.journal.attempts == 1)
        #expect(m.journal.verified == .size, "the receipt promises the weakest check")
    }

    @Test func withoutRenamesAFileGoesUnderItsOwnName() {
        var m = DeliveryMachine(journal: Self.journal(["b1/a.jpg"]), policy: Self.policy, renames: false, whole: false)
        #expect(m.handle(.begin, now: 0).last == .write(0, as: "b1/a.jpg"))
        #expect(m.handle(.written(0), now: 1) == [.verify(0)])
    }

    @Test func aRestartSendsTheFileCutOffAgainUnderTheSameNameAndVerifiesTheOneSent() {
        var m = DeliveryMachine(journal: Self.journal(), policy: Self.policy, renames: true, whole: false)
        // A kill leaves the journal as the last `.save` wrote it.
        var saved = m.journal
        func step(_ effects: [DeliveryMachine.Effect]) { if effects.contains(.save) { saved = m.journal } }
        step(m.handle(.begin, now: 0))
        step(m.handle(.written(0), now: 1))
        step(m.handle(.renamed(0), now: 2))
        // Killed before file 0 was verified: the journal says sending, under its temporary name.
        #expect(saved.files[0].stage == .sending && saved.files[0].temporary == "b1/.a.jpg.pf-0a1b2c3d.part")
        var resumed = DeliveryMachine(journal: saved, policy: Self.policy, renames: true, whole: false)
        #expect(resumed.journal.isDue(at: 5))
        #expect(resumed.handle(.begin, now: 5).last == .write(0, as: "b1/.a.jpg.pf-0a1b2c3d.part"))
        _ = resumed.handle(.renamed(0), now: 6)
        _ = resumed.handle(.verified(0, .sha256), now: 7)
        _ = resumed.handle(.written(1), now: 8)
        _ = resumed.handle(.renamed(1), now: 9)
        // A journal that says file 1 is on the server under its own name (`sent`, as an earlier
        // version saved it): the next start verifies it, sends nothing.
        var again = DeliveryMachine(journal: resumed.journal, policy: Self.policy, renames: true, whole: false)
        #expect(again.handle(.begin, now: 10) == [.save, .receipt, .verify(1)])
        #expect(again.journal.attempts == 3)
    }

    @Test func aFileIsReadBackWhileTheNextIsWritten() {
        let names = ["b1/a.jpg", "b1/b.jpg", "b1/c.jpg", "b1/d.jpg"]
        var m = DeliveryMachine(journal: Self.journal(names), policy: Self.policy, renames: true, whole: false, depth: 3)
        func part(_ i: Int) -> String { "b1/.\(names[i].dropFirst(3)).pf-0a1b2c3d.part" }
        #expect(m.handle(.begin, now: 0) == [.save, .receipt, .write(0, as: part(0))])
        // Written: renamed (on the other connection) while the next one is written.
        #expect(m.handle(.written(0), now: 1) == [.rename(0, from: part(0)), .write(1, as: part(1))])
        #expect(m.handle(.renamed(0), now: 2) == [.verify(0)])
        #expect(m.handle(.written(1), now: 3) == [.rename(1, from: part(1)), .write(2, as: part(2))])
        // Three under way (0 read back, 1 renamed, 2 written): the fourth waits for a verified one.
        #expect(m.handle(.written(2), now: 4) == [.rename(2, from: part(2))])
        #expect(m.handle(.renamed(1), now: 5) == [.verify(1)])
        #expect(m.handle(.verified(0, .sha256), now: 6) == [.save, .write(3, as: part(3))])
        // The journal saved then: what a kill leaves, each file at a stage that sends it once.
        let saved = m.journal
        #expect(saved.files.map(\.stage) == [.verified, .sent, .sending, .sending])
        #expect(saved.files[2].temporary == part(2) && saved.files[1].temporary == nil)
        var resumed = DeliveryMachine(journal: saved, policy: Self.policy, renames: true, whole: false, depth: 3)
        #expect(resumed.handle(.begin, now: 10) == [.save, .receipt, .verify(1), .write(2, as: part(2))])
        // Answers come in any order; delivered once every file is verified.
        _ = m.handle(.renamed(2), now: 7)
        _ = m.handle(.written(3), now: 8)
        _ = m.handle(.verified(2, .sha256), now: 9)
        _ = m.handle(.renamed(3), now: 9)
        _ = m.handle(.verified(1, .sha256), now: 10)
        #expect(m.handle(.verified(3, .sha256), now: 11) == [.save, .receipt, .done])
        #expect(m.journal.phase == .delivered && m.journal.verified == .sha256)
    }

    @Test func aFailureEndsTheAttemptAndTheAnswersStillUnderWayChangeNothing() {
        var m = DeliveryMachine(journal: Self.journal(["b1/a.jpg", "b1/b.jpg", "b1/c.jpg"]), policy: Self.policy, renames: true,
                                whole: false, depth: 3)
        _ = m.handle(.begin, now: 0)
        _ = m.handle(.written(0), now: 1)
        _ = m.handle(.renamed(0), now: 2)
        let failure = DeliveryMachine.Failure("sending b1/b.jpg: connection refused", retryable: true)
        #expect(m.handle(.failed(failure), now: 3, jitter: 0) == [.save, .receipt, .retry(at: 13), .done])
        let failed = m.journal
        #expect(failed.files.map(\.stage) == [.sent, .sending, .pending])
        // File 0's read-back answers after the attempt ended: not taken; the next attempt reads it back.
        #expect(m.handle(.verified(0, .sha256), now: 4) == [])
        #expect(m.journal == failed)
        #expect(m.handle(.begin, now: 13) == [.save, .receipt, .verify(0), .write(1, as: "b1/.b.jpg.pf-0a1b2c3d.part")])
    }

    @Test func aFailureIsRetriedWithBackoffAndJitterUntilItGivesUp() {
        var m = DeliveryMachine(journal: Self.journal(), policy: Self.policy, renames: true, whole: false)
        _ = m.handle(.begin, now: 1000)
        let failure = DeliveryMachine.Failure("connection refused", retryable: true)
        #expect(m.handle(.failed(failure), now: 1001, jitter: 0) == [.save, .receipt, .retry(at: 1011), .done])
        #expect(m.journal.phase == .failed && m.journal.error == "connection refused" && !m.journal.final)
        #expect(!m.journal.isDue(at: 1010) && m.journal.isDue(at: 1011))
        _ = m.handle(.begin, now: 1011)
        #expect(m.handle(.failed(failure), now: 1012, jitter: 0.5) == [.save, .receipt, .retry(at: 1012 + 22), .done])
        _ = m.handle(.begin, now: 1040)
        _ = m.handle(.failed(failure), now: 1041)
        #expect(m.journal.nextAttempt == Double(1041 + 40))
        // An hour after the first attempt: failed for good.
        _ = m.handle(.begin, now: 4600)
        #expect(m.handle(.failed(failure), now: 4601) == [.save, .receipt, .done])
        #expect(m.journal.final && !m.journal.isDue(at: 99_999))
        // By hand: tried again at once, with a fresh clock.
        #expect(m.handle(.again, now: 5000) == [.save, .receipt, .retry(at: 5000)])
        #expect(m.journal.isDue(at: 5000) && m.journal.firstAttempt == nil)
    }

    @Test func aRefusedLoginIsNotRetried() {
        var m = DeliveryMachine(journal: Self.journal(), policy: Self.policy, renames: true, whole: false)
        _ = m.handle(.begin, now: 0)
        #expect(m.handle(.failed(.init("the server refused the login", retryable: false)), now: 1) == [.save, .receipt, .done])
        #expect(m.journal.final && m.journal.phase == .failed)
    }

    @Test func aFileThatArrivedDifferentIsSentAgain() {
        var m = DeliveryMachine(journal: Self.journal(["b1/a.jpg"]), policy: Self.policy, renames: true, whole: false)
        _ = m.handle(.begin, now: 0)
        _ = m.handle(.written(0), now: 1)
        _ = m.handle(.renamed(0), now: 2)
        #expect(m.handle(.mismatch(0, "9 bytes"), now: 3).contains(.retry(at: 13)))
        #expect(m.journal.files[0].stage == .pending)
        #expect(m.handle(.begin, now: 13).last == .write(0, as: "b1/.a.jpg.pf-0a1b2c3d.part"))
    }

    @Test func theApprovalGateHoldsTheDeliveryUntilItIsSet() {
        var m = DeliveryMachine(journal: Self.journal(approval: true), policy: Self.policy, renames: true, whole: false)
        #expect(!m.journal.isDue(at: 1e12))
        #expect(m.handle(.begin, now: 0) == [.done])
        #expect(m.handle(.again, now: 0) == [], "by hand too: the gate is the approval's")
        #expect(m.handle(.approved, now: 5) == [.save, .receipt, .retry(at: 5)])
        #expect(m.journal.phase == .pending && m.journal.isDue(at: 5))
        #expect(m.handle(.approved, now: 6) == [])
    }

    @Test func aMailIsOneMessageAcceptedWhole() {
        var m = DeliveryMachine(journal: Self.journal(), policy: Self.policy, renames: false, whole: true)
        #expect(m.handle(.begin, now: 0) == [.save, .receipt, .sendMessage])
        #expect(m.handle(.messageAccepted, now: 1) == [.save, .receipt, .done])
        #expect(m.journal.verified == .accepted)
    }

    @Test func deliveringAgainByHandSendsEveryFileAgainUnderTheSameNames() {
        var m = DeliveryMachine(journal: Self.journal(["b1/a.jpg"]), policy: Self.policy, renames: false, whole: false)
        _ = m.handle(.begin, now: 0)
        _ = m.handle(.written(0), now: 1)
        _ = m.handle(.verified(0, .sha256), now: 2)
        #expect(m.journal.phase == .delivered)
        _ = m.handle(.again, now: 10)
        #expect(m.handle(.begin, now: 10).last == .write(0, as: "b1/a.jpg"))
    }

    @Test(arguments: [(1, 10.0), (2, 20.0), (3, 40.0), (4, 60.0), (9, 60.0)])
    func backoffDoublesUpToItsCeiling(attempt: Int, seconds: Double) {
        let wait = Self.policy.delay(after: attempt, jitter: 0)
        #expect(wait == .seconds(seconds))
        #expect(Self.policy.delay(after: attempt, jitter: 0.999) < .seconds(seconds * 1.2 + 0.001))
    }
}
