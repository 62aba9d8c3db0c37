import Finishing
import Foundation
import Sharing

/// The link a batch's `{shareURL}` stands for (reference: Share links, QR codes): the batch's
/// own link in its hot folder's store, made at its first use, the same on every host (its token
/// derived from the batch's id under the folder's key), ending `shareExpires` after the batch
/// was claimed.
public struct ShareLinks: Sendable {
    /// `web.publicURL`.
    public var publicURL: String
    /// Each hot folder's root and `shareExpires`, by name.
    public var folders: [String: (root: String, expires: Duration)]

    public init(publicURL: String, folders: [String: (root: String, expires: Duration)]) {
        self.publicURL = publicURL
        self.folders = folders
    }

    /// The link of `batch` of the hot folder `inbox`; nil for a folder this does not know.
    /// - Returns: the link, or why it could not be made (the store not writable).
    public func link(inbox: String, batch: String) -> Result<String, ShareError>? {
        guard let folder = folders[inbox], let claimed = BatchID.date(of: batch) else { return nil }
        do throws(ShareError) {
            let made = try ShareStore(root: folder.root).batchLink(batch: batch, expires: claimed + Double(folder.expires.components.seconds))
            return .success(ShareGate.link(publicURL: publicURL, token: made.token))
        } catch {
            return .failure(error)
        }
    }
}

extension Template {
    /// Whether a mark of the template (or of a variant) holds `{shareURL}`.
    public var usesShareURL: Bool {
        recipes.contains { _, recipe in
            [recipe.text?.text, recipe.qr?.text].contains { $0.map { Variables.unknown(in: $0, known: Variables.photo).contains("shareURL") } ?? false }
        }
    }
}
