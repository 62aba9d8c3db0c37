import Batches
import Finishing
import Foundation
import System

/// A batch this process owns: claimed (or recovered) into `.work/<batch-id>/`, its manifest
/// durable, its lock held until the value is dropped.
public struct ClaimedBatch: Sendable {
    public var layout: HotFolderLayout
    public var manifest: Manifest
    public var lock: BatchLock
    /// How names are moved in this hot folder (filing the sources).
    public var mover: Mover

    public var id: String { manifest.batch }
    public var folder: String { layout.workFolder(manifest.batch) }
}

/// Claiming files from `drop/`, maildir-style (SPEC §1): each is moved into
/// `.work/<batch-id>/src/` with the hot folder's claim primitive (`Mover.take`), which is
/// atomic, so of two daemons only one gets a file. Then the manifest (order, names, sizes,
/// hashes) is written and fsynced before any processing.
///
/// Steps, each durable before the next:
/// 1. `.work/.new-<id>/` is made and its `lock` taken, then renamed to `.work/<id>/`, so a
///    batch folder is never seen without a held lock by its live owner.
/// 2. Each name is moved `drop/<name>` → `.work/<id>/src/<name>` (a name someone else took
///    is skipped), checked again on its descriptor (regular file, one link), and the two
///    folders fsynced.
/// 3. `manifest.json` lists what `src/` really holds, in the template's order.
/// A crash before step 3 leaves a folder without manifest: recovery moves its sources back.
public enum Claim {
    static let sourceFolder = FileName("src")

    /// Claims `names` from the hot folder's `drop/`.
    /// - Parameters:
    ///   - mover: how names move in this hot folder (`Mover.probe`).
    ///   - heartbeat: called between files (hashing a big batch takes a while; the service
    ///     keeps its watchdog fed from here).
    /// - Returns: the batch, or `nil` when none of the files could be claimed (all gone).
    /// - Throws: `SystemError` (the batch folder is then left for recovery, sources safe).
    public static func claim(_ names: [FileName], layout: HotFolderLayout, inbox: String, template: TemplateSnapshot,
                             order: Template.Order, mover: Mover = Mover(.renameNoReplace), now: Date = Date(),
                             heartbeat: () -> Void = {}) throws(SystemError) -> ClaimedBatch? {
        let (id, lock) = try makeBatchFolder(layout: layout, mover: mover, now: now)
        let folder = layout.workFolder(id)
        let batch = try Directory(folder)
        try batch.makeFolder(sourceFolder)
        let drop = try Directory(layout.drop)
        let src = try batch.folder(sourceFolder)
        var claimed: [FileName] = []
        for name in names {
            guard let st = try drop.status(of: name), st.isRegular, st.links == 1 else { continue }
            guard try mover.take(name, from: drop, into: src) else { continue }
            // Check the descriptor of what we actually moved: a name swapped for a symlink
            // or hard-linked between the check and the move goes straight back.
            if let moved = try src.status(of: name), moved.isRegular, moved.links == 1 {
                claimed.append(name)
            } else {
                _ = try? mover.move(name, from: src, to: drop)
            }
        }
        try src.sync()
        try drop.sync()
        guard !claimed.isEmpty else {
            try? Files.removeTree(folder)
            try? Files.syncDirectory(layout.work)
            return nil
        }
        let srcPath = FilePath(folder).appending(sourceFolder)
        let ordered = BatchOrder.sorted(claimed.map { srcPath.appending($0) }, by: order)
        var items: [Manifest.Item] = []
        for path in ordered {
            heartbeat()
            let file = try FileDescriptor.open(path, .read, [.noFollow])
            let (bytes, sha256) = try FileHash.sha256(of: file)
            items.append(Manifest.Item(name: path.lastComponent!, bytes: bytes, sha256: sha256))
        }
        let manifest = Manifest(batch: id, inbox: inbox, claimed: BatchID.timestamp(now), template: template, items: items)
        do {
            try manifest.write(toFolder: folder)
        } catch {
            throw SystemError("write the manifest in", folder, errno: error.code)
        }
        return ClaimedBatch(layout: layout, manifest: manifest, lock: lock, mover: mover)
    }

    /// Step 1: a fresh `.work/<id>/` whose lock this process holds.
    static func makeBatchFolder(layout: HotFolderLayout, mover: Mover, now: Date) throws(SystemError) -> (String, BatchLock) {
        try Files.makeDirectory(layout.work)
        let work = try Directory(layout.work)
        while true {
            let id = BatchID.make(at: now)
            let staging = FileName(".new-" + id)!
            try work.makeFolder(staging)
            guard let lock = BatchLock.tryAcquire(try work.folder(staging)) else {
                throw SystemError("lock", layout.work + "/" + staging.escaped + "/" + BatchLock.fileName.escaped, errno: EWOULDBLOCK)
            }
            do {
                try mover.renameFolder(staging, in: work, to: work, as: FileName(id)!)
            } catch where error.code == EEXIST {
                // Another batch got this id in the same second: draw again.
                try? work.removeTree(staging)
                continue
            }
            try work.sync()
            return (id, lock)
        }
    }
}

/// The size and SHA-256 of a file, read in pieces (a photo of any size, little memory).
enum FileHash {
    static func sha256(of file: FileDescriptor) throws(SystemError) -> (bytes: Int, hex: String) {
        var hash = SHA256()
        var total = 0
        try file.forEachChunk { chunk in
            hash.update(chunk)
            total += chunk.count
        }
        return (total, hash.finalize())
    }
}
