import Foundation
import JSON5
import Notifications

// The keys of share links, approval and notifications (reference: Share links, QR codes;
// Approval; Notifications), kept apart from the rest of the config's rules; each may be given
// for every hot folder at the top of the config, or in a hot folder's entry (its own wins):
//   approve: "none" | "owner" | "client"     a finished batch is held until approved
//   notify: [ "mailto:ADDR", { webhook: URL, secret: NAME, events: [...] }, { mailto: ADDR, events: [...] } ]
//   shareExpires: "30d"                      how long a link lasts unless its maker says otherwise
// and web.publicURL (WebConfig.swift): the base of every link and QR code.

/// Who approves a hot folder's finished batches before they are delivered.
public enum ApproveMode: String, Sendable, CaseIterable {
    /// Nobody: a finished batch is delivered at once (`when: "approved"` deliveries too).
    case none
    /// A console user of the hot folder, on the batch's page.
    case owner
    /// The client, photo by photo, on the batch's share page (a console user may too).
    case client
}

/// A hot folder's share, approval and notification settings.
public struct ShareSettings: Sendable, Equatable {
    public var approve: ApproveMode = .none
    public var notify: [NotifyTarget] = []
    /// How long a link lasts when its maker gives no end (`photofinish share` without
    /// `--expires`, the console's default, a batch's own link for the `qr` mark).
    public var shareExpires: Duration = .seconds(30 * 86_400)

    public init() {}
}

/// The rules of the share, approval and notification keys.
enum ShareConfigRules {
    static let keys = ["approve", "notify", "shareExpires"]
    /// What `web` holds for share links.
    static let webKeys = ["publicURL"]
    static let webhookKeys = ["webhook", "secret", "events"]
    static let mailKeys = ["mailto", "events"]

    /// Reads the keys present in `members` (the config's top, or a hot folder's entry) over `base`.
    static func read(_ members: [String: JSON5Value], at path: [KeyPathComponent], over base: ShareSettings,
                     doc: inout JSON5Document) -> ShareSettings {
        var settings = base
        if let value = members["approve"], let mode = doc.choice(value, at: path + [.key("approve")], as: ApproveMode.self) {
            settings.approve = mode
        }
        if let value = members["notify"] { settings.notify = notify(value, at: path + [.key("notify")], doc: &doc) }
        if let value = members["shareExpires"] {
            // At most a year, as every duration.
            _ = ConfigRules.duration(value, at: path + [.key("shareExpires")], into: &settings.shareExpires, doc: &doc)
        }
        return settings
    }

    /// Reads `web.publicURL`: an http(s) URL with a host, no query or fragment; kept without
    /// its trailing slash (`https://example.com/studio`).
    static func publicURL(_ web: [String: JSON5Value], into config: inout Config, doc: inout JSON5Document) {
        guard let value = web["publicURL"] else { return }
        let path: [KeyPathComponent] = [.key("web"), .key("publicURL")]
        guard var text = doc.string(value, at: path) else { return }
        let lower = text.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), let url = URL(string: text),
              url.host?.isEmpty == false, url.query == nil, url.fragment == nil, url.user == nil else {
            doc.fail(path, "must be the address clients reach the console at, like \"https://photos.example.com/\" (http or https, a host, no ?query or #fragment), got \"\(text)\"")
            return
        }
        while text.hasSuffix("/") { text.removeLast() }
        config.publicURL = text
    }

    /// Reads a `notify` list.
    static func notify(_ value: JSON5Value, at path: [KeyPathComponent], doc: inout JSON5Document) -> [NotifyTarget] {
        guard case .array(let entries) = value else {
            doc.fail(path, "must be a list of \"mailto:ADDR\" and { webhook: URL, secret: NAME }, got \(value.shown)")
            return []
        }
        var targets: [NotifyTarget] = []
        for (index, entry) in entries.enumerated() {
            let at = path + [.index(index)]
            if case .string(let text) = entry {
                guard text.lowercased().hasPrefix("mailto:") else {
                    doc.fail(at, "must be \"mailto:ADDR\" or { webhook: URL, secret: NAME }, got \(entry.shown)")
                    continue
                }
                if let address = address(String(text.dropFirst(7)), at: at, doc: &doc) { targets.append(NotifyTarget(.mail(address))) }
                continue
            }
            guard case .object(let fields) = entry else {
                doc.fail(at, "must be \"mailto:ADDR\" or { webhook: URL, secret: NAME }, got \(entry.shown)")
                continue
            }
            let isMail = fields["mailto"] != nil
            guard let members = doc.object(entry, at: at, allowed: isMail ? mailKeys : webhookKeys) else { continue }
            var events = Set(Notice.Event.allCases)
            if let list = members["events"] {
                guard let chosen = self.events(list, at: at + [.key("events")], doc: &doc) else { continue }
                events = chosen
            }
            if isMail {
                guard let text = doc.string(members["mailto"]!, at: at + [.key("mailto")]),
                      let address = address(text.lowercased().hasPrefix("mailto:") ? String(text.dropFirst(7)) : text,
                                            at: at + [.key("mailto")], doc: &doc) else { continue }
                targets.append(NotifyTarget(.mail(address), events: events))
                continue
            }
            guard let urlValue = members["webhook"] else {
                doc.fail(at, "needs webhook: URL (or mailto: ADDR), e.g. { webhook: \"https://example.org/hook\", secret: \"hook\" }")
                continue
            }
            guard let url = doc.string(urlValue, at: at + [.key("webhook")]) else { continue }
            let lower = url.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), URL(string: url)?.host?.isEmpty == false else {
                doc.fail(at + [.key("webhook")], "must be an http:// or https:// URL with a host, got \"\(url)\"")
                continue
            }
            var secret: String?
            if let value = members["secret"] {
                guard let name = doc.string(value, at: at + [.key("secret")]) else { continue }
                secret = name
            }
            targets.append(NotifyTarget(.webhook(url: url, secret: secret), events: events))
        }
        return targets
    }

    private static func events(_ value: JSON5Value, at path: [KeyPathComponent], doc: inout JSON5Document) -> Set<Notice.Event>? {
        let names = Notice.Event.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        guard case .array(let entries) = value, !entries.isEmpty else {
            doc.fail(path, "must be a list of events (\(names)), got \(value.shown)")
            return nil
        }
        var chosen = Set<Notice.Event>()
        for (index, entry) in entries.enumerated() {
            guard let event = doc.choice(entry, at: path + [.index(index)], as: Notice.Event.self) else { return nil }
            chosen.insert(event)
        }
        return chosen
    }

    /// A mail address: one `@`, something on each side, no spaces, angle brackets or commas
    /// (one address a target), no line breaks (it goes into a mail's header).
    private static func address(_ text: String, at path: [KeyPathComponent], doc: inout JSON5Document) -> String? {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        let forbidden = CharacterSet(charactersIn: " \t\r\n<>,;\"()[]\\").union(.controlCharacters)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
              text.unicodeScalars.allSatisfy({ !forbidden.contains($0) }) else {
            doc.fail(path, "must be one mail address (name@example.org), got \"\(text)\"")
            return nil
        }
        return text
    }
}
