import Glibc

/// How names are moved inside one hot folder: the claim primitive. Chosen once per hot
/// folder by `probe` (at start), because file systems disagree:
///
/// - **`renameNoReplace`** (local disks: ext4, xfs, btrfs, tmpfs…): `renameat2` with
///   `RENAME_NOREPLACE`, one atomic step that moves a name and fails with `EEXIST` rather
///   than replace one.
/// - **`renameAndLink`** (NFS, SMB/CIFS, sshfs and other FUSE file systems answer rename
///   flags with `EINVAL`): moving a name *into a folder only the caller writes* (a claim into
///   `.work/<batch>/src/`, filing into `originals/<batch>/`) is a plain `rename(2)`: atomic on
///   every POSIX file system and on the NFS/SMB server, so of several machines renaming the
///   same name exactly one succeeds, and nothing can be replaced because nobody else makes
///   names there. Moving a name *into a shared folder* where it must not replace anything
///   (a source going back to `drop/`) is `link(2)` + `unlink(2)`, maildir's way over NFS:
///   `link` fails with `EEXIST` instead of replacing. A crash between the two leaves the
///   file under both names, which `move` itself (and recovery) tidies: a target that is
///   already the same file counts as moved.
/// - **`renameChecked`** (a file system with neither rename flags nor hard links): into a
///   caller-only folder as above; into a shared folder a plain `rename` after checking that
///   the name is free — the one step that is not atomic (a file dropped under the same name
///   in the microseconds between could be replaced). Logged as such at start.
public struct Mover: Sendable, Equatable {
    public enum Method: String, Sendable, Equatable {
        case renameNoReplace = "renameat2 RENAME_NOREPLACE"
        case renameAndLink = "rename + link"
        case renameChecked = "rename (no hard links)"
    }

    public var method: Method
    /// False where a file that is still open — or a folder holding one — cannot be renamed
    /// (smbnetfs answers `EBUSY` and `EACCES`, as SMB servers refuse it): such a file is closed
    /// before it is renamed (a batch's lock while its folder is renamed into place).
    public var renamesOpenFiles: Bool
    /// False where `rename` cannot replace a name that exists: atomic writes then remove the
    /// old file first (a reader may find no file for an instant, never half of one).
    public var replaces: Bool
    /// How a batch's journal grows here (`Files.appendDurably`).
    public var appending: Files.Appending
    /// False where the files of a folder just renamed are still reached under the folder's old
    /// name (`rclone mount` 1.60: a file node keeps its old path after its folder's rename, so
    /// it is read, written back and removed there — writing it back makes the old folder again
    /// on the server): a batch folder is then renamed into place with no file in it, its lock
    /// removed before and made again after (`Claim`).
    public var renamesFullFolders: Bool

    public init(_ method: Method, renamesOpenFiles: Bool = true, replaces: Bool = true, appending: Files.Appending = .append,
                renamesFullFolders: Bool = true) {
        self.method = method
        self.renamesFullFolders = renamesFullFolders
        self.renamesOpenFiles = renamesOpenFiles
        self.replaces = replaces
        self.appending = appending
    }

    /// What `probe` must not try, because trying does harm (`FolderSystem.probe` knows these
    /// clients by their mount's type).
    public struct Known: Sendable, Equatable {
        /// An open file's rename is not tried: taken as impossible. `rclone mount` defers the
        /// rename of a file open for writing until its upload ends and loses that rename's
        /// errors (a later rename over the name fails on the server while it says done).
        public var noOpenRenames = false
        /// `O_APPEND` is not tried: journals are written at their end (`Files.Appending.atEnd`).
        /// smbnetfs passes `O_APPEND` to libsmbclient, whose `ENXIO` ends its connection to the
        /// server: every file open through that mount then fails with `EIO`.
        public var noAppend = false
        /// Folders are renamed only with no file in them (`renamesFullFolders`): not probed,
        /// since the harm shows later (a file written back under the folder's old name).
        public var noFullFolderRenames = false

        public init(noOpenRenames: Bool = false, noAppend: Bool = false, noFullFolderRenames: Bool = false) {
            self.noOpenRenames = noOpenRenames
            self.noAppend = noAppend
            self.noFullFolderRenames = noFullFolderRenames
        }
    }

