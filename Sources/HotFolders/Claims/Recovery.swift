import Batches
import Foundation

/// Start-up recovery and sweep of `.work/` (SPEC §7): every batch a crash interrupted is either
/// resumed (it has a manifest) or rolled back (it has none: its sources go back to `drop/`),
/// and stale leftovers are swept. Batches whose lock a live process holds are left alone, so
/// a second daemon on the same root never takes a batch from the first. Also run at every
/// rescan, to pick up the batches of a daemon that died while this one kept running.
public enum Recovery {
    /// What recovery found.
    public struct Result: Sendable {
        /// Batches to finish, oldest first; their locks are held.
        public var resumable: [ClaimedBatch] = []
        /// Sources moved back to `drop/` (rolled-back claims and swept folders).
        public var returned: [String] = []
        /// Folders removed.
        public var removed: [String] = []
    }

    /// Bookkeeping names at the top of a batch folder (never taken for a source).
    static let bookkeeping: Set<String> = [BatchLock.fileName, Manifest.fileName, ProgressJournal.fileName]

    /// Recovers and sweeps the hot folder's `.work/`.
    /// - Parameters:
    ///   - staleAfter: anything in `.work/` that is not a batch folder and is older than this
    ///     is swept (a younger one may be another daemon's batch in the making).
    ///   - skipping: batch ids this process already owns.
    public static func run(layout: HotFolderLayout, staleAfter: Duration, skipping: Set<String> = [],
                           log: Logger, now: Date = Date()) -> Result {
        var result = Result()
        guard let work = try? Files.Directory(layout.work), let names = try? work.names() else { return result }
        let cutoff = now.timeIntervalSince1970 - Double(staleAfter / .milliseconds(1)) / 1000
        for name in names.sorted() where !skipping.contains(name) {
            let path = layout.work + "/" + name
            if BatchID.isValid(name), let st = try? work.stat(name), st.isDirectory {
                guard let lock = BatchLock.tryAcquire(path) else { continue }  // a live owner
                do throws(SystemError) {
                    if let manifest = try Manifest.read(fromFolder: path) {
                        result.resumable.append(ClaimedBatch(layout: layout, manifest: manifest, lock: lock))
                        log.notice("resuming batch \(name) (\(manifest.items.count) photos) left by a stopped daemon",
                                   ["INBOX": manifest.inbox, "BATCH": name])
                    } else {
                        result.returned += try returnSources(from: path, to: layout, topLevel: true)
                        try Files.removeTree(path)
                        result.removed.append(path)
                        log.notice("rolled back batch \(name): it was claimed but never started; its files are back in drop/",
                                   ["BATCH": name])
                    }
                } catch {
                    log.error("cannot recover batch \(name): \(error)", ["BATCH": name])
                }
                continue
            }
            guard let st = try? work.stat(name), st.modified < cutoff else { continue }
            do throws(SystemError) {
                if st.isDirectory {
                    result.returned += try returnSources(from: path, to: layout, topLevel: true)
                } else if st.isRegular && isSource(name) {
                    result.returned += try returnOne(name, from: work, to: layout)
                }
                try Files.removeTree(path)
                result.removed.append(path)
                log.notice("swept stale \(name) from .work/", ["FILE": name])
            } catch {
                log.error("cannot sweep \(path): \(error)", ["FILE": name])
            }
        }
        Files.syncDirectory(layout.work)
        Files.syncDirectory(layout.drop)
        result.resumable.sort { $0.id < $1.id }
        return result
    }

    /// A name that may be a person's photo (not a temporary or ignored name).
    static func isSource(_ name: String) -> Bool {
        !name.hasPrefix(AtomicFile.temporaryPrefix) && !IgnoreRules.ignores(name)
    }

    /// Moves every source-looking regular file under `folder` back to `drop/`.
    static func returnSources(from folder: String, to layout: HotFolderLayout, topLevel: Bool) throws(SystemError) -> [String] {
        let dir = try Files.Directory(folder)
        var returned: [String] = []
        for name in try dir.names() {
            if topLevel && bookkeeping.contains(name) { continue }
            guard let st = try dir.stat(name) else { continue }
            if st.isDirectory {
                returned += try returnSources(from: folder + "/" + name, to: layout, topLevel: false)
            } else if st.isRegular && isSource(name) {
                returned += try returnOne(name, from: dir, to: layout)
            }
        }
        return returned
    }

    /// Moves one file back to `drop/`, never over a file of the same name dropped since:
    /// then it is called `<stem>-recovered-N.<ext>`.
    static func returnOne(_ name: String, from dir: Files.Directory, to layout: HotFolderLayout) throws(SystemError) -> [String] {
        try Files.makeDirectory(layout.drop, mode: 0o755)
        let drop = try Files.Directory(layout.drop)
        let stem = (name as NSString).deletingPathExtension, ext = (name as NSString).pathExtension
        var candidate = name
        var n = 1
        while true {
            do {
                try Files.move(name, from: dir, to: drop, as: candidate)
                return [candidate]
            } catch where error.code == EEXIST {
                candidate = stem + "-recovered-\(n)" + (ext.isEmpty ? "" : "." + ext)
                n += 1
            }
        }
    }
}
