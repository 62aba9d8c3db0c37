import Foundation
import System

/// A hot folder's share links, in `.work/shares/` (0700; reference: Share links, QR codes):
///
/// ```
/// .work/shares/key                 the folder's signing key (ShareKey)
/// .work/shares/<name>.json         one share: its batch, end, password hash, revocation
/// .work/shares/<name>.openings     every use of it, one JSON object a line, appended
/// ```
///
/// A share's record is written whole, atomically, when it is made and when it is revoked, and
/// by nothing else; what clients do is only ever appended to its openings, so the daemon counting
/// an opening and `photofinish share revoke` run at the same time never undo each other.
public struct ShareStore: Sendable {
    /// `<root>/.work/shares`.
    public let folder: String

    /// The folder's name in `.work/`.
    public static let folderName = "shares"
    /// An openings file stops growing at this size (about 20,000 openings): a link passed
    /// around the whole internet must not fill the disk. The console says the count is "at least".
    public static let openingsLimit = 4 << 20

    /// The store of the hot folder at `root`.
    public init(root: String) {
        folder = (root.hasSuffix("/") ? String(root.dropLast()) : root) + "/.work/" + Self.folderName
    }

    public init(folder: String) {
        self.folder = folder
    }

    /// The hot folder's key, or nil before its first share.
    /// - Throws: `ShareError` when it cannot be read.
    public func key() throws(ShareError) -> ShareKey? {
        try ShareKey.read(in: folder)
    }

    /// The hot folder's key, made at the first share.
    /// - Throws: `ShareError` when it cannot be made.
    public func keyMadeIfMissing() throws(ShareError) -> ShareKey {
        try ShareKey.readOrMake(in: folder)
    }

    /// Makes a new link to `batch`.
    /// - Parameters:
    ///   - expires: when it ends (at most until 2106).
    ///   - password: the yescrypt hash of the client's password, or nil.
    ///   - by: who makes it, for the record.
    /// - Returns: the record and the token's text.
    /// - Throws: `ShareError` when the store cannot be written.
    public func make(batch: String, expires: Date, password: String? = nil, by: String,
                     now: Date = Date()) throws(ShareError) -> (share: Share, token: String) {
        let key = try keyMadeIfMissing()
        let token = ShareToken.random(expires: expires)
        let share = Share(token: token, batch: batch, created: now, by: by, password: password)
        try write(share)
        return (share, token.text(key: key))
    }

    /// The batch's own link, the one its photos' `qr` marks print: made once, the same on every
    /// host (its id is derived from the batch's); asked again it is the same link, with the end
    /// time it was made with.
    /// - Throws: `ShareError` when the store cannot be read or written.
    public func batchLink(batch: String, expires: Date, now: Date = Date()) throws(ShareError) -> (share: Share, token: String) {
        let key = try keyMadeIfMissing()
        let token = ShareToken.forBatch(batch, expires: expires, key: key)
        if let share = try share(named: token.name), let made = share.token {
            return (share, made.text(key: key))
        }
        let share = Share(token: token, batch: batch, created: now, by: Self.batchLinkMaker)
        try write(share)
        return (share, token.text(key: key))
    }

    /// Who made a batch's own link, as its record says.
    public static let batchLinkMaker = "the template's qr mark"

    /// Every share of the hot folder, oldest first.
    /// - Throws: `ShareError` when a record cannot be read.
    public func all() throws(ShareError) -> [Share] {
        let names: [String]
        do throws(SystemError) {
            guard Files.exists(folder) else { return [] }
            names = try Directory(folder).names().compactMap(\.string)
        } catch {
            throw ShareError(.unreadable, "cannot list \(folder): \(error.reason)")
        }
        var shares: [Share] = []
        for name in names where name.hasSuffix(".json") {
            if let share = try share(named: String(name.dropLast(5))) { shares.append(share) }
        }
        return shares.sorted { ($0.created, $0.name) < ($1.created, $1.name) }
    }

    /// The share called `name` (32 hex digits), or nil when there is none.
    /// - Throws: `ShareError` when its record cannot be read.
    public func share(named name: String) throws(ShareError) -> Share? {
        guard Share.bytes(hex: name) != nil else { return nil }
        let path = folder + "/" + name + ".json"
        let bytes: [UInt8]?
        do throws(SystemError) {
            bytes = try Files.read(path)
        } catch {
            throw ShareError(.unreadable, "cannot read \(path): \(error.reason)")
        }
        guard let bytes else { return nil }
        do {
            return try Self.decoder.decode(Share.self, from: Data(bytes))
        } catch {
            throw ShareError(.unreadable, "\(path) is not a share record: \(error)")
        }
    }

