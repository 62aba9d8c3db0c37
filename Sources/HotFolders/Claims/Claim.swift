import Batches
import Finishing
import Foundation

/// A batch this process owns: claimed (or recovered) into `.work/<batch-id>/`, its manifest
/// durable, its lock held until the value is dropped.
public struct ClaimedBatch: Sendable {
    public var layout: HotFolderLayout
    public var manifest: Manifest
    public var lock: BatchLock

    public var id: String { manifest.batch }
    public var folder: String { layout.workFolder(manifest.batch) }
}

/// Claiming files from `drop/`, maildir-style (SPEC §1): each is moved by `rename(2)` into
/// `.work/<batch-id>/src/`, which is atomic, so of two daemons only one gets a file. Then the
/// manifest (order, names, sizes, hashes) is written and fsynced before any processing.
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
    /// Claims `names` from the hot folder's `drop/`.
    /// - Parameter heartbeat: called between files (hashing a big batch takes a while; the
    ///   service keeps its watchdog fed from here).
    /// - Returns: the batch, or `nil` when none of the files could be claimed (all gone).
    /// - Throws: `SystemError` (the batch folder is then left for recovery, sources safe).
    public static func claim(_ names: [String], layout: HotFolderLayout, inbox: String, template: TemplateSnapshot,
                             order: Template.Order, now: Date = Date(),
                             heartbeat: () -> Void = {}) throws(SystemError) -> ClaimedBatch? {
        let (id, lock) = try makeBatchFolder(layout: layout, now: now)
        let folder = layout.workFolder(id)
        try Files.makeDirectory(folder + "/src")
        let drop = try Files.Directory(layout.drop)
        let src = try Files.Directory(folder + "/src")
        var claimed: [String] = []
        for name in names {
            guard let st = try drop.stat(name), st.isRegular, st.links == 1 else { continue }
            guard try Files.move(name, from: drop, to: src) else { continue }
            // Check the descriptor of what we actually moved: a name swapped for a symlink
            // or hard-linked between the check and the rename goes straight back.
            if let moved = try src.stat(name), moved.isRegular, moved.links == 1 {
                claimed.append(name)
            } else {
                _ = try? Files.move(name, from: src, to: drop)
            }
        }
        src.sync()
        drop.sync()
        guard !claimed.isEmpty else {
            try? Files.removeTree(folder)
            Files.syncDirectory(layout.work)
            return nil
        }
        let ordered = BatchOrder.sorted(claimed.map { folder + "/src/" + $0 }, by: order)
        var items: [Manifest.Item] = []
        for path in ordered {
            heartbeat()
            let (bytes, sha256) = try Files.sha256(path)
            items.append(Manifest.Item(name: URL(fileURLWithPath: path).lastPathComponent, bytes: bytes, sha256: sha256))
        }
        let manifest = Manifest(batch: id, inbox: inbox, claimed: BatchID.timestamp(now), template: template, items: items)
        do {
            try manifest.write(toFolder: folder)
        } catch {
            throw SystemError("write the manifest in", folder, errno: error.code)
        }
        return ClaimedBatch(layout: layout, manifest: manifest, lock: lock)
    }

    /// Steps 1: a fresh `.work/<id>/` whose lock this process holds.
    static func makeBatchFolder(layout: HotFolderLayout, now: Date) throws(SystemError) -> (String, BatchLock) {
        try Files.makeDirectory(layout.work)
        while true {
            let id = BatchID.make(at: now)
            let staging = layout.work + "/.new-" + id
            try Files.makeDirectory(staging)
            guard let lock = BatchLock.tryAcquire(staging) else {
                throw SystemError("lock", staging + "/" + BatchLock.fileName)
            }
            do {
                try Files.rename(staging, layout.workFolder(id))
            } catch where error.code == EEXIST || error.code == ENOTEMPTY {
                // Another batch got this id in the same second: draw again.
                try? Files.removeTree(staging)
                continue
            }
            Files.syncDirectory(layout.work)
            return (id, lock)
        }
    }
}
