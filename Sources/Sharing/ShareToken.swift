import Foundation
import System

/// A share link's token (reference: Share links, QR codes): 16 random bytes that name the share,
/// the time it ends, and a signature of both under the hot folder's key, as 48 URL-safe base64
/// characters (`/s/TOKEN/`). Pure: made and read with plain values.
///
/// The signature lets a server refuse a guessed or altered token before it looks anything up,
/// in the same time whatever was sent; the 128 random bits make a token unguessable on their
/// own; the end time is in the token, so an ended link is told apart from one never made even
/// after its record is gone.
public struct ShareToken: Sendable, Equatable, Hashable {
    /// The share's name: 16 random bytes (or, for a batch's own link, bytes derived from its id).
    public var id: [UInt8]
    /// When the link stops working, in whole seconds since 1970 (UTC).
    public var expires: UInt32

    /// Characters of a token's text.
    public static let length = 48
    static let idBytes = 16, tagBytes = 16
    /// What the signature covers before the id: a token of another kind (a future format, a
    /// cookie or a form field signed with the same key) never passes for a share token.
    static let purpose = Array("photofinish share link 1|".utf8)

    public init(id: [UInt8], expires: UInt32) {
        precondition(id.count == Self.idBytes, "a share id is \(Self.idBytes) bytes")
        self.id = id
        self.expires = expires
    }

    /// A new token with a random id, ending at `expires`.
    public static func random(expires: Date) -> ShareToken {
        var generator = SystemRandomNumberGenerator()  // getrandom(2): a cryptographic source
        return ShareToken(id: (0..<idBytes).map { _ in UInt8.random(in: 0...255, using: &generator) },
                          expires: seconds(expires))
    }

    /// The token of a batch's own link (the one a `qr` mark prints): its id derived from the
    /// batch's id under the key, so every worker and every host of a cluster makes the same link
    /// without asking anyone.
    public static func forBatch(_ batch: String, expires: Date, key: ShareKey) -> ShareToken {
        let id = HMAC.sha256(key: key.bytes, message: Array("photofinish batch link|\(batch)".utf8))
        return ShareToken(id: Array(id.prefix(idBytes)), expires: seconds(expires))
    }

    /// The end time as a date.
    public var expiryDate: Date { Date(timeIntervalSince1970: Double(expires)) }

    /// The id as 32 lowercase hex digits: the share's name in its store.
    public var name: String { HMAC.hex(id) }

    /// The token's text, signed with `key`.
    public func text(key: ShareKey) -> String {
        Base64URL.encode(payload + tag(key))
    }

    /// The token in `text`, when `key` signed it; nil for anything else (wrong length, a
    /// character outside the alphabet, another key's or an altered signature). The signature
    /// is compared in constant time.
    public static func read(_ text: some StringProtocol, key: ShareKey) -> ShareToken? {
        guard text.utf8.count == length, let bytes = Base64URL.decode(text), bytes.count == idBytes + 4 + tagBytes
        else { return nil }
        let id = Array(bytes[0..<idBytes])
        let expires = bytes[idBytes..<idBytes + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let token = ShareToken(id: id, expires: expires)
        return HMAC.constantTimeEqual(token.tag(key), Array(bytes[(idBytes + 4)...])) ? token : nil
    }

    /// Whether the link has ended at `now`.
    public func hasExpired(at now: Date) -> Bool {
        now.timeIntervalSince1970 >= Double(expires)
    }

    private var payload: [UInt8] {
        id + [UInt8(expires >> 24), UInt8(expires >> 16 & 0xff), UInt8(expires >> 8 & 0xff), UInt8(expires & 0xff)]
    }

    private func tag(_ key: ShareKey) -> [UInt8] {
        Array(HMAC.sha256(key: key.bytes, message: Self.purpose + payload).prefix(Self.tagBytes))
    }

    /// Whole seconds, clamped to what four bytes hold (until 2106).
    static func seconds(_ date: Date) -> UInt32 {
        UInt32(clamping: Int64(max(0, date.timeIntervalSince1970.rounded(.up))))
    }
}

/// Base64 with the URL's alphabet (`-` and `_`), no padding (RFC 4648 §5): tokens in paths
/// and cookies.
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        guard text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x61 && $0 <= 0x7a)
                                    || $0 == 0x2d || $0 == 0x5f }) else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map { Array($0) }
    }
}
