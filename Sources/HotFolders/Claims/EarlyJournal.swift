import Batches
import Foundation
import System

/// `.work/<batch-id>/tasks`: the photos of a batch finished while it was open (photos start as they
/// settle: reference, From arrival to batch), one JSON line per event, appended and `fdatasync`ed
/// like the `journal`:
///
/// - `{"started": N, "source": …}` before task N's work begins (N: the claim order);
/// - `{"done": N, "source": …, "early": {stem, item}}` once its outputs are in place in
///   `.work/<id>/early/N/`.
///
/// The batch's run at close (`BatchWork`) takes each early photo whose stem is the one the
/// batch's order gives it: its outputs move into `out/` and its item goes into the `journal`
/// under its place in the batch. A task started and never done stopped the finisher: it counts
/// as a start of that photo (done again alone; twice, failed).
public enum EarlyJournal {
    public static let fileName = "tasks"
    static let entryName = FileName(fileName)!
    /// Where each task's outputs are made: `early/<N>/`.
    public static let folderName = "early"
    static let folderEntry = FileName(folderName)!

    /// What the journal says, by source.
    public struct Progress: Sendable {
        /// Tasks done, with their task number.
        public var done: [FileName: (task: Int, early: EarlyItem)] = [:]
        /// Starts of tasks not done.
        public var starts: [FileName: Int] = [:]

        public init() {}

        /// `other` (what a cluster's database recorded) laid over this (the share's journal,
        /// written by a host that journals there): a photo done in either is done; starts not
        /// done, the most either counted.
        public func merging(_ other: Progress) -> Progress {
            var merged = self
            for (source, done) in other.done {
                merged.done[source] = done
                merged.starts[source] = nil
            }
            for (source, count) in other.starts where merged.done[source] == nil {
                merged.starts[source] = max(merged.starts[source] ?? 0, count)
            }
            return merged
        }
    }

    private struct Started: Codable {
        var started: Int
        var source: FileName
    }

    private struct Done: Codable {
        var done: Int
        var source: FileName
        var early: EarlyItem
    }

    private static func append(_ line: Data, to journals: BatchJournals) throws(SystemError) {
        var bytes = [UInt8](line)
        bytes.append(UInt8(ascii: "\n"))
        try journals.appendDurably(bytes, to: fileName)
    }

    /// Where task `task`'s outputs are made.
    public static func outputFolder(_ task: Int, batchFolder: String) -> String {
        batchFolder + "/" + folderName + "/" + String(task)
    }

    /// Records that task `task` (of `source`) is about to be worked on.
    public static func started(_ task: Int, source: FileName, to journals: BatchJournals) throws(SystemError) {
        try append(try JournalLine.encode(Started(started: task, source: source)), to: journals)
    }

    /// Records task `task` done, its outputs in place in `early/<task>/`.
    public static func done(_ task: Int, source: FileName, early: EarlyItem, to journals: BatchJournals) throws(SystemError) {
        try append(try JournalLine.encode(Done(done: task, source: source, early: early)), to: journals)
    }

    /// What the journal in `folder` says (nothing when there is none; a torn line is skipped).
    public static func read(folder: String) throws(SystemError) -> Progress {
        var progress = Progress()
        guard let bytes = try Files.read(folder + "/" + fileName) else { return progress }
        let decoder = JSONDecoder()
        var started: [FileName: Int] = [:]
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            if let done = try? decoder.decode(Done.self, from: Data(line)) {
                progress.done[done.source] = (done.done, done.early)
            } else if let start = try? decoder.decode(Started.self, from: Data(line)) {
                started[start.source, default: 0] += 1
            }
        }
        for (source, count) in started where progress.done[source] == nil { progress.starts[source] = count }
        return progress
    }
}
