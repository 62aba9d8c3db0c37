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

    public init(layout: HotFolderLayout, manifest: Manifest, lock: BatchLock, mover: Mover) {
        self.layout = layout
        self.manifest = manifest
        self.lock = lock
        self.mover = mover
    }

    public var id: String { manifest.batch }
    public var folder: String { layout.workFolder(manifest.batch) }
}

/// Claiming files from `drop/`, maildir-style (reference: Claims and crash safety): each is moved
/// into `.work/<batch-id>/src/` with the hot folder's claim primitive (`Mover.take`: atomic on
/// local disks and shares alike), so of two daemons — on one machine or several — only one gets a
/// file. Then every claimed source is fsynced and hashed, and the manifest (order, names, sizes,
/// hashes) is written and fsynced before any processing.
///
/// Steps, each durable before the next:
/// 1. `.work/.new-<id>/` is made and its `lock` taken, then renamed to `.work/<id>/`, so a
///    batch folder is never seen without a held lock by its live owner.
/// 2. Each name is moved `drop/<name>` → `.work/<id>/src/<name>` (a name someone else took
///    is skipped; a name that cannot be moved stays in `drop/` and is reported as refused),
///    checked again on its descriptor (regular file, one link).
/// 3. Each claimed source is read once: hashed, and fsynced on the same descriptor — a
///    client that never synced (Samba, `cp`) leaves the data in the page cache, and a power
///    cut after the manifest must not find an empty file where the manifest promises a photo.
///    A source that cannot be read is claimed all the same, with the reason: it fails as one
///    `io-error` item (one bad file is one failed item, never a stuck batch).
/// 4. `src/` and `drop/` are fsynced (the moves are durable), then `manifest.json` lists what
///    `src/` holds, in the template's order.
/// A crash before step 4 leaves a folder without manifest: recovery moves its sources back.
///
/// (Pairs and ignored files, when they come, are decided before step 2: the claim takes the
/// names it is given.)
public enum Claim {
    static let sourceFolder: FileName = "src"

    /// What a claim did.
    public struct Outcome: Sendable {
        /// The batch, or `nil` when none of the files could be claimed (all gone or refused).
        public var batch: ClaimedBatch?
        /// Names that could not be moved out of `drop/`, and why (they stay there).
        public var refused: [(name: FileName, error: SystemError)] = []
        /// What went wrong beside the claim itself, in words with what becomes of it (an empty
        /// batch folder recovery removes; a swapped-in link that stays in `src/`): for the log.
        public var warnings: [String] = []
    }

    /// Claims `names` from the hot folder's `drop/`.
    /// - Parameters:
    ///   - locks: the service's batch locks (the new batch's is among them).
    ///   - mover: how names move in this hot folder (`FolderSystem.mover`).
    ///   - heartbeat: called between files (hashing a big batch takes a while; the service
    ///     keeps its watchdog fed from here).
    /// - Throws: `SystemError` when the batch itself cannot be made or recorded (no `.work/`,
    ///   disk full): the batch folder is then left for recovery, sources safe.
    ///   - open: the batch stays open (`Manifest.open`): `add` claims more photos into it,
    ///     in the order given here; its run puts them in `order` (`close`).
    public static func claim(_ names: [FileName], layout: HotFolderLayout, inbox: String, template: TemplateSnapshot,
                             order: Template.Order, locks: BatchLocks, mover: Mover = Mover(.renameNoReplace),
                             now: Date = Date(), open: Bool = false, heartbeat: () -> Void = {}) throws(SystemError) -> Outcome {
        var outcome = Outcome()
        let (id, lock) = try makeBatchFolder(layout: layout, locks: locks, mover: mover, now: now)
        let folder = layout.workFolder(id)
        let batch = try Directory(folder)
        try batch.makeFolder(sourceFolder)
        let drop = try Directory(layout.drop)
        let src = try batch.folder(sourceFolder)
        let claimed = take(names, from: drop, into: src, mover: mover, refused: &outcome.refused, warnings: &outcome.warnings)
        guard !claimed.isEmpty else {
            do throws(SystemError) {
                try lock.locks.removeFolder(folder, lock: lock)
                try Files.syncDirectory(layout.work)
            } catch {
                outcome.warnings.append("cannot remove the empty batch folder .work/\(id)/ (nothing was claimed): \(error); recovery removes it")
            }
            return outcome
        }
        let srcPath = FilePath(folder).appending(sourceFolder)
        let paths = claimed.map { srcPath.appending($0) }
        let items = try readAll(open ? paths : BatchOrder.sorted(paths, by: order), in: src, layout: layout, heartbeat: heartbeat)
        try src.sync()
        try drop.sync()
        var manifest = Manifest(batch: id, inbox: inbox, claimed: BatchID.timestamp(now), template: template, items: items)
        if open { manifest.open = true }
        do {
            try manifest.write(toFolder: folder)
        } catch {
            throw SystemError("write the manifest in", folder, errno: error.code)
        }
        outcome.batch = ClaimedBatch(layout: layout, manifest: manifest, lock: lock, mover: mover)
        return outcome
    }

