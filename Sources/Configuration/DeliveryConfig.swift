import Delivery
import Foundation
import JSON5

// Delivery's keys (docs/reference.md "Delivering finished photos"), kept apart from the rest of
// the config's rules:
//   deliver: [ { name, to: URL, when: "finished"|"approved", what: "outputs"|"outputs+report"|"zip",
//                credentials: NAME, knownHosts, caFile, bandwidth, maxAttachBytes, retry, stallTimeout } ]
//            (global, or per hot folder: a hot folder's own list replaces the global one)
//   credentials: "/etc/photofinish/credentials.json5"     the logins, by name (mode 0600)
//   mail: { server: "smtps://host", from: "Studio <photos@example.org>", credentials: NAME, caFile }

/// The rules of the delivery keys.
enum DeliveryConfigRules {
    static let rootKeys = ["deliver", "credentials", "mail"]
    static let entryKeys = ["name", "to", "when", "what", "credentials", "knownHosts", "caFile", "bandwidth",
                            "maxAttachBytes", "retry", "stallTimeout"]
    static let retryKeys = ["first", "atMost", "giveUpAfter"]
    static let mailKeys = ["server", "from", "credentials", "caFile"]

    static func read(_ root: [String: JSON5Value], into config: inout Config, _ doc: inout JSON5Document) {
        if let value = root["credentials"], let path = doc.string(value, at: [.key("credentials")]) {
            if path.hasPrefix("/") {
                config.credentials = path
            } else {
                doc.fail([.key("credentials"), ], "must be an absolute path (the credentials file, mode 0600), got \"\(path)\"")
            }
        }
        if let value = root["mail"] { config.mail = mail(value, doc: &doc) }
        if let value = root["deliver"] { config.deliver = destinations(value, at: [.key("deliver")], doc: &doc) }
    }

    /// Reads a `deliver` list.
    static func destinations(_ value: JSON5Value, at path: [KeyPathComponent], doc: inout JSON5Document) -> [DestinationSettings] {
        guard case .array(let entries) = value else {
            doc.fail(path, "must be a list of { name, to, when, what, credentials }, got \(value.shown)")
            return []
        }
        var out: [DestinationSettings] = []
        var names: [String: Int] = [:]
        for (index, entry) in entries.enumerated() {
            let at = path + [.index(index)]
            guard let members = doc.object(entry, at: at, allowed: entryKeys) else { continue }
            guard let nameValue = members["name"], let toValue = members["to"] else {
                doc.fail(at, "needs name and to (e.g. { name: \"client\", to: \"sftp://studio@files.example.org/incoming/\" })")
                continue
            }
            guard let name = doc.string(nameValue, at: at + [.key("name")]), let to = doc.string(toValue, at: at + [.key("to")]) else { continue }
            guard ConfigRules.isSafeName(name) else {
                doc.fail(at + [.key("name")], "must be letters, digits, '.', '_' or '-' (not starting with '.'), got \"\(name)\"")
                continue
            }
            if let first = names[name] {
                doc.fail(at + [.key("name")], "\"\(name)\" is already the name of \(path.rendered)[\(first)]: names must be unique")
                continue
            }
            names[name] = index
            let destination: Destination
            do throws(Destination.Problem) {
                destination = try Destination.parse(to)
            } catch {
                doc.fail(at + [.key("to")], error.description)
                continue
            }
            var settings = DestinationSettings(name: name, destination: destination)
            var ok = true
            if let v = members["when"] {
                if let when = doc.choice(v, at: at + [.key("when")], as: DestinationSettings.When.self) { settings.when = when } else { ok = false }
            }
            if let v = members["what"] {
                if let what = doc.choice(v, at: at + [.key("what")], as: DestinationSettings.What.self) { settings.what = what } else { ok = false }
            }
            if let v = members["credentials"] {
                if let text = doc.string(v, at: at + [.key("credentials")]) { settings.credentials = text } else { ok = false }
            } else if [.sftp, .s3].contains(destination.kind) {
                doc.fail(at, "\(destination.kind.rawValue): needs credentials: NAME (an entry of the credentials file holding its \(destination.kind == .s3 ? "accessKey and secretKey" : "privateKey or password"))")
                ok = false
            }
            for key in ["knownHosts", "caFile"] {
                guard let v = members[key] else { continue }
                guard let file = doc.string(v, at: at + [.key(key)]), file.hasPrefix("/") else {
                    doc.fail(at + [.key(key)], "must be an absolute path, got \(v.shown)")
                    ok = false
                    continue
                }
                if key == "knownHosts" { settings.knownHosts = file } else { settings.caFile = file }
            }
            if let v = members["bandwidth"] {
                if let n = ConfigRules.size(v, at: at + [.key("bandwidth")], doc: &doc) { settings.bandwidth = n } else { ok = false }
            }
            if let v = members["maxAttachBytes"] {
                if let n = ConfigRules.size(v, at: at + [.key("maxAttachBytes")], doc: &doc) { settings.maxAttachBytes = n } else { ok = false }
            }
            if let v = members["stallTimeout"] {
                ok = ConfigRules.duration(v, at: at + [.key("stallTimeout")], into: &settings.stallTimeout, doc: &doc) && ok
            }
            if let v = members["retry"] {
                if let retry = self.retry(v, at: at + [.key("retry")], doc: &doc) { settings.retry = retry } else { ok = false }
            }
            if ok { out.append(settings) }
        }
        return out
    }