    /// Ends the share called `name` now.
    /// - Returns: the record as revoked (one revoked before keeps its first revocation).
    /// - Throws: `ShareError` (`not-found` when there is no such share).
    @discardableResult
    public func revoke(named name: String, by: String, at now: Date = Date()) throws(ShareError) -> Share {
        guard var share = try share(named: name) else {
            throw ShareError(.notFound, "no share \(name) in \(folder)")
        }
        guard share.revoked == nil else { return share }
        share.revoked = Share.Revocation(at: now, by: by)
        try write(share)
        return share
    }

    /// The share a token's text names, when this hot folder's key signed it: `.signed` with the
    /// record (nil when there is none: never made here, or removed), else `.notOurs`.
    /// - Throws: `ShareError` when the key or the record cannot be read.
    public func find(_ text: some StringProtocol) throws(ShareError) -> Lookup {
        guard let key = try key(), let token = ShareToken.read(text, key: key) else { return .notOurs }
        return .signed(token, try share(named: token.name))
    }

    /// What `find` found.
    public enum Lookup: Sendable, Equatable {
        case notOurs
        case signed(ShareToken, Share?)
    }

    /// Adds `opening` to the share's openings (nothing once they reach `openingsLimit`).
    /// - Throws: `ShareError` when the file cannot be written.
    public func record(_ opening: Opening, of name: String) throws(ShareError) {
        guard Share.bytes(hex: name) != nil else { return }
        let path = folder + "/" + name + ".openings"
        guard let encoded = try? Self.encoder(pretty: false).encode(opening) else {
            preconditionFailure("an opening always encodes")  // dates, strings and an enum
        }
        do throws(SystemError) {
            if let size = try Files.status(path)?.size, size >= Self.openingsLimit { return }
            let file = try FileDescriptor.open(path, .write, [.append, .create, .noFollow], permissions: 0o600)
            defer { file.close() }
            // One write of the whole line: O_APPEND keeps lines of two writers apart.
            try file.write(Array(encoded) + [0x0a])
        } catch {
            throw ShareError(.unwritable, "cannot write \(path): \(error.reason)")
        }
    }

    /// The share's openings, oldest first (a line that cannot be read, such as one a full disk
    /// cut, is left out).
    /// - Throws: `ShareError` when the file cannot be read.
    public func openings(of name: String) throws(ShareError) -> [Opening] {
        guard Share.bytes(hex: name) != nil else { return [] }
        let path = folder + "/" + name + ".openings"
        let bytes: [UInt8]?
        do throws(SystemError) {
            bytes = try Files.read(path)
        } catch {
            throw ShareError(.unreadable, "cannot read \(path): \(error.reason)")
        }
        return (bytes ?? []).split(separator: 0x0a).compactMap { try? Self.decoder.decode(Opening.self, from: Data($0)) }
    }

    /// Removes every share of `batch` and its openings (the batch itself is gone: retention
    /// removed it, or `redo` replaced it).
    /// - Returns: how many shares were removed.
    /// - Throws: `ShareError` when a file cannot be removed.
    @discardableResult
    public func removeShares(of batch: String) throws(ShareError) -> Int {
        var removed = 0
        for share in try all() where share.batch == batch {
            do throws(SystemError) {
                try Files.remove(folder + "/" + share.name + ".json")
                if Files.exists(folder + "/" + share.name + ".openings") { try Files.remove(folder + "/" + share.name + ".openings") }
            } catch {
                throw ShareError(.unwritable, "cannot remove the share \(share.name) of \(batch): \(error.reason)")
            }
            removed += 1
        }
        return removed
    }

    private func write(_ share: Share) throws(ShareError) {
        let path = folder + "/" + share.name + ".json"
        do throws(SystemError) {
            try Files.makeDirectories(folder, permissions: 0o700)
            guard let encoded = try? Self.encoder(pretty: true).encode(share) else {
                preconditionFailure("a share record always encodes")  // dates, strings
            }
            try AtomicFile.write(Array(encoded) + [0x0a], to: path)
        } catch {
            throw ShareError(.unwritable, "cannot write \(path): \(error.reason)")
        }
    }

    static func encoder(pretty: Bool) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}
