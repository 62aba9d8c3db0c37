import Foundation
import System

/// What a delivery sends and under which names (docs/reference.md "Delivering finished
/// photos"): the outputs in a folder named for the batch (`<batch-id>/IMG_1.jpg`), with
/// `outputs+report` also its `report.json`, `report.html` and `thumbs/`, with `zip` one file
/// `<batch-id>.zip`; a mail attaches the same files by their own names.
public enum DeliveryPlan {
    /// A file of the batch folder, relative to it.
    public struct Part: Sendable, Equatable {
        public var relative: String
        /// Part of the report (`report.json`, `report.html`, `thumbs/…`), not an output.
        public var isReport: Bool
        public init(_ relative: String, isReport: Bool = false) {
            self.relative = relative
            self.isReport = isReport
        }
    }

    /// The parts `what` sends, each with its name on the server (pure).
    public static func names(batch: String, parts: [Part], what: DestinationSettings.What) -> [(part: Part, name: String)] {
        switch what {
        case .outputs: parts.filter { !$0.isReport }.map { ($0, batch + "/" + $0.relative) }
        case .outputsAndReport: parts.map { ($0, batch + "/" + $0.relative) }
        case .zip: []
        }
    }

    /// The name of the one file `what: "zip"` sends.
    public static func zipName(batch: String) -> String { batch + ".zip" }

    /// Makes the journal of `batch`'s delivery to `settings`: the report's files copied into
    /// `folder` (the delivery's own folder: later receipts rewrite the batch's report, the copy
    /// sent stays the one the batch finished with), the ZIP made there once for every `zip`
    /// destination, every file hashed.
    /// - Parameters:
    ///   - batchFolder: the published batch folder (`out/<batch-id>`).
    ///   - folder: `.work/deliveries/<batch-id>`, made if missing.
    /// - Throws: `SystemError` when a file cannot be read or the folder written.
    public static func make(batch: String, inbox: String?, batchFolder: String, parts: [Part], settings: DestinationSettings,
                            folder: String) throws(SystemError) -> DeliveryJournal {
        try Files.makeDirectories(folder, permissions: 0o700)
        var local: [String: String] = [:]
        for part in parts {
            local[part.relative] = batchFolder + "/" + part.relative
            guard part.isReport, settings.what != .outputs else { continue }
            let copy = folder + "/report/" + part.relative
            if !Files.exists(copy) {
                try Files.makeDirectories(FilePath(copy).parent, permissions: 0o700)
                guard let bytes = try Files.read(batchFolder + "/" + part.relative) else {
                    throw SystemError("read", batchFolder + "/" + part.relative, errno: ENOENT)
                }
                try AtomicFile.write(bytes, to: copy)
            }
            local[part.relative] = copy
        }
        var files: [DeliveryJournal.File] = []
        if settings.what == .zip {
            let zip = folder + "/" + zipName(batch: batch)
            if !Files.exists(zip) {
                try ZipFile.write(to: zip, folder: batch, entries: parts.map { ($0.relative, local[$0.relative]!) })
            }
            files.append(try hashed(zipName(batch: batch), local: zip))
        } else {
            for (part, name) in names(batch: batch, parts: parts, what: settings.what) {
                // A mail attaches by the files' own names: the batch's folder is no folder there.
                files.append(try hashed(name, local: local[part.relative]!))
            }
        }
        var token = ""
        for _ in 0..<4 { token += String(format: "%02x", UInt8.random(in: 0...255)) }
        return DeliveryJournal(batch: batch, inbox: inbox, destination: settings.name, to: settings.destination.description,
                               token: token, files: files, awaitingApproval: settings.when == .approved)
    }

    private static func hashed(_ name: String, local: String) throws(SystemError) -> DeliveryJournal.File {
        let source = try FileDescriptor.open(local, .read)
        defer { source.close() }
        var hash = SHA256()
        var bytes = 0
        try source.forEachChunk { chunk in
            hash.update(chunk)
            bytes += chunk.count
        }
        return DeliveryJournal.File(name: name, local: local, bytes: bytes, sha256: hash.finalize())
    }
}
