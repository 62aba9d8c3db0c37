import Foundation

/// What a request for a share link gets (reference: Share links, QR codes), decided from plain
/// values: what the hot folders' stores found for the token, whether the batch is still
/// published, whether the client has given the password, and the time.
public enum ShareGate {
    public enum Answer: Sendable, Equatable {
        /// 404: no hot folder signed this token (a guess, a typo, an altered link). Says nothing
        /// more, so a guesser learns nothing.
        case notFound
        /// 410: a link that was made here and has ended.
        case gone(Gone)
        /// The link needs its password first (`refused`: a wrong one was just given).
        case locked(Share)
        /// The gallery.
        case open(Share)
    }

    /// Why a link has ended, in the words the client's page says.
    public enum Gone: Sendable, Equatable {
        case expired(Date)
        case revoked(Date)
        /// Its batch, or its record, is gone (retention removed it).
        case removed

        public var words: String {
            switch self {
            case .expired: "This link has expired."
            case .revoked: "This link has been withdrawn."
            case .removed: "These photos are no longer here."
            }
        }
    }

    /// The answer for a token, given what each hot folder's store found for it.
    /// - Parameters:
    ///   - lookups: one per hot folder (at most one can be `.signed`: keys are random).
    ///   - published: whether the share's batch is still in `out/`.
    ///   - unlocked: whether the request carries the unlock cookie of this share (`unlockValue`).
    public static func answer(_ lookups: [ShareStore.Lookup], published: (Share) -> Bool, unlocked: (Share) -> Bool,
                              now: Date) -> Answer {
        for lookup in lookups {
            guard case .signed(let token, let share) = lookup else { continue }
            guard let share else { return .gone(token.hasExpired(at: now) ? .expired(token.expiryDate) : .removed) }
            // The record is the token's own (its id); an end time that is not the record's is a
            // token this store never handed out.
            guard share.token == token else { return .notFound }
            if let revoked = share.revoked { return .gone(.revoked(revoked.at)) }
            if token.hasExpired(at: now) { return .gone(.expired(share.expires)) }
            guard published(share) else { return .gone(.removed) }
            if share.password != nil && !unlocked(share) { return .locked(share) }
            return .open(share)
        }
        return .notFound
    }

    /// The cookie a client gets once it has given a share's password: signed with the hot
    /// folder's key over the share and its password hash, so it opens this share alone, and
    /// no longer once the password or the key changes.
    public static func unlockValue(_ share: Share, key: ShareKey) -> String {
        key.sign("photofinish share unlock", share.name, share.password ?? "")
    }

    /// Whether `cookie` is the share's unlock value (compared in constant time).
    public static func isUnlocked(_ share: Share, cookie: String?, key: ShareKey) -> Bool {
        guard let cookie, share.password != nil else { return false }
        return key.verify(cookie, "photofinish share unlock", share.name, share.password ?? "")
    }

    /// The `csrf` field of the share page's forms (approval, password): signed over the share
    /// (and the unlock cookie, when there is one), so a form made by another site is refused.
    public static func formToken(_ share: Share, cookie: String?, key: ShareKey) -> String {
        key.sign("photofinish share form", share.name, cookie ?? "")
    }

    /// Whether `sent` is the share's form token.
    public static func isFormToken(_ sent: String?, share: Share, cookie: String?, key: ShareKey) -> Bool {
        guard let sent else { return false }
        return key.verify(sent, "photofinish share form", share.name, cookie ?? "")
    }

    /// The link for a token: `publicURL` (`web.publicURL`, e.g. `https://photos.example.com/`
    /// or `https://example.com/studio/` behind a proxy) + `s/TOKEN/`. Without a public URL, the
    /// path alone.
    public static func link(publicURL: String?, token: String) -> String {
        guard var base = publicURL, !base.isEmpty else { return "/s/\(token)/" }
        while base.hasSuffix("/") { base.removeLast() }
        return base + "/s/\(token)/"
    }

    /// The token in a request path `/s/TOKEN/…` and the rest after it (`""` for the gallery,
    /// `IMG_1.jpg`, `batch.zip`, `qr.svg`…); nil for any other path.
    public static func route(_ path: String) -> (token: Substring, rest: Substring)? {
        guard path.hasPrefix("/s/") else { return nil }
        let tail = path.dropFirst(3)
        guard let slash = tail.firstIndex(of: "/") else { return nil }
        let token = tail[..<slash]
        guard token.utf8.count == ShareToken.length else { return nil }
        return (token, tail[tail.index(after: slash)...])
    }
}
