import Foundation
import Notifications
import System
import Testing

/// The notification queue driven with plain times: order per target, retries with backoff,
/// one slow target holding up no other, the bound on what waits.
@Suite struct NotificationQueueTests {
    let t0 = Date(timeIntervalSince1970: 1_790_000_000)
    let hook = NotifyTarget.Kind.webhook(url: "https://example.org/hook", secret: "hook")
    let mail = NotifyTarget.Kind.mail("studio@example.org")

    func note(_ event: Notice.Event, _ batch: String = "20261129-150405-3f2a") -> Notice {
        Notice(event: event, inbox: "shop", batch: batch, at: t0, counts: .init(items: 6, ok: 6, failed: 0))
    }

    func sends(_ effects: [NoticeQueue.Effect]) -> [NoticeQueue.Job] {
        effects.compactMap { if case .send(let job) = $0 { job } else { nil } }
    }

    func wake(_ effects: [NoticeQueue.Effect]) -> Date?? {
        effects.last.flatMap { if case .wake(let at) = $0 { .some(at) } else { nil } }
    }

    @Test func aTargetHearsItsEventsInOrderOneAtATime() {
        var queue = NoticeQueue()
        let first = queue.handle(.submitted(hook, note(.finished)), now: t0)
        #expect(sends(first).map(\.notice.event) == [.finished])
        #expect(wake(first) == .some(nil))
        // held and approved wait behind finished, which is under way.
        #expect(sends(queue.handle(.submitted(hook, note(.held)), now: t0)).isEmpty)
        #expect(sends(queue.handle(.submitted(hook, note(.approved)), now: t0)).isEmpty)
        let id = sends(first)[0].id
        #expect(sends(queue.handle(.sent(id: id), now: t0 + 0.1)).map(\.notice.event) == [.held])
        #expect(queue.count == 2)
    }

    @Test func aFailureIsTriedAgainWithGrowingWaitsThenGivenUp() {
        var queue = NoticeQueue(maxAttempts: 4, firstDelay: .seconds(1), maxDelay: .seconds(3))
        var now = t0
        var job = sends(queue.handle(.submitted(hook, note(.finished)), now: now))[0]
        var waits: [TimeInterval] = []
        for attempt in 1...3 {
            let effects = queue.handle(.failed(id: job.id, reason: "answered 503", retryable: true), now: now)
            guard case .retry(let again, let reason, let at) = effects.first else {
                Issue.record("attempt \(attempt) not retried: \(effects)")
                return
            }
            #expect(reason == "answered 503" && again.attempt == attempt + 1)
            #expect(wake(effects) == .some(at))
            waits.append(at.timeIntervalSince(now))
            // Nothing is sent before its time.
            #expect(sends(queue.handle(.time, now: at - 0.01)).isEmpty)
            now = at
            job = sends(queue.handle(.time, now: now))[0]
        }
        #expect(waits == [1, 2, 3])
        let last = queue.handle(.failed(id: job.id, reason: "answered 503", retryable: true), now: now)
        #expect(last.first == .gaveUp(job, reason: "answered 503"))
        #expect(queue.count == 0 && wake(last) == .some(nil))
    }

    @Test func aRefusalIsNotTriedAgainAndTheNextGoes() {
        var queue = NoticeQueue()
        let job = sends(queue.handle(.submitted(hook, note(.finished)), now: t0))[0]
        _ = queue.handle(.submitted(hook, note(.held)), now: t0)
        let effects = queue.handle(.failed(id: job.id, reason: "answered 401", retryable: false), now: t0)
        #expect(effects.first == .gaveUp(job, reason: "answered 401"))
        #expect(sends(effects).map(\.notice.event) == [.held])
    }

