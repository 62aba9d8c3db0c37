import Foundation
import System

/// A finished batch's report changed after the batch (reference: The report): a delivery's
/// receipt, the batch's share link, its approval. Each change reads the report, changes it and
/// writes `report.html` and `report.json` again (atomically), holding the hot folder's report
/// lock, `.work/report.lock`: the daemon and a command (`photofinish share`, `deliver`) changing
/// one report at the same time never lose each other's change.
public enum ReportRewrite {
    /// The lock file's name in `.work/`.
    public static let lockName = "report.lock"

    /// Reads the report of `batchFolder` (`<root>/out/<batch-id>`), lets `change` change it, and
    /// writes it again when `change` returns true.
    /// - Returns: the report as it is now; nil when the batch has no report (a batch being
    ///   finished, or one removed).
    /// - Throws: `ReportError` when the report cannot be read, the lock taken or the report written.
    @discardableResult
    public static func change(batchFolder: String, _ change: (inout Report) -> Bool) throws(ReportError) -> Report? {
        let lock = try takeLock(for: batchFolder)
        defer { lock?.close() }
        guard var report = try ReportReader.read(batchFolder: batchFolder) else { return nil }
        guard change(&report) else { return report }
        do throws(SystemError) {
            return try ReportWriter.write(report, toFolder: batchFolder)
        } catch {
            throw ReportError("cannot write \(batchFolder)/report.json: \(error)")
        }
    }

    /// The hot folder's report lock, held; nil for a batch folder outside a hot folder (`run
    /// --out DIR`: no `.work/` beside its `out/`).
    private static func takeLock(for batchFolder: String) throws(ReportError) -> FileDescriptor? {
        let out = FilePath(batchFolder).parent
        let work = out.parent.description + "/.work"
        guard out.lastComponent?.string == "out", Files.isDirectory(work) else { return nil }
        do throws(SystemError) {
            let file = try FileDescriptor.open(work + "/" + lockName, .write, [.create, .noFollow], permissions: 0o600)
            do throws(SystemError) {
                try file.lock()
            } catch {
                file.close()
                throw error
            }
            return file
        } catch {
            throw ReportError("cannot take the report lock \(work)/\(lockName): \(error)")
        }
    }
}
