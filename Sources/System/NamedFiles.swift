import Glibc

/// Files a person names by path (a config, a template and its logo, a TLS key, a folder given
/// on the command line): a final symlink is followed, as a shell would, where the names inside
/// hot folders never are (`Directory`). Byte-string names throughout, so any name a file
/// system holds can be given.
extension Files {
    /// `stat` of `path`, a final symlink followed; nil when nothing is there (or a link
    /// points nowhere).
    public static func statusFollowingLinks(_ path: some FilePathRepresentable) throws(SystemError) -> FileStatus? {
        let path = path.filePath
        var st = stat()
        switch Syscall.run({ path.withCString { stat($0, &st) } }) {
        case .success: return FileStatus(st)
        case .failure(let e) where e.code == ENOENT || e.code == ENOTDIR: return nil
        case .failure(let e): throw SystemError("stat", path.description, errno: e.code)
        }
    }

    /// True when `path` names something, a final symlink followed (a dangling link is nothing).
    public static func existsFollowingLinks(_ path: some FilePathRepresentable) -> Bool {
        (try? statusFollowingLinks(path)) != nil
    }

    /// True when this process may read `path` (`access(2)` with `R_OK`: the real user's rights).
    public static func isReadable(_ path: some FilePathRepresentable) -> Bool {
        path.filePath.withCString { access($0, R_OK) } == 0
    }

    /// True when this process may run `path` (`access(2)` with `X_OK`: the real user's rights).
    public static func isExecutable(_ path: some FilePathRepresentable) -> Bool {
        path.filePath.withCString { access($0, X_OK) } == 0
    }

    /// The whole file at `path`, a final symlink followed, read to its end (a `/proc` or
    /// cgroup file says its size is 0); nil when nothing is there.
    /// - Parameter limit: at most this many bytes.
    public static func contents(of path: some FilePathRepresentable, limit: Int = .max) throws(SystemError) -> [UInt8]? {
        let path = path.filePath
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, .read)
        } catch where error.code == ENOENT || error.code == ENOTDIR {
            return nil
        }
        var bytes: [UInt8] = []
        try file.forEachChunk(size: 64 << 10) { chunk throws(SystemError) in
            bytes.append(contentsOf: chunk.prefix(limit - bytes.count))
        }
        return bytes
    }

    /// The file at `path` as text, a final symlink followed; nil when nothing is there or
    /// its bytes are not UTF-8 (as `String(contentsOfFile:encoding: .utf8)` refuses them).
    public static func text(of path: some FilePathRepresentable, limit: Int = .max) throws(SystemError) -> String? {
        try contents(of: path, limit: limit).flatMap { String(validating: $0, as: UTF8.self) }
    }

    /// The names in the folder at `path` (a final symlink followed), in no particular order,
    /// `.` and `..` left out.
    public static func names(in path: some FilePathRepresentable) throws(SystemError) -> [FileName] {
        let path = path.filePath
        // A trailing slash lets the last component be a symlink to a folder.
        let folder = path.bytes.last == UInt8(ascii: "/") ? path : FilePath(bytes: path.bytes + [UInt8(ascii: "/")])
        return try Directory(folder).names()
    }

    /// The names in the folder at `path` that are UTF-8 text (folders named in the config
    /// and the daemon's own files: a name that is not text is none of theirs), in no
    /// particular order; none when the folder cannot be listed.
    public static func textNames(in path: some FilePathRepresentable) -> [String] {
        ((try? names(in: path)) ?? []).compactMap(\.string)
    }

    /// The process's current folder (`getcwd`).
    public static func currentDirectory() throws(SystemError) -> FilePath {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { throw SystemError("find", "the current folder", errno: errno) }
        return FilePath(bytes: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) })
    }

    /// `path` as a shell reads it from the current folder: unchanged when it starts with `/`,
    /// else the current folder, `/`, and `path` (nothing cleaned: `a/../b` stays).
    public static func absolute(_ path: FilePath) -> FilePath {
        guard path.bytes.first != UInt8(ascii: "/") else { return path }
        let here = (try? currentDirectory())?.bytes ?? []
        return FilePath(bytes: here + [UInt8(ascii: "/")] + path.bytes)
    }

    /// `absolute` for a path given as text (a template named in the config).
    public static func absolute(_ path: String) -> String {
        guard !path.hasPrefix("/") else { return path }
        return String(decoding: absolute(FilePath(path)).bytes, as: UTF8.self)
    }

    /// Writes `bytes` to `path` (a final symlink followed), made with `permissions` less the
    /// umask (0666: as `creat` and Foundation make files) or truncated: for files nobody reads while they are written (samples, seeds);
    /// what others read is written with `AtomicFile`.
    public static func write(_ bytes: some Collection<UInt8>, to path: some FilePathRepresentable,
                             permissions: mode_t = 0o666) throws(SystemError) {
        let file = try FileDescriptor.open(path, .write, [.create, .truncate], permissions: permissions)
        try file.write(bytes)
    }
}