    private static func retry(_ value: JSON5Value, at path: [KeyPathComponent], doc: inout JSON5Document) -> RetryPolicy? {
        guard let members = doc.object(value, at: path, allowed: retryKeys) else { return nil }
        var policy = RetryPolicy()
        var ok = true
        if let v = members["first"] { ok = ConfigRules.duration(v, at: path + [.key("first")], into: &policy.first, doc: &doc) && ok }
        if let v = members["atMost"] { ok = ConfigRules.duration(v, at: path + [.key("atMost")], into: &policy.atMost, doc: &doc) && ok }
        if let v = members["giveUpAfter"] {
            ok = ConfigRules.duration(v, at: path + [.key("giveUpAfter")], into: &policy.giveUpAfter, doc: &doc) && ok
        }
        // A first wait longer than the default ceiling raises the ceiling (unless one is given).
        if members["atMost"] == nil { policy.atMost = max(policy.atMost, policy.first) }
        if ok && policy.atMost < policy.first {
            doc.fail(path + [.key("atMost")], "is shorter than first (\(Config.words(policy.first)))")
            ok = false
        }
        return ok ? policy : nil
    }

    private static func mail(_ value: JSON5Value, doc: inout JSON5Document) -> MailSettings? {
        let path: [KeyPathComponent] = [.key("mail")]
        guard let members = doc.object(value, at: path, allowed: mailKeys) else { return nil }
        guard let serverValue = members["server"], let fromValue = members["from"] else {
            doc.fail(path, "needs server and from (e.g. { server: \"smtps://smtp.example.org\", from: \"Studio <photos@example.org>\" })")
            return nil
        }
        guard let server = doc.string(serverValue, at: path + [.key("server")]), let from = doc.string(fromValue, at: path + [.key("from")]) else {
            return nil
        }
        let lower = server.lowercased()
        guard lower.hasPrefix("smtp://") || lower.hasPrefix("smtps://"), URL(string: server)?.host?.isEmpty == false,
              URL(string: server)?.password == nil else {
            doc.fail(path + [.key("server")], "must be smtp://host[:port] (STARTTLS) or smtps://host[:port], without a password, got \"\(server)\"")
            return nil
        }
        var mail = MailSettings(server: server, from: from)
        guard Destination.isMailAddress(mail.address) else {
            doc.fail(path + [.key("from")], "must be an address, or a name and <address>, got \"\(from)\"")
            return nil
        }
        if let v = members["credentials"] { mail.credentials = doc.string(v, at: path + [.key("credentials")]) }
        if let v = members["caFile"], let file = doc.string(v, at: path + [.key("caFile")]) {
            guard file.hasPrefix("/") else {
                doc.fail(path + [.key("caFile")], "must be an absolute path, got \"\(file)\"")
                return nil
            }
            mail.caFile = file
        }
        return mail
    }

    /// A `mailto:` destination needs the mail server.
    static func check(_ list: [DestinationSettings], at path: [KeyPathComponent], mail: MailSettings?, doc: inout JSON5Document) {
        guard mail == nil, let index = list.firstIndex(where: { $0.destination.kind == .mailto }) else { return }
        doc.fail(path + [.index(index), .key("to")], "mailto: needs the mail server: mail: { server: \"smtps://host\", from: \"…\" }")
    }
}
