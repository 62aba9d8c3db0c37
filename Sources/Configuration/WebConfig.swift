import Foundation
import JSON5
import System

// The web console's keys (reference: The web console), kept apart from the rest of the config's rules:
//   users: "/var/lib/photofinish/users.json5",    the logins (written by `photofinish user` and the console)
//   web: { tlsCertificate: "/etc/photofinish/tls/console.pem", tlsKey: "/etc/photofinish/tls/console.key",
//          trustedProxies: ["127.0.0.1", "::1"] },   the reverse proxies whose X-Forwarded-For is believed

/// The console's own settings (`web` in the config).
public struct WebSettings: Sendable, Equatable {
    /// HTTPS: the certificate chain (PEM); with `tlsKey`, or neither (plain HTTP, or TLS at a
    /// reverse proxy in front).
    public var tlsCertificate: String?
    /// HTTPS: the private key (PEM), readable by the daemon's user.
    public var tlsKey: String?
    /// The reverse proxies in front of the console (addresses, or networks as `ADDRESS/BITS`):
    /// only from these does the console believe `X-Forwarded-For` (who the client is) and
    /// `X-Forwarded-Proto`. None by default: any other peer, loopback included, is the client.
    public var trustedProxies: [AddressRange] = []

    public init(tlsCertificate: String? = nil, tlsKey: String? = nil, trustedProxies: [AddressRange] = []) {
        self.tlsCertificate = tlsCertificate
        self.tlsKey = tlsKey
        self.trustedProxies = trustedProxies
    }

    /// The users file when the config names none.
    /// The service's own state folder (`StateDirectory=photofinish`): the service may write it, so
    /// the console can change logins too.
    public static let defaultUsersFile = "/var/lib/photofinish/users.json5"
}

/// The rules of the console's keys.
enum WebConfigRules {
    static let rootKeys = ["users", "web"]

    static func read(_ root: [String: JSON5Value], into config: inout Config, _ doc: inout JSON5Document) {
        if let value = root["users"], let path = doc.string(value, at: [.key("users")]) {
            config.users = path
        }
        guard let value = root["web"] else { return }
        guard let web = doc.object(value, at: [.key("web")], allowed: ["tlsCertificate", "tlsKey", "trustedProxies"] + ShareConfigRules.webKeys) else { return }
        if let list = web["trustedProxies"] {
            let path: [KeyPathComponent] = [.key("web"), .key("trustedProxies")]
            if case .array(let entries) = list {
                for (i, entry) in entries.enumerated() {
                    guard let text = doc.string(entry, at: path + [.index(i)]) else { continue }
                    if let range = AddressRange(text) {
                        config.web.trustedProxies.append(range)
                    } else {
                        doc.fail(path + [.index(i)], "must be an IP address or a network (ADDRESS/BITS), got \"\(text)\"")
                    }
                }
            } else {
                doc.fail(path, "must be a list of addresses (\"127.0.0.1\", \"::1\", \"10.0.0.0/8\"), got \(list.shown)")
            }
        }
        ShareConfigRules.publicURL(web, into: &config, doc: &doc)
        for key in ["tlsCertificate", "tlsKey"] {
            guard let v = web[key], let path = doc.string(v, at: [.key("web"), .key(key)]) else { continue }
            guard path.hasPrefix("/") else {
                doc.fail([.key("web"), .key(key)], "must be an absolute path, got \"\(path)\"")
                continue
            }
            if key == "tlsKey" { config.web.tlsKey = path } else { config.web.tlsCertificate = path }
        }
        if (config.web.tlsKey == nil) != (config.web.tlsCertificate == nil), web["tlsKey"] != nil || web["tlsCertificate"] != nil {
            let missing = config.web.tlsKey == nil ? "tlsKey" : "tlsCertificate"
            doc.fail([.key("web")], "HTTPS needs both tlsCertificate and tlsKey: \(missing) is missing")
        }
    }

    /// What only the file system can tell: the TLS files are there and readable.
    static func checkFiles(_ config: inout Config, configPath: String, _ doc: inout JSON5Document) {
        config.users = Config.resolved(config.users, besideConfig: configPath)
        for (key, path) in [("tlsCertificate", config.web.tlsCertificate), ("tlsKey", config.web.tlsKey)] {
            guard let path else { continue }
            if !Files.existsFollowingLinks(path) {
                doc.fail([.key("web"), .key(key)], "\(path) does not exist")
            } else if !Files.isReadable(path) {
                doc.fail([.key("web"), .key(key)], "\(path) cannot be read by this user (the daemon's user must read it)")
            }
        }
    }
}
