import Batches
import Configuration
import Delivery
import Dispatch
import Foundation
import HotFolders
import Notifications
import Synchronization

/// Sends the notices of the hot folders' batches (reference: Notifications) to their `notify`
/// targets: `NoticeQueue` decides, this carries it out — each send on a thread of the global
/// pool (a webhook POST through libcurl, or a mail through the config's mail server), the
/// queue's state on one serial queue, its wake-ups as timers there. `notify` returns at once:
/// finishing never waits for a receiver, however slow or broken.
///
/// What waits is kept in memory: a notice still waiting when the service stops is said in the
/// journal and not sent.
final class Notifier: Sendable {
    /// What the config says, as of the last (re)load.
    struct Settings: Sendable {
        var targets: [String: [NotifyTarget]] = [:]
        var credentials = CredentialStore.defaultPath
        var mail: MailSettings?
        /// Each hot folder's `approve`: a batch published there is `held` too.
        var approve: [String: ApproveMode] = [:]
    }

    /// One attempt at one job, made on a pool thread: nil when it was received, else why not
    /// and whether asking again may help.
    typealias Send = @Sendable (NoticeQueue.Job, Settings) -> (reason: String, retryable: Bool)?

    private let settings = Mutex(Settings())
    /// The queue and what `wake` last asked for; touched on `lane` alone.
    private nonisolated(unsafe) var queue: NoticeQueue
    private nonisolated(unsafe) var timer: DispatchSourceTimer?
    private let lane = DispatchQueue(label: "photofinish.notifier")
    private let log: Logger
    private let send: Send
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - queue: the queue's limits (the tests' shorter waits).
    ///   - send: how one job is sent (the tests' stand-in); by default webhooks and mail.
    init(log: Logger, queue: NoticeQueue = NoticeQueue(), userAgent: String = "photofinish",
         now: @escaping @Sendable () -> Date = { Date() }, send: Send? = nil) {
        self.log = log
        self.queue = queue
        self.now = now
        self.send = send ?? { job, settings in Self.deliver(job, settings: settings, userAgent: userAgent) }
    }

    /// Takes the config's targets (at load and at each reload).
    func configure(_ config: Config) {
        settings.withLock { s in
            s.credentials = config.credentials
            s.mail = config.mail
            s.targets = Dictionary(config.inboxes.map { ($0.name, $0.sharing.notify) }) { $1 }
            s.approve = Dictionary(config.inboxes.map { ($0.name, $0.sharing.approve) }) { $1 }
        }
    }

    /// The notices of a batch just published: `finished`, `failed` when photos of it failed,
    /// then `held` when its hot folder asks for an approval (reference: Notifications).
    func published(_ report: Report, inbox: String) {
        let held = settings.withLock { ($0.approve[inbox] ?? .none) != .none }
        notify(Notice(report, .finished, inbox: inbox, at: now()))
        if report.counts.failed > 0 { notify(Notice(report, .failed, inbox: inbox, at: now())) }
        if held { notify(Notice(report, .held, inbox: inbox, at: now())) }
    }

    /// Queues `notice` for each of its hot folder's targets that hears of its event; returns at once.
    func notify(_ notice: Notice) {
        let targets = settings.withLock { $0.targets[notice.inbox] ?? [] }.filter { $0.events.contains(notice.event) }
        guard !targets.isEmpty else { return }
        lane.async { [self] in
            var effects: [NoticeQueue.Effect] = []
            for target in targets { effects += queue.handle(.submitted(target.kind, notice), now: now()) }
            carry(effects)
        }
    }

    /// Says what is still waiting (the service stops: it is not sent).
    func stop() {
        lane.sync {
            timer?.cancel()
            timer = nil
            let left = queue.count
            if left > 0 {
                log.warning("\(left) notice\(left == 1 ? "" : "s") not sent: the service stopped before \(left == 1 ? "it was" : "they were") received", [:])
            }
        }
    }

    /// Carries out the queue's effects; on `lane`.
    private func carry(_ effects: [NoticeQueue.Effect]) {
        for effect in effects {
            switch effect {
            case .send(let job):
                let current = settings.withLock { $0 }
                DispatchQueue.global().async { [self] in
                    let failure = send(job, current)
                    lane.async { [self] in
                        if let failure {
                            carry(queue.handle(.failed(id: job.id, reason: failure.reason, retryable: failure.retryable), now: now()))
                        } else {
                            if job.attempt > 1 { log.info("notify \(job.target): \(job.notice.event.rawValue) received (attempt \(job.attempt))", fields(job)) }
                            carry(queue.handle(.sent(id: job.id), now: now()))
                        }
                    }
                }
            case .retry(let job, let reason, let at):
                let wait = max(0, at.timeIntervalSince(now()))
                log.warning("notify \(job.target): \(job.notice.event.rawValue) \(reason); trying again in \(Self.words(wait))", fields(job))
            case .gaveUp(let job, let reason):
                log.error("notify \(job.target): \(job.notice.event.rawValue) \(reason); given up after \(job.attempt) attempt\(job.attempt == 1 ? "" : "s")",
                          fields(job))
            case .dropped(let job):
                log.error("notify \(job.target): \(job.notice.event.rawValue) dropped: \(queue.maxWaiting) notices were waiting", fields(job))
            case .wake(let at):
                timer?.cancel()
                timer = nil
                guard let at else { continue }
                let made = DispatchSource.makeTimerSource(queue: lane)
                made.schedule(deadline: .now() + max(0, at.timeIntervalSince(now())))
                made.setEventHandler { [self] in carry(queue.handle(.time, now: now())) }
                made.resume()
                timer = made
            }
        }
    }

    private func fields(_ job: NoticeQueue.Job) -> LogFields {
        ["INBOX": job.notice.inbox, "BATCH": job.notice.batch]
    }

    static func words(_ seconds: TimeInterval) -> String {
        seconds < 90 ? "\(Int(seconds.rounded())) s" : "\(Int((seconds / 60).rounded())) min"
    }

    // MARK: Sending

    /// One attempt: a webhook POST (signed when the target names a secret) or a mail.
    static func deliver(_ job: NoticeQueue.Job, settings: Settings, userAgent: String) -> (reason: String, retryable: Bool)? {
        switch job.target {
        case .webhook(let url, let secretName):
            let body = job.notice.body
            var headers = [("X-PhotoFinish-Event", job.notice.event.rawValue)]
            if let secretName {
                let secret: String
                do throws(CredentialStore.CredentialError) {
                    guard let found = try CredentialStore(path: settings.credentials).credential(secretName).secret, !found.isEmpty else {
                        return ("cannot be signed: the entry \"\(secretName)\" of \(settings.credentials) has no secret", false)
                    }
                    secret = found
                } catch {
                    return ("cannot be signed: \(error)", false)
                }
                headers.append((WebhookSignature.header, WebhookSignature.value(body: body, secret: Array(secret.utf8))))
            }
            switch HTTPPost.post(url: url, headers: headers, body: body, timeout: .seconds(10), userAgent: userAgent) {
            case .status(let code, _) where (200..<300).contains(code):
                return nil
            case .status(let code, let text):
                // A client error other than a timeout or too many requests: asking again changes nothing.
                let retryable = !(400..<500).contains(code) || code == 408 || code == 429
                return ("answered \(code)" + (text.isEmpty ? "" : ": " + String(text.prefix(200))), retryable)
            case .failed(let reason):
                return ("failed: \(reason)", true)
            }
        case .mail(let address):
            guard let mail = settings.mail else {
                return ("cannot be sent: set mail: { server: \"smtps://host\", from: \"…\" } in the config", false)
            }
            let (subject, text) = job.notice.mail
            do throws(DeliveryMachine.Failure) {
                try Mailer.send(to: [address], subject: subject, text: text,
                                messageID: "\(job.notice.batch).\(job.notice.event.rawValue).\(job.id).\(UInt32.random(in: 0...UInt32.max))",
                                mail: mail, credentialsFile: settings.credentials)
                return nil
            } catch {
                return ("failed: \(error.message)", error.retryable)
            }
        }
    }
}

extension Notice {
    /// A notice of `report`'s batch: its counts, status, link and approval.
    init(_ report: Report, _ event: Event, inbox: String, at: Date, delivery: DeliverySummary? = nil) {
        let approval = report.approval.map { ApprovalSummary(by: $0.by, approved: $0.approved, rejected: $0.rejected, note: $0.note) }
        self.init(event: event, inbox: inbox, batch: report.batch, at: at,
                  counts: Counts(items: report.counts.items, ok: report.counts.ok, failed: report.counts.failed),
                  status: report.status.rawValue, link: report.link, approval: event == .approved ? approval : nil, delivery: delivery)
    }
}
