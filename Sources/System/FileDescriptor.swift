internal import CShims
import Glibc
import Synchronization

/// An open file descriptor and its one owner: closed when the value is dropped, never twice,
/// never by anyone else. Every read, write, sync and `fstat` on it goes through `Syscall`
/// (one `EINTR` retry, one `SystemError`).
public final class FileDescriptor: Sendable {
    private let number: Atomic<Int32>
    /// The path it was opened at, for error messages.
    public let path: FilePath

    /// Takes ownership of `raw`.
    init(owning raw: Int32, path: FilePath) {
        number = Atomic(raw)
        self.path = path
    }

    /// The kernel's number (for the few calls made elsewhere in this module); -1 once closed.
    var raw: Int32 { number.load(ordering: .acquiring) }

    /// Closes the descriptor now rather than when the value is dropped (a lock let go before
    /// its folder is removed). Safe to call twice; calls on a closed descriptor fail with `EBADF`.
    public func close() {
        let raw = number.exchange(-1, ordering: .acquiringAndReleasing)
        // Not retried on EINTR: on Linux the descriptor is gone even when close reports it.
        if raw >= 0 { Glibc.close(raw) }
    }

    /// `close`, saying what it reported: a FUSE client answers its flush there, and `rclone
    /// mount` without its file cache uploads a small file only then (a full disk on the server
    /// is `EIO` from `close`, after `write` and `fsync` said yes). The descriptor is gone either way.
    public func closeReporting() throws(SystemError) {
        let raw = number.exchange(-1, ordering: .acquiringAndReleasing)
        guard raw >= 0 else { return }
        if Glibc.close(raw) != 0, errno != EINTR { throw SystemError("close", path.description, errno: errno) }
    }

    deinit { close() }

    /// How a file is opened.
    public enum Access: Sendable {
        /// `O_RDONLY`.
        case read
        /// `O_WRONLY`.
        case write
        /// `O_RDWR`.
        case readWrite
        /// `O_PATH`: names the file without opening it for I/O (no FIFO ever blocks, no
        /// access time changes); `fstat` works on it.
        case pathOnly

        var flags: Int32 {
            switch self {
            case .read: O_RDONLY
            case .write: O_WRONLY
            case .readWrite: O_RDWR
            case .pathOnly: pf_o_path
            }
        }
    }

