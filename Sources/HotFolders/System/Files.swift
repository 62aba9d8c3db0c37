internal import CShims
import Finishing
import Foundation

/// A failed system call on a file: what was done, to which path, and the system's reason.
public struct SystemError: Error, Sendable, CustomStringConvertible {
    public var action: String
    public var path: String
    public var code: Int32

    public init(_ action: String, _ path: String, errno code: Int32 = errno) {
        self.action = action
        self.path = path
        self.code = code
    }

    public var description: String { "cannot \(action) \(path): \(String(cString: strerror(code)))" }
}

/// The file-system calls the hot folder needs, each retried on `EINTR` here and nowhere else,
/// with errors turned into `SystemError` values once.
public enum Files {
    /// Runs `call` until it does not fail with `EINTR`.
    @discardableResult
    static func retrying(_ call: () -> Int32) -> Int32 {
        while true {
            let r = call()
            if r == -1 && errno == EINTR { continue }
            return r
        }
    }

    /// An open directory descriptor, closed when dropped.
    public final class Directory: Sendable {
        public let fd: Int32
        public let path: String

        /// Opens `path` as a directory (following no symlink at its last component).
        /// - Throws: `SystemError` when it is missing or not a directory.
        public init(_ path: String) throws(SystemError) {
            let fd = Files.retrying { open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
            guard fd >= 0 else { throw SystemError("open folder", path) }
            self.fd = fd
            self.path = path
        }

        deinit { close(fd) }

        /// The names in the folder (not `.` or `..`).
        public func names() throws(SystemError) -> [String] {
            let dup = Files.retrying { fcntl(fd, F_DUPFD_CLOEXEC, 0) }
            guard dup >= 0, let dir = fdopendir(dup) else {
                if dup >= 0 { close(dup) }
                throw SystemError("list", path)
            }
            defer { closedir(dir) }
            rewinddir(dir)
            var out: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                if name != "." && name != ".." { out.append(name) }
            }
            return out
        }

        /// `fstat` of `name` in this folder without following a symlink and without opening
        /// it for reading: an `O_PATH | O_NOFOLLOW` descriptor, so a FIFO never blocks and a
        /// symlink is seen as one. `nil` when the name is gone.
        public func stat(_ name: String) throws(SystemError) -> Status? {
            let fd = Files.retrying { openat(self.fd, name, pf_o_path | O_NOFOLLOW | O_CLOEXEC) }
            guard fd >= 0 else {
                if errno == ENOENT { return nil }
                throw SystemError("open", path + "/" + name)
            }
            defer { close(fd) }
            var st = Glibc.stat()
            guard fstat(fd, &st) == 0 else { throw SystemError("stat", path + "/" + name) }
            return Status(st)
        }

        /// True when this open folder still exists and is the one at `path` (not deleted,
        /// not moved away and replaced).
        public func isStill(at path: String) -> Bool {
            var mine = Glibc.stat(), there = Glibc.stat()
            guard fstat(fd, &mine) == 0, mine.st_nlink > 0, lstat(path, &there) == 0 else { return false }
            return mine.st_dev == there.st_dev && mine.st_ino == there.st_ino
        }

        /// fsyncs the folder, so names created, renamed or removed in it survive a crash.
        public func sync() {
            _ = Files.retrying { fsync(fd) }
        }
    }

    /// What `fstat` says about a file.
    public struct Status: Sendable, Equatable {
        public var isRegular: Bool
        public var isDirectory: Bool
        public var links: Int
        public var stamp: FileStamp

        init(_ st: stat) {
            isRegular = (st.st_mode & S_IFMT) == S_IFREG
            isDirectory = (st.st_mode & S_IFMT) == S_IFDIR
            links = Int(st.st_nlink)
            stamp = FileStamp(size: Int64(st.st_size),
                              mtimeNanoseconds: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec),
                              device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
        }

        /// Seconds since the epoch of the last modification.
        public var modified: Double { Double(stamp.mtimeNanoseconds) / 1e9 }
    }

