internal import CShims
import Glibc

/// Extended attributes (`user.*`, xattr(7)): small named values a file carries with it through
/// `rename` and `link`, as its inode does. Not every file system keeps them (sshfs, some SMB
/// and FUSE mounts answer `ENOTSUP`): whatever is kept in one is a nicety, never a file's only copy.
extension FileDescriptor {
    /// Sets the attribute `name` (`fsetxattr`).
    /// - Throws: `SystemError`; `ENOTSUP` where the file system keeps none.
    public func setExtendedAttribute(_ name: String, _ value: [UInt8]) throws(SystemError) {
        _ = try Syscall.check("set attribute \(name) of", path.description) {
            value.withUnsafeBytes { pf_fsetxattr(raw, name, $0.baseAddress, UInt($0.count)) }
        }
    }
}

extension Files {
    /// The attribute `name` of the file at `path` (`lgetxattr`: a final symlink is not
    /// followed), at most `limit` bytes; nil when the file has none, or its file system keeps none.
    /// - Throws: `SystemError` when the file cannot be asked (gone, no permission).
    public static func extendedAttribute(_ path: some FilePathRepresentable, _ name: String,
                                         limit: Int = 4096) throws(SystemError) -> [UInt8]? {
        let path = path.filePath
        var buffer = [UInt8](repeating: 0, count: limit)
        let result = Syscall.run {
            path.withCString { p in buffer.withUnsafeMutableBytes { pf_lgetxattr(p, name, $0.baseAddress, UInt($0.count)) } }
        }
        switch result {
        case .success(let count): return Array(buffer.prefix(Int(count)))
        case .failure(let e) where e.code == ENODATA || e.code == ENOTSUP || e.code == ERANGE: return nil
        case .failure(let e): throw SystemError("read attribute \(name) of", path.description, errno: e.code)
        }
    }
}
