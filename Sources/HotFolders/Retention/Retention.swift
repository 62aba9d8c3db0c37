import Batches
import Foundation
import System

/// Retention (`keep`; reference: Retention and free space): finished batches are removed from
/// `out/`, `originals/` and `failed/` once they are older than the hot folder keeps them — whole
/// batch folders, oldest first, each removal said in the log. Nothing is removed unless asked
/// (`keep` defaults to forever).
///
/// A batch's age is its id's time: when it was claimed (`YYYYMMDD-HHMMSS`, UTC). A batch still
/// referenced is never removed, however old: one the caller names (`inUse`: what it runs or
/// redoes), every batch in `.work/` (claimed, being finished, or parked there) and every
/// batch such a batch redoes (its manifest's `redoes`). While a `.work/` entry has no manifest
/// yet — a claim or a `redo` under way, whose sources may be hard-linked from any batch's
/// `originals/` or `failed/` — those two wait for the next sweep (out/ is still swept).
///
/// A folder is first renamed to `.removing-<batch-id>` in its place (one atomic step: a
/// reader sees the batch whole or not at all), then removed; a sweep first finishes what an
/// interrupted one left. Names that are not batch ids are never touched.
public enum Retention {
    /// How long each kind of batch folder is kept; nil: forever.
    public struct Keep: Sendable, Equatable {
        public var out: Duration?
        public var originals: Duration?
        public var failed: Duration?
        /// `keep.originals: "until-delivered"`: a batch's originals go once its deliveries are
        /// all done (the sweep's `delivered`), whatever their age.
        public var originalsUntilDelivered = false

        public init(out: Duration? = nil, originals: Duration? = nil, failed: Duration? = nil, originalsUntilDelivered: Bool = false) {
            self.out = out
            self.originals = originals
            self.failed = failed
            self.originalsUntilDelivered = originalsUntilDelivered
        }

        /// Everything kept for ever (the default): a sweep does nothing.
        public static let forever = Keep()

        public var isForever: Bool { out == nil && originals == nil && failed == nil && !originalsUntilDelivered }

        /// How long `kind` is kept.
        public subscript(kind: Kind) -> Duration? {
            switch kind {
            case .out: out
            case .originals: originals
            case .failed: failed
            }
        }
    }

    /// The three folders retention sweeps.
    public enum Kind: String, Sendable, CaseIterable, Comparable {
        case out, originals, failed

        public static func < (a: Kind, b: Kind) -> Bool {
            allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
        }
    }

    /// A batch folder removed.
    public struct Removal: Sendable, Equatable {
        public var kind: Kind
        public var batch: String
        /// Files removed with it, and their bytes.
        public var files: Int
        public var bytes: Int64
    }

    /// A batch folder old enough to go, kept because something still refers to it.
    public struct Kept: Sendable, Equatable {
        public var kind: Kind
        public var batch: String
        /// Why, in words ("batch 20261129-… in .work/ redoes it").
        public var reason: String
    }

    /// What one sweep did.
    public struct Outcome: Sendable, Equatable {
        /// Removed, oldest first.
        public var removed: [Removal] = []
        /// Old enough, but still referenced.
        public var kept: [Kept] = []
        /// Folders that could not be removed (each also in the log), in words.
        public var failures: [String] = []
        /// A claim or redo was under way: `originals/` and `failed/` wait for the next sweep.
        public var deferred = false

        public init() {}
    }

