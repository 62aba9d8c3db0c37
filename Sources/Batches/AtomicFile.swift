import Foundation

/// Files that appear whole or not at all (SPEC §1): written under a temporary name in the
/// same folder, fsynced, renamed into place, and the folder fsynced so the rename is durable.
public enum AtomicFile {
    /// The prefix of temporary names; nothing else in an output folder starts with it.
    public static let temporaryPrefix = ".pf-tmp-"

    /// Writes `bytes` to `path` atomically.
    /// - Throws: `FileError` naming the path and the system's reason.
    public static func write(_ bytes: [UInt8], to path: String) throws(FileError) {
        let url = URL(fileURLWithPath: path)
        let dir = url.deletingLastPathComponent().path
        let temp = dir + "/" + temporaryPrefix + url.lastPathComponent + "-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileError(path: path, action: "create", errno: errno) }
        var ok = false
        defer {
            if !ok { unlink(temp) }
        }
        var written = 0
        let failure: Int32? = bytes.withUnsafeBytes { raw -> Int32? in
            while written < raw.count {
                let n = Foundation.write(fd, raw.baseAddress! + written, raw.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                written += n
            }
            return nil
        }
        if let failure {
            close(fd)
            throw FileError(path: path, action: "write", errno: failure)
        }
        if fsync(fd) != 0 {
            let e = errno
            close(fd)
            throw FileError(path: path, action: "sync", errno: e)
        }
        close(fd)
        guard rename(temp, path) == 0 else { throw FileError(path: path, action: "rename", errno: errno) }
        ok = true
        syncDirectory(dir)
    }

    /// fsyncs a folder, so names created or renamed in it survive a crash.
    public static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}

/// A file operation that failed, with the path and the system's reason.
public struct FileError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var action: String
    public var code: Int32

    public init(path: String, action: String, errno code: Int32) {
        self.path = path
        self.action = action
        self.code = code
    }

    public var description: String { "cannot \(action) \(path): \(String(cString: strerror(code)))" }
}
