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

    /// One more name for the file at `source`: `target` (`linkat` by path, no folder opened; a
    /// symlink is linked, not followed).
    /// - Throws: `SystemError`: `EEXIST` when the name is taken; `EPERM`, `EOPNOTSUPP`, `EXDEV`
    ///   where the file system has no hard links or the paths are on two.
    public static func hardLink(_ source: some FilePathRepresentable, to target: some FilePathRepresentable) throws(SystemError) {
        let from = source.filePath, to = target.filePath
        let result = Syscall.run { from.withCString { a in to.withCString { b in linkat(AT_FDCWD, a, AT_FDCWD, b, 0) } } }
        if case .failure(let e) = result {
            throw SystemError("link", from.description + " to " + to.description, errno: e.code)
        }
    }

    /// True when `path` is a folder (not following a final symlink).
    public static func isDirectory(_ path: some FilePathRepresentable) -> Bool {
        (try? status(path))?.isDirectory ?? false
    }

    /// Creates a folder (mode 0700 or as given, less the umask); fine when it exists already.
    /// - Returns: true when it was made now, false when it was there.
    @discardableResult
    public static func makeDirectory(_ path: some FilePathRepresentable, permissions: mode_t = 0o700) throws(SystemError) -> Bool {
        let path = path.filePath
        switch Syscall.run({ path.withCString { mkdir($0, permissions) } }) {
        case .success: return true
        case .failure(let e) where e.code == EEXIST: return false
        case .failure(let e): throw SystemError("create folder", path.description, errno: e.code)
        }
    }

    /// Creates `path` and every missing parent, like `mkdir -p`: one `mkdir` when the parent
    /// is there (10,000 hot folders under one parent: no walk of the path for each).
    public static func makeDirectories(_ path: some FilePathRepresentable, permissions: mode_t = 0o755) throws(SystemError) {
        let path = path.filePath
        switch Syscall.run({ path.withCString { mkdir($0, permissions) } }) {
        case .success: return
        case .failure(let e) where e.code == EEXIST: return
        case .failure(let e) where e.code == ENOENT && path.parent != path:
            try makeDirectories(path.parent, permissions: permissions)
            try makeDirectory(path, permissions: permissions)
        case .failure(let e): throw SystemError("create folder", path.description, errno: e.code)
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

    /// How bytes are added at the end of a file (a batch's journal), as the file system allows
    /// (`Mover.probe` finds it).
    public enum Appending: String, Sendable, Equatable {
        /// `O_APPEND` (local disks, sshfs, NFS, CIFS).
        case append
        /// Written at the end the file system gives now, without `O_APPEND`
        /// (`FileDescriptor.writeAtEnd`; one writer at a time): smbnetfs, which ends its server
        /// connection on `O_APPEND`.
        case atEnd = "written at its end"
        /// The whole file written again, atomically, with the new bytes at its end: `rclone
        /// mount` without its file cache, which opens an existing file for writing only to
        /// truncate it (and answers `O_APPEND` with `ESPIPE` a second later).
        case rewrite = "rewritten whole"
    }

    /// Appends `bytes` to the file at `path` (created 0600 if missing) and makes them durable
    /// with `fdatasync` before returning.
    /// - Parameter how: what the file system allows (`Mover.appending`). Where `O_APPEND` turns
    ///   out not to work (`ESPIPE`, `EINVAL`, `ENOTSUP`), the file is written again whole.
    public static func appendDurably(_ bytes: [UInt8], to path: some FilePathRepresentable,
                                     how: Appending = .append) throws(SystemError) {
        let path = path.filePath
        do throws(SystemError) {
            guard how != .rewrite else { throw SystemError("append to", path.description, errno: ESPIPE) }
            let file = try FileDescriptor.open(path, .write, how == .append ? [.append, .create, .noFollow] : [.create, .noFollow],
                                               permissions: 0o600)
            if how == .append { try file.write(bytes) } else { try file.writeAtEnd(bytes) }
            try file.syncData()
        } catch where [ESPIPE, EINVAL, ENOTSUP, EOPNOTSUPP].contains(error.code) {
            try AtomicFile.write((try read(path) ?? []) + bytes, to: path)
        }
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

    /// The mount `path` is on, as /proc/self/mountinfo says: its type (`"fuse.sshfs"`,
    /// `"fuse.rclone"`, `"nfs4"`, `"cifs"`, `"ext4"`) and its source
    /// (`"root@host:/srv/photos"`); `nil` when it cannot be told.
    public static func mount(of path: some FilePathRepresentable) -> (type: String, source: String)? {
        let path = path.filePath
        guard let real = path.withCString({ realpath($0, nil) }) else { return nil }
        defer { free(real) }
        let target = String(cString: real)
        guard let table = try? read("/proc/self/mountinfo") else { return nil }
        var best: (point: String, type: String, source: String)?
        for line in String(decoding: table, as: UTF8.self).split(separator: "\n") {
            // id parent major:minor root point options [optional...] - type source super-options
            let fields = line.split(separator: " ")
            guard fields.count > 6, let dash = fields.firstIndex(of: "-"), dash + 2 < fields.count else { continue }
            let point = unescape(fields[4])
            let inside = point == "/" || target == point || target.hasPrefix(point + "/")
            if inside, point.count >= (best?.point.count ?? -1) {
                best = (point, unescape(fields[dash + 1]), unescape(fields[dash + 2]))
            }
        }
        return best.map { ($0.type, $0.source) }
    }

    /// mountinfo's octal escapes (`\040` for a space).
    private static func unescape(_ field: Substring) -> String {
        var out: [UInt8] = []
        let bytes = Array(field.utf8)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "\\"), i + 3 < bytes.count,
               let n = UInt8(String(decoding: bytes[(i + 1)...(i + 3)], as: UTF8.self), radix: 8) {
                out.append(n)
                i += 4
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
