import Configuration
import Foundation
import HotFolders
import Notifications
import Testing
@testable import Service

/// The notifier carrying out its queue with a stand-in for the network: retries, order per
/// target, a receiver that hangs holding up nothing else, and `notify` never waiting.
@Suite struct NotifierTests {
    static let hook = NotifyTarget(.webhook(url: "https://hooks.example.org/pf", secret: nil))
    static let slow = NotifyTarget(.webhook(url: "https://slow.example.org/pf", secret: nil))
    static let mail = NotifyTarget(.mail("anna@example.org"), events: [.approved])

    func config(_ targets: [NotifyTarget]) throws -> Config {
        var config = Config()
        var inbox = Config.Inbox(name: "shop", root: "/srv/shop", template: "shop")
        inbox.sharing.notify = targets
        config.inboxes = [inbox]
        return config
    }

    func notice(_ event: Notice.Event) -> Notice {
        Notice(event: event, inbox: "shop", batch: "20261129-150405-3f2a", at: Date(), counts: .init(items: 6, ok: 6, failed: 0))
    }

    @Test func failuresAreTriedAgainInOrderAndOneHangingReceiverHoldsUpNoOther() throws {
        let sent = Locked<[String]>([]), attempts = Locked<[String: Int]>([:]), logged = Locked<[String]>([])
        let release = DispatchSemaphore(value: 0)
        let log = Logger { _, text, _ in logged.update { $0.append(text) } }
        let notifier = Notifier(log: log, queue: NoticeQueue(maxAttempts: 5, firstDelay: .milliseconds(20), maxDelay: .milliseconds(80)), send: { job, _ in
            let key = "\(job.target) \(job.notice.event.rawValue)"
            var tries = 0
            attempts.update { $0[key, default: 0] += 1; tries = $0[key]! }
            if case .webhook(let url, _) = job.target, url.contains("slow") {
                release.wait()  // a receiver that never answers until the test lets it
            }
            // The hook's first notice fails twice, as a busy receiver would.
            if key.hasSuffix(" finished"), job.target == Self.hook.kind, tries <= 2 { return ("answered 503", true) }
            if key.hasSuffix(" held"), job.target == Self.hook.kind { return ("answered 410", false) }
            sent.update { $0.append(key) }
            return nil
        })
        notifier.configure(try config([Self.hook, Self.slow, Self.mail]))
        let start = ContinuousClock.now
        for event in [Notice.Event.finished, .held, .approved] { notifier.notify(notice(event)) }
        // notify returned at once, though one receiver hangs.
        #expect(ContinuousClock.now - start < .seconds(1))
        let hook = Self.hook.kind.description, mail = Self.mail.kind.description
        #expect(Poll.until(.seconds(20)) { sent.value.contains("\(hook) approved") && sent.value.contains("\(mail) approved") },
                "sent: \(sent.value); log: \(logged.value)")
        // The hook heard finished (on its third try), then approved; held was refused for good.
        #expect(sent.value.filter { $0.hasPrefix(hook) } == ["\(hook) finished", "\(hook) approved"])
        #expect(attempts.value["\(hook) finished"] == 3 && attempts.value["\(hook) held"] == 1)
        // The mail target hears of approvals alone.
        #expect(sent.value.filter { $0.hasPrefix(mail) } == ["\(mail) approved"])
        #expect(logged.value.contains { $0.contains("finished answered 503; trying again in 0 s") })
        #expect(logged.value.contains { $0.contains("held answered 410; given up after 1 attempt") })
        // The slow receiver still has its first notice under way and the other two waiting.
        #expect(!sent.value.contains { $0.hasPrefix(Self.slow.kind.description) })
        for _ in 0..<3 { release.signal() }
        #expect(Poll.until(.seconds(20)) { sent.value.filter { $0.hasPrefix(Self.slow.kind.description) }.count == 3 })
        #expect(sent.value.filter { $0.hasPrefix(Self.slow.kind.description) }.map { $0.split(separator: " ").last! } == ["finished", "held", "approved"])
        notifier.stop()
    }

    @Test func aMailWithoutAServerAndAMissingSecretAreSaidNotRetried() throws {
        let logged = Locked<[String]>([])
        let notifier = Notifier(log: Logger { _, text, _ in logged.update { $0.append(text) } })
        var config = try config([NotifyTarget(.mail("anna@example.org")),
                                 NotifyTarget(.webhook(url: "http://127.0.0.1:9/", secret: "hook"))])
        config.credentials = "/nonexistent/credentials.json5"
        notifier.configure(config)
        notifier.notify(notice(.finished))
        #expect(Poll.until(.seconds(20)) { logged.value.filter { $0.contains("given up after 1 attempt") }.count == 2 }, "\(logged.value)")
        #expect(logged.value.contains { $0.contains("mailto:anna@example.org: finished cannot be sent: set mail:") })
        #expect(logged.value.contains { $0.contains("finished cannot be signed: no entry \"hook\" in /nonexistent/credentials.json5") })
    }
}