    /// Claims `names` from `drop/` into the open batch `batch` (steps 2–4, the manifest
    /// rewritten with them at its end). A crash before the manifest leaves them in `src/`
    /// unlisted: `close` lists them.
    /// - Parameter mayWrite: asked before each file and before the manifest (in a cluster: this
    ///   host's hold on the batch is still certain); once false nothing more is written — the
    ///   files moved stay in `src/` unlisted, for `close` to list.
    /// - Returns: the outcome (its batch: `batch` with the new items) and the items added.
    public static func add(_ names: [FileName], to batch: ClaimedBatch, mayWrite: () -> Bool = { true },
                           heartbeat: () -> Void = {}) throws(SystemError) -> (Outcome, added: [Manifest.Item]) {
        precondition(batch.manifest.open == true, "photos are added to an open batch only")
        var outcome = Outcome()
        let layout = batch.layout
        let drop = try Directory(layout.drop)
        let src = try Directory(FilePath(batch.folder).appending(sourceFolder))
        let claimed = take(names, from: drop, into: src, mover: batch.mover, refused: &outcome.refused, warnings: &outcome.warnings,
                           mayWrite: mayWrite)
        var updated = batch
        guard !claimed.isEmpty, mayWrite() else {
            outcome.batch = batch
            return (outcome, [])
        }
        let srcPath = FilePath(batch.folder).appending(sourceFolder)
        let items = try readAll(claimed.map { srcPath.appending($0) }, in: src, layout: layout, heartbeat: heartbeat)
        try src.sync()
        try drop.sync()
        guard mayWrite() else {
            outcome.batch = batch
            return (outcome, [])
        }
        updated.manifest.items += items
        do {
            try updated.manifest.write(toFolder: batch.folder)
        } catch {
            throw SystemError("write the manifest in", batch.folder, errno: error.code)
        }
        outcome.batch = updated
        return (outcome, items)
    }

