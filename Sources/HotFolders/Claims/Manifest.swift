import Batches
import Foundation
import System

/// `.work/<batch-id>/manifest.json`: what a claimed batch holds, in batch order, made durable
/// before any photo is processed. A batch folder without a manifest was never started and is
/// rolled back (its sources go back to `drop/`); one with a manifest is finished.
public struct Manifest: Codable, Sendable, Equatable {
    public var version = 1
    public var batch: String
    public var inbox: String
    /// When the batch was claimed (ISO 8601 UTC): the report's `started`.
    public var claimed: String
    public var template: TemplateSnapshot
    public var items: [Item]

    /// One claimed source, as dropped.
    public struct Item: Codable, Sendable, Equatable {
        /// The file name as dropped (any bytes); the source is at `src/<name>` until filed.
        public var name: FileName
        public var bytes: Int
        public var sha256: String
    }

    public static let fileName = "manifest.json"
    static let entryName = FileName(fileName)!

    /// Writes the manifest atomically and durably into `folder`.
    public func write(toFolder folder: String) throws(SystemError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(self)) ?? Data()
        try AtomicFile.write([UInt8](data), to: folder + "/" + Self.fileName)
    }

    /// The manifest in `folder`, or `nil` when there is none (a claim that never completed).
    /// - Throws: `SystemError` when it exists but cannot be read or decoded.
    public static func read(fromFolder folder: String) throws(SystemError) -> Manifest? {
        let path = folder + "/" + fileName
        guard let bytes = try Files.read(path) else { return nil }
        guard let manifest = try? JSONDecoder().decode(Manifest.self, from: Data(bytes)) else {
            throw SystemError("decode", path, errno: EINVAL)
        }
        return manifest
    }
}

/// `.work/<batch-id>/journal`: one line per finished photo (its report item as JSON), appended
/// and `fdatasync`ed as each photo's outputs are in place, so a restarted daemon resumes a
/// batch instead of redoing it. A torn last line (a crash mid-append) is ignored: that photo
/// is simply done again.
public enum ProgressJournal {
    public static let fileName = "journal"
    static let entryName = FileName(fileName)!

    /// Records one finished photo.
    public static func append(_ item: Report.Item, folder: String) throws(SystemError) {
        guard var line = try? JSONEncoder().encode(item) else { return }
        line.append(UInt8(ascii: "\n"))
        try Files.appendDurably([UInt8](line), to: folder + "/" + fileName)
    }

    /// The photos already finished, by 1-based index.
    public static func read(folder: String) throws(SystemError) -> [Int: Report.Item] {
        guard let bytes = try Files.read(folder + "/" + fileName) else { return [:] }
        var items: [Int: Report.Item] = [:]
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            if let item = try? JSONDecoder().decode(Report.Item.self, from: Data(line)) { items[item.index] = item }
        }
        return items
    }
}
