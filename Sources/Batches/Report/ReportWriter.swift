import Foundation
import System

/// Writes a `Report` as `report.html` and `report.json`: the JSON with its types' properties in
/// declaration order (the reference's order), pretty-printed, atomically. The one place both are
/// written, once a batch is done and filed.
public enum ReportWriter {
    /// The report as ordered JSON text.
    public static func json(_ report: Report) -> String {
        do {
            return try JSONValue(encoding: report).serialized()
        } catch {
            // The encoder never throws and the report's types use synthesized conformances.
            preconditionFailure("the report's types failed to encode: \(error)")
        }
    }

    /// Writes `report.html`, then `report.json` into `folder` (atomically: the report is the
    /// last file).
    /// - Returns: the report as written: a page that could not be written is a warning in it
    ///   (the JSON report still tells everything).
    /// - Throws: `SystemError` when `report.json` cannot be written.
    @discardableResult
    public static func write(_ report: Report, toFolder folder: String) throws(SystemError) -> Report {
        var report = report
        do {
            try AtomicFile.write(Array(ReportHTML.render(report).utf8), to: folder + "/report.html")
        } catch {
            report.warnings = (report.warnings ?? []) + ["report.html not written: \(error)"]
        }
        try AtomicFile.write(Array(json(report).utf8), to: folder + "/" + ReportReader.fileName.escaped)
        return report
    }
}
