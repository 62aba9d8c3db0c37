import Batches
import Foundation
import System

/// Start-up recovery and sweep of `.work/` (reference: Claims and crash safety): every batch a
/// crash interrupted is either resumed (it has a manifest) or rolled back (it has none: its sources
/// go back to `drop/`), and stale leftovers are swept. Batches whose lock a live process holds are
/// left alone, so a second daemon on the same root never takes a batch from the first. Also run at
/// every rescan, to pick up the batches of a daemon that died while this one kept running.
public enum Recovery {
    /// What recovery found.
    public struct Result: Sendable {
        /// Batches to finish, oldest first; their locks are held.
        public var resumable: [ClaimedBatch] = []
        /// Sources moved back to `drop/` (rolled-back claims and swept folders), as named there now.
        public var returned: [FileName] = []
        /// Entries of `.work/` removed.
        public var removed: [FileName] = []
    }

    /// Bookkeeping names at the top of a batch folder (never taken for a source).
    static let bookkeeping: Set<FileName> = [BatchLock.fileName, Manifest.entryName, ProgressJournal.entryName,
                                                   EarlyJournal.entryName, EarlyJournal.folderEntry]

    /// The folder of `.work/` that holds delivery journals.
    public static let deliveries = "deliveries"
    /// The folder of `.work/` that holds the hot folder's share links (reference: Share links,
    /// QR codes): no batch, never swept.
    public static let shares = "shares"

