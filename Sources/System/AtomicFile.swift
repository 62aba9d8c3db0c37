import Glibc

/// Files that appear whole or not at all (reference: Claims and crash safety): written under a
/// temporary name in the same folder, fsynced, renamed into place, and the folder fsynced so the
/// rename is durable.
public enum AtomicFile {
    /// The prefix of temporary names; nothing else in an output folder starts with it.
    public static let temporaryPrefix = ".pf-tmp-"

    /// What a write makes durable before it returns.
    public enum Durability: Sendable, Equatable {
        /// The file and its name: both survive a power cut once `write` returns (an fsync of
        /// the file and one of its folder).
        case durable
        /// The file's bytes, not its name (an fsync of the file only): after a power cut the
        /// name holds the whole file or is not there. For many files written into a folder
        /// nobody else reads yet (a batch's work folder): the caller syncs the folder once
        /// (`Directory.sync`) before anything that must survive says the files are there —
        /// or checks, after a crash, that they are.
        case contents
    }

    /// Writes `bytes` to `path` atomically (replacing a file already there).
    ///
    /// The temporary file is closed before it is renamed: SMB refuses to rename a file that is
    /// still open (smbnetfs: `EBUSY`). Where `rename` cannot replace the name (`EEXIST`,
    /// `EBUSY`, `EACCES`, `EPERM` with a file there), the old file is removed and the rename
    /// tried again: a reader may then find no file for an instant, never half of one.
    /// - Parameters:
    ///   - durability: what is durable when it returns (default: the file and its name).
    ///   - permissions: the new file's mode (less what the umask takes away).
    /// - Throws: `SystemError` naming the path and the system's reason; nothing is left
    ///   behind (the temporary file is removed).
    public static func write(_ bytes: some Collection<UInt8>, to path: some FilePathRepresentable,
                             _ durability: Durability = .durable, permissions: mode_t = 0o644) throws(SystemError) {
        let path = path.filePath
        guard let name = path.lastComponent else { throw SystemError("write", path.description, errno: EISDIR) }
        let folder = try Directory(path.parent)
        let temp = temporaryName(for: name)
        do throws(SystemError) {
            let file = try folder.open(temp, .write, [.create, .exclusive], permissions: permissions)
            try file.write(bytes)
            try file.sync()
            file.close()
            try rename(temp, to: name, in: folder)
        } catch {
            try? folder.remove(temp)
            throw error
        }
        if durability == .durable { try folder.sync() }
    }

    /// `temp` renamed over `name`, or, where the file system cannot replace a name, `name`
    /// removed and `temp` renamed to it.
    static func rename(_ temp: FileName, to name: FileName, in folder: Directory) throws(SystemError) {
        var result = folder.rename(temp, to: folder, as: name, .none)
        if case .failure(let e) = result, [EEXIST, EBUSY, EACCES, EPERM, ENOTEMPTY].contains(e.code),
           (try? folder.status(of: name)) != nil {
            try folder.remove(name)
            result = folder.rename(temp, to: folder, as: name, .none)
        }
        if case .failure(let e) = result {
            throw SystemError("rename", folder.path.appending(temp).description + " to " + name.escaped, errno: e.code)
        }
    }

    /// Writes `text` (UTF-8) to `path` atomically.
    public static func write(_ text: String, to path: some FilePathRepresentable) throws(SystemError) {
        let path = path.filePath
        try write(Array(text.utf8), to: path)
    }

    /// True when `name` in `folder` is a temporary file a crash left behind: a temporary name
    /// unchanged for a minute. A younger one may be another process's write under way — on a
    /// share, another machine's (two daemons starting together render the same proof) — and is
    /// never removed.
    public static func isLeftover(_ name: FileName, in folder: Directory, now: Double = Double(time(nil))) -> Bool {
        guard name.bytes.starts(with: temporaryPrefix.utf8), let st = try? folder.status(of: name) else { return false }
        return st.modified < now - 60
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

