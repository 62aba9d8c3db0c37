import Glibc

/// Files that are read whole or not at all but need not survive a power cut: a hot folder's
/// `STATUS.txt`, the status file in `/run`, the metrics file. Written under a temporary name
/// and renamed into place (a reader never sees half of one), but not fsynced: each is
/// rewritten at every change, so the worst a crash costs is an older copy, and 10,000 hot
/// folders' STATUS.txt no longer cost 20,000 journal commits (`AtomicFile` fsyncs the file
/// and its folder).
public enum PublishedFile {
    /// Writes `bytes` to `path` atomically (replacing a file already there).
    /// - Parameter staging: the folder the temporary file is made in (on the same file system
    ///   as `path`; default: `path`'s own folder). A hot folder's STATUS.txt is staged in
    ///   `.work/`, so its write makes no event in the root, which the service watches.
    /// - Throws: `SystemError` naming the path; the temporary file is removed.
    public static func write(_ bytes: some Collection<UInt8>, to path: some FilePathRepresentable,
                             staging: String? = nil) throws(SystemError) {
        let path = path.filePath
        guard let name = path.lastComponent else { throw SystemError("write", path.description, errno: EISDIR) }
        let folder = try Directory(path.parent)
        var stage = folder
        if let staging { stage = try Directory(staging) }
        let temp = AtomicFile.temporaryName(for: name)
        do throws(SystemError) {
            let file = try stage.open(temp, .write, [.create, .exclusive], permissions: 0o644)
            try file.write(bytes)
            file.close()
            if case .failure(let e) = stage.rename(temp, to: folder, as: name, .none) {
                throw SystemError("rename", stage.path.appending(temp).description + " to " + path.description, errno: e.code)
            }
        } catch {
            try? stage.remove(temp)
            throw error
        }
    }
}
