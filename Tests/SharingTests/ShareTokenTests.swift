import Foundation
import Sharing
import System
import Testing

/// Tokens, keys and what a link answers, with plain values.
@Suite struct ShareTokenTests {
    let key = ShareKey(bytes: Array(repeating: 7, count: 32))
    let otherKey = ShareKey(bytes: Array(repeating: 8, count: 32))
    let now = Date(timeIntervalSince1970: 1_790_000_000)

    @Test func aTokenReadsBackWithItsKeyAlone() throws {
        let token = ShareToken.random(expires: now + 7 * 86_400)
        let text = token.text(key: key)
        #expect(text.count == ShareToken.length)
        #expect(text.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        #expect(ShareToken.read(text, key: key) == token)
        #expect(ShareToken.read(text, key: otherKey) == nil)
        #expect(token.expiryDate == now + 7 * 86_400)
        #expect(!token.hasExpired(at: now) && token.hasExpired(at: now + 7 * 86_400))
    }

    /// Every single character changed, and every cut or longer text, is refused: the id, the
    /// end time and the signature are all covered.
    @Test func anAlteredTokenIsRefused() {
        let text = ShareToken.random(expires: now + 60).text(key: key)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        for i in text.indices {
            let original = text[i]
            let other = alphabet.first { $0 != original }!
            var altered = text
            altered.replaceSubrange(i...i, with: String(other))
            #expect(ShareToken.read(altered, key: key) == nil, "position \(text.distance(from: text.startIndex, to: i))")
        }
        #expect(ShareToken.read(String(text.dropLast()), key: key) == nil)
        #expect(ShareToken.read(text + "A", key: key) == nil)
        #expect(ShareToken.read(String(repeating: "A", count: 48), key: key) == nil)
        #expect(ShareToken.read(String(text.dropLast()) + "=", key: key) == nil)
        #expect(ShareToken.read("../" + text.dropFirst(3), key: key) == nil)
    }

    @Test func randomTokensDiffer() {
        let texts = Set((0..<200).map { _ in ShareToken.random(expires: now).text(key: key) })
        #expect(texts.count == 200)
    }

    /// A batch's own link is the same wherever it is made with the folder's key, and differs
    /// from any other batch's and any other key's.
    @Test func aBatchLinkIsMadeAlikeEverywhere() {
        let a = ShareToken.forBatch("20261129-150405-3f2a", expires: now, key: key)
        #expect(a == ShareToken.forBatch("20261129-150405-3f2a", expires: now, key: key))
        #expect(a.id != ShareToken.forBatch("20261129-150405-3f2b", expires: now, key: key).id)
        #expect(a.id != ShareToken.forBatch("20261129-150405-3f2a", expires: now, key: otherKey).id)
    }

    @Test func signedValuesAreForOnePurposeAndShare() {
        let cookie = key.sign("unlock", "share-a", "hash")
        #expect(key.verify(cookie, "unlock", "share-a", "hash"))
        #expect(!key.verify(cookie, "unlock", "share-b", "hash"))
        #expect(!key.verify(cookie, "form", "share-a", "hash"))
        #expect(!key.verify(cookie, "unlock", "share-a", "other hash"))
        #expect(!otherKey.verify(cookie, "unlock", "share-a", "hash"))
        #expect(!key.verify("", "unlock", "share-a", "hash"))
        #expect(!key.verify("not base64 !", "unlock", "share-a", "hash"))
    }

