import Batches
import Foundation
import Synchronization
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
    /// The batch this one runs again (`photofinish redo`), for its report.
    public var redoes: String?
    /// True while the batch is open: its claim adds photos as they settle, in the order they
    /// were claimed (`Claim.add`); its run closes it first (`Claim.close`: the template's order).
    public var open: Bool?

    /// One claimed source, as dropped, and what it held when it was claimed (and fsynced).
    public struct Item: Codable, Sendable, Equatable {
        /// The file name as dropped (any bytes); the source is at `src/<name>` until filed.
        public var name: FileName
        public var bytes: Int
        /// `nil` when the file could not be read at the claim (see `error`).
        public var sha256: String?
        /// Why the file could not be read (and fsynced) at the claim: it is claimed all the
        /// same and fails as `io-error` unless it can be read by the time it is finished.
        public var error: String?

        public init(name: FileName, bytes: Int, sha256: String?, error: String? = nil) {
            self.name = name
            self.bytes = bytes
            self.sha256 = sha256
            self.error = error
        }
    }

    public static let fileName = "manifest.json"
    static let entryName = FileName(fileName)!

    /// Writes the manifest atomically and durably into `folder`.
    public func write(toFolder folder: String) throws(SystemError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try JournalLine.encode(self, with: encoder)
        try AtomicFile.write([UInt8](data), to: folder + "/" + Self.fileName)
    }

    /// The manifest in `folder`, or `nil` when there is none (a claim that never completed).
    /// - Throws: `.system` when it exists but cannot be read; `.data` (`BatchDataError.Problem.manifest`)
    ///   when it does not decode.
    public static func read(fromFolder folder: String) throws(BatchError) -> Manifest? {
        let path = folder + "/" + fileName
        guard let bytes = try BatchError.wrap({ () throws(SystemError) in try Files.read(path) }) else { return nil }
        do {
            return try JSONDecoder().decode(Manifest.self, from: Data(bytes))
        } catch {
            throw .data(BatchDataError(.manifest, file: path, reason: BatchDataError.reason(decoding: error)))
        }
    }
}

/// `.work/<batch-id>/journal`: what happened to each photo of a batch, one JSON line per
/// event, appended and `fdatasync`ed, so a restarted daemon resumes a batch instead of
/// redoing it, and never crashes twice on the same photo:
///
/// - `{"started": N}` before photo N's work begins (N = 0: the batch's own outputs: story,
///   colour card). Photo N found started but not finished after a restart stopped the finisher
///   (a crash, a kill, a power cut): it is done again, alone. Found started *twice*, it is
///   failed instead ("stopped the finisher twice"), so a photo that crashes the decoder cannot
///   crash the daemon in a loop.
/// - a report item, once photo N's outputs are in place.
///
/// - `{"released": N}`: photo N's start did not stop the finisher — the share failed under
///   it (an I/O error, the connection gone, a full disk) and the batch was given back: that
///   start does not count.
/// - `{"stage": "finished"}`: the batch, published, was announced (`BatchStage`): a run that
///   finds it published again only cleans up.
///
/// A torn last line (a crash mid-append) is ignored: that photo is simply done again.
public enum ProgressJournal {
    public static let fileName = "journal"
    static let entryName = FileName(fileName)!

    /// What the journal says.
    public struct Progress: Sendable {
        /// Finished photos (ok or failed), by 1-based index.
        public var finished: [Int: Report.Item] = [:]
        /// How often each photo (0: the batch's own outputs) was started.
        public var starts: [Int: Int] = [:]
        /// The last stage of its life recorded (nil: none yet: open or closed).
        public var stage: BatchStage?

        /// Photos started and not finished, and how often: what stopped the finisher.
        public var unfinished: [Int: Int] {
            starts.filter { $0.key > 0 && $0.value > 0 && finished[$0.key] == nil }
        }
    }

    private struct Start: Codable {
        var started: Int
    }

    private struct Release: Codable {
        var released: Int
    }

    private struct Stage: Codable {
        var stage: BatchStage
    }