    /// Recovers and sweeps the hot folder's `.work/`.
    /// - Parameters:
    ///   - staleAfter: anything in `.work/` that is not a batch folder and is older than this
    ///     is swept (a younger one may be another daemon's batch in the making).
    ///   - mover: how names move in this hot folder.
    ///   - skipping: batch ids this process already owns.
    ///   - leaseTimeout: a batch held from another machine is taken once its lease has not been
    ///     renewed for this long (`BatchLock.Lease`).
    ///   - locks: the service's batch locks (the locks taken are among them; what it holds or
    ///     lets go of for an instant is left alone).
    public static func run(layout: HotFolderLayout, staleAfter: Duration, locks: BatchLocks,
                           mover: Mover = Mover(.renameNoReplace), skipping: Set<String> = [],
                           leaseTimeout: Duration = BatchLock.Lease.timeout, log: Logger, now: Date = Date()) -> Result {
        var result = Result()
        guard let work = try? Directory(layout.work), let names = try? work.names() else { return result }
        let cutoff = now.timeIntervalSince1970 - Double(staleAfter / .milliseconds(1)) / 1000
        // `.work/deliveries/` holds the journals of finished batches' deliveries (the service's
        // delivery, README "Delivering finished photos"), `.work/shares/` the share links,
        // `.work/report.lock` the lock of report rewrites: no batch, never swept.
        let kept: Set<String> = [Self.deliveries, Self.shares, ReportRewrite.lockName]
        for name in names.sorted() where !skipping.contains(name.escaped) && !kept.contains(name.string ?? "") {
            let id = name.string ?? ""
            if BatchID.isValid(id), let st = try? work.status(of: name), st.isDirectory {
                guard let folder = try? work.folder(name) else { continue }
                // Empty (not even a lock file) and young: a claim putting its folder in place where
                // folders are renamed with no file in it (`Mover.renamesFullFolders`), about to make
                // its lock again and then move photos in. Left alone for a minute: taken now, its
                // removal could meet the photos that claim moves in.
                if (try? folder.names())?.isEmpty == true, st.modified > now.timeIntervalSince1970 - 60 { continue }
                guard let lock = locks.tryAcquire(folder, leaseTimeout: leaseTimeout)
                else { continue }  // a live owner, here or on another machine
                let path = layout.workFolder(id)
                do throws(BatchError) {
                    let givenBack = locks.givenBack.takeUp(path)
                    if let manifest = try Manifest.read(fromFolder: path) {
                        result.resumable.append(ClaimedBatch(layout: layout, manifest: manifest, lock: lock, mover: mover))
                        if Files.exists(layout.out + "/" + id) && !Files.exists(path + "/out") {
                            // Published: announced already (its journal says so), or not when a
                            // stop came in between (`BatchWork.completed`).
                            let announced = (try? ProgressJournal.read(folder: path))?.stage != nil
                            log.notice(announced
                                ? "batch \(id) is finished; cleaning up what its run could not (its sources' filing, its work folder)"
                                : "batch \(id) is published but was not announced (the daemon stopped in between): announcing it now, then cleaning up",
                                ["INBOX": manifest.inbox, "BATCH": id])
                        } else if let host = lock.takenFrom {
                            log.notice("taking over batch \(id) (\(manifest.items.count) photos) from \(host), which stopped renewing its lease \(Explain.words(Explain.seconds(leaseTimeout))) ago",
                                       ["INBOX": manifest.inbox, "BATCH": id])
                        } else if givenBack {
                            log.notice("resuming batch \(id) (\(manifest.items.count) photos), left when the share failed under it",
                                       ["INBOX": manifest.inbox, "BATCH": id])
                        } else {
                            log.notice("resuming batch \(id) (\(manifest.items.count) photos) left by a stopped daemon",
                                       ["INBOX": manifest.inbox, "BATCH": id])
                        }
                    } else {
                        // No manifest: a claim cut short, whose files go back to drop/ — or a
                        // folder its owner was removing when this recovery took the lock in the
                        // instant between (nothing in it: removed without a word).
                        let returned = try BatchError.wrap { () throws(SystemError) in
                            try returnSources(from: folder, to: layout, mover: mover, topLevel: true)
                        }
                        result.returned += returned
                        _ = try BatchError.wrap { () throws(SystemError) in try locks.removeFolder(path, lock: lock) }
                        result.removed.append(name)
                        if !returned.isEmpty {
                            log.notice("rolled back batch \(id): it was claimed but never started; its \(returned.count) file\(returned.count == 1 ? " is" : "s are") back in drop/",
                                       ["BATCH": id])
                        } else if Files.exists(layout.out + "/" + id) {
                            log.notice("removed the work folder of batch \(id), finished and announced, left when it could not be removed",
                                       ["BATCH": id])
                        }
                    }
                } catch {
                    log.error("cannot recover batch \(id): \(error)", ["BATCH": id])
                }
                continue
            }
            // A claim that died while making its folder (`.new-<id>/`: a lock file, no
            // source) or a probe cut short: nobody's once a minute old and unlocked.
            if isHalfMade(name), let st = try? work.status(of: name), st.modified < now.timeIntervalSince1970 - 60 {
                var lock: BatchLock?
                if st.isDirectory {
                    guard let folder = try? work.folder(name), let held = locks.tryAcquire(folder) else { continue }
                    lock = held
                }
                do throws(SystemError) {
                    if st.isDirectory {
                        result.returned += try returnSources(from: try work.folder(name), to: layout, mover: mover, topLevel: true)
                        try locks.removeFolder(FilePath(layout.work).appending(name), lock: lock)
                    } else {
                        try work.removeTree(name)
                    }
                    result.removed.append(name)
                } catch {
                    log.error("cannot remove \(layout.work)/\(name.escaped): \(error)", ["FILE": name.escaped])
                }
                continue
            }
            guard let st = try? work.status(of: name), st.modified < cutoff else { continue }
            do throws(SystemError) {
                if st.isDirectory {
                    result.returned += try returnSources(from: try work.folder(name), to: layout, mover: mover, topLevel: true)
                } else if st.isRegular && isSource(name) {
                    result.returned += try returnOne(name, from: work, to: layout, mover: mover)
                }
                try work.removeTree(name)
                result.removed.append(name)
                log.notice("swept stale \(name.escaped) from .work/", ["FILE": name.escaped])
            } catch {
                log.error("cannot sweep \(layout.work)/\(name.escaped): \(error)", ["FILE": name.escaped])
            }
        }
        // The moves back to drop/ and the removals durable (what cannot be synced now is synced
        // by the next recovery; a power cut meanwhile may show a returned file in both places:
        // the next recovery returns it again as `-recovered-N`, nothing is lost).
        for (folder, what) in [(layout.work, ".work/"), (layout.drop, "drop/")] {
            do throws(SystemError) {
                try Files.syncDirectory(folder)
            } catch {
                log.warning("cannot sync \(what) after recovering it: \(error) (it is synced again at the next rescan)")
            }
        }
        result.resumable.sort { $0.id < $1.id }
        return result
    }