    /// Finds out what works in `folder` (a hot folder's `.work/`), with probe files it removes
    /// again: `renameat2(RENAME_NOREPLACE)`; else whether `link` works; whether a file still
    /// open can be renamed; whether `rename` replaces an existing name; how a file grows.
    /// - Parameter known: what is not tried (it would do harm on that client).
    /// - Throws: `SystemError` when the folder cannot be written at all, or a plain rename fails.
    public static func probe(in folder: Directory, known: Known = Known()) throws(SystemError) -> Mover {
        let tag = ".pf-probe-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let a = FileName(tag)!, b = FileName(tag + "-renamed")!, c = FileName(tag + "-linked")!, d = FileName(tag + "-other")!
        let e = FileName(tag + "-grown")!
        var open: FileDescriptor? = try folder.open(a, .write, [.create, .exclusive], permissions: 0o600)
        defer {
            open?.close()
            for name in [a, b, c, d, e] { try? folder.remove(name) }
        }
        var mover = Mover(.renameNoReplace, renamesFullFolders: !known.noFullFolderRenames)
        if known.noOpenRenames {
            mover.renamesOpenFiles = false
            open?.close()
            open = nil
        }
        // 1. The rename of a file still open (the probe file is), with rename flags if they work.
        var result = folder.rename(a, to: folder, as: b, .noReplace)
        if case .failure(let e) = result, [EINVAL, ENOSYS, EOPNOTSUPP, ENOTSUP].contains(e.code) {
            mover.method = .renameAndLink
            result = folder.rename(a, to: folder, as: b, .none)
        }
        if case .failure(let e) = result, [EBUSY, EACCES, EPERM].contains(e.code) {
            mover.renamesOpenFiles = false
            open?.close()
            open = nil
            result = folder.rename(a, to: folder, as: b, mover.method == .renameNoReplace ? .noReplace : .none)
        }
        if case .failure(let e) = result { throw SystemError("rename", folder.path.appending(a).description, errno: e.code) }
        open?.close()
        open = nil
        // 2. Hard links, where rename flags are refused: any refusal means none (`EPERM`,
        //    `EOPNOTSUPP`… and `EIO` from `rclone mount`, which has no hard links: TRAPS.md).
        if mover.method == .renameAndLink {
            switch folder.link(b, to: folder, as: c) {
            case .success: try? folder.remove(c)
            case .failure(let e) where e.code == EEXIST: throw SystemError("link", folder.path.appending(b).description, errno: e.code)
            case .failure: mover.method = .renameChecked
            }
        }
        // 3. A rename over an existing name (what atomic writes do).
        _ = try folder.open(d, .write, [.create, .exclusive], permissions: 0o600)
        if case .failure = folder.rename(b, to: folder, as: d, .none) { mover.replaces = false }
        // 4. How a file grows: O_APPEND, else a write at its end, else written again whole.
        try folder.open(e, .write, [.create, .exclusive], permissions: 0o600).write([0x31])
        mover.appending = known.noAppend ? .atEnd : .append
        if mover.appending == .append, (try? folder.open(e, .write, [.append]).write([0x32])) == nil {
            mover.appending = .atEnd
        }
        if mover.appending == .atEnd, (try? folder.open(e, .write).writeAtEnd([0x33])) == nil {
            mover.appending = .rewrite
        }
        return mover
    }

    /// The log's and STATUS.txt's words: "rename + link; files are closed before they are renamed".
    public var words: String {
        var out = method.rawValue
        if !renamesOpenFiles { out += "; files are closed before they are renamed (an open file cannot be renamed here)" }
        if !renamesFullFolders { out += "; batch folders are renamed with no file in them (files in a renamed folder keep its old name here)" }
        if !replaces { out += "; a file is replaced by removing it first (rename cannot replace here)" }
        if appending != .append { out += "; journals are \(appending.rawValue) (no O_APPEND here)" }
        return out
    }

    /// Moves `name` from a folder others share (`drop/`) into `target`, a folder only this
    /// process makes names in (a batch's own): of several processes — on several machines —
    /// taking the same name at once, exactly one succeeds.
    /// - Returns: false when the name is gone (another process took it first).
    /// - Throws: `SystemError`; `EEXIST` if `target` already holds the name.
    public func take(_ name: FileName, from source: Directory, into target: Directory,
                     as newName: FileName? = nil) throws(SystemError) -> Bool {
        let newName = newName ?? name
        let flags: Directory.RenameFlags
        if method == .renameNoReplace {
            flags = .noReplace
        } else {
            // Nobody else makes names in `target`: checking first is not a race.
            if try target.status(of: newName) != nil {
                guard try source.status(of: name) != nil else { return false }
                throw SystemError("move", describe(name, source, newName, target), errno: EEXIST)
            }
            flags = .none
        }
        switch source.rename(name, to: target, as: newName, flags) {
        case .success:
            return true
        case .failure(let e) where e.code == ENOENT:
            // Over NFS a retransmitted rename that had succeeded answers ENOENT: the name in
            // our own folder tells.
            guard method != .renameNoReplace else { return false }
            return try target.status(of: newName) != nil
        case .failure(let e):
            throw SystemError("move", describe(name, source, newName, target), errno: e.code)
        }
    }

