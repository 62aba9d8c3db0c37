import Foundation
import System

/// The one reader of a report: `report.json`'s bytes decoded into a `Report`, whether
/// `photofinish report` names the file, `redo` and `explain` look up a batch, recovery reads a
/// published batch again or the web console lists batches. The file layer is `System`'s
/// (byte-string names).
public enum ReportReader {
    /// A batch folder's report: its last file (reference: Claims and crash safety).
    public static let fileName: FileName = "report.json"

    /// The report in `bytes` (the contents of a `report.json`).
    /// - Throws: `ReportError` saying why it is not a PhotoFinish report.
    public static func decode(_ bytes: [UInt8]) throws(ReportError) -> Report {
        do {
            return try JSONDecoder().decode(Report.self, from: Data(bytes))
        } catch {
            throw ReportError("not a PhotoFinish report (\(error))")
        }
    }

    /// The report of the batch folder `folder` (a daemon's: its report is never a symlink),
    /// nil while it has none.
    /// - Throws: `ReportError` when it is there but cannot be read or decoded.
    public static func read(batchFolder folder: some FilePathRepresentable) throws(ReportError) -> Report? {
        let file = folder.filePath.appending(fileName)
        let bytes: [UInt8]?
        do {
            bytes = try Files.read(file)
        } catch {
            throw ReportError("\(file): \(error)")
        }
        guard let bytes else { return nil }
        do {
            return try decode(bytes)
        } catch {
            throw ReportError("\(file): \(error.description)")
        }
    }

    /// The report a person names: a batch folder or its `report.json` (symlinks followed).
    /// - Throws: `ReportError` naming the file and what is wrong.
    public static func load(_ path: some FilePathRepresentable) throws(ReportError) -> Report {
        var file = path.filePath
        if (try? Files.statusFollowingLinks(file))?.isDirectory == true { file = file.appending(fileName) }
        guard let bytes = try? Files.contents(of: file) else {
            throw ReportError("\(file): no report there (a batch folder has one once it is finished)")
        }
        do {
            return try decode(bytes)
        } catch {
            throw ReportError("\(file): \(error.description)")
        }
    }
}
