import Glibc

/// Who this process is and who owns a file, and becoming that owner: a command run by root on
/// a service's folders (`photofinish redo`) writes as the folder's owner, never leaving root's
/// files where the service must later rename or delete them.
public enum ProcessIdentity {
    /// A file's owner, with the names `/etc/passwd` and `/etc/group` give them (nil when none).
    public struct Owner: Sendable, Equatable, CustomStringConvertible {
        public var uid: uid_t
        public var gid: gid_t
        public var user: String?
        public var group: String?

        /// `photofinish:photofinish`, or the numbers where no name is known.
        public var description: String { "\(user ?? String(uid)):\(group ?? String(gid))" }
    }

    /// True when the process runs as root (effective user 0).
    public static var isRoot: Bool { geteuid() == 0 }

    /// The owner of `path` (a final symlink not followed).
    /// - Throws: `SystemError` when it cannot be looked at (or is not there: ENOENT).
    public static func owner(of path: some FilePathRepresentable) throws(SystemError) -> Owner {
        let path = path.filePath
        var st = stat()
        _ = try Syscall.check("stat", path.description) { path.withCString { lstat($0, &st) } }
        return Owner(uid: st.st_uid, gid: st.st_gid, user: userName(st.st_uid), group: groupName(st.st_gid))
    }

    /// Whether this process may use `path` as asked (`access(2)` with the real ids): read and
    /// search always, write when `write`.
    public static func mayUse(_ path: some FilePathRepresentable, write: Bool) -> Bool {
        let path = path.filePath
        let mode = R_OK | X_OK | (write ? W_OK : 0)
        return path.withCString { access($0, mode) } == 0
    }

    /// Becomes `owner` for good: its groups (the user's supplementary groups from `/etc/group`,
    /// or only its own group when it has no name), then its group, then its user.
    /// - Throws: `SystemError` when a step is refused (only root may do this).
    public static func become(_ owner: Owner) throws(SystemError) {
        if let user = owner.user {
            _ = try Syscall.check("initgroups", user) { initgroups(user, owner.gid) }
        } else {
            var group = owner.gid
            _ = try Syscall.check("setgroups", String(owner.gid)) { setgroups(1, &group) }
        }
        _ = try Syscall.check("setgid", String(owner.gid)) { setgid(owner.gid) }
        _ = try Syscall.check("setuid", String(owner.uid)) { setuid(owner.uid) }
    }

    static func userName(_ uid: uid_t) -> String? {
        var entry = passwd(), result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else {
            return nil
        }
        return String(cString: name)
    }

    static func groupName(_ gid: gid_t) -> String? {
        var entry = group(), result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getgrgid_r(gid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.gr_name else {
            return nil
        }
        return String(cString: name)
    }
}
