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
enum OpenFiles {
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

    /// The sentence for the log when `folders` hot folders need more than `limit`.
    static func shortage(folders: Int, work: Work, limit: UInt64) -> String {
        let need = work.need(folders: folders), room = work.room(limit: limit)
        return "\(folders) hot folders and \(work.workers) photos in flight may need \(need) open files, over the limit of \(limit): "
            + "\(room) of them are watched, the other \(folders - room) are refused until the limit is raised (\(fix(need: need)))"
    }

    /// What raises the limit, in words: under systemd a drop-in, else `ulimit -n`.
    static func fix(need: UInt64) -> String {
        let wanted = max(need + need / 4, 1024)
        return FolderProblem.underSystemd
            ? "systemctl edit photofinish: [Service] LimitNOFILE=\(wanted), then systemctl restart photofinish"
            : "ulimit -n \(wanted) (or more) before starting photofinish; the hard limit is raised by root (limits.conf)"
    }
}
