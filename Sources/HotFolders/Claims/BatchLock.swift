import Glibc
import System

/// `.work/<batch-id>/lock`, held with `flock` for as long as a process owns the batch. The
/// kernel drops the lock when its owner dies (even by SIGKILL), so recovery takes a batch
/// only when no live process holds it: two daemons on one root never work on one batch.
public final class BatchLock: Sendable {
    let file: FileDescriptor

    private init(file: FileDescriptor) {
        self.file = file
    }

    public static let fileName = FileName("lock")

    /// Takes the lock of the batch folder `folder` without waiting.
    /// - Returns: `nil` when another process holds it, or when the folder was removed
    ///   (its owner finished) while we were getting it.
    public static func tryAcquire(_ folder: Directory) -> BatchLock? {
        guard let file = try? folder.open(fileName, .readWrite, [.create, .noFollow], permissions: 0o600),
              (try? file.tryLock()) == true,
              let st = try? file.status(), st.links > 0 else { return nil }
        return BatchLock(file: file)
    }

    /// Lets the lock go now (it is also let go when the value is dropped).
    public func release() {
        file.close()
    }

    /// Removes the batch folder `path`, whose lock `lock` is (everything in it, the lock last).
    /// On a share a file that is still open cannot really go (NFS renames it `.nfsXXXX`, FUSE
    /// `.fuse_hiddenXXXX`, and the folder is then not empty): so everything else is removed
    /// first, then the lock is let go, then its file and the folder. Should another daemon open
    /// the lock in that instant, the folder stays, empty but for the lock, and its recovery
    /// removes it.
    public static func removeFolder(_ path: some FilePathRepresentable, lock: BatchLock?) throws(SystemError) {
        let fs = path.filePath
        let folder: Directory
        do {
            folder = try Directory(fs)
        } catch where error.code == ENOENT {
            return
        }
        for name in try folder.names() where name != fileName { try folder.removeTree(name) }
        lock?.release()
        try folder.remove(fileName)
        guard let name = fs.lastComponent else { return }
        do {
            try Directory(fs.parent).removeTree(name)
        } catch where error.code == ENOTEMPTY || error.code == EBUSY {
            return
        }
    }

    /// Takes the lock of the batch folder at `path`.
    public static func tryAcquire(_ path: String) -> BatchLock? {
        guard let folder = try? Directory(path) else { return nil }
        return tryAcquire(folder)
    }
}
