import Batches
import Finishing
import Foundation
import System

/// `photofinish redo ROOT BATCH-ID` (reference: `photofinish redo`): a finished batch run again,
/// from its filed sources, with the hot folder's current template, as a new batch.
///
/// The new batch is claimed like one from `drop/` — a fresh `.work/<new-id>/` with its lock,
/// the sources in `src/`, a manifest that also names the batch it redoes — and then finished
/// by `BatchWork.finish` like any other: crash-safe, resumed by the daemon's recovery if the
/// `redo` process dies, published as `out/<new-id>/` with its report, its sources filed in
/// `originals/<new-id>/` and `failed/<new-id>/`. The sources come from `originals/<BATCH-ID>/`
/// and `failed/<BATCH-ID>/` as hard links (no copy, and the first batch keeps its own: its
/// outputs and originals stay as they are); a file system without hard links gets copies.
public enum Redo {
    /// Why a batch cannot be redone, in words.
    public struct Refusal: Error, CustomStringConvertible, Sendable {
        public var description: String
        public init(description: String) { self.description = description }
    }

    /// Claims batch `id` of the hot folder at `layout` again as a new batch.
    /// - Parameters:
    ///   - inbox: the hot folder's name for the report.
    ///   - template: the template to finish it with (the folder's current one).
    ///   - order: the template's `order` (the files are sorted again, as at a claim).
    ///   - locks: the batch locks of this process (the new batch's is among them).
    ///   - only: the filed sources to take (a failed photo tried again); nil: all of them.
    /// - Returns: the new batch, claimed and durable, its lock held: finish it with
    ///   `BatchWork.finish`.
    /// - Throws: `Refusal` for a batch id that is not one, or that has nothing filed.
    public static func claim(_ id: String, layout: HotFolderLayout, inbox: String, template: TemplateSnapshot,
                             order: Template.Order, locks: BatchLocks, mover: Mover = Mover(.renameNoReplace), only: Set<FileName>? = nil,
                             now: Date = Date()) throws(Refusal) -> ClaimedBatch {
        guard BatchID.isValid(id) else {
            throw Refusal(description: "'\(id)' is not a batch id (YYYYMMDD-HHMMSS-xxxx, as in out/)")
        }
        // Every file the batch filed: finished ones in originals/, failed ones in failed/.
        var filed: [(folder: Directory, name: FileName)] = []
        for kind in [layout.originals, layout.failed] {
            let path = kind + "/" + id
            guard Files.isDirectory(path), let folder = try? Directory(path), let names = try? folder.names() else { continue }
            for name in names where !filed.contains(where: { $0.name == name }) && only?.contains(name) != false {
                if let st = try? folder.status(of: name), st.isRegular { filed.append((folder, name)) }
            }
        }
        guard !filed.isEmpty else {
            if let only {
                throw Refusal(description: "batch \(id) has none of \(only.map(\.escaped).sorted().joined(separator: ", ")) filed in originals/\(id)/ or failed/\(id)/")
            }
            let known = Files.exists(layout.out + "/" + id)
            throw Refusal(description: known
                ? "batch \(id) has no files left in originals/\(id)/ or failed/\(id)/ (originals: \"delete\"?): nothing to redo"
                : "no batch \(id) in \(layout.root) (nothing in out/, originals/ or failed/)")
        }
        do throws(SystemError) {
            let (newID, lock) = try Claim.makeBatchFolder(layout: layout, locks: locks, mover: mover, now: now)
            let folder = layout.workFolder(newID)
            let batch = try Directory(folder)
            try batch.makeFolder(Claim.sourceFolder)
            let src = try batch.folder(Claim.sourceFolder)
            for (from, name) in filed {
                do {
                    try from.hardLink(name, to: src, as: name)
                } catch where [EPERM, EOPNOTSUPP, ENOTSUP, EMLINK, EXDEV].contains(error.code) {
                    // No hard links here (some FUSE file systems): a copy, durable.
                    let bytes = try from.open(name, .read, [.noFollow]).readAll()
                    try AtomicFile.write(bytes, to: FilePath(folder).appending(Claim.sourceFolder).appending(name))
                }
            }
            let srcPath = FilePath(folder).appending(Claim.sourceFolder)
            let ordered = BatchOrder.sorted(filed.map { srcPath.appending($0.name) }, by: order)
            let items = ordered.map { Claim.durable($0.lastComponent!, in: src) }
            try src.sync()
            var manifest = Manifest(batch: newID, inbox: inbox, claimed: BatchID.timestamp(now), template: template,
                                    items: items)
            manifest.redoes = id
            try manifest.write(toFolder: folder)
            return ClaimedBatch(layout: layout, manifest: manifest, lock: lock, mover: mover)
        } catch {
            throw Refusal(description: "cannot start the new batch: \(error)")
        }
    }
}
