import Finishing
import Foundation
import System

/// A report in words, for a person (`photofinish report PATH`).
public enum ReportText {
    /// Loads a report from a batch folder or a `report.json` path.
    /// - Throws: a message naming the path and what is wrong.
    public static func load(_ path: String) throws -> Report {
        try ReportReader.load(FilePath(path))
    }

    /// The whole report as lines of text.
    public static func render(_ r: Report) -> String {
        var lines: [String] = []
        let c = r.counts
        lines.append("Batch \(r.batch)" + (r.inbox.map { " from \($0)" } ?? "") + " · template \(r.template.name)")
        if let redoes = r.redoes { lines.append("Runs batch \(redoes) again") }
        lines.append("Started \(HumanTime.words(isoUTC: r.started)), finished \(HumanTime.words(isoUTC: r.finished))")
        var summary = "\(statusWords(r.status)): \(c.items) photo\(c.items == 1 ? "" : "s"), \(c.ok) finished, \(c.failed) failed"
        let interrupted = r.items.filter { $0.status == .interrupted }.count
        if interrupted > 0 { summary += ", \(interrupted) not done" }
        if let d = c.duplicates { summary += ", \(d) duplicate\(d == 1 ? "" : "s") of photos finished before" }
        if c.skippedOutputs > 0 { summary += ", \(c.skippedOutputs) crop\(c.skippedOutputs == 1 ? "" : "s") skipped" }
        lines.append(summary)
        if let light = r.harmonize { lines.append(LightWords.summary(light)) }
        lines.append("")
        let width = String(r.items.count).count
        for item in r.items {
            let n = String(repeating: " ", count: max(0, width - String(item.index).count)) + String(item.index)
            switch item.status {
            case .ok:
                var line = "\(n). \(item.source) ✓"
                if let size = item.size, size.count == 2 { line += " \(size[0])×\(size[1])" }
                if let f = item.format { line += " \(f)" }
                if let ms = item.ms { line += " · \(ms) ms" }
                if let color = item.color { line += " · colour \(color)" }
                lines.append(line)
                var said: [Applied.MetadataRecord] = []
                for o in item.outputs ?? [] {
                    lines.append("     → \(o.file) \(o.size.map(String.init).joined(separator: "×")), \(ByteCount.words(o.bytes))")
                    // Each output's metadata once: the photo's outputs mostly share it.
                    if let metadata = o.applied.metadata, !said.contains(metadata) {
                        said.append(metadata)
                        lines.append("       metadata: \(metadata.words)")
                    }
                }
                if let light = item.outputs?.first?.applied.harmonize { lines.append("     light: \(LightWords.correction(light))") }
                for s in item.skipped ?? [] { lines.append("     skipped \(s.ratio): \(s.reason)") }
            case .failed:
                let e = item.error
                lines.append("\(n). \(item.source) ✗ \(e.map { "\($0.code): \($0.message)" } ?? "failed")")
            case .interrupted:
                lines.append("\(n). \(item.source) – not done (the batch was stopped)")
            case .duplicate:
                lines.append("\(n). \(item.source) = duplicate" + (item.duplicateOf.map { " of \($0.source), finished in batch \($0.batch)" } ?? ""))
            }
            for w in item.warnings ?? [] { lines.append("     warning: \(w)") }
            if let o = item.original { lines.append("     original: \(o)") }
            if let a = item.alternates, !a.isEmpty { lines.append("     filed with it: \(a.joined(separator: ", "))") }
        }
        if let ignored = r.ignored, !ignored.isEmpty {
            lines.append("")
            for i in ignored { lines.append("Not a photo: \(i.source) (\(i.reason))" + (i.original.map { " → \($0)" } ?? "")) }
        }
        if !r.outputs.isEmpty {
            lines.append("")
            for o in r.outputs {
                lines.append("Batch output: \(o.file) \(o.size.map(String.init).joined(separator: "×"))"
                             + (o.items.map { " (photos \($0.map(String.init).joined(separator: ", ")))" } ?? "")
                             + (o.leftOut.map { " without \($0.map(String.init).joined(separator: ", "))" } ?? ""))
            }
        }
        for w in r.warnings ?? [] { lines.append("Batch warning: \(w)") }
        for d in r.deliveries ?? [] { lines.append("Delivery \(deliveryLine(d))") }
        if let link = r.link { lines.append("Link for the client: \(link)") }
        if let a = r.approval { lines.append("Approval: \(approvalLine(a))" + (a.note.map { "; note: \($0)" } ?? "")) }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A receipt in words: `client-sftp (sftp://…): delivered, 12 files, 4.1 MB, verified by
    /// sha256, at …`.
    public static func deliveryLine(_ d: Report.Delivery) -> String {
        var line = "\(d.name) (\(d.to)): \(d.status), \(d.files) file\(d.files == 1 ? "" : "s"), \(d.bytes) bytes"
        if let verified = d.verified { line += ", verified by \(verified)" }
        if let at = d.at { line += d.status == "delivered" ? ", at \(at)" : ", last tried \(at)" }
        if d.attempts > 1 { line += " (\(d.attempts) attempts)" }
        if let error = d.error { line += ": \(error)" }
        if let next = d.next { line += next == "approval" ? "; waits for the batch's approval" : "; tried again at \(next)" }
        return line
    }

    /// `4 of 6 approved by client at …`.
    public static func approvalLine(_ a: Report.ApprovalRecord) -> String {
        "\(a.approved.count) of \(a.approved.count + a.rejected.count) approved by \(a.by), \(HumanTime.words(isoUTC: a.at))"
    }

    static func statusWords(_ s: Report.Status) -> String {
        switch s {
        case .complete: "Complete"
        case .partial: "Partly done (some photos failed)"
        case .failed: "Failed (no photo could be finished)"
        case .interrupted: "Interrupted"
        }
    }
}

/// A report that could not be read.
public struct ReportError: Error, CustomStringConvertible {
    public var description: String
    init(_ d: String) { description = d }
}
