import HotFolders
import System

/// The open-file limit (`RLIMIT_NOFILE`). The default soft limit, 1,024, runs out at about a
/// thousand hot folders ("Too many open files" on claims and finishes), so the daemon raises
/// it to the hard limit at start (the unit sets both high: `LimitNOFILE=`) and warns when the
/// hot folders may need more than it allows.
enum OpenFiles {
    /// Descriptors one hot folder can hold at once: its open `drop/`, and while a batch is
    /// claimed or finished its lock, its folders (`drop/`, `src/`, `originals/<id>/`) and
    /// journal. Queued batches hold one more each (their lock).
    static let perFolder: UInt64 = 6
    /// Per photo in flight: the source, an output being written and its folder.
    static let perPhoto: UInt64 = 4
    /// The process's own: standard streams, inotify, the journal and notify sockets,
    /// fontconfig, libraries.
    static let reserve: UInt64 = 64

    /// Raises the soft limit to the hard one; says so when it changed.
    static func raise(log: Logger) {
        do throws(SystemError) {
            let before = try ProcessResources.openFiles()
            let after = try ProcessResources.raiseOpenFiles()
            if after.soft != before.soft {
                log.info("open files: soft limit raised from \(before.soft) to \(after.soft)")
            }
        } catch {
            log.warning("\(error): the open-file limit stays as it is")
        }
    }

    /// The descriptors `folders` hot folders and `workers` photos in flight may need at once.
    static func need(folders: Int, workers: Int) -> UInt64 {
        reserve + UInt64(folders) * perFolder + UInt64(workers) * perPhoto
    }

    /// Warns when the hot folders may need more descriptors than the soft limit allows.
    static func check(folders: Int, workers: Int, log: Logger) {
        guard let limit = try? ProcessResources.openFiles() else { return }
        let need = need(folders: folders, workers: workers)
        if need > limit.soft {
            log.warning("\(folders) hot folders and \(workers) photos in flight may need \(need) open files, over the limit of \(limit.soft): "
                        + "raise LimitNOFILE= in the unit (or ulimit -n), or claims will fail with \"Too many open files\"")
        }
    }
}
