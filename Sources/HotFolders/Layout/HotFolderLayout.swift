import Foundation
import Glibc
import System

/// The folders of one hot folder (README: What a batch folder holds):
/// `drop/`, `out/<batch-id>/`, `originals/<batch-id>/`, `failed/<batch-id>/`, `.work/` (0700).
public struct HotFolderLayout: Sendable, Equatable {
    public var root: String

    public init(root: String) {
        self.root = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
    }

    public var drop: String { root + "/drop" }
    public var out: String { root + "/out" }
    public var originals: String { root + "/originals" }
    public var failed: String { root + "/failed" }
    public var work: String { root + "/.work" }

    /// `.work/<batch-id>`: a claimed batch (lock, manifest, journal, `src/`, `out/`).
    public func workFolder(_ batch: String) -> String { work + "/" + batch }

    /// Creates every folder that is missing (`.work/` with mode 0700, `drop/` 2775, the others
    /// 0755), so `init` can be run again safely: a `drop/` that exists keeps its mode.
    ///
    /// `drop/` is group-writable with the setgid bit: the members of the folder's group (the
    /// service's group once the folder is its own) may drop files, and what they drop keeps
    /// that group.
    /// - Throws: `SystemError` naming the folder that could not be made.
    public func create() throws(SystemError) {
        try createWatched()
        try createFiling()
    }

    /// The folders watching needs: the root (and any missing parents, like `mkdir -p`) and
    /// `drop/`, and `.work/` — made here with `work`, else (the service before it is ready)
    /// only set to 0700 when it is there: a new hot folder's `.work/` is made once the service
    /// is ready (`createWork`, and by the first claim if that comes first). At 10,000 new
    /// hot folders each folder made is a new inode, the start-up's biggest cost.
    public func createWatched(work makeWork: Bool = true) throws(SystemError) {
        try Files.makeDirectories(root, permissions: 0o755)
        if try Files.makeDirectory(drop, permissions: 0o775) {
            try Files.setPermissions(drop, Self.dropPermissions)
        }
        if makeWork {
            try createWork()
        } else {
            do {
                try privateWork()
            } catch where error.code == ENOENT {}  // made once the service is ready
        }
    }

    /// `.work/` (0700), made if missing.
    public func createWork() throws(SystemError) {
        try Files.makeDirectory(work, permissions: 0o700)
        try privateWork()
    }

    /// Sets `.work/` to 0700 (a `.work/` someone else made, root with `init`, is refused here:
    /// EPERM).
    private func privateWork() throws(SystemError) {
        do {
            try Files.setPermissions(work, 0o700)
        } catch where [EPERM, EACCES, ENOTSUP, EOPNOTSUPP, ENOSYS].contains(error.code)
            && ((try? Files.fileSystem(work))?.isShared ?? false) {
            // An SMB share through smbnetfs has no Unix modes to set: the server's own rights apply.
        }
    }

    /// `out/`, `originals/` and `failed/` (0755), where finished batches go; a batch makes
    /// the one it needs itself when it is missing.
    public func createFiling() throws(SystemError) {
        for path in [out, originals, failed] { try Files.makeDirectory(path, permissions: 0o755) }
    }

    /// `drop/`'s mode when it is made: rwxrwsr-x.
    public static let dropPermissions: mode_t = 0o2775

    /// True when `root` holds a `drop/` folder.
    public var exists: Bool {
        Files.isDirectory(drop)
    }
}