    /// Removes the batch folders of the hot folder at `layout` that are older than `keep`.
    /// - Parameters:
    ///   - keep: how long each kind is kept.
    ///   - now: the time ages are counted to.
    ///   - inUse: batch ids the caller still works on (running, or being redone), besides the
    ///     references found on disk.
    ///   - inbox: the hot folder's name, for the log.
    ///   - log: one notice per folder removed, an error per folder that could not be.
    ///   - mover: how a folder is renamed aside before it is removed (a plain rename, checked:
    ///     it works on every file system).
    ///   - delivered: with `keep.originalsUntilDelivered`, true for a batch whose deliveries
    ///     are all done (its originals go).
    public static func sweep(layout: HotFolderLayout, keep: Keep, now: Date = Date(), inUse: Set<String> = [],
                             inbox: String, log: Logger, mover: Mover = Mover(.renameChecked),
                             delivered: (String) -> Bool = { _ in false }) -> Outcome {
        var outcome = Outcome()
        guard !keep.isForever else { return outcome }
        let references = Self.references(in: layout, now: now)
        outcome.deferred = references.claimUnderWay
        var due: [(kind: Kind, batch: String)] = []
        var folders: [Kind: Directory] = [:]
        for kind in Kind.allCases {
            let untilDelivered = kind == .originals && keep.originalsUntilDelivered
            guard keep[kind] != nil || untilDelivered, let folder = try? Directory(path(of: kind, in: layout)) else { continue }
            folders[kind] = folder
            guard let names = try? folder.names() else { continue }
            for name in names {
                // What an interrupted sweep renamed aside is finished first, whatever keep says now.
                if name.readable.hasPrefix(removingPrefix) {
                    finishRemoval(name, in: folder, kind: kind, inbox: inbox, log: log, into: &outcome)
                    continue
                }
                let id = name.readable
                guard let claimed = BatchID.date(of: id),
                      untilDelivered ? delivered(id) : now.timeIntervalSince(claimed) > seconds(keep[kind]!),
                      (try? folder.status(of: name))?.isDirectory == true else { continue }
                due.append((kind, id))
            }
        }
        due.sort { ($0.batch, $0.kind) < ($1.batch, $1.kind) }
        for (kind, batch) in due {
            if let reason = inUse.contains(batch) ? "it is still being worked on" : references.byBatch[batch] {
                outcome.kept.append(Kept(kind: kind, batch: batch, reason: reason))
                continue
            }
            if kind != .out && references.claimUnderWay { continue }
            guard let folder = folders[kind] else { continue }
            let why = kind == .originals && keep.originalsUntilDelivered
                ? Self.deliveredWords : "older than keep.\(kind.rawValue) \(words(keep[kind]!))"
            remove(batch, kind: kind, in: folder, why: why, inbox: inbox, mover: mover, log: log, into: &outcome)
        }
        return outcome
    }

    /// Why a batch's originals go under `keep.originals: "until-delivered"`.
    static let deliveredWords = "delivered to every destination (keep.originals until-delivered)"

    /// `keep.originals: "until-delivered"`: removes `originals/<batch>/` now that the batch's
    /// deliveries are all done (the daemon calls it as the last one ends; the sweep at the start
    /// and hourly does the same for one a stop left) — unless something still refers to it
    /// (a redo in `.work/`). Nothing when the folder is gone already.
    public static func removeDelivered(_ batch: String, layout: HotFolderLayout, inUse: Set<String> = [], inbox: String,
                                       log: Logger, mover: Mover = Mover(.renameChecked)) -> Outcome {
        var outcome = Outcome()
        guard BatchID.isValid(batch), let folder = try? Directory(layout.originals),
              (try? folder.status(of: FileName(batch)!))?.isDirectory == true else { return outcome }
        let references = Self.references(in: layout, now: Date())
        if let reason = inUse.contains(batch) ? "it is still being worked on" : references.byBatch[batch] {
            outcome.kept.append(Kept(kind: .originals, batch: batch, reason: reason))
            return outcome
        }
        guard !references.claimUnderWay else {
            outcome.deferred = true
            return outcome
        }
        remove(batch, kind: .originals, in: folder, why: deliveredWords, inbox: inbox, mover: mover, log: log, into: &outcome)
        return outcome
    }

    static let removingPrefix = ".removing-"

    /// The folder of `kind` in `layout`.
    static func path(of kind: Kind, in layout: HotFolderLayout) -> String {
        switch kind {
        case .out: layout.out
        case .originals: layout.originals
        case .failed: layout.failed
        }
    }

