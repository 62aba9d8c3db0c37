internal import CShims
import Glibc

/// An open folder. Names inside it are reached through its descriptor (`openat`,
/// `renameat`, `unlinkat`…): a name is looked up in this folder even if its path was
/// renamed meanwhile, and is never followed through a symlink it does not expect.
public final class Directory: Sendable {
    let descriptor: FileDescriptor
    /// The path it was opened at.
    public var path: FilePath { descriptor.path }

    /// Opens `path` as a folder (a symlink at its last component is refused).
    /// - Throws: `SystemError` when it is missing or not a folder.
    public init(_ path: some FilePathRepresentable) throws(SystemError) {
        let path = path.filePath
        descriptor = try FileDescriptor.open(path, .read, [.directory, .noFollow])
    }

    private init(descriptor: FileDescriptor) {
        self.descriptor = descriptor
    }

    var fd: Int32 { descriptor.raw }

    /// The names in the folder (not `.` or `..`), in no particular order.
    ///
    /// Every call lists the folder from a fresh open of it (`openat(fd, ".")`: a new open file,
    /// so the file system starts a new listing), never by rewinding a stream or a `dup` of the
    /// held descriptor: sshfs answers a second listing of an open folder from its one SFTP
    /// handle, which is at its end after the first, and smbnetfs does the same — both list
    /// nothing from then on (TRAPS.md).
    public func names() throws(SystemError) -> [FileName] {
        let fresh = try Syscall.check("list", path.description) {
            openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        guard let dir = fdopendir(fresh) else {
            let e = errno
            Glibc.close(fresh)
            throw SystemError("list", path.description, errno: e)
        }
        defer { closedir(dir) }
        var out: [FileName] = []
        while true {
            errno = 0
            guard let entry = readdir(dir) else {
                if errno != 0 { throw SystemError("list", path.description, errno: errno) }
                return out
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                FileName(bytes: raw.prefix { $0 != 0 })
            }
            if let name { out.append(name) }
        }
    }

    /// `fstatat` of `name` without following a symlink and without opening it (a FIFO never
    /// blocks, a symlink is seen as one): one call, where an `O_PATH` open, `fstat` and close
    /// were three (a claim looks at each file two or three times).
    /// - Returns: `nil` when the name is gone.
    public func status(of name: FileName) throws(SystemError) -> FileStatus? {
        var st = stat()
        switch Syscall.run({ name.withCString { fstatat(fd, $0, &st, AT_SYMLINK_NOFOLLOW) } }) {
        case .success: return FileStatus(st)
        case .failure(let e) where e.code == ENOENT: return nil
        case .failure(let e): throw SystemError("stat", path.appending(name).description, errno: e.code)
        }
    }

    /// What the file system itself says `name` is now, without opening it for reading: an
    /// `O_PATH | O_NOFOLLOW` descriptor asked with `FileDescriptor.freshStatus()` (`statx` with
    /// `AT_STATX_FORCE_SYNC`: a FUSE client is asked, past the kernel's attribute cache). For a
    /// client whose open for reading does harm (`rclone mount` holds an open of a file still
    /// being written through it for 5 s, then answers `ENOENT`) and adds nothing.
    /// - Returns: `nil` when the name is gone.
    public func syncedStatus(of name: FileName) throws(SystemError) -> FileStatus? {
        do {
            return try open(name, .pathOnly, [.noFollow]).freshStatus()
        } catch where error.code == ENOENT {
            return nil
        }
    }

    /// What the server says `name` is now, past the share client's caches: the file opened
    /// afresh for reading (sshfs, NFS and SMB clients fetch its attributes at an open) and asked
    /// with `FileDescriptor.freshStatus()`. Only for regular files (`O_NONBLOCK`: a FIFO put in
    /// its place never blocks); one that cannot be opened for reading is looked at by its name.
    /// - Returns: `nil` when the name is gone.
    public func freshStatus(of name: FileName) throws(SystemError) -> FileStatus? {
        do {
            return try open(name, .read, [.noFollow, .nonBlocking]).freshStatus()
        } catch where error.code == ENOENT {
            return nil
        } catch where [EACCES, EPERM, ELOOP, ENXIO, EWOULDBLOCK].contains(error.code) {
            return try status(of: name)
        }
    }

    /// Opens `name` in this folder.
    public func open(_ name: FileName, _ access: FileDescriptor.Access, _ options: FileDescriptor.Options = [],
                     permissions: mode_t = 0o644) throws(SystemError) -> FileDescriptor {
        let full = path.appending(name)
        let raw = try Syscall.check("open", full.description) {
            name.withCString { openat(fd, $0, access.flags | options.rawValue | O_CLOEXEC, permissions) }
        }
        return FileDescriptor(owning: raw, path: full)
    }

    /// Opens the folder `name` in this folder (a symlink is refused).
    public func folder(_ name: FileName) throws(SystemError) -> Directory {
        Directory(descriptor: try open(name, .read, [.directory, .noFollow]))
    }

    /// Creates the folder `name` (mode `permissions`, less the umask).
    /// - Returns: false when it existed already.
    @discardableResult
    public func makeFolder(_ name: FileName, permissions: mode_t = 0o700) throws(SystemError) -> Bool {
        switch Syscall.run({ name.withCString { mkdirat(fd, $0, permissions) } }) {
        case .success: return true
        case .failure(let e) where e.code == EEXIST: return false
        case .failure(let e): throw SystemError("create folder", path.appending(name).description, errno: e.code)
        }
    }

    /// Removes the file `name`; fine when it is gone already.
    public func remove(_ name: FileName) throws(SystemError) {
        switch Syscall.run({ name.withCString { unlinkat(fd, $0, 0) } }) {
        case .success: return
        case .failure(let e) where e.code == ENOENT: return
        case .failure(let e): throw SystemError("remove", path.appending(name).description, errno: e.code)
        }
    }

    /// Removes `name` and, if it is a folder, everything in it; fine when it is gone already.
    public func removeTree(_ name: FileName) throws(SystemError) {
        guard let st = try status(of: name) else { return }
        if st.isDirectory {
            let sub = try folder(name)
            for child in try sub.names() { try sub.removeTree(child) }
            switch Syscall.run({ name.withCString { unlinkat(fd, $0, AT_REMOVEDIR) } }) {
            case .success: return
            case .failure(let e) where e.code == ENOENT: return
            case .failure(let e): throw SystemError("remove folder", path.appending(name).description, errno: e.code)
            }
        } else {
            try remove(name)
        }
    }

    /// `fsync` of the folder: names created, renamed or removed in it survive a crash. A file
    /// system that cannot sync a folder (`EINVAL`, some FUSE and network ones) has nothing to
    /// sync there: that is not an error.
    public func sync() throws(SystemError) {
        do {
            try descriptor.sync()
        } catch where [EINVAL, ENOTSUP, EOPNOTSUPP, ENOSYS].contains(error.code) {
            return
        }
    }

    /// True when this open folder still exists and is the one at `path` (not deleted, not
    /// moved away and replaced).
    public func isStill(at path: FilePath) -> Bool {
        guard let mine = try? descriptor.status(), mine.links > 0, let there = try? Files.status(path) else { return false }
        return mine.isSameFile(as: there)
    }

    /// The file system the folder lives on.
    public func fileSystem() throws(SystemError) -> FileSystemType {
        try descriptor.fileSystem()
    }

    /// `fstat` of the folder itself.
    public func status() throws(SystemError) -> FileStatus {
        try descriptor.status()
    }

    // MARK: - The renames and links behind `Mover`

    enum RenameFlags { case none, noReplace }

    /// `renameat` / `renameat2(RENAME_NOREPLACE)` of `name` to `target`/`newName`.
    func rename(_ name: FileName, to target: Directory, as newName: FileName, _ flags: RenameFlags) -> Result<Void, Errno> {
        Syscall.run {
            name.withCString { from in
                newName.withCString { to in
                    switch flags {
                    case .none: renameat(fd, from, target.fd, to)
                    case .noReplace: pf_rename_noreplace(fd, from, target.fd, to)
                    }
                }
            }
        }.map { _ in () }
    }

    /// One more name for the file `name`: `target`/`newName` (`linkat`; a symlink is linked,
    /// not followed).
    /// - Throws: `SystemError`: `EEXIST` when the name is taken; `EPERM`, `EOPNOTSUPP`, `EXDEV`
    ///   where the file system has no hard links or the folders are on two.
    public func hardLink(_ name: FileName, to target: Directory, as newName: FileName) throws(SystemError) {
        if case .failure(let e) = link(name, to: target, as: newName) {
            throw SystemError("link", path.appending(name).description + " to " + target.path.appending(newName).description,
                              errno: e.code)
        }
    }

    /// `linkat` of `name` to `target`/`newName` (a symlink is linked, not followed).
    func link(_ name: FileName, to target: Directory, as newName: FileName) -> Result<Void, Errno> {
        Syscall.run {
            name.withCString { from in newName.withCString { to in linkat(fd, from, target.fd, to, 0) } }
        }.map { _ in () }
    }
}
