import Foundation

/// One share link of a batch, as its store keeps it (`.work/shares/<name>.json`; reference: Share
/// links, QR codes). Its token is not kept: it is made again from the id, the end time and the
/// hot folder's key.
public struct Share: Codable, Sendable, Equatable {
    /// The id as 32 hex digits (`ShareToken.name`).
    public var name: String
    /// The batch it shows.
    public var batch: String
    public var created: Date
    /// Who made it: a console login, `photofinish share` (with the user running it), or the
    /// template's `qr` mark.
    public var by: String
    public var expires: Date
    /// The yescrypt hash of the password the client must give, or nil for none.
    public var password: String?
    /// When and by whom it was revoked, or nil.
    public var revoked: Revocation?

    public struct Revocation: Codable, Sendable, Equatable {
        public var at: Date
        public var by: String
        public init(at: Date, by: String) {
            self.at = at
            self.by = by
        }
    }

    public init(token: ShareToken, batch: String, created: Date, by: String, password: String? = nil) {
        name = token.name
        self.batch = batch
        self.created = created
        self.by = by
        expires = token.expiryDate
        self.password = password
    }

    /// The token this record was made for (the end time is its own, in whole seconds).
    public var token: ShareToken? {
        guard let id = Self.bytes(hex: name) else { return nil }
        return ShareToken(id: id, expires: ShareToken.seconds(expires))
    }

    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == 2 * ShareToken.idBytes else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x61 + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(digits[i]), let low = value(digits[i + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }
}

/// One time a client used a link: the gallery opened, the ZIP or a photo downloaded, a
/// password refused, photos approved. Appended to `.work/shares/<name>.openings`, one JSON
/// object a line.
public struct Opening: Codable, Sendable, Equatable {
    public var at: Date
    /// What was done.
    public var what: Kind
    /// The client's address (as the console logs it: behind a trusted proxy, the address the
    /// proxy names).
    public var address: String
    /// The browser's User-Agent, cut to 160 characters.
    public var agent: String?
    /// The photo downloaded (`photo`), or nil.
    public var file: String?

    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// The gallery page was shown.
        case opened
        /// A wrong password was given.
        case refused
        /// One photo was downloaded.
        case photo
        /// The ZIP was downloaded.
        case zip
        /// The client sent their choice.
        case approved
    }

    public init(at: Date, what: Kind, address: String, agent: String? = nil, file: String? = nil) {
        self.at = at
        self.what = what
        self.address = address
        self.agent = agent.map { String($0.prefix(160)) }
        self.file = file
    }
}

/// What went wrong with a hot folder's shares, said so a person can act on it.
public struct ShareError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The store or the key cannot be read (or holds something else).
        case unreadable
        /// The store cannot be written (a full disk, the permissions).
        case unwritable
        /// No such batch, share or token.
        case notFound = "not-found"
        /// The request itself is wrong (an expiry out of range, a password too short).
        case refused
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
