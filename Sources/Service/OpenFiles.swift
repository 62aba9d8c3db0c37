import Batches
import Configuration
import HotFolders
import System

/// The open-file limit (`RLIMIT_NOFILE`) and what the service needs of it. The default soft
/// limit, 1,024, runs out at about a thousand hot folders, so the daemon raises it to the hard
/// limit at start (the unit sets both high: `LimitNOFILE=`). What is left after the process's
/// own and the work in flight is shared out to the hot folders, one each, in config order;
/// folders beyond it are refused by name with the fix (raise `LimitNOFILE=`), so those watched
/// work normally instead of every folder failing claims with "Too many open files".
///
/// What is counted (each the most it holds at once):
/// - the process's own (`reserve`): standard streams, inotify, the poll loop's eventfd,
///   timerfd and the signals' eventfd, the journal and notify sockets, metrics sockets, fontconfig,
///   libraries, a STATUS.txt or status file being written;
/// - a watched hot folder (`perFolder`): its open `drop/`;
/// - a batch claimed and waiting its turn: its lock (a folder claims one batch ahead of the
///   one being finished). Counted as they are held: before each claim the service checks that
///   the limit has room for one more lock, else the claim waits for a batch to start
///   (`lockReserve` are kept for them whatever the number of folders);
/// - a claim in flight (`perClaim`, at most `claimThreads` at once): its lock, `.work/`, the
///   batch folder, `src/`, `drop/`, the file being hashed;
/// - a batch being finished (`perBatch`, at most `batchSlots` at once): its lock, its
///   folder, its journal, the folder a source is filed into;
/// - a photo in flight (`perPhoto`, at most `workers` at once): the source, an output being
///   written and its folder, a temporary file.
/// Batches that recovery resumes at start hold their locks too: a backlog left in `.work/`
/// is the one thing that can need more.
public enum OpenFiles {
    static let reserve: UInt64 = 64
    static let perFolder: UInt64 = 1
    static let perClaim: UInt64 = 6
    static let perBatch: UInt64 = 4
    static let perPhoto: UInt64 = 4

    /// The work in flight the budget is made for.
    struct Work: Equatable {
        var claimThreads: Int
        var batchSlots: Int
        var workers: Int

        /// The descriptors the work in flight and the process's own need, folders aside.
        var fixed: UInt64 {
            reserve + UInt64(claimThreads) * perClaim + UInt64(batchSlots) * perBatch + UInt64(workers) * perPhoto
        }

        /// Locks of batches waiting their turn that are always left room for.
        var lockReserve: UInt64 { UInt64(batchSlots) }

        /// The descriptors `folders` watched hot folders need with this work.
        func need(folders: Int) -> UInt64 { fixed + lockReserve + UInt64(folders) * perFolder }

        /// How many hot folders the `limit` has room for.
        func room(limit: UInt64) -> Int {
            limit > fixed + lockReserve ? Int(min(UInt64(Int.max), (limit - fixed - lockReserve) / perFolder)) : 0
        }

        /// How many locks of waiting batches the `limit` has room for beside `folders` folders.
        func lockRoom(limit: UInt64, folders: Int) -> Int {
            let used = fixed + UInt64(folders) * perFolder
            return limit > used ? Int(min(UInt64(Int.max), limit - used)) : 0
        }
    }

    /// Raises the soft limit to the hard one; says so when it changed.
    /// - Returns: the soft limit now in force (`nil` when it cannot be read: no budget then).
    @discardableResult
    static func raise(log: Logger) -> UInt64? {
        do throws(SystemError) {
            let before = try ProcessResources.openFiles()
            let after = try ProcessResources.raiseOpenFiles()
            if after.soft != before.soft {
                log.info("open files: soft limit raised from \(before.soft) to \(after.soft)")
            }
            return after.soft
        } catch {
            log.warning("\(error): the open-file limit stays as it is")
            return try? ProcessResources.openFiles().soft
        }
    }

