import Foundation

/// `.work/<batch-id>/lock`, held with `flock` for as long as a process owns the batch. The
/// kernel drops the lock when its owner dies (even by SIGKILL), so recovery takes a batch
/// only when no live process holds it: two daemons on one root never work on one batch.
public final class BatchLock: Sendable {
    let fd: Int32

    private init(fd: Int32) {
        self.fd = fd
    }

    deinit { close(fd) }

    public static let fileName = "lock"

    /// Takes the lock of the batch folder `folder` without waiting.
    /// - Returns: `nil` when another process holds it, or when the folder was removed
    ///   (its owner finished) while we were getting it.
    public static func tryAcquire(_ folder: String) -> BatchLock? {
        let fd = Files.retrying { open(folder + "/" + fileName, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        guard fd >= 0 else { return nil }
        guard Files.retrying({ flock(fd, LOCK_EX | LOCK_NB) }) == 0 else {
            close(fd)
            return nil
        }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_nlink > 0 else {
            close(fd)
            return nil
        }
        return BatchLock(fd: fd)
    }
}
