internal import CShims
import Glibc

/// Calls on whole paths, for folders named in the config and files the daemon owns. Names
/// inside hot folders are reached through a `Directory` instead.
public enum Files {
    /// `lstat` of `path` (a final symlink is not followed); `nil` when nothing is there.
    public static func status(_ path: some FilePathRepresentable) throws(SystemError) -> FileStatus? {
        let path = path.filePath
        var st = stat()
        switch Syscall.run({ path.withCString { lstat($0, &st) } }) {
        case .success: return FileStatus(st)
        case .failure(let e) where e.code == ENOENT || e.code == ENOTDIR: return nil
        case .failure(let e): throw SystemError("stat", path.description, errno: e.code)
        }
    }

    /// True when `path` names anything (not following a final symlink).
    public static func exists(_ path: some FilePathRepresentable) -> Bool {
        (try? status(path)) != nil
    }

    /// True when `path` is a folder (not following a final symlink).
    public static func isDirectory(_ path: some FilePathRepresentable) -> Bool {
        (try? status(path))?.isDirectory ?? false
    }

    /// Creates a folder (mode 0700 or as given, less the umask); fine when it exists already.
    public static func makeDirectory(_ path: some FilePathRepresentable, permissions: mode_t = 0o700) throws(SystemError) {
        let path = path.filePath
        switch Syscall.run({ path.withCString { mkdir($0, permissions) } }) {
        case .success: return
        case .failure(let e) where e.code == EEXIST: return
        case .failure(let e): throw SystemError("create folder", path.description, errno: e.code)
        }
    }

    /// Creates `path` and every missing parent, like `mkdir -p`.
    public static func makeDirectories(_ path: some FilePathRepresentable, permissions: mode_t = 0o755) throws(SystemError) {
        let path = path.filePath
        var prefix: [UInt8] = []
        for part in path.bytes.split(separator: UInt8(ascii: "/")) {
            prefix += (prefix.isEmpty && path.bytes.first != UInt8(ascii: "/") ? [] : [UInt8(ascii: "/")]) + part
            let folder = FilePath(bytes: prefix)
            if !exists(folder) { try makeDirectory(folder, permissions: permissions) }
        }
    }

    /// Sets a file's permission bits.
    public static func setPermissions(_ path: some FilePathRepresentable, _ permissions: mode_t) throws(SystemError) {
        let path = path.filePath
        _ = try Syscall.check("change the permissions of", path.description) { path.withCString { chmod($0, permissions) } }
    }

    /// Removes a file; fine when it is gone already.
    public static func remove(_ path: some FilePathRepresentable) throws(SystemError) {
        let path = path.filePath
        switch Syscall.run({ path.withCString { unlink($0) } }) {
        case .success: return
        case .failure(let e) where e.code == ENOENT: return
        case .failure(let e): throw SystemError("remove", path.description, errno: e.code)
        }
    }

    /// Removes `path` and everything in it; fine when it is gone already.
    public static func removeTree(_ path: some FilePathRepresentable) throws(SystemError) {
        let path = path.filePath
        guard let name = path.lastComponent else { return }
        let parent: Directory
        do {
            parent = try Directory(path.parent)
        } catch where error.code == ENOENT {
            return
        }
        try parent.removeTree(name)
    }

    /// The whole file at `path` (no symlink followed), or `nil` when it does not exist.
    public static func read(_ path: some FilePathRepresentable) throws(SystemError) -> [UInt8]? {
        let path = path.filePath
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, .read, [.noFollow])
        } catch where error.code == ENOENT {
            return nil
        }
        return try file.readAll()
    }

    /// Appends `bytes` to the file at `path` (created 0600 if missing) and makes them durable
    /// with `fdatasync` before returning.
    public static func appendDurably(_ bytes: [UInt8], to path: some FilePathRepresentable) throws(SystemError) {
        let path = path.filePath
        let file = try FileDescriptor.open(path, .write, [.append, .create, .noFollow], permissions: 0o600)
        try file.write(bytes)
        try file.syncData()
    }

    /// `fsync` of the folder at `path`, so names made, renamed or removed in it survive a
    /// crash. Quiet when it vanished (nothing left to sync).
    public static func syncDirectory(_ path: some FilePathRepresentable) throws(SystemError) {
        let path = path.filePath
        do {
            try Directory(path).sync()
        } catch where error.code == ENOENT {
            return
        }
    }

    /// The file system `path` lives on.
    public static func fileSystem(_ path: some FilePathRepresentable) throws(SystemError) -> FileSystemType {
        let path = path.filePath
        var type: UInt32 = 0
        _ = try Syscall.check("statfs", path.description) { path.withCString { pf_statfs_type($0, &type) } }
        return FileSystemType(magic: type)
    }
}
