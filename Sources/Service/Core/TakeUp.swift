import Batches
import Foundation
import Glibc
import HotFolders
import Synchronization
import System

/// Taking up a hot folder, off the loop (on the work pool): its folders made if missing, its
/// file system probed, its `.work/` recovered, its last batch found (once the service is
/// ready, for the folders taken up before: `fileLater`). What fails is a
/// `FolderProblem` (why, and the fix): the folder is refused, and tried again at every reload
/// and every `rescanInterval`.
enum TakeUp {
    /// A hot folder ready to be watched.
    struct Ready: Sendable {
        var system: FolderSystem
        /// Its last batch (nil: none, or not looked for yet: `watchedOnly`).
        var last: ServiceStatus.Last?
        /// Batches left in `.work/` to finish, oldest first (their locks held).
        var resumable: [ClaimedBatch]
        /// The first folder on its file system: the log says how it is watched and claimed.
        var firstOnFileSystem: Bool
        /// Its `.work/` was not looked at (it holds no batch folder): its recovery, for what
        /// else it may hold, comes after READY=1 (`fileLater`).
        var recoverLater = false
    }

    /// What each file system (by the devices of drop/ and .work/) allows: probed once, so
    /// 10,000 hot folders on one disk make one probe file, not 10,000.
    final class Probes: Sendable {
        private let known = Mutex<[Key: FolderSystem]>([:])

        struct Key: Hashable, Sendable {
            var drop: UInt64
            var work: UInt64
        }

        /// The folder's system, and whether it was probed just now (first on its file system).
        /// A `.work/` not made yet (`createWatched(work: false)`) counts as the root's device,
        /// where it will be made; the first folder on a file system makes it, for the probe.
        /// - Parameter seen: drop/'s and .work/'s status, when the caller has just read them.
        func system(of layout: HotFolderLayout, seen: (drop: FileStatus, work: FileStatus)? = nil) throws(SystemError) -> (FolderSystem, Bool) {
            let dropSeen = if let seen { seen.drop } else { try Files.status(layout.drop) }
            guard let drop = dropSeen else { throw SystemError("open", layout.drop, errno: ENOENT) }
            var work = if let seen { seen.work } else { try Files.status(layout.work) }
            let workOrRoot = work == nil ? layout.root : layout.work
            let workSeen = work != nil
            if work == nil { work = try Files.status(layout.root) }
            guard let work else { throw SystemError("open", layout.root, errno: ENOENT) }
            let key = Key(drop: drop.device, work: work.device)
            if let system = known.withLock({ $0[key] }) {
                // Not probed again, but what the probe would have found out: that this user
                // may list drop/ and write .work/ (or make it in the root) here — known from
                // their status when this user owns them with rwx (the probe of their file
                // system found it writable).
                for (path, mode, st) in [(layout.drop, R_OK | W_OK | X_OK, drop), (workOrRoot, R_OK | W_OK | X_OK, workSeen ? work : nil)]
                where !(st.map(Self.ownedAndOpen) ?? false) && access(path, mode) != 0 {
                    throw SystemError("write in", path, errno: errno)
                }
                return (system, false)
            }
            try layout.createWork()
            let system = try FolderSystem.probe(layout)
            known.withLock { $0[key] = system }
            return (system, true)
        }

        /// A folder this process's user owns (or any, for root) with rwx for its owner.
        static func ownedAndOpen(_ st: FileStatus) -> Bool {
            st.isDirectory && (geteuid() == 0 || (st.owner == geteuid() && st.permissions & 0o700 == 0o700))
        }
    }

    /// `.work/` as a restart finds it: a folder of this user's (any, for root) at 0700, which
    /// setting it to 0700 again would not change (`HotFolderLayout.createWatched` does).
    static func isPrivate(_ work: FileStatus) -> Bool {
        work.permissions == 0o700 && Probes.ownedAndOpen(work)
    }