    /// Records that the batch reached `stage` (durable when it returns).
    public static func stage(_ stage: BatchStage, to journals: BatchJournals) throws(SystemError) {
        try append(try JournalLine.encode(Stage(stage: stage)), to: journals)
    }

    private static func append(_ line: Data, to journals: BatchJournals) throws(SystemError) {
        var bytes = [UInt8](line)
        bytes.append(UInt8(ascii: "\n"))
        try journals.appendDurably(bytes, to: fileName)
    }

    /// Records one finished photo.
    public static func append(_ item: Report.Item, to journals: BatchJournals) throws(SystemError) {
        try append(try JournalLine.encode(item), to: journals)
    }

    /// Records finished photos at once: one append, one sync (a batch taking the photos it
    /// finished while open).
    public static func append(_ items: [Report.Item], to journals: BatchJournals) throws(SystemError) {
        let encoder = JSONEncoder()
        var bytes: [UInt8] = []
        for item in items {
            bytes += [UInt8](try JournalLine.encode(item, with: encoder))
            bytes.append(UInt8(ascii: "\n"))
        }
        guard !bytes.isEmpty else { return }
        try journals.appendDurably(bytes, to: fileName)
    }

    /// Records that photo `index` (0: the batch's own outputs) is about to be worked on.
    public static func started(_ index: Int, to journals: BatchJournals) throws(SystemError) {
        try append(Data(startLine(index).dropLast()), to: journals)
    }

    /// `{"started":N}` and its newline: what `JSONEncoder` makes of `Start`, without it.
    static func startLine(_ index: Int) -> [UInt8] {
        Array("{\"started\":\(index)}\n".utf8)
    }

    /// The journal of one run of a batch, open for the run: one open, not one per line. A start
    /// line is synced before the photo's work begins (a power cut then still counts that start:
    /// reference, What a power cut can and cannot lose); a report item is written at once and
    /// synced with the next line that is (the next photo's start, a few milliseconds later) or by
    /// `flush()`, which the run calls before its sources are filed. A power cut in between can take
    /// the last items written: their photos are found started and not finished, and done again
    /// (alone), as the photos that were in flight are; a crash of the process loses nothing (the
    /// lines are in the page cache). Where the journal is not appended to (`Files.Appending.atEnd`,
    /// `.rewrite`) or is on a share (an error there may show only at the sync: the item must fail
    /// with it), every line is synced as it is written, as `append` does.
    public final class Writer: Sendable {
        public let journals: BatchJournals
        let deferItems: Bool
        private struct State {
            var file: FileDescriptor?
            /// Lines written, and how many of them a sync has made durable.
            var written = 0
            var synced = 0
        }
        private let state = Mutex(State())
        /// One sync at a time; a start that waited here may find its line synced by the sync
        /// before it (two workers start photos side by side: one sync for both).
        private let syncing = Mutex(())

        public init(_ journals: BatchJournals, shared: Bool) {
            self.journals = journals
            deferItems = journals.how == .append && !shared
        }

        /// Records that photo `index` is about to be worked on (durable when it returns, with
        /// the items before it).
        public func started(_ index: Int) throws(SystemError) {
            guard deferItems else { return try ProgressJournal.started(index, to: journals) }
            let (file, line) = try write(ProgressJournal.startLine(index))
            try syncing.withLock { _ throws(SystemError) in
                let upTo = state.withLock { $0.synced >= line ? nil : $0.written }
                guard let upTo else { return }
                try file.syncData()
                state.withLock { $0.synced = max($0.synced, upTo) }
            }
        }

        /// Records one finished photo (synced with the next start, or by `flush`).
        public func append(_ item: Report.Item) throws(SystemError) {
            guard deferItems else { return try ProgressJournal.append(item, to: journals) }
            var line = [UInt8](try JournalLine.encode(item))
            line.append(UInt8(ascii: "\n"))
            _ = try write(line)
        }

        /// Syncs what was written and not synced yet; closes the journal.
        public func flush() throws(SystemError) {
            try syncing.withLock { _ throws(SystemError) in
                let (file, unsynced) = state.withLock { s in
                    defer { s.file = nil }
                    return (s.file, s.written > s.synced)
                }
                defer { file?.close() }
                if unsynced, let file { try file.syncData() }
                state.withLock { $0.synced = $0.written }
            }
        }

