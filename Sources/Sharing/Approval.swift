import Foundation

/// Who approved which photos of a held batch, and when (reference: Approval): the report's
/// `approval`. Made from what the client's page (or the console) sent, checked against the
/// batch's photos; pure.
public struct Approval: Codable, Sendable, Equatable {
    /// `client` (the share page) or the console login that approved.
    public var by: String
    public var at: Date
    /// The photos approved, by the name the client saw (each photo's first output), in batch order.
    public var approved: [String]
    /// The batch's other photos, in batch order.
    public var rejected: [String]
    /// What the client wrote, or nil.
    public var note: String?

    /// A note is cut to this many characters.
    public static let noteLimit = 2000
    /// Who approved on the share page.
    public static let client = "client"

    public init(by: String, at: Date, approved: [String], rejected: [String], note: String?) {
        self.by = by
        self.at = at
        self.approved = approved
        self.rejected = rejected
        self.note = note
    }

    /// The approval of `chosen` among `photos`.
    /// - Parameters:
    ///   - photos: the batch's photos, in batch order.
    ///   - chosen: the names sent (`approve`, repeated; a name sent twice counts once).
    ///   - note: the note sent: trimmed, its control characters (but new lines) and bidi
    ///     overrides removed, cut to `noteLimit` characters; empty is none.
    /// - Throws: `ShareError` (`refused`) naming a photo that is not the batch's (a stale page,
    ///   or a forged form): nothing is approved then.
    public static func make(photos: [String], chosen: [String], note: String?, by: String,
                            at: Date) throws(ShareError) -> Approval {
        let known = Set(photos)
        if let stranger = chosen.first(where: { !known.contains($0) }) {
            throw ShareError(.refused, "\"\(String(stranger.prefix(100)))\" is not a photo of this set: reload the page and choose again")
        }
        let picked = Set(chosen)
        return Approval(by: by, at: at, approved: photos.filter { picked.contains($0) },
                        rejected: photos.filter { !picked.contains($0) }, note: cleaned(note))
    }

    static func cleaned(_ note: String?) -> String? {
        guard let note else { return nil }
        let kept = note.unicodeScalars.filter { scalar in
            if scalar == "\n" { return true }
            if scalar.properties.generalCategory == .control { return false }
            // Bidi embeddings, overrides and isolates: text that reads otherwise than it is.
            return !(0x202A...0x202E).contains(scalar.value) && !(0x2066...0x2069).contains(scalar.value)
        }
        var text = String(String.UnicodeScalarView(kept))
        text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.count > noteLimit { text = String(text.prefix(noteLimit)) }
        return text.isEmpty ? nil : text
    }
}
