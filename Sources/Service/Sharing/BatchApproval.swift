import Batches
import Foundation
import Sharing

/// A batch's approval written into its report (reference: Approval), by the client's share
/// page and the console alike: once — a batch approved already keeps its first approval.
public enum BatchApproval {
    /// Writes `approval` into the report of the batch in `batchFolder` (report.json and
    /// report.html, under the hot folder's report lock).
    /// - Returns: false when the batch had an approval already (nothing written).
    /// - Throws: `ReportError` when the report cannot be read or written.
    public static func record(_ approval: Approval, batchFolder: String) throws(ReportError) -> Bool {
        var written = false
        try ReportRewrite.change(batchFolder: batchFolder) { report in
            guard report.approval == nil else { return false }
            report.approval = Report.ApprovalRecord(by: approval.by, at: BatchID.timestamp(approval.at), approved: approval.approved,
                                                    rejected: approval.rejected, note: approval.note)
            written = true
            return true
        }
        return written
    }

    /// The report's approval, as pages show it.
    public static func read(_ report: Report) -> Approval? {
        guard let a = report.approval else { return nil }
        return Approval(by: a.by, at: HumanTime.date(isoUTC: a.at) ?? Date(timeIntervalSince1970: 0), approved: a.approved,
                        rejected: a.rejected, note: a.note)
    }

    /// The photos an approval chooses among: each finished photo by its first output's name, in
    /// batch order.
    public static func photos(_ report: Report) -> [String] {
        report.items.compactMap(Report.photoName)
    }
}
