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

    /// Takes the lock of the batch folder at `path`.
    public static func tryAcquire(_ path: String) -> BatchLock? {
        guard let folder = try? Directory(path) else { return nil }
        return tryAcquire(folder)
    }
}
