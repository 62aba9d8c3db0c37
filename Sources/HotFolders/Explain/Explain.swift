import Batches
import Foundation
import System

/// `photofinish explain` (SPEC §8): what became of a dropped file, from what is on disk —
/// `drop/`, the claimed batches in `.work/`, and the reports in `out/*/report.json`. Facts are
/// gathered first (I/O), then put into words (pure, tested with plain values).
public enum Explain {
    /// Everything one hot folder knows about a file.
    public struct Facts: Sendable, Equatable {
        /// The file's name as dropped (any bytes).
        public var name: FileName
        public var root: String
        /// What `drop/<name>` is now, if anything.
        public var drop: DropState?
        /// Claimed batches (in `.work/`) holding the name.
        public var claimed: [Claimed] = []
        /// Report items matching the name or the file's content, newest batch first.
        public var finished: [Finished] = []

        public init(name: FileName, root: String) {
            self.name = name
            self.root = root
        }

        /// True when anything at all is known.
        public var isKnown: Bool { drop != nil || !claimed.isEmpty || !finished.isEmpty }
    }

    /// A file in `drop/`.
    public enum DropState: Sendable, Equatable {
        /// A regular file, last changed `age` seconds ago.
        case waiting(bytes: Int, age: Double)
        /// Its name matches an ignore rule (SPEC §1).
        case ignoredName
        /// Not a regular file ("a folder", "a symbolic link", …).
        case notRegular(kind: String)
        /// More than one hard link.
        case hardLinked(links: Int)
    }

    /// A batch in `.work/` that holds the file.
    public struct Claimed: Sendable, Equatable {
        public var batch: String
        public var position: Int
        public var count: Int
        /// Its outputs are in place (journaled); the rest of the batch is still running.
        public var done: Bool
        /// The claim is complete (manifest written); false while it is being claimed.
        public var manifest: Bool

        public init(batch: String, position: Int, count: Int, done: Bool, manifest: Bool) {
            self.batch = batch
            self.position = position
            self.count = count
            self.done = done
            self.manifest = manifest
        }
    }

    /// A report item for the file.
    public struct Finished: Sendable, Equatable {
        public var batch: String
        public var finished: String
        public var status: String
        /// Output files, relative to the hot folder's root.
        public var outputs: [String]
        public var original: String?
        public var error: String?
        /// The name it was dropped as.
        public var source: String
        /// Matched by content (sha256) under another name.
        public var byContent: Bool

        public init(batch: String, finished: String, status: String, outputs: [String], original: String?,
                    error: String?, source: String, byContent: Bool = false) {
            self.batch = batch
            self.finished = finished
            self.status = status
            self.outputs = outputs
            self.original = original
            self.error = error
            self.source = source
            self.byContent = byContent
        }
    }