    /// What the open-file limit allows the hot folders of a setup, and what would fit them
    /// all: the one computation behind every word said of it — the journal's line, each
    /// refused folder's why and fix (`photofinish status`, STATUS.txt, the status file),
    /// `photofinish check` and the metrics (reference: Many hot folders and the open-file limit).
    /// The same numbers for every folder: they are made once per setup, from its count of hot
    /// folders, never from how many were looked at so far.
    ///
    /// inotify's limits are in it too: of the folders the open-file limit lets in, those
    /// beyond `fs.inotify.max_user_watches` (two watches each) are polled, not refused.
    struct Budget: Sendable, Equatable {
        /// The soft limit in force (the daemon raised it to the hard one at start).
        var limit: UInt64
        /// The hot folders of the setup.
        var folders: Int
        var work: Work
        /// inotify's limits for this user (nil: not known, and not said).
        var inotify: Inotify.Limits? = nil
        /// How often a polled drop/ is looked at, in words (`pollInterval`: "2s").
        var pollEvery = ""
        /// Whether the service has its inotify instance (without one every drop/ is polled).
        var hasInstance = true

        /// Watches a watched hot folder holds: its drop/, and its root (for drop/ going away).
        static let watchesPerFolder = 2

        /// The descriptors all of them and the work in flight need.
        var need: UInt64 { work.need(folders: folders) }
        /// How many hot folders can have a place (the first ones in the config).
        var watched: Int { min(folders, work.room(limit: limit)) }
        /// How many are refused for want of a place.
        var refused: Int { folders - watched }
        var fits: Bool { refused == 0 }

        /// The `LimitNOFILE=` that fits them all with a quarter to spare (a few more folders,
        /// more workers on a larger machine), rounded up to a multiple of 1,024.
        var wanted: UInt64 {
            let spare = need + need / 4
            return max(1024, (spare + 1023) / 1024 * 1024)
        }

        /// How many of the folders let in have their inotify watches (the first ones in the
        /// config; fewer when other programs of this user hold watches too).
        var inotifyRoom: Int {
            guard let inotify else { return watched }
            return hasInstance ? min(watched, inotify.watches / Self.watchesPerFolder) : 0
        }
        /// How many folders let in are polled for want of inotify watches (or of an instance).
        var polled: Int { watched - inotifyRoom }

        /// The `fs.inotify.max_user_watches` that fits every hot folder with a quarter to
        /// spare, rounded up to a multiple of 1,024 (at least 8,192, the kernel's old default).
        var watchesWanted: Int {
            let need = folders * Self.watchesPerFolder
            return max(8192, (need + need / 4 + 1023) / 1024 * 1024)
        }

        /// Why folders are polled: the same words for each of them.
        var inotifyWhy: String {
            guard let inotify else { return "" }
            return hasInstance
                ? "fs.inotify.max_user_watches (\(inotify.watches)) leaves room for \(inotifyRoom) of \(folders) hot folders "
                    + "(two inotify watches each, fewer when other programs of this user watch files too)"
                : "no inotify instance could be made (fs.inotify.max_user_instances, \(inotify.instances), are all taken by this user's programs)"
        }

        /// The sysctl that fits them all (kept after a reboot), then a restart: a folder polled
        /// now is not given its watches while the service runs.
        /// - Parameter polledNow: how many are polled now, when more than the budget said (other
        ///   programs of this user hold watches too): then at least twice the limit in force.
        func inotifyFix(systemd: Bool, polledNow: Int? = nil) -> [String] {
            guard let inotify else { return [] }
            let watches = (polledNow ?? 0) > polled ? max(watchesWanted, (inotify.watches * 2 + 1023) / 1024 * 1024) : watchesWanted
            let setting = hasInstance ? "fs.inotify.max_user_watches=\(watches)" : "fs.inotify.max_user_instances=\(inotify.instances * 2)"
            return ["sysctl -w \(setting), and put \(setting) in /etc/sysctl.d/90-photofinish.conf (kept after a reboot)",
                    (systemd ? "systemctl restart photofinish" : "start photofinish again") + " (a folder polled now is watched from its next start)"]
        }