    @Test func hmacIsRFC4231() {
        // RFC 4231, test case 2.
        let mac = HMAC.sha256Hex(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(mac == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(HMAC.constantTimeEqual([1, 2, 3], [1, 2, 3]) && !HMAC.constantTimeEqual([1, 2, 3], [1, 2, 4])
                && !HMAC.constantTimeEqual([1, 2], [1, 2, 3]))
    }

    // MARK: What a link answers

    func share(_ token: ShareToken, password: String? = nil) -> Share {
        Share(token: token, batch: "20261129-150405-3f2a", created: now, by: "anna", password: password)
    }

    @Test func aLinkAnswersByItsState() {
        let token = ShareToken.random(expires: now + 3600)
        let open = share(token)
        func answer(_ lookups: [ShareStore.Lookup], published: Bool = true, unlocked: Bool = false, at: Date? = nil) -> ShareGate.Answer {
            ShareGate.answer(lookups, published: { _ in published }, unlocked: { _ in unlocked }, now: at ?? now)
        }
        #expect(answer([.notOurs, .notOurs]) == .notFound)
        #expect(answer([]) == .notFound)
        #expect(answer([.notOurs, .signed(token, open)]) == .open(open))
        #expect(answer([.signed(token, open)], at: now + 3600) == .gone(.expired(open.expires)))
        #expect(answer([.signed(token, open)], published: false) == .gone(.removed))
        // Made here, its record gone: ended, not unknown.
        #expect(answer([.signed(token, nil)]) == .gone(.removed))
        #expect(answer([.signed(token, nil)], at: now + 7200) == .gone(.expired(token.expiryDate)))
        var revoked = open
        revoked.revoked = .init(at: now, by: "anna")
        #expect(answer([.signed(token, revoked)]) == .gone(.revoked(now)))
        // A record whose end is not the token's: never handed out.
        let other = ShareToken(id: token.id, expires: token.expires + 1)
        #expect(answer([.signed(other, open)]) == .notFound)
        let locked = share(token, password: "$y$hash")
        #expect(answer([.signed(token, locked)]) == .locked(locked))
        #expect(answer([.signed(token, locked)], unlocked: true) == .open(locked))
    }

    @Test func theUnlockCookieOpensItsShareAlone() {
        let a = share(ShareToken.random(expires: now + 60), password: "$y$one")
        let b = share(ShareToken.random(expires: now + 60), password: "$y$one")
        let cookie = ShareGate.unlockValue(a, key: key)
        #expect(ShareGate.isUnlocked(a, cookie: cookie, key: key))
        #expect(!ShareGate.isUnlocked(b, cookie: cookie, key: key))
        #expect(!ShareGate.isUnlocked(a, cookie: nil, key: key))
        var changed = a
        changed.password = "$y$two"
        #expect(!ShareGate.isUnlocked(changed, cookie: cookie, key: key))
        let form = ShareGate.formToken(a, cookie: cookie, key: key)
        #expect(ShareGate.isFormToken(form, share: a, cookie: cookie, key: key))
        #expect(!ShareGate.isFormToken(form, share: a, cookie: nil, key: key))
        #expect(!ShareGate.isFormToken(form, share: b, cookie: cookie, key: key))
        #expect(!ShareGate.isFormToken(nil, share: a, cookie: cookie, key: key))
    }

    @Test func linksAndRoutes() throws {
        let text = ShareToken.random(expires: now).text(key: key)
        #expect(ShareGate.link(publicURL: "https://photos.example.com/", token: text) == "https://photos.example.com/s/\(text)/")
        #expect(ShareGate.link(publicURL: "https://example.com/studio", token: text) == "https://example.com/studio/s/\(text)/")
        #expect(ShareGate.link(publicURL: nil, token: text) == "/s/\(text)/")
        let gallery = try #require(ShareGate.route("/s/\(text)/"))
        #expect(gallery.token == text && gallery.rest == "")
        let file = try #require(ShareGate.route("/s/\(text)/IMG_1.jpg"))
        #expect(file.token == text && file.rest == "IMG_1.jpg")
        #expect(ShareGate.route("/s/\(text)") == nil)
        #expect(ShareGate.route("/s/short/") == nil)
        #expect(ShareGate.route("/inbox/s/\(text)/") == nil)
    }

    // MARK: Approval

    @Test func anApprovalSplitsTheSetInBatchOrder() throws {
        let photos = ["IMG_1.jpg", "IMG_2.jpg", "IMG_3.jpg", "IMG_10.jpg"]
        let approval = try Approval.make(photos: photos, chosen: ["IMG_10.jpg", "IMG_1.jpg", "IMG_1.jpg"],
                                         note: "  Lovely!\u{202E}\u{7}\r\nThanks  ", by: Approval.client, at: now)
        #expect(approval.approved == ["IMG_1.jpg", "IMG_10.jpg"])
        #expect(approval.rejected == ["IMG_2.jpg", "IMG_3.jpg"])
        #expect(approval.note == "Lovely!\nThanks")
        #expect(try Approval.make(photos: photos, chosen: [], note: " \n", by: "anna", at: now).note == nil)
        #expect(try Approval.make(photos: photos, chosen: [], note: String(repeating: "x", count: 5000), by: "anna", at: now)
            .note?.count == Approval.noteLimit)
        #expect(throws: ShareError.self) {
            try Approval.make(photos: photos, chosen: ["IMG_1.jpg", "../../etc/passwd"], note: nil, by: Approval.client, at: now)
        }
    }
}