    /// The locks of the batches in the hot folder's `.work/` that this process does not hold,
    /// looked at now (`BatchLocks.lookAgain`): on a share, called every `pollInterval`, so a batch
    /// another machine claimed after this process's last recovery is watched too, a dead host's
    /// batch is seen to be free within `Lease.timeout` + one `pollInterval` of its last renewal,
    /// and a batch nobody holds (its daemon on this machine died; a share client brought a
    /// removed one back) is seen within a `pollInterval`. Run `Recovery.run` for the folder when
    /// the look `isDue`. Each look is a listing of `.work/` and, per such batch, an open and a
    /// read of its lock.
    /// - Returns: what was found; nothing when `.work/` cannot be listed.
    public static func leases(layout: HotFolderLayout, locks: BatchLocks,
                              leaseTimeout: Duration = BatchLock.Lease.timeout) -> BatchLock.LeaseLook {
        guard let names = try? Directory(layout.work).names() else { return BatchLock.LeaseLook() }
        let batches = names.compactMap(\.string).filter(BatchID.isValid).sorted()
        return locks.lookAgain(in: layout.work, folders: batches, leaseTimeout: leaseTimeout)
    }

    /// `.new-<id>` (a batch folder being made), `.pf-probe-*` (the claim-primitive probe),
    /// `.pf-space-*` (`ShareHealth.check`'s write) and `.pf-tmp-*` (an atomic write staged in
    /// `.work/`, `STATUS.txt`'s: a kill between its write and its rename leaves it).
    static func isHalfMade(_ name: FileName) -> Bool {
        name.bytes.starts(with: ".new-".utf8) || name.bytes.starts(with: ".pf-probe-".utf8)
            || name.bytes.starts(with: ".pf-space-".utf8) || name.bytes.starts(with: AtomicFile.temporaryPrefix.utf8)
    }

    /// A name that may be a person's photo (not a temporary or ignored name).
    static func isSource(_ name: FileName) -> Bool {
        !name.bytes.starts(with: AtomicFile.temporaryPrefix.utf8) && !IgnoreRules.ignores(name.readable)
    }

    /// Moves every source-looking regular file under `folder` back to `drop/`.
    static func returnSources(from folder: Directory, to layout: HotFolderLayout, mover: Mover,
                              topLevel: Bool) throws(SystemError) -> [FileName] {
        var returned: [FileName] = []
        for name in try folder.names() {
            if topLevel && bookkeeping.contains(name) { continue }
            guard let st = try folder.status(of: name) else { continue }
            if st.isDirectory {
                returned += try returnSources(from: try folder.folder(name), to: layout, mover: mover, topLevel: false)
            } else if st.isRegular && isSource(name) {
                returned += try returnOne(name, from: folder, to: layout, mover: mover)
            }
        }
        return returned
    }

    /// Moves one file back to `drop/`, never over a file of the same name dropped since:
    /// then it is called `<stem>-recovered-N.<ext>`.
    static func returnOne(_ name: FileName, from folder: Directory, to layout: HotFolderLayout,
                          mover: Mover) throws(SystemError) -> [FileName] {
        try Files.makeDirectory(layout.drop, permissions: 0o755)
        let drop = try Directory(layout.drop)
        var candidate = name
        var n = 1
        while true {
            do {
                try mover.move(name, from: folder, to: drop, as: candidate)
                return [candidate]
            } catch where error.code == EEXIST {
                candidate = recoveredName(name, n)
                n += 1
            }
        }
    }

    /// `<stem>-recovered-N.<ext>`, the stem cut so the name stays within `NAME_MAX`.
    static func recoveredName(_ name: FileName, _ n: Int) -> FileName {
        let bytes = name.bytes
        let dot = bytes.lastIndex(of: UInt8(ascii: ".")).flatMap { $0 > 0 ? $0 : nil } ?? bytes.endIndex
        let tag = Array("-recovered-\(n)".utf8)
        let ext = Array(bytes[dot...])
        let room = FileName.maxLength - tag.count - ext.count
        return FileName(bytes: FileName.prefix(of: bytes[..<dot], maxCount: max(1, room)) + tag + ext)!
    }
}