    /// Takes up `inbox`. Before the service is ready (`watchedOnly`) only the folders watching
    /// needs are made (the root and drop/; .work/ for the first folder on a file system, to
    /// probe it): .work/, out/, originals/ and failed/ of a new hot folder follow once it is
    /// ready (`fileLater`) — each folder made is a new inode, which on ext4 is most of the
    /// start-up's CPU (40,000 of them at 10,000 new folders: 3.7–10 s of system time here).
    static func run(_ inbox: ServiceSetup.Inbox, staleAfter: Duration, probes: Probes, watchedOnly: Bool,
                    locks: BatchLocks, log: Logger) -> Result<Ready, FolderProblem> {
        let layout = inbox.layout
        let system: FolderSystem, first: Bool
        var seen: (drop: FileStatus, work: FileStatus)?
        do throws(SystemError) {
            // A restart finds drop/ (its root with it) and a private .work/: nothing to make.
            // At 10,000 hot folders the mkdirs of what is there, the chmod of a .work/ at 0700
            // already (a write to its inode) and the listing of an empty .work/ were most of
            // a take-up's system calls.
            if watchedOnly, let drop = try Files.status(layout.drop), drop.isDirectory,
               let work = try Files.status(layout.work), isPrivate(work) {
                seen = (drop, work)
            } else if watchedOnly {
                try layout.createWatched(work: false)
            } else {
                try layout.create()
            }
            (system, first) = try probes.system(of: layout, seen: seen)
        } catch {
            return .failure(FolderProblem.refusal(error, layout: layout))
        }
        // Only shown (status, STATUS.txt): before ready it is looked for after READY=1 (the
        // newest reports of 10,000 out/ folders read before it: a tenth of a restart's CPU).
        let last = watchedOnly ? nil : LastBatch.newest(in: layout)
        // A .work/ with no folder in it (two links on a local file system: its own name and
        // its "."; each folder in it adds one) holds no batch to resume: the rest of recovery
        // (what a claim cut short left, swept once stale) comes after READY=1 (`fileLater`).
        if let work = seen?.work, work.links == 2, !system.isShared {
            return .success(Ready(system: system, last: last, resumable: [], firstOnFileSystem: first, recoverLater: true))
        }
        let resumable = recover(layout, system: system, staleAfter: staleAfter, locks: locks, log: log)
        return .success(Ready(system: system, last: last, resumable: resumable, firstOnFileSystem: first))
    }

    /// Makes .work/, out/, originals/ and failed/ of a folder taken up before the service was
    /// ready (`run` with `watchedOnly`); what cannot be made now is said, and made by the
    /// batch that needs it (a claim makes .work/). Then its last batch is shown, unless a
    /// batch finished since shows its own.
    /// - Parameter recover: the take-up left `.work/` unlooked at: recover it now (what it
    ///   resumes goes to the loop as `recovered`), before any claim on the folder's strand.
    static func fileLater(_ layout: HotFolderLayout, inbox: String, board: StatusBoard, metrics: Metrics, log: Logger,
                          recover: (system: FolderSystem, staleAfter: Duration, locks: BatchLocks, mailbox: Mailbox<ServiceLoop.Message>)? = nil) {
        if let recover {
            let batches = Self.recover(layout, system: recover.system, staleAfter: recover.staleAfter, locks: recover.locks, log: log)
            if !batches.isEmpty { recover.mailbox.post(.recovered(inbox: inbox, batches)) }
        }
        do throws(SystemError) {
            try layout.createWork()
            try layout.createFiling()
        } catch {
            log.warning("\(error) (a batch makes it when it needs it)", ["INBOX": inbox])
        }
        guard let last = LastBatch.newest(in: layout) else { return }
        var shown = false
        board.update(inbox) { entry in
            guard entry.last == nil else { return }
            entry.last = last
            shown = true
        }
        if shown { metrics.setLastBatch(inbox, finished: last.finished) }
    }

    /// Recovery of `.work/` (reference: Claims and crash safety), when it holds anything: an empty
    /// `.work/` (what 10,000 idle folders have) costs one listing, not a recovery and two fsyncs.
    static func recover(_ layout: HotFolderLayout, system: FolderSystem, staleAfter: Duration, locks: BatchLocks,
                        log: Logger) -> [ClaimedBatch] {
        do throws(SystemError) {
            if try Directory(layout.work).names().isEmpty { return [] }
        } catch where error.code == ENOENT {
            return []  // not made yet (`createWatched(work: false)`): nothing to recover
        } catch {}
        return Recovery.run(layout: layout, staleAfter: staleAfter, locks: locks, mover: system.mover, log: log).resumable
    }
}