    /// A receiver that hangs holds up its own notifications alone.
    @Test func aSlowTargetHoldsUpNoOther() {
        var queue = NoticeQueue(maxInFlight: 2)
        let other = NotifyTarget.Kind.webhook(url: "https://other.example.org/", secret: nil)
        let slow = sends(queue.handle(.submitted(hook, note(.finished)), now: t0))
        _ = queue.handle(.submitted(hook, note(.held)), now: t0)
        let mailJob = sends(queue.handle(.submitted(mail, note(.finished)), now: t0))
        #expect(slow.map(\.target) == [hook] && mailJob.map(\.target) == [mail])
        // Two under way: the third target waits for a free slot, not for the slow hook.
        #expect(sends(queue.handle(.submitted(other, note(.finished)), now: t0)).isEmpty)
        #expect(sends(queue.handle(.sent(id: mailJob[0].id), now: t0)).map(\.target) == [other])
        // The hook's held waits behind its finished, however long that takes.
        #expect(sends(queue.handle(.time, now: t0 + 3600)).isEmpty)
    }

    @Test func whatWaitsIsBounded() {
        var queue = NoticeQueue(maxInFlight: 1, maxWaiting: 3)
        let first = sends(queue.handle(.submitted(hook, note(.finished, "b1")), now: t0))[0]
        _ = queue.handle(.submitted(hook, note(.finished, "b2")), now: t0)
        _ = queue.handle(.submitted(hook, note(.finished, "b3")), now: t0)
        let effects = queue.handle(.submitted(hook, note(.finished, "b4")), now: t0)
        // The oldest that is not under way goes.
        guard case .dropped(let dropped) = effects.first else {
            Issue.record("nothing dropped: \(effects)")
            return
        }
        #expect(dropped.notice.batch == "b2")
        #expect(queue.count == 3)
        #expect(sends(queue.handle(.sent(id: first.id), now: t0)).map(\.notice.batch) == ["b3"])
    }

    // MARK: Bodies, signatures, mails

    @Test func theBodyIsSignedAsDocumented() throws {
        var n = note(.approved)
        n.status = "complete"
        n.link = "https://photos.example.com/s/abc/"
        n.approval = .init(by: "client", approved: ["IMG_1.jpg"], rejected: ["IMG_2.jpg"], note: "Thanks")
        let body = n.body
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        #expect(object["event"] as? String == "approved" && object["inbox"] as? String == "shop")
        #expect(object["batch"] as? String == "20261129-150405-3f2a")
        #expect((object["counts"] as? [String: Int]) == ["items": 6, "ok": 6, "failed": 0])
        #expect(object["link"] as? String == "https://photos.example.com/s/abc/")
        #expect(object["at"] as? String == "2026-09-21T14:13:20Z")
        #expect(((object["approval"] as? [String: Any])?["approved"] as? [String]) == ["IMG_1.jpg"])
        let secret = Array("s3cret".utf8)
        let signature = WebhookSignature.value(body: body, secret: secret)
        // What any receiver computes: HMAC-SHA256 of the bytes, hex.
        #expect(signature == "sha256=" + HMAC.sha256Hex(key: secret, message: body))
        #expect(WebhookSignature.isValid(signature, body: body, secret: secret))
        #expect(!WebhookSignature.isValid(signature, body: body + [0x20], secret: secret))
        #expect(!WebhookSignature.isValid(signature, body: body, secret: Array("other".utf8)))
    }

    @Test func aMailSaysWhatHappened() {
        var n = note(.approved)
        n.approval = .init(by: "client", approved: ["IMG_1.jpg", "IMG_3.jpg"], rejected: ["IMG_2.jpg"], note: "Lovely\nThanks")
        n.link = "https://photos.example.com/s/abc/"
        let (subject, text) = n.mail
        #expect(subject == "shop: 2 of 6 photos approved")
        #expect(text.contains("The client approved 2 of the 6 photos"))
        #expect(text.contains("Not approved: IMG_2.jpg"))
        #expect(text.contains("> Lovely\n> Thanks"))
        #expect(text.contains("The photos: https://photos.example.com/s/abc/"))
        var failed = note(.failed)
        failed.delivery = .init(name: "client-sftp", files: 0, error: "login refused")
        #expect(failed.mail.subject == "shop: delivery to client-sftp failed")
    }
}
