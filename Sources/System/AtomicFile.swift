import Glibc

/// Files that appear whole or not at all (SPEC §1): written under a temporary name in the
/// same folder, fsynced, renamed into place, and the folder fsynced so the rename is durable.
public enum AtomicFile {
    /// The prefix of temporary names; nothing else in an output folder starts with it.
    public static let temporaryPrefix = ".pf-tmp-"

    /// Writes `bytes` to `path` atomically (replacing a file already there).
    /// - Throws: `SystemError` naming the path and the system's reason; nothing is left
    ///   behind (the temporary file is removed).
    public static func write(_ bytes: some Collection<UInt8>, to path: some FilePathRepresentable) throws(SystemError) {
        let path = path.filePath
        guard let name = path.lastComponent else { throw SystemError("write", path.description, errno: EISDIR) }
        let folder = try Directory(path.parent)
        let temp = temporaryName(for: name)
        do throws(SystemError) {
            let file = try folder.open(temp, .write, [.create, .exclusive], permissions: 0o644)
            try file.write(bytes)
            try file.sync()
            if case .failure(let e) = folder.rename(temp, to: folder, as: name, .none) {
                throw SystemError("rename", folder.path.appending(temp).description + " to " + name.escaped, errno: e.code)
            }
        } catch {
            try? folder.remove(temp)
            throw error
        }
        try folder.sync()
    }

    /// Writes `text` (UTF-8) to `path` atomically.
    public static func write(_ text: String, to path: some FilePathRepresentable) throws(SystemError) {
        let path = path.filePath
        try write(Array(text.utf8), to: path)
    }

    /// `.pf-tmp-<name>-<8 hex>`, the name cut (at a character) so the whole stays within
    /// `NAME_MAX`: a 255-byte photo name still gets a temporary name.
    public static func temporaryName(for name: FileName) -> FileName {
        let random = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let room = FileName.maxLength - temporaryPrefix.utf8.count - 1 - 8
        let kept = FileName.prefix(of: name.bytes, maxCount: room)
        return FileName(bytes: Array(temporaryPrefix.utf8) + kept + Array(("-" + random).utf8))!
    }
}