    /// Gathers what `layout` knows about `name` (and, when given, the file's sha256).
    public static func facts(name: FileName, sha256: String?, layout: HotFolderLayout) -> Facts {
        var facts = Facts(name: name, root: layout.root)
        facts.drop = dropState(name, in: layout)
        let work = ((try? FileManager.default.contentsOfDirectory(atPath: layout.work)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        for batch in work.reversed() {
            let folder = layout.workFolder(batch)
            if let manifest = try? Manifest.read(fromFolder: folder) {
                guard let index = manifest.items.firstIndex(where: { $0.name == name || ($0.sha256 == sha256 && sha256 != nil) })
                else { continue }
                // The journal counts photos (a pair is one): find this file's by name.
                let journal = (try? ProgressJournal.read(folder: folder))?.finished ?? [:]
                let escaped = manifest.items[index].name.escaped
                let done = journal.values.contains { $0.source == escaped || $0.alternates?.contains(escaped) == true }
                facts.claimed.append(Claimed(batch: batch, position: index + 1, count: manifest.items.count,
                                             done: done, manifest: true))
            } else if Files.exists(FilePath(folder).appending(Claim.sourceFolder).appending(name)) {
                facts.claimed.append(Claimed(batch: batch, position: 0, count: 0, done: false, manifest: false))
            }
        }
        let batches = ((try? FileManager.default.contentsOfDirectory(atPath: layout.out)) ?? []).sorted().reversed()
        for batch in batches {
            guard let report = try? ReportText.load(layout.out + "/" + batch + "/report.json") else { continue }
            for item in report.items {
                // Filed with a photo it belongs to (the RAW beside the JPEG finished).
                if let alternates = item.alternates, alternates.contains(name.escaped) {
                    let folder = item.original.map { ($0 as NSString).deletingLastPathComponent }
                    facts.finished.append(Finished(
                        batch: report.batch, finished: readable(report.finished), status: "alternate",
                        outputs: [], original: folder.map { $0 + "/" + name.escaped }, error: nil, source: item.source))
                    continue
                }
                let byName = item.source == name.escaped
                guard byName || (sha256 != nil && item.sha256 == sha256) else { continue }
                facts.finished.append(Finished(
                    batch: report.batch, finished: readable(report.finished), status: item.status.rawValue,
                    outputs: (item.outputs ?? []).map { "out/\(batch)/\($0.file)" }, original: item.original,
                    error: item.error.map { "\($0.code): \($0.message)" }, source: item.source, byContent: !byName))
            }
            for ignored in report.ignored ?? [] where ignored.source == name.escaped {
                facts.finished.append(Finished(batch: report.batch, finished: readable(report.finished), status: "ignored",
                                               outputs: [], original: ignored.original, error: ignored.reason,
                                               source: ignored.source))
            }
        }
        return facts
    }

    /// The SHA-256 of the file at `path` (to find it in reports under another name), or nil
    /// when it cannot be read.
    public static func sha256(of path: FilePath) -> String? {
        guard let file = try? FileDescriptor.open(path, .read) else { return nil }
        return try? FileHash.sha256(of: file).hex
    }

    /// Why a file in drop/ is never taken, in a few words (STATUS.txt, `status`); nil when it
    /// is taken.
    static func neverTaken(_ name: FileName, _ st: FileStatus) -> String? {
        switch dropState(name, st) {
        case .waiting: nil
        case .ignoredName: "its name is ignored (hidden, a partial download or a temporary file); rename it to have it finished"
        case .notRegular(let kind): "it is \(kind), not a regular file (folders are not descended into)"
        case .hardLinked(let links): "it has \(links) hard links (another name could still change it); copy it in instead"
        }
    }

    /// The facts in words, one line each.
    /// - Parameters:
    ///   - settle: the config's settle time (for "waiting" in words).
    ///   - quiet: the config's quiet time.
    public static func words(_ f: Facts, settle: Duration, quiet: Duration) -> [String] {
        var lines: [String] = []
        let name = f.name.escaped
        switch f.drop {
        case nil:
            break
        case .ignoredName:
            lines.append("\(name) is in drop/ but is never taken: its name is ignored (names starting with . or ~$, "
                         + "*.part, *.partial, *.tmp, *.crdownload, *.download, *.swp, Thumbs.db, desktop.ini). Rename it to have it finished.")
        case .notRegular(let kind):
            lines.append("\(name) in drop/ is \(kind), not a regular file: it is never taken (folders are not descended into).")
        case .hardLinked(let links):
            lines.append("\(name) in drop/ has \(links) hard links: it is never taken (another name could still change it). Copy it in instead.")
        case .waiting(let bytes, let age):
            if age < seconds(settle) {
                lines.append("\(name) is in drop/ (\(ByteCount.words(bytes))), settling: it changed \(words(age)) ago and joins the pending batch once it has held still for \(words(seconds(settle))).")
            } else {
                lines.append("\(name) is in drop/ (\(ByteCount.words(bytes))), waiting for its batch: a batch closes \(words(seconds(quiet))) after the last arrival. "
                             + "If it stays longer, check that the daemon runs (photofinish status).")
            }
        }
        for c in f.claimed {
            if !c.manifest {
                lines.append("\(name) is being claimed into batch \(c.batch) (.work/\(c.batch)/).")
            } else if c.done {
                lines.append("\(name) is finished in batch \(c.batch) (photo \(c.position) of \(c.count)); the batch is still being finished in .work/\(c.batch)/ and appears in out/\(c.batch)/ when done.")
            } else {
                lines.append("\(name) is claimed in batch \(c.batch) (photo \(c.position) of \(c.count)), being finished in .work/\(c.batch)/.")
            }
        }
        for d in f.finished {
            let who = d.byContent ? "The same photo, dropped as \(d.source)," : name
            switch d.status {
            case "ok":
                let outputs = d.outputs.isEmpty ? "no outputs" : d.outputs.joined(separator: ", ")
                lines.append("\(who) was finished at \(d.finished) in batch \(d.batch) into \(outputs)"
                             + (d.original.map { "; the original is in \($0)" } ?? "; the original was deleted (originals: delete)") + ".")
            case "failed":
                lines.append("\(who) failed at \(d.finished) in batch \(d.batch): \(d.error ?? "no reason recorded")"
                             + (d.original.map { "; the file is in \($0)" } ?? "") + ".")
            case "alternate":
                lines.append("\(name) was filed at \(d.finished) in batch \(d.batch) with \(d.source), the same photo "
                             + "in another file (its pair), which was finished" + (d.original.map { "; the file is in \($0)" } ?? "") + ".")
            case "ignored":
                lines.append("\(name) is no photo (\(d.error ?? "ignored")): batch \(d.batch) kept it at \(d.finished)"
                             + (d.original.map { "; the file is in \($0)" } ?? "") + ".")
            default:
                lines.append("\(who) was in batch \(d.batch) (status \(d.status) at \(d.finished))"
                             + (d.original.map { "; the file is in \($0)" } ?? "") + ".")
            }
        }
        return lines
    }

    /// "2026-11-29T15:04:05.123Z" → "2026-11-29 16:04:05 +01:00" (local time, its offset).
    static func readable(_ iso: String) -> String { HumanTime.words(isoUTC: iso) }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    /// "0.3 s", "12 s", "5 min".
    static func words(_ seconds: Double) -> String {
        if seconds < 10 { return String(format: "%.1f s", seconds).replacingOccurrences(of: ".0 s", with: " s") }
        if seconds < 120 { return "\(Int(seconds)) s" }
        if seconds < 7200 { return "\(Int(seconds / 60)) min" }
        return "\(Int(seconds / 3600)) h"
    }

    private static func dropState(_ name: FileName, in layout: HotFolderLayout) -> DropState? {
        guard let st = try? Files.status(FilePath(layout.drop).appending(name)) else { return nil }
        return dropState(name, st)
    }

    /// What a file in drop/ is, from its name and `fstatat`.
    static func dropState(_ name: FileName, _ st: FileStatus) -> DropState {
        if IgnoreRules.ignores(name.readable) { return .ignoredName }
        switch st.kind {
        case .regular:
            if st.links > 1 { return .hardLinked(links: st.links) }
            return .waiting(bytes: Int(st.size), age: max(0, Date().timeIntervalSince1970 - st.modified))
        case .directory: return .notRegular(kind: "a folder")
        case .symbolicLink: return .notRegular(kind: "a symbolic link")
        case .fifo: return .notRegular(kind: "a FIFO")
        case .socket: return .notRegular(kind: "a socket")
        case .device: return .notRegular(kind: "a device")
        }
    }
}