        /// Appends `bytes` (one line); returns the journal and the line's number.
        private func write(_ bytes: [UInt8]) throws(SystemError) -> (FileDescriptor, Int) {
            // The batch's journal lock: `append` may write the same file (a photo failed for
            // stopping the finisher twice).
            try journals.appends.withLock { () throws(SystemError) in
                try state.withLock { s throws(SystemError) in
                    let file: FileDescriptor
                    if let open = s.file {
                        file = open
                    } else {
                        file = try FileDescriptor.open(journals.folder + "/" + ProgressJournal.fileName, .write,
                                                       [.append, .create, .noFollow], permissions: 0o600)
                        s.file = file
                    }
                    try file.write(bytes)
                    s.written += 1
                    return (file, s.written)
                }
            }
        }
    }

    /// Records that photo `index`'s last start was cut short by the share, not by the finisher.
    public static func released(_ index: Int, to journals: BatchJournals) throws(SystemError) {
        try append(try JournalLine.encode(Release(released: index)), to: journals)
    }

    /// What the journal in `folder` says (nothing when there is none).
    public static func read(folder: String) throws(SystemError) -> Progress {
        var progress = Progress()
        guard let bytes = try Files.read(folder + "/" + fileName) else { return progress }
        let decoder = JSONDecoder()
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            if let item = try? decoder.decode(Report.Item.self, from: Data(line)) {
                progress.finished[item.index] = item
            } else if let start = try? decoder.decode(Start.self, from: Data(line)) {
                progress.starts[start.started, default: 0] += 1
            } else if let release = try? decoder.decode(Release.self, from: Data(line)) {
                progress.starts[release.released] = max(0, (progress.starts[release.released] ?? 0) - 1)
            } else if let stage = try? decoder.decode(Stage.self, from: Data(line)) {
                progress.stage = stage.stage
            }
        }
        return progress
    }
}

/// A batch folder's journal files (`journal`, `tasks`) as this process appends to them: where,
/// how a file grows there (`Mover.appending`), and the batch's own lock that keeps two appends
/// from interleaving (the `BatchLock`'s) — one lock per batch folder, never one for the process:
/// a share that hangs in `fsync` holds up its own batches alone (docs/architecture.md, Locks).
public struct BatchJournals: Sendable {
    public let folder: String
    public let how: Files.Appending
    let appends: AppendLock

    init(folder: String, how: Files.Appending, appends: AppendLock) {
        self.folder = folder
        self.how = how
        self.appends = appends
    }

    /// The journals of a batch folder that only this value writes (a test's, a tool's): a lock
    /// of their own.
    public init(folder: String, how: Files.Appending = .append) {
        self.init(folder: folder, how: how, appends: AppendLock())
    }

    /// Appends `bytes` to the journal `name` and syncs it, under the batch's lock.
    func appendDurably(_ bytes: [UInt8], to name: String) throws(SystemError) {
        try appends.withLock { () throws(SystemError) in
            try Files.appendDurably(bytes, to: folder + "/" + name, how: how)
        }
    }
}

extension ClaimedBatch {
    /// The batch's journal files, under its lock's own append lock.
    public var journals: BatchJournals { BatchJournals(folder: folder, how: mover.appending, appends: lock.appends) }
}

/// One lock for the appends to one batch folder's journals.
final class AppendLock: Sendable {
    private let mutex = Mutex(())

    func withLock<T>(_ body: () throws(SystemError) -> T) throws(SystemError) -> T {
        try mutex.withLock { _ throws(SystemError) in try body() }
    }
}

/// A journal line's (or the manifest's) JSON. Encoding a report item or a record of our own
/// cannot fail (plain strings and numbers); should it, the write is refused with the reason,
/// never made empty or left out quietly.
enum JournalLine {
    static func encode<T: Encodable>(_ value: T, with encoder: JSONEncoder = JSONEncoder()) throws(SystemError) -> Data {
        do {
            return try encoder.encode(value)
        } catch {
            throw SystemError("encode a journal line for", "\(T.self): \(error)", errno: EINVAL)
        }
    }
}
