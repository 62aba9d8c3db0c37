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

    public init(_ method: Method) {
        self.method = method
    }

    /// Finds out which method works in `folder` (a hot folder's `.work/`): creates a
    /// probe file, renames it with `RENAME_NOREPLACE`, links it, and removes what it made.
    /// - Throws: `SystemError` when the folder cannot be written at all.
    public static func probe(in folder: Directory) throws(SystemError) -> Mover {
        let tag = ".pf-probe-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let a = FileName(tag)!, b = FileName(tag + "-renamed")!, c = FileName(tag + "-linked")!
        _ = try folder.open(a, .write, [.create, .exclusive], permissions: 0o600)
        defer {
            for name in [a, b, c] { try? folder.remove(name) }
        }
        var current = a
        let method: Method
        switch folder.rename(a, to: folder, as: b, .noReplace) {
        case .success:
            current = b
            method = .renameNoReplace
        case .failure(let e) where [EINVAL, ENOSYS, EOPNOTSUPP, ENOTSUP].contains(e.code):
            switch folder.link(a, to: folder, as: c) {
            case .success: method = .renameAndLink
            case .failure(let e) where [EPERM, EOPNOTSUPP, ENOTSUP, ENOSYS, EMLINK].contains(e.code): method = .renameChecked
            case .failure(let e): throw SystemError("link", folder.path.appending(a).description, errno: e.code)
            }
        case .failure(let e):
            throw SystemError("rename", folder.path.appending(current).description, errno: e.code)
        }
        return Mover(method)
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
                guard let here = try source.status(of: name), let there = try target.status(of: newName),
                      here.isSameFile(as: there) else {
                    throw SystemError("move", what, errno: EEXIST)
                }
            case .failure(let e) where [EPERM, EOPNOTSUPP, ENOTSUP, EMLINK].contains(e.code):
                return try Mover(.renameChecked).move(name, from: source, to: target, as: newName)
            case .failure(let e):
                throw SystemError("move", what, errno: e.code)
            }
            try source.remove(name)
            return true
        case .renameChecked:
            if try target.status(of: newName) != nil { throw SystemError("move", what, errno: EEXIST) }
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

    private func describe(_ name: FileName, _ source: Directory, _ newName: FileName, _ target: Directory) -> String {
        source.path.appending(name).description + " to " + target.path.appending(newName).description
    }
}