        /// "…: 5904 hot folders are polled every 2s instead" (nil when none is).
        var inotifyShortage: String? {
            polled == 0 ? nil : inotifyWhy + ": \(polled) hot folder\(polled == 1 ? " is" : "s are") polled every \(pollEvery) instead"
        }

        /// Why a folder beyond the limit is refused: the same words for each of them.
        var why: String {
            "the open-file limit (\(limit)) leaves room for \(watched) of \(folders) hot folders "
                + "(one descriptor each, \(work.fixed + work.lockReserve) for the service and \(work.workers) photo\(work.workers == 1 ? "" : "s") in flight)"
        }

        func fix(systemd: Bool) -> [String] { OpenFiles.fix(wanted: wanted, systemd: systemd) }

        /// The refusal of a folder beyond the limit.
        func problem(systemd: Bool) -> FolderProblem {
            FolderProblem(why: why, fix: fix(systemd: systemd))
        }

        /// What the status file records of it (`photofinish status` and `check` say it from there).
        func status(systemd: Bool) -> ServiceStatus.OpenFiles {
            var said = ServiceStatus.OpenFiles(limit: limit, hotFolders: folders, watched: watched, refused: refused, wanted: wanted,
                                               why: why, fix: fix(systemd: systemd))
            if let inotify {
                said.watchesLimit = inotify.watches
                said.polled = polled
                said.watchesWanted = watchesWanted
                said.inotify = inotifyShortage
                said.inotifyFix = polled == 0 ? nil : inotifyFix(systemd: systemd)
            }
            return said
        }

        /// The journal's one line for all the folders refused or polled (`nil` when every one
        /// fits).
        func shortage(systemd: Bool) -> String? {
            var lines: [String] = []
            if !fits { lines.append(status(systemd: systemd).refusedSummary + "; to fix it: " + fix(systemd: systemd).joined(separator: "; then ")) }
            if let polled = inotifyShortage { lines.append(polled + "; to fix it: " + inotifyFix(systemd: systemd).joined(separator: "; then ")) }
            return lines.isEmpty ? nil : lines.joined(separator: ". Also: ")
        }
    }

    /// What raises the limit to `wanted`: a drop-in with `LimitNOFILE=` and a restart under
    /// systemd (a reload cannot raise a running process's limit), else the shell's `ulimit`.
    static func fix(wanted: UInt64, systemd: Bool) -> [String] {
        systemd
            ? ["systemctl edit photofinish, and add: [Service] LimitNOFILE=\(wanted)",
               "systemctl restart photofinish (a reload cannot raise the limit of a running process)"]
            : ["start photofinish again with a limit of \(wanted) open files: ulimit -n \(wanted) first "
               + "(the hard limit is raised by root: prlimit --nofile=\(wanted):\(wanted), or limits.conf)"]
    }

    /// A limit twice `limit`, rounded up to a multiple of 1,024 (at least 4,096): what to ask
    /// for when the descriptors ran out although the budget had room (something held more).
    static func doubled(_ limit: UInt64?) -> UInt64 {
        max(4096, ((limit ?? 0) * 2 + 1023) / 1024 * 1024)
    }

    /// What the open-file `limit` allows the hot folders of `config`, with the work in flight
    /// the service makes for it: what `photofinish check` says (the daemon says the same).
    public static func budget(for config: Config, limit: UInt64, systemd: Bool) -> ServiceStatus.OpenFiles {
        let workers = BatchLimits(config: config).effectiveWorkers
        let work = Work(claimThreads: HotFolderService.claimThreads, batchSlots: workers + 2, workers: workers)
        return Budget(limit: limit, folders: config.inboxes.count, work: work, inotify: Inotify.Limits.current(),
                      pollEvery: words(config.pollInterval)).status(systemd: systemd)
    }
}
