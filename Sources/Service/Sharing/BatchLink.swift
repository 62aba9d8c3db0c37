import Batches
import Foundation
import Sharing

/// The link a batch's report shows (`link`, with its QR code in report.html; reference: Share
/// links, QR codes): the newest of its links that still works, or none. Set again whenever a
/// link of the batch is made or revoked, by the daemon and by `photofinish share` alike.
public enum BatchLink {
    /// The newest working link of `batch` in `store` that someone made (else the batch's own),
    /// as its client opens it.
    /// - Throws: `ShareError` when the store cannot be read.
    public static func current(batch: String, store: ShareStore, publicURL: String?, now: Date = Date()) throws(ShareError) -> String? {
        guard let key = try store.key() else { return nil }
        let working = try store.all().filter { $0.batch == batch && $0.revoked == nil && $0.expires > now }
        // A link someone made wins over the batch's own (its qr marks'): record times are whole
        // seconds, and the two are often made in the same one.
        guard let newest = working.last(where: { $0.by != ShareStore.batchLinkMaker }) ?? working.last,
              let token = newest.token else { return nil }
        return ShareGate.link(publicURL: publicURL, token: token.text(key: key))
    }

    /// Writes the batch's current link into its report (nothing when it is already there).
    /// - Parameter root: the hot folder.
    /// - Returns: the link the report shows now.
    /// - Throws: `ShareError` or `ReportError` (as its description) when the store or the report
    ///   cannot be read or written.
    @discardableResult
    public static func refresh(batch: String, root: String, publicURL: String?, now: Date = Date()) throws -> String? {
        let link = try current(batch: batch, store: ShareStore(root: root), publicURL: publicURL, now: now)
        try ReportRewrite.change(batchFolder: root + "/out/" + batch) { report in
            guard report.link != link else { return false }
            report.link = link
            return true
        }
        return link
    }
}
