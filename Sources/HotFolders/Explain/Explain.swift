import Batches
import Finishing
import Foundation
import System

/// `photofinish explain` (reference: `photofinish explain`): what became of a dropped file, from
/// what is on disk — `drop/`, the claimed batches in `.work/`, and the reports in
/// `out/*/report.json`. Facts are gathered first (I/O), then put into words (pure, tested with
/// plain values).
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
        /// The file lies in this folder inside `drop/` (`"wedding"`, `"wedding/day 2"`): never taken.
        public var insideDropFolder: String?
        /// The file is an output: the report items that made it.
        public var outputOf: [Finished] = []

        public init(name: FileName, root: String) {
            self.name = name
            self.root = root
        }

        /// True when anything at all is known.
        public var isKnown: Bool {
            drop != nil || !claimed.isEmpty || !finished.isEmpty || insideDropFolder != nil || !outputOf.isEmpty
        }
    }

    /// A file in `drop/`.
    public enum DropState: Sendable, Equatable {
        /// A regular file, last changed `age` seconds ago.
        case waiting(bytes: Int, age: Double)
        /// Its name matches an ignore rule (reference: File names).
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

    /// A metadata template's texts as written (`applied.metadata`), and the outputs they were
    /// written into (empty: every output of the photo).
    public struct WrittenMetadata: Sendable, Equatable {
        public var files: [String]
        public var record: Applied.MetadataRecord
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
        /// The host that finished it (the report item's `host`; a report written before there
        /// were hosts has none).
        public var host: String?
        /// Where its batch was delivered, a receipt in words each (`ReportText.deliveryLine`).
        public var deliveries: [String] = []
        /// The metadata template's texts as written into its outputs (`applied.metadata`): one
        /// entry for all of them, or one per output when they differ (variants), with its file.
        public var metadata: [WrittenMetadata] = []

        public init(batch: String, finished: String, status: String, outputs: [String], original: String?,
                    error: String?, source: String, byContent: Bool = false, host: String? = nil, deliveries: [String] = []) {
            self.host = host
            self.deliveries = deliveries
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

    /// Where a file lies, as far as the hot folder is concerned: what its path can be matched
    /// with. A file is what became of the one dropped at its place: `drop/x.jpg` is every
    /// `x.jpg` dropped there; `failed/<id>/x.jpg` is batch `<id>`'s; a file inside a folder in
    /// `drop/` was never taken, and is no earlier batch's file of the same name.
    public enum Place: Sendable, Equatable {
        /// A bare name, or a file outside the hot folder: matched by name and by content.
        case anywhere
        /// `<root>/drop/<name>`.
        case drop
        /// `<root>/drop/<folder>/…/<name>`: the folder's path inside `drop/`.
        case insideDropFolder(String)
        /// `<root>/originals/<id>/<name>` or `<root>/failed/<id>/<name>`: that batch's.
        case filed(kind: String, batch: String)
        /// `<root>/out/<id>/<file>`: an output of that batch.
        case output(batch: String)
    }

    /// Where `path` (absolute, standardized) lies relative to the hot folder at `root`, or nil
    /// when it is not inside it.
    public static func place(of path: String, in root: String) -> Place? {
        let rootParts = URL(fileURLWithPath: root).standardizedFileURL.pathComponents
        let parts = URL(fileURLWithPath: path).standardizedFileURL.pathComponents
        guard parts.count > rootParts.count + 1, Array(parts.prefix(rootParts.count)) == rootParts else { return nil }
        let inside = Array(parts.dropFirst(rootParts.count))
        switch inside[0] {
        case "drop":
            return inside.count == 2 ? .drop : .insideDropFolder(inside[1..<(inside.count - 1)].joined(separator: "/"))
        case "originals", "failed" where inside.count == 3 && BatchID.isValid(inside[1]):
            return .filed(kind: inside[0], batch: inside[1])
        case "out" where inside.count == 3 && BatchID.isValid(inside[1]):
            return .output(batch: inside[1])
        default:
            return nil
        }
    }

    /// Gathers what `layout` knows about `name` (and, when given, the file's sha256), for a
    /// file at `place`.
    public static func facts(name: FileName, sha256: String?, layout: HotFolderLayout, place: Place = .anywhere) -> Facts {
        var facts = Facts(name: name, root: layout.root)
        switch place {
        case .insideDropFolder(let folder):
            // Never taken; only its content can have been finished before (dropped elsewhere).
            facts.insideDropFolder = folder
            if let sha256 { facts.finished = finished(name: nil, sha256: sha256, layout: layout) }
            return facts
        case .output(let batch):
            facts.outputOf = outputs(named: name, batch: batch, layout: layout)
            return facts
        case .filed(_, let batch):
            facts.finished = finished(name: name, sha256: nil, layout: layout, batches: [batch])
            return facts
        case .anywhere, .drop:
            break
        }
        facts.drop = dropState(name, in: layout)
        let work = Files.textNames(in: layout.work).filter { !$0.hasPrefix(".") }.sorted()
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
        facts.finished = finished(name: name, sha256: sha256, layout: layout)
        return facts
    }

    /// Report items for the file dropped as `name` (nil: any name) or with content `sha256`,
    /// newest batch first; only those of `batches` when given.
    static func finished(name: FileName?, sha256: String?, layout: HotFolderLayout, batches only: Set<String>? = nil) -> [Finished] {
        var found: [Finished] = []
        let batches = Files.textNames(in: layout.out)
            .filter { only?.contains($0) ?? true }.sorted().reversed()
        for batch in batches {
            guard let report = try? ReportText.load(layout.out + "/" + batch + "/report.json") else { continue }
            for item in report.items {
                // Filed with a photo it belongs to (the RAW beside the JPEG finished).
                if let name, let alternates = item.alternates, alternates.contains(name.escaped) {
                    let folder = item.original.map { ($0 as NSString).deletingLastPathComponent }
                    found.append(Finished(
                        batch: report.batch, finished: readable(report.finished), status: "alternate",
                        outputs: [], original: folder.map { $0 + "/" + name.escaped }, error: nil, source: item.source))
                    continue
                }
                let byName = name.map { item.source == $0.escaped } ?? false
                guard byName || (sha256 != nil && item.sha256 == sha256) else { continue }
                found.append(finished(item, report: report, batch: batch, byContent: !byName))
            }
            for ignored in report.ignored ?? [] where name.map({ ignored.source == $0.escaped }) ?? false {
                found.append(Finished(batch: report.batch, finished: readable(report.finished), status: "ignored",
                                      outputs: [], original: ignored.original, error: ignored.reason,
                                      source: ignored.source))
            }
        }
        return found
    }

    /// The report items of batch `batch` that wrote `out/<batch>/<name>`.
    static func outputs(named name: FileName, batch: String, layout: HotFolderLayout) -> [Finished] {
        guard let report = try? ReportText.load(layout.out + "/" + batch + "/report.json") else { return [] }
        return report.items.filter { ($0.outputs ?? []).contains { $0.file == name.escaped } }
            .map { finished($0, report: report, batch: batch, byContent: false) }
    }

    private static func finished(_ item: Report.Item, report: Report, batch: String, byContent: Bool) -> Finished {
        var found = Finished(batch: report.batch, finished: readable(report.finished), status: item.status.rawValue,
                             outputs: (item.outputs ?? []).map { "out/\(batch)/\($0.file)" }, original: item.original,
                             error: item.error.map { "\($0.code): \($0.message)" }
                                ?? item.duplicateOf.map { "the same bytes as \($0.source), finished in batch \($0.batch)" },
                             source: item.source, byContent: byContent,
                             host: item.host,
                             deliveries: item.status == .ok ? (report.deliveries ?? []).map(ReportText.deliveryLine) : [])
        // One entry per distinct record, with the outputs that carry it (variants may differ).
        for output in item.outputs ?? [] {
            guard let record = output.applied.metadata else { continue }
            let file = "out/\(batch)/\(output.file)"
            if let at = found.metadata.firstIndex(where: { $0.record == record }) {
                found.metadata[at].files.append(file)
            } else {
                found.metadata.append(WrittenMetadata(files: [file], record: record))
            }
        }
        if found.metadata.count == 1, found.metadata[0].files.count == item.outputs?.count { found.metadata[0].files = [] }
        return found
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
        Takeable.refusal(name, st).map(Takeable.words)
    }

    /// The facts in words, one line each.
    /// - Parameters:
    ///   - settle: the config's settle time (for "waiting" in words).
    ///   - quiet: the config's quiet time.
    public static func words(_ f: Facts, settle: Duration, quiet: Duration) -> [String] {
        var lines: [String] = []
        let name = f.name.escaped
        if let folder = f.insideDropFolder {
            lines.append("\(name) is in drop/\(folder)/, a folder inside drop/: it is never taken (folders in drop/ are not "
                         + "descended into). Move it into drop/ itself to have it finished.")
        }
        for o in f.outputOf {
            lines.append("\(name) is an output of \(o.source), finished at \(o.finished) in batch \(o.batch)"
                         + (o.original.map { "; the original is in \($0)" } ?? "") + ".")
        }
        switch f.drop {
        case nil:
            break
        case .ignoredName:
            lines.append("\(name) is in drop/ but is never taken: its name is ignored (names starting with . or ~$, "
                         + "*.part, *.partial, *.tmp, *.crdownload, *.download, *.swp, Thumbs.db, desktop.ini). Rename it to have it finished.")
        case .notRegular(kind: "a folder"):
            lines.append("\(name) in drop/ is a folder: it is never taken (folders in drop/ are not descended into). Move its files into drop/ itself to have them finished.")
        case .notRegular(let kind):
            lines.append("\(name) in drop/ is \(kind), not a regular file: it is never taken.")
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
                lines.append("\(who) was finished at \(d.finished) in batch \(d.batch)" + (d.host.map { " by host \($0)" } ?? "")
                             + " into \(outputs)"
                             + (d.original.map { "; the original is in \($0)" } ?? "; the original was deleted (originals: delete)") + ".")
                for written in d.metadata {
                    let into = written.files.isEmpty ? "" : " into " + written.files.joined(separator: ", ")
                    lines.append("  Its metadata as written\(into): \(written.record.words).")
                }
                for delivery in d.deliveries { lines.append("Its batch's delivery to \(delivery).") }
            case "failed":
                lines.append("\(who) failed at \(d.finished) in batch \(d.batch)" + (d.host.map { " on host \($0)" } ?? "")
                             + ": \(d.error ?? "no reason recorded")"
                             + (d.original.map { "; the file is in \($0)" } ?? "") + ".")
            case "duplicate":
                lines.append("\(who) was not finished again in batch \(d.batch) at \(d.finished) (duplicates: skip): "
                             + "\(d.error ?? "a duplicate")" + (d.original.map { "; the file is in \($0)" } ?? "") + ".")
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
        switch Takeable.refusal(name, st) {
        case nil: .waiting(bytes: Int(st.size), age: max(0, Date().timeIntervalSince1970 - st.modified))
        case .ignoredName: .ignoredName
        case .notRegular(let kind): .notRegular(kind: kind)
        case .hardLinked(let links): .hardLinked(links: links)
        }
    }
}
