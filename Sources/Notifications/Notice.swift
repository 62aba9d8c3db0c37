import Foundation
import System

/// Something a hot folder's `notify` targets hear of (reference: Notifications): a batch
/// finished, held for approval, approved, delivered, or failed. Pure: a value, its webhook
/// body and its mail.
public struct Notice: Sendable, Equatable {
    public enum Event: String, Sendable, CaseIterable, Codable {
        /// The batch is published (whatever its status: the body says it).
        case finished
        /// The batch waits for its approval (`approve: "owner"` or `"client"`).
        case held
        /// Someone approved the batch's photos (all, some or none).
        case approved
        /// A delivery of the batch is done and verified.
        case delivered
        /// Photos of the batch failed, or a delivery gave up.
        case failed
    }

    public var event: Event
    public var inbox: String
    public var batch: String
    public var at: Date
    public var counts: Counts
    /// The batch's status (`complete`, `partial`, `failed`, `interrupted`).
    public var status: String?
    /// The batch's share link, when it has one.
    public var link: String?
    /// `approved`: who approved what.
    public var approval: ApprovalSummary?
    /// `delivered`, or `failed` for a delivery: which destination and how it went.
    public var delivery: DeliverySummary?

    public struct Counts: Sendable, Equatable, Codable {
        public var items: Int
        public var ok: Int
        public var failed: Int
        public init(items: Int, ok: Int, failed: Int) {
            self.items = items
            self.ok = ok
            self.failed = failed
        }
    }

    public struct ApprovalSummary: Sendable, Equatable, Codable {
        public var by: String
        public var approved: [String]
        public var rejected: [String]
        public var note: String?
        public init(by: String, approved: [String], rejected: [String], note: String?) {
            self.by = by
            self.approved = approved
            self.rejected = rejected
            self.note = note
        }
    }

    public struct DeliverySummary: Sendable, Equatable, Codable {
        /// The destination's `name`.
        public var name: String
        public var files: Int
        public var error: String?
        public init(name: String, files: Int, error: String? = nil) {
            self.name = name
            self.files = files
            self.error = error
        }
    }

    public init(event: Event, inbox: String, batch: String, at: Date, counts: Counts, status: String? = nil,
                link: String? = nil, approval: ApprovalSummary? = nil, delivery: DeliverySummary? = nil) {
        self.event = event
        self.inbox = inbox
        self.batch = batch
        self.at = at
        self.counts = counts
        self.status = status
        self.link = link
        self.approval = approval
        self.delivery = delivery
    }

    /// The webhook's body: a JSON object with `event`, `inbox`, `batch`, `at`, `counts`, and what
    /// the event adds (`status`, `link`, `approval`, `delivery`), keys sorted, no spaces.
    public var body: [UInt8] {
        struct Body: Encodable {
            var event: Event, inbox: String, batch: String, at: Date, counts: Counts
            var status: String?, link: String?, approval: ApprovalSummary?, delivery: DeliverySummary?
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        guard let data = try? encoder.encode(Body(event: event, inbox: inbox, batch: batch, at: at, counts: counts,
                                                  status: status, link: link, approval: approval, delivery: delivery))
        else { preconditionFailure("a notification always encodes") }  // strings, numbers, a date
        return Array(data)
    }

    /// The mail's subject and text, for a person.
    public var mail: (subject: String, text: String) {
        let photos = counts.items == 1 ? "1 photo" : "\(counts.items) photos"
        var subject: String
        var lines: [String]
        switch event {
        case .finished:
            subject = "\(inbox): \(photos) finished"
            lines = ["The photos of batch \(batch) in \(inbox) are finished: \(counts.ok) of \(counts.items) ok"
                     + (counts.failed > 0 ? ", \(counts.failed) failed." : ".")]
        case .held:
            subject = "\(inbox): \(photos) wait for approval"
            lines = ["The photos of batch \(batch) in \(inbox) are finished and wait for approval before they are delivered."]
        case .approved:
            let a = approval
            subject = "\(inbox): \(a?.approved.count ?? 0) of \(photos) approved"
            lines = ["\(a?.by == "client" ? "The client" : a?.by ?? "Someone") approved \(a?.approved.count ?? 0) of the \(photos) of batch \(batch) in \(inbox)."]
            if let a, !a.approved.isEmpty { lines.append("Approved: " + a.approved.joined(separator: ", ")) }
            if let a, !a.rejected.isEmpty { lines.append("Not approved: " + a.rejected.joined(separator: ", ")) }
            if let note = a?.note { lines.append("Their note:\n\n" + note.split(separator: "\n", omittingEmptySubsequences: false).map { "> " + $0 }.joined(separator: "\n")) }
        case .delivered:
            subject = "\(inbox): \(photos) delivered" + (delivery.map { " to \($0.name)" } ?? "")
            lines = ["Batch \(batch) in \(inbox) was delivered" + (delivery.map { " to \($0.name) (\($0.files) file\($0.files == 1 ? "" : "s"))" } ?? "") + "."]
        case .failed:
            if let delivery {
                subject = "\(inbox): delivery to \(delivery.name) failed"
                lines = ["Batch \(batch) in \(inbox) could not be delivered to \(delivery.name): \(delivery.error ?? "no reason given")."]
            } else {
                subject = "\(inbox): \(counts.failed) of \(photos) failed"
                lines = ["\(counts.failed) of the \(photos) of batch \(batch) in \(inbox) could not be finished; the report says why."]
            }
        }
        if let link { lines.append("The photos: \(link)") }
        lines.append("-- \nPhotoFinish, \(inbox)")
        return (subject, lines.joined(separator: "\n\n") + "\n")
    }
}

/// The signature of a webhook's body (reference: Notifications): header
/// `X-PhotoFinish-Signature: sha256=HEX`, the HMAC-SHA256 of the body's exact bytes under the
/// secret the target names, as GitHub signs its webhooks. A receiver computes the same over
/// the bytes it got and compares in constant time.
public enum WebhookSignature {
    public static let header = "X-PhotoFinish-Signature"

    /// `sha256=` and 64 lowercase hex digits.
    public static func value(body: [UInt8], secret: [UInt8]) -> String {
        "sha256=" + HMAC.sha256Hex(key: secret, message: body)
    }

    /// Whether `value` signs `body` under `secret` (compared in constant time).
    public static func isValid(_ value: String, body: [UInt8], secret: [UInt8]) -> Bool {
        HMAC.constantTimeEqual(Array(value.utf8), Array(Self.value(body: body, secret: secret).utf8))
    }
}