    private static func remove(_ batch: String, kind: Kind, in folder: Directory, why: String, inbox: String,
                               mover: Mover, log: Logger, into outcome: inout Outcome) {
        let fields: LogFields = ["INBOX": inbox, "BATCH": batch]
        let name = FileName(batch)!, aside = FileName(removingPrefix + batch)!
        do throws(SystemError) {
            let (files, bytes) = (try? size(of: name, in: folder)) ?? (0, 0)
            try mover.renameFolder(name, in: folder, to: folder, as: aside)
            try folder.removeTree(aside)
            try folder.sync()
            outcome.removed.append(Removal(kind: kind, batch: batch, files: files, bytes: bytes))
            log.notice("removed \(kind.rawValue)/\(batch)/ (\(files) file\(files == 1 ? "" : "s"), \(ByteCount.words(Int(bytes)))): "
                       + why, fields)
        } catch {
            outcome.failures.append("\(kind.rawValue)/\(batch)/: \(error)")
            log.error("cannot remove \(kind.rawValue)/\(batch)/ (\(why)): \(error); "
                      + "tried again at the next sweep", fields)
        }
    }

    /// Removes a `.removing-<id>` folder an interrupted sweep left.
    private static func finishRemoval(_ name: FileName, in folder: Directory, kind: Kind, inbox: String, log: Logger,
                                      into outcome: inout Outcome) {
        let batch = String(name.readable.dropFirst(removingPrefix.count))
        do throws(SystemError) {
            try folder.removeTree(name)
            try folder.sync()
            log.notice("removed what an interrupted sweep left of \(kind.rawValue)/\(batch)/", ["INBOX": inbox, "BATCH": batch])
        } catch {
            outcome.failures.append("\(kind.rawValue)/\(name.escaped)/: \(error)")
            log.error("cannot remove \(kind.rawValue)/\(name.escaped)/: \(error); tried again at the next sweep",
                      ["INBOX": inbox, "BATCH": batch])
        }
    }

    /// Files under `name` and their bytes (the log says what a removal freed).
    private static func size(of name: FileName, in folder: Directory) throws(SystemError) -> (Int, Int64) {
        guard let st = try folder.status(of: name) else { return (0, 0) }
        guard st.isDirectory else { return (1, st.size) }
        let sub = try folder.folder(name)
        var files = 0, bytes: Int64 = 0
        for child in try sub.names() {
            let (f, b) = try size(of: child, in: sub)
            files += f
            bytes += b
        }
        return (files, bytes)
    }

    /// What `.work/` still refers to.
    struct References {
        /// Batch id → why it is still referenced.
        var byBatch: [String: String] = [:]
        /// A `.work/` entry without a manifest, changed in the last hour: a claim or redo under way.
        var claimUnderWay = false
    }

    /// How long a `.work/` entry without a manifest holds back `originals/` and `failed/`
    /// (a claim or redo takes seconds; an older one is a leftover that recovery rolls back).
    static let claimWindow: TimeInterval = 3600

    static func references(in layout: HotFolderLayout, now: Date) -> References {
        var refs = References()
        guard let work = try? Directory(layout.work), let names = try? work.names() else { return refs }
        for name in names {
            let entry = name.readable
            let folder = layout.workFolder(entry)
            if BatchID.isValid(entry) {
                refs.byBatch[entry] = refs.byBatch[entry] ?? "it is in .work/ (being finished, or waiting to be)"
            }
            if let manifest = try? Manifest.read(fromFolder: folder) {
                if let redone = manifest.redoes {
                    refs.byBatch[redone] = "batch \(manifest.batch) in .work/ redoes it"
                }
            } else if BatchID.isValid(entry) || entry.hasPrefix(".new-") {
                // No manifest yet: being claimed (maybe a redo, linking from any batch).
                let changed = [folder, folder + "/lock"].compactMap { try? Files.status($0) }.map(\.modified).max() ?? 0
                if now.timeIntervalSince1970 - changed < claimWindow { refs.claimUnderWay = true }
            }
        }
        return refs
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    /// `30d`, `12h`, `90m`, `45s`: the duration as a config writes it.
    static func words(_ d: Duration) -> String {
        let s = Int64(seconds(d).rounded())
        for (unit, size) in [("d", Int64(86_400)), ("h", 3600), ("m", 60)] where s >= size && s % size == 0 {
            return "\(s / size)\(unit)"
        }
        return "\(s)s"
    }
}