    /// Moves `name` to `target` as `newName` (default: the same), never replacing a name in
    /// `target`, which others may write (`drop/`).
    /// - Returns: false when the name is gone from `source`.
    /// - Throws: `SystemError`; `EEXIST` when `newName` is taken in `target` by another file.
    @discardableResult
    public func move(_ name: FileName, from source: Directory, to target: Directory,
                     as newName: FileName? = nil) throws(SystemError) -> Bool {
        let newName = newName ?? name
        let what = describe(name, source, newName, target)
        switch method {
        case .renameNoReplace:
            switch source.rename(name, to: target, as: newName, .noReplace) {
            case .success: return true
            case .failure(let e) where e.code == ENOENT: return false
            case .failure(let e): throw SystemError("move", what, errno: e.code)
            }
        case .renameAndLink:
            switch source.link(name, to: target, as: newName) {
            case .success:
                break
            case .failure(let e) where e.code == ENOENT:
                return false
            case .failure(let e) where e.code == EEXIST:
                // Already there under both names (a crash between link and unlink, or a
                // retransmitted link): the move only lacks its unlink. Anything else holds the name.
                guard try Self.same(name, in: source, as: newName, in: target) else {
                    throw SystemError("move", what, errno: EEXIST)
                }
            case .failure(let e) where [EPERM, EACCES, EOPNOTSUPP, ENOTSUP, EMLINK].contains(e.code):
                // No link to this file (with fs.protected_hardlinks, only to one's own files or
                // files one may write: EPERM, which sshfs passes on as EACCES): as without links.
                var plain = self
                plain.method = .renameChecked
                return try plain.move(name, from: source, to: target, as: newName)
            case .failure(let e):
                throw SystemError("move", what, errno: e.code)
            }
            try source.remove(name)
            return true
        case .renameChecked:
            if try target.status(of: newName) != nil {
                // The same file there already (a copy a crash left half-moved): only the source goes.
                guard try Self.same(name, in: source, as: newName, in: target) else { throw SystemError("move", what, errno: EEXIST) }
                try source.remove(name)
                return true
            }
            switch source.rename(name, to: target, as: newName, .none) {
            case .success: return true
            case .failure(let e) where e.code == ENOENT: return false
            case .failure(let e): throw SystemError("move", what, errno: e.code)
            }
        }
    }

    /// Renames the folder `name` in `source` to `newName` in `target`, never replacing one:
    /// with rename flags refused, a folder that exists there already (not empty: callers only
    /// rename folders that hold something) makes the plain `rename` fail with `ENOTEMPTY`;
    /// an empty one is checked for first.
    public func renameFolder(_ name: FileName, in source: Directory, to target: Directory,
                             as newName: FileName) throws(SystemError) {
        let what = describe(name, source, newName, target)
        var flags = Directory.RenameFlags.noReplace
        if method != .renameNoReplace {
            if try target.status(of: newName) != nil { throw SystemError("rename", what, errno: EEXIST) }
            flags = .none
        }
        if case .failure(let e) = source.rename(name, to: target, as: newName, flags) {
            throw SystemError("rename", what, errno: e.code == ENOTEMPTY ? EEXIST : e.code)
        }
    }

    /// True when `name` in `source` and `newName` in `target` are one file under two names. A
    /// share may show two links of one inode as two files with one link each and inode numbers
    /// of their own (sshfs: TRAPS.md), so where device and inode differ, one file is what holds
    /// the same bytes with the same size and modification time (a link shares all three; a
    /// person's new file of the same name does not).
    static func same(_ name: FileName, in source: Directory, as newName: FileName, in target: Directory) throws(SystemError) -> Bool {
        guard let here = try source.status(of: name), let there = try target.status(of: newName),
              here.isRegular, there.isRegular else { return false }
        if here.isSameFile(as: there) { return true }
        guard here.size == there.size, here.modifiedNanoseconds == there.modifiedNanoseconds else { return false }
        let a = try source.open(name, .read, [.noFollow]), b = try target.open(newName, .read, [.noFollow])
        let chunk = 1 << 20
        while true {
            let x = try a.readAll(limit: chunk), y = try b.readAll(limit: chunk)
            if x != y { return false }
            if x.count < chunk { return true }
        }
    }

    private func describe(_ name: FileName, _ source: Directory, _ newName: FileName, _ target: Directory) -> String {
        source.path.appending(name).description + " to " + target.path.appending(newName).description
    }
}