    /// Flags of `open(2)` besides the access mode; `O_CLOEXEC` is always set.
    public struct Options: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// Create the file if missing. The corresponding C constant is `O_CREAT`.
        public static let create = Options(rawValue: O_CREAT)
        /// With `create`: fail with `EEXIST` if it exists. The corresponding C constant is `O_EXCL`.
        public static let exclusive = Options(rawValue: O_EXCL)
        /// Every write goes to the end. The corresponding C constant is `O_APPEND`.
        public static let append = Options(rawValue: O_APPEND)
        /// Empty the file. The corresponding C constant is `O_TRUNC`.
        public static let truncate = Options(rawValue: O_TRUNC)
        /// Fail (`ELOOP`) when the last component is a symlink. The corresponding C constant is `O_NOFOLLOW`.
        public static let noFollow = Options(rawValue: O_NOFOLLOW)
        /// Fail unless it is a folder. The corresponding C constant is `O_DIRECTORY`.
        public static let directory = Options(rawValue: O_DIRECTORY)
        /// Never wait to open (a FIFO), nor become the controlling terminal. The corresponding C
        /// constants are `O_NONBLOCK` and `O_NOCTTY`.
        public static let nonBlocking = Options(rawValue: O_NONBLOCK | O_NOCTTY)
    }

    /// Opens `path`.
    /// - Throws: `SystemError` (`ENOENT`, `EACCES`, `ELOOP` with `noFollow`…).
    public static func open(_ path: some FilePathRepresentable, _ access: Access, _ options: Options = [],
                            permissions: mode_t = 0o644) throws(SystemError) -> FileDescriptor {
                                let path = path.filePath
        let fd = try Syscall.check("open", path.description) {
            path.withCString { Glibc.open($0, access.flags | options.rawValue | O_CLOEXEC, permissions) }
        }
        return FileDescriptor(owning: fd, path: path)
    }

    /// A pipe: both ends closed on exec, set atomically (a program spawned by another thread
    /// at the same moment never inherits them).
    public static func pipe() throws(SystemError) -> (read: FileDescriptor, write: FileDescriptor) {
        var fds: [Int32] = [-1, -1]
        _ = try Syscall.check("make", "a pipe") { pf_pipe_cloexec(&fds) }
        return (FileDescriptor(owning: fds[0], path: FilePath("a pipe's read end")),
                FileDescriptor(owning: fds[1], path: FilePath("a pipe's write end")))
    }

    /// Reads up to `buffer.count` bytes at the current offset; 0 at the end of the file.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        try Syscall.check("read", path.description) { Glibc.read(raw, buffer.baseAddress, buffer.count) }
    }

    /// Calls `body` with each piece of the file, from the current offset to its end, read
    /// `chunk` bytes at a time (a photo of any size in little memory).
    public func forEachChunk(size chunk: Int = 1 << 20,
                             _ body: (UnsafeRawBufferPointer) throws(SystemError) -> Void) throws(SystemError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = try read(into: buffer)
            if n == 0 { return }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
    }

    /// The file from the current offset to its end (at most `limit` bytes). `fstat`'s size is
    /// only where the buffer starts: files in /proc and /sys say 0 and hold text, and a file
    /// that grew meanwhile is read to its end, so reading goes on until `read` says the end.
    /// - Parameter limit: at most this many bytes (the caller checks the size first).
    public func readAll(limit: Int = .max) throws(SystemError) -> [UInt8] {
        let expected = Int(clamping: max(0, try status().size))
        var (bytes, ended) = try read(upTo: min(max(expected, 4096), limit))
        while !ended, bytes.count < limit {
            // A file as long as fstat said is most likely at its end: look with a small read.
            let next = bytes.count == expected ? 4096 : max(bytes.count, 4096)
            let more = try read(upTo: min(next, limit - bytes.count))
            bytes += more.bytes
            ended = more.ended
        }
        return bytes
    }

    /// `readAll(limit:)` into `buffer`, whose contents it replaces: a buffer kept from file to file
    /// (a batch's worker, photo after photo) is written where its pages are already mapped, where a
    /// new array of a few MB is a fresh mapping that faults in and zeroes a page every 4 KiB as
    /// read(2) fills it. A buffer too small for the file is replaced by one an eighth larger than
    /// the file (files of one camera differ by a few per cent), zero-filled first where its count
    /// grows.
    public func readAll(into buffer: inout [UInt8], limit: Int = .max) throws(SystemError) {
        let expected = min(Int(clamping: max(0, try status().size)), limit)
        if buffer.capacity < expected {
            buffer = []   // the old block goes before the new one is made, and is not copied
            buffer.reserveCapacity(expected + expected / 8)
        }
        if buffer.count > expected {
            buffer.removeLast(buffer.count - expected)
        } else if buffer.count < expected {
            buffer.append(contentsOf: repeatElement(0, count: expected - buffer.count))
        }
        var result: Result<(got: Int, ended: Bool), SystemError> = .success((0, false))
        buffer.withUnsafeMutableBufferPointer { b in
            if let base = b.baseAddress { result = fill(base, count: b.count) }
        }
        var (got, ended) = try result.get()
        buffer.removeLast(buffer.count - got)
        while !ended, got < limit {
            let next = got == expected ? 4096 : max(got, 4096)
            let more = try read(upTo: min(next, limit - got))
            buffer += more.bytes
            got = buffer.count
            ended = more.ended
        }
    }

    /// Up to `count` bytes from the current offset, read straight into the array's uninitialised
    /// storage (no zero-filling of a few MB that read(2) overwrites at once), and whether read(2)
    /// said the end.
    private func read(upTo count: Int) throws(SystemError) -> (bytes: [UInt8], ended: Bool) {
        var result: Result<(got: Int, ended: Bool), SystemError> = .success((0, false))
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, got in
            guard let base = buffer.baseAddress else { return }
            result = fill(base, count: count)
            if case .success(let read) = result { got = read.got }
        }
        return (bytes, try result.get().ended)
    }

    /// Reads into `count` bytes at `base` until they are full or read(2) says the end: how many
    /// it read, and whether it met the end.
    private func fill(_ base: UnsafeMutablePointer<UInt8>, count: Int) -> Result<(got: Int, ended: Bool), SystemError> {
        var got = 0
        while got < count {
            switch Syscall.run({ Glibc.read(raw, base + got, count - got) }) {
            case .success(0): return .success((got, true))
            case .success(let n): got += n
            case .failure(let e): return .failure(SystemError("read", path.description, errno: e.code))
            }
        }
        return .success((got, false))
    }

    /// Writes all of `bytes` (retrying short writes).
    public func write(_ bytes: some Collection<UInt8>) throws(SystemError) {
        let array = Array(bytes)
        var written = 0
        while written < array.count {
            let n = array.withUnsafeBytes { buffer in
                Syscall.run { Glibc.write(raw, buffer.baseAddress! + written, buffer.count - written) }
            }
            switch n {
            case .success(let count): written += count
            case .failure(let e): throw SystemError("write", path.description, errno: e.code)
            }
        }
    }

    /// Writes `bytes` at the file's end as the file system says it is now (`freshStatus`, past a
    /// share client's cached size), without `O_APPEND`: for one writer at a time.
    public func writeAtEnd(_ bytes: some Collection<UInt8>) throws(SystemError) {
        let end = try freshStatus().size
        _ = try Syscall.check("seek", path.description) { lseek(raw, off_t(end), SEEK_SET) }
        try write(bytes)
    }

    /// `fsync`: the file's data and metadata are on disk when it returns. Also flushes pages
    /// another process wrote and never synced (a Samba client, `cp`).
    public func sync() throws(SystemError) {
        _ = try Syscall.check("sync", path.description) { fsync(raw) }
    }

    /// `fdatasync`: the data (and the size) are on disk.
    public func syncData() throws(SystemError) {
        _ = try Syscall.check("sync", path.description) { fdatasync(raw) }
    }

    /// `fstat` of the open file.
    public func status() throws(SystemError) -> FileStatus {
        var st = stat()
        _ = try Syscall.check("stat", path.description) { fstat(raw, &st) }
        return FileStatus(st)
    }

    /// `fstat` asked of the file system itself, past a network or FUSE client's attribute
    /// cache (`statx` with `AT_STATX_FORCE_SYNC`); on a local disk the same as `status()`.
    public func freshStatus() throws(SystemError) -> FileStatus {
        var st = stat()
        _ = try Syscall.check("stat", path.description) { pf_fstat_sync(raw, &st) }
        return FileStatus(st)
    }

    /// The file system the file lives on (`fstatfs`).
    public func fileSystem() throws(SystemError) -> FileSystemType {
        var type: UInt32 = 0
        _ = try Syscall.check("statfs", path.description) { pf_fstatfs_type(raw, &type) }
        return FileSystemType(magic: type)
    }

    /// Takes an exclusive `flock` without waiting.
    /// - Returns: false when another open file holds it.
    public func tryLock() throws(SystemError) -> Bool {
        switch Syscall.run({ flock(raw, LOCK_EX | LOCK_NB) }) {
        case .success: return true
        case .failure(let e) where e.code == EWOULDBLOCK: return false
        case .failure(let e): throw SystemError("lock", path.description, errno: e.code)
        }
    }

    /// Takes an exclusive `flock`, waiting for it.
    public func lock() throws(SystemError) {
        _ = try Syscall.check("lock", path.description) { flock(raw, LOCK_EX) }
    }

    /// Sets the modification time to now.
    public func touch() throws(SystemError) {
        _ = try Syscall.check("touch", path.description) { futimens(raw, nil) }
    }

    /// Replaces what the file holds with `bytes` (from offset 0).
    public func replaceContents(with bytes: [UInt8]) throws(SystemError) {
        _ = try Syscall.check("truncate", path.description) { ftruncate(raw, 0) }
        _ = try Syscall.check("seek", path.description) { lseek(raw, 0, SEEK_SET) }
        try write(bytes)
    }
}