    /// Renames `name` in `from` to `newName` in `to`, never replacing an existing file.
    /// - Returns: false when the source is gone (`ENOENT`: someone else took it).
    /// - Throws: `SystemError`, `EEXIST` when the target name is taken.
    @discardableResult
    public static func move(_ name: String, from: Directory, to: Directory, as newName: String? = nil) throws(SystemError) -> Bool {
        let r = retrying { pf_rename_noreplace(from.fd, name, to.fd, newName ?? name) }
        if r == 0 { return true }
        if errno == ENOENT { return false }
        throw SystemError("move", from.path + "/" + name + " to " + to.path + "/" + (newName ?? name))
    }

    /// Renames a path onto another, never replacing (used for whole folders).
    public static func rename(_ from: String, _ to: String) throws(SystemError) {
        guard retrying({ pf_rename_noreplace(AT_FDCWD, from, AT_FDCWD, to) }) == 0 else {
            throw SystemError("rename", from + " to " + to)
        }
    }

    /// Creates a folder (mode 0700 or as given); fine when it exists already.
    public static func makeDirectory(_ path: String, mode: mode_t = 0o700) throws(SystemError) {
        if retrying({ mkdir(path, mode) }) != 0 && errno != EEXIST {
            throw SystemError("create folder", path)
        }
    }

    /// fsyncs the folder at `path` (quietly: a folder that vanished has nothing to sync).
    public static func syncDirectory(_ path: String) {
        guard let dir = try? Directory(path) else { return }
        dir.sync()
    }

    /// Removes a file; fine when it is gone already.
    public static func remove(_ path: String) throws(SystemError) {
        if retrying({ unlink(path) }) != 0 && errno != ENOENT { throw SystemError("remove", path) }
    }

    /// Removes a folder and everything in it; fine when it is gone already.
    public static func removeTree(_ path: String) throws(SystemError) {
        guard let dir = try? Directory(path) else {
            try remove(path)
            return
        }
        for name in try dir.names() {
            let child = path + "/" + name
            if let st = try dir.stat(name), st.isDirectory {
                try removeTree(child)
            } else {
                try remove(child)
            }
        }
        if retrying({ rmdir(path) }) != 0 && errno != ENOENT { throw SystemError("remove folder", path) }
    }

    /// True when `path` names anything (not following a final symlink).
    public static func exists(_ path: String) -> Bool {
        var st = Glibc.stat()
        return lstat(path, &st) == 0
    }

    /// True when `path` is a folder (not following a final symlink).
    public static func isDirectory(_ path: String) -> Bool {
        var st = Glibc.stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// Appends `bytes` to the file at `path` (created 0600 if missing) and makes them durable
    /// with `fdatasync` before returning.
    public static func appendDurably(_ bytes: [UInt8], to path: String) throws(SystemError) {
        let fd = retrying { open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw SystemError("open", path) }
        defer { close(fd) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { raw in Glibc.write(fd, raw.baseAddress! + written, raw.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError("write", path)
            }
            written += n
        }
        guard retrying({ fdatasync(fd) }) == 0 else { throw SystemError("sync", path) }
    }

    /// The size and SHA-256 of a file, read in pieces (a photo of any size, little memory).
    /// - Throws: `SystemError` when it cannot be read.
    public static func sha256(_ path: String) throws(SystemError) -> (bytes: Int, hex: String) {
        var hash = SHA256()
        var total = 0
        guard try readChunks(path, { chunk in hash.update(chunk); total += chunk.count }) else {
            throw SystemError("open", path, errno: ENOENT)
        }
        return (total, hash.finalize())
    }

    /// The whole file, or `nil` when it does not exist.
    public static func read(_ path: String) throws(SystemError) -> [UInt8]? {
        var out: [UInt8] = []
        guard try readChunks(path, { out += $0 }) else { return nil }
        return out
    }

    /// Reads the file at `path` (no symlink followed) in pieces of up to 1 MiB.
    /// - Returns: false when it does not exist.
    private static func readChunks(_ path: String, _ body: (UnsafeRawBufferPointer) -> Void) throws(SystemError) -> Bool {
        let fd = retrying { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        guard fd >= 0 else {
            if errno == ENOENT { return false }
            throw SystemError("open", path)
        }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError("read", path)
            }
            if n == 0 { return true }
            buffer.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
    }
}
