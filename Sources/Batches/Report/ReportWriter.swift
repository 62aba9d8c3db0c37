import Foundation
import System

/// Writes a `Report` as `report.json`: its types' properties in declaration order (SPEC §4's
/// order), pretty-printed, atomically.
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

    /// Writes `report.json` into `folder` (atomically: SPEC §1, the report is the last file).
    public static func write(_ report: Report, toFolder folder: String) throws(SystemError) {
        try AtomicFile.write(Array(json(report).utf8), to: folder + "/report.json")
    }
}