    /// Closes an open batch: what `src/` holds and the manifest does not list (an `add` a crash
    /// cut short) is listed, every item is put in `order`, and the manifest is written closed —
    /// the manifest a claim of the same files at once writes.
    public static func close(_ batch: ClaimedBatch, order: Template.Order,
                             heartbeat: () -> Void = {}) throws(SystemError) -> ClaimedBatch {
        guard batch.manifest.open == true else { return batch }
        var closed = batch
        let src = try Directory(FilePath(batch.folder).appending(sourceFolder))
        let srcPath = FilePath(batch.folder).appending(sourceFolder)
        let listed = Set(batch.manifest.items.map(\.name))
        var strays: [FilePath] = []
        for name in try src.names() where !listed.contains(name) && Recovery.isSource(name) {
            if let st = try src.status(of: name), st.isRegular { strays.append(srcPath.appending(name)) }
        }
        var items = batch.manifest.items
        if !strays.isEmpty {
            items += try readAll(strays, in: src, layout: batch.layout, heartbeat: heartbeat)
            try src.sync()
        }
        let byName = Dictionary(items.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let sorted = BatchOrder.sorted(items.map { srcPath.appending($0.name) }, by: order)
        closed.manifest.items = sorted.compactMap { $0.lastComponent.flatMap { byName[$0] } }
        closed.manifest.open = nil
        do {
            try closed.manifest.write(toFolder: batch.folder)
        } catch {
            throw SystemError("write the manifest in", batch.folder, errno: error.code)
        }
        return closed
    }

    /// Step 2: moves each of `names` from `drop/` into `src/`; returns those claimed.
    static func take(_ names: [FileName], from drop: Directory, into src: Directory, mover: Mover,
                     refused: inout [(name: FileName, error: SystemError)], warnings: inout [String],
                     mayWrite: () -> Bool = { true }) -> [FileName] {
        var claimed: [FileName] = []
        for name in names {
            guard mayWrite() else { break }
            do throws(SystemError) {
                guard let st = try drop.status(of: name), Takeable.accepts(name, st) else { continue }
                guard try mover.take(name, from: drop, into: src) else { continue }
            } catch {
                refused.append((name, error))
                continue
            }
            // Check the descriptor of what we actually moved: a name swapped for a symlink
            // or hard-linked between the check and the move goes straight back. One that cannot
            // be looked at is claimed (it fails as io-error unless it can be read by then: the
            // batch's rules for a file it cannot read), never left unlisted in src/.
            let moved: FileStatus?
            do throws(SystemError) {
                moved = try src.status(of: name)
            } catch {
                claimed.append(name)
                continue
            }
            if let moved, Takeable.accepts(name, moved) {
                claimed.append(name)
            } else if moved != nil {
                do throws(SystemError) {
                    _ = try mover.move(name, from: src, to: drop)
                } catch {
                    warnings.append("\(name.escaped) was swapped for a link while it was claimed and cannot go back to drop/: \(error); "
                                    + "it is not a photo of the batch and is removed with its folder (the file it links to is not touched)")
                }
            }
        }
        return claimed
    }

    /// Step 3 for `paths` (in `src`), in their order.
    static func readAll(_ paths: [FilePath], in src: Directory, layout: HotFolderLayout,
                        heartbeat: () -> Void) throws(SystemError) -> [Manifest.Item] {
        var items: [Manifest.Item] = []
        let shared = (try? Files.fileSystem(layout.work))?.isShared ?? true
        for path in paths {
            heartbeat()
            let (item, error) = read(path.lastComponent!, in: src)
            // The share failing while a file is read (the connection gone, a full disk) is not
            // the file's fault: the claim stops here and recovery puts its files back in drop/.
            if let error, ShareHealth.isShareFailure(error, shared: shared),
               ShareHealth.isShareFailure(error, shared: false) || !ShareHealth.check(layout).isAvailable {
                throw error
            }
            items.append(item)
        }
        return items
    }

    /// Step 3 for one claimed source: its size and hash, read once, and its data fsynced on
    /// the same descriptor; or, when it cannot be read, its size and the reason.
    static func durable(_ name: FileName, in src: Directory) -> Manifest.Item {
        read(name, in: src).0
    }

    /// `durable`, and the error that kept the file from being read.
    static func read(_ name: FileName, in src: Directory) -> (Manifest.Item, SystemError?) {
        do throws(SystemError) {
            let file = try src.open(name, .read, [.noFollow])
            let (bytes, sha256) = try FileHash.sha256(of: file)
            try file.sync()
            return (Manifest.Item(name: name, bytes: bytes, sha256: sha256), nil)
        } catch {
            let size = (try? src.status(of: name)).map { Int($0.size) } ?? 0
            return (Manifest.Item(name: name, bytes: size, sha256: nil, error: "cannot \(error.call): \(error.reason)"), error)
        }
    }

    /// Step 1: a fresh `.work/<id>/` whose lock this process holds.
    static func makeBatchFolder(layout: HotFolderLayout, locks: BatchLocks, mover: Mover,
                                now: Date) throws(SystemError) -> (String, BatchLock) {
        try Files.makeDirectory(layout.work)
        let work = try Directory(layout.work)
        while true {
            let id = BatchID.make(at: now)
            let staging = FileName(".new-" + id)!
            try work.makeFolder(staging)
            let lockPath = layout.work + "/" + staging.escaped + "/" + BatchLock.fileName.escaped
            guard let lock = locks.tryAcquire(try work.folder(staging)) else {
                throw SystemError("lock", lockPath, errno: EWOULDBLOCK)
            }
            // Where a folder holding an open file cannot be renamed (SMB), the lock is let go
            // for the rename and taken again at once (this process's recovery leaves the folder
            // alone meanwhile); should another daemon on this machine take it in that instant
            // (its recovery), this claim stops before taking any file.
            // Where a renamed folder's files keep its old name (rclone), the folder goes with no
            // file in it: its lock file is removed for the rename and made again after it (a
            // daemon that takes the folder meanwhile stops this claim the same way).
            let empties = !mover.renamesFullFolders
            let held: BatchLock? = try locks.letGo(layout.workFolder(id)) { () throws(SystemError) -> BatchLock? in
                if !mover.renamesOpenFiles || empties { lock.release() }
                if empties { try work.folder(staging).remove(BatchLock.fileName) }
                do throws(SystemError) {
                    try mover.renameFolder(staging, in: work, to: work, as: FileName(id)!)
                } catch where error.code == EEXIST {
                    // Another batch got this id in the same second: draw again.
                    try? work.removeTree(staging)
                    return nil
                }
                guard !mover.renamesOpenFiles || empties else { return lock }
                let placed = try work.folder(FileName(id)!)
                // Made again, its words on the server before it is held (rclone sends what an
                // open file holds only when it is closed).
                if empties { try BatchLock.writeOwnerFile(in: placed) }
                guard let again = locks.acquire(placed) else {
                    throw SystemError("lock", layout.workFolder(id) + "/" + BatchLock.fileName.escaped, errno: EWOULDBLOCK)
                }
                return again
            }
            guard let held else { continue }
            try work.sync()
            return (id, held)
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
