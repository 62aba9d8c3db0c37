import Foundation
import Glibc
import System

/// Whether the service can use a hot folder, checked as the service user: its root exists
/// (or can be made), the service may write it and its folders, and it lies where the unit
/// lets the service write. Each problem says why and the commands that fix it, ready to copy.
///
/// Who is checked for (`Subject`):
/// - inside the unit (`ExecStartPre=`, `ExecReload=`: systemd sets `INVOCATION_ID`, and the
///   process is in the unit's cgroup or is its user), this process itself: `faccessat` answers for the sandbox too — a folder outside the unit's
///   `ReadWritePaths=` is read-only there (`EROFS`);
/// - by hand, for the config the installed unit runs: the unit's `User=` (by the permission
///   bits when this process is someone else, root included), and the unit's writable paths
///   as its files say;
/// - otherwise (a config of one's own, for `watch`): this process.
public enum HotFolderCheck {
    /// One reason a hot folder cannot be used, and what fixes it.
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        /// The inbox's name.
        public var inbox: String
        public var root: String
        /// What is wrong, in a sentence.
        public var why: String
        /// The commands (or steps) that fix it, in order, one a line.
        public var fix: [String]

        public init(inbox: String, root: String, why: String, fix: [String]) {
            self.inbox = inbox
            self.root = root
            self.why = why
            self.fix = fix
        }

        /// `shop: why` and then each fix indented under `fix:`.
        public var description: String {
            var out = "\(inbox): \(why)"
            for (i, line) in fix.enumerated() { out += "\n  " + (i == 0 ? "fix: " : "     ") + line }
            return out
        }
    }

    /// Who the folders are checked for.
    public struct Subject: Sendable {
        /// The account's name, its ids and groups.
        public var user: String
        public var uid: uid_t
        public var gid: gid_t
        public var groupName: String
        public var groups: Set<gid_t>
        /// True when this process is the account: `faccessat` answers (ACLs, read-only mounts).
        public var isThisProcess: Bool
        /// True inside the unit's sandbox (systemd started this process).
        public var insideUnit: Bool
        /// The installed unit, when the check is for the service it runs.
        public var unit: ServiceUnit?

        /// "the service user photofinish", "the user alice".
        public var words: String {
            if unit != nil || insideUnit { return "the service user \(user)" }
            return "the user \(user)"
        }

        /// This process.
        public static func thisProcess(insideUnit: Bool = false) -> Subject {
            let uid = geteuid(), gid = getegid()
            var groups = Set([gid])
            let n = getgroups(0, nil)
            if n > 0 {
                var list = [gid_t](repeating: 0, count: Int(n))
                let got = getgroups(n, &list)
                if got > 0 { groups.formUnion(list.prefix(Int(got))) }
            }
            return Subject(user: userName(uid), uid: uid, gid: gid, groupName: groupName(gid), groups: groups,
                           isThisProcess: true, insideUnit: insideUnit, unit: nil)
        }

        /// The account `name`, or nil when there is none.
        public static func account(_ name: String, group: String? = nil) -> Subject? {
            guard let pw = getpwnam(name) else { return nil }
            let uid = pw.pointee.pw_uid
            var gid = pw.pointee.pw_gid
            if let group, let gr = getgrnam(group) { gid = gr.pointee.gr_gid }
            var count: Int32 = 64
            var list = [gid_t](repeating: 0, count: Int(count))
            if getgrouplist(name, gid, &list, &count) < 0 {
                list = [gid_t](repeating: 0, count: Int(count))
                _ = getgrouplist(name, gid, &list, &count)
            }
            let groups = Set(list.prefix(Int(max(count, 0)))).union([gid])
            return Subject(user: name, uid: uid, gid: gid, groupName: groupName(gid), groups: groups,
                           isThisProcess: uid == geteuid() && gid == getegid(), insideUnit: false, unit: nil)
        }

        /// Who the hot folders of the config at `config` (absolute) are checked for.
        public static func forConfig(_ config: String, environment: [String: String]) -> Subject {
            let installed = ServiceUnit.installed(environment: environment)
            if isInsideUnit(installed, environment: environment) {
                var me = thisProcess(insideUnit: true)
                me.unit = installed
                return me
            }
            if let unit = installed,
               ServiceUnit.resolved(unit.config) == ServiceUnit.resolved(config),
               var account = account(unit.user, group: unit.group) {
                account.unit = unit
                return account
            }
            return thisProcess()
        }

        /// True when this process runs inside photofinish.service (its `ExecStartPre=` or
        /// `ExecReload=`): systemd set `INVOCATION_ID`, and the process is in the unit's cgroup, or
        /// is the unit's own user (another unit's process, an administrator's script run as a
        /// unit as root, is not).
        static func isInsideUnit(_ unit: ServiceUnit?, environment: [String: String]) -> Bool {
            guard let id = environment["INVOCATION_ID"], !id.isEmpty else { return false }
            let cgroup = (try? Files.text(of: "/proc/self/cgroup")) ?? ""
            if cgroup.contains("/" + ServiceUnit.name) { return true }
            return unit.map { $0.user == userName(geteuid()) } ?? false
        }

        static func userName(_ uid: uid_t) -> String {
            getpwuid(uid).map { String(cString: $0.pointee.pw_name) } ?? "\(uid)"
        }

        static func groupName(_ gid: gid_t) -> String {
            getgrgid(gid).map { String(cString: $0.pointee.gr_name) } ?? "\(gid)"
        }
    }

    /// The folders of a hot folder the service writes in.
    static let folders = ["drop", "out", "originals", "failed", ".work"]

    /// Every reason the hot folder `name` at `root` cannot be used by `who` (empty: it can).
    public static func problems(name: String, root: String, for who: Subject) -> [Problem] {
        let root = (root as NSString).standardizingPath
        func problem(_ why: String, _ fix: [String]) -> Problem { Problem(inbox: name, root: root, why: why, fix: fix) }
        let chown = "sudo chown -R \(who.user):\(who.groupName) \(shell(root))"
        var found: [Problem] = []

        // Where the unit lets the service write, as its settings say.
        let place = who.unit.flatMap { placeProblem(root, unit: $0) }
        if let place { found.append(problem(place.why, place.fix)) }

        guard let st = status(root) else {
            let (parent, _) = nearestExisting(root)
            if let parent, canCreate(in: parent, who) { return found }  // the service makes it at start
            let why = "\(root) does not exist, and the user \(who.user) cannot create it"
                + (parent.map { " (\($0) is not writable by \(who.user))" } ?? "")
            found.append(problem(why, ["sudo photofinish init \(shell(root))", chown]))
            return found
        }
        guard st.st_mode & S_IFMT == S_IFDIR else {
            found.append(problem("\(root) is not a folder", ["name a folder as its root (photofinish init ROOT makes one)"]))
            return found
        }
        // Read-only for the service (inside the unit: outside its ReadWritePaths).
        if place == nil, who.isThisProcess, faccessat(AT_FDCWD, root, W_OK, AT_EACCESS) != 0, errno == EROFS {
            found.append(problem(who.insideUnit
                                 ? "\(root) is read-only for the service: it lies outside the unit's ReadWritePaths"
                                 : "\(root) is on a read-only file system", who.insideUnit ? dropIn(root) : ["mount it read-write"]))
            return found
        }
        // In a folder the unit binds (BindPaths=), the service reaches it through folders systemd
        // makes: the real ones above it (a home folder, 0700) are not its way in.
        let bound = who.isThisProcess ? nil : who.unit?.bind(holding: ServiceUnit.resolved(root))
        var unwritable: [String] = []
        for path in [root] + folders.map({ root + "/" + $0 }) {
            guard let sub = status(path) else { continue }
            if !canWrite(path, sub, who, reachedFrom: bound) { unwritable.append(path) }
        }
        if let first = unwritable.first, let sub = status(first) {
            let others = unwritable.count > 1 ? " (and \(unwritable.count - 1) more of its folders)" : ""
            found.append(problem("the user \(who.user) cannot write \(first)\(others): it belongs to \(Subject.userName(sub.st_uid)):\(Subject.groupName(sub.st_gid)), mode \(String(format: "%04o", sub.st_mode & 0o7777))",
                                 [chown]))
        } else if let work = status(root + "/.work"), work.st_uid != who.uid, who.uid != 0 {
            // The daemon keeps .work/ at 0700, which only its owner may set.
            found.append(problem("\(root)/.work belongs to \(Subject.userName(work.st_uid)), not \(who.user) (the daemon keeps it private, mode 0700)",
                                 [chown]))
        }
        return found
    }

    /// Why the unit keeps the service from `root`, by its settings, and the fix.
    static func placeProblem(_ root: String, unit: ServiceUnit) -> (why: String, fix: [String])? {
        let path = ServiceUnit.resolved(root)
        let home = ["/home", "/root", "/run/user"].first { ServiceUnit.isInside(path, $0) }
        // Under /home, the service sees only what BindPaths= puts there (what init prints).
        if let home, ["yes", "true", "tmpfs"].contains(unit.protectHome), unit.bind(holding: path) == nil {
            return ("\(root) is in \(home), which the unit hides from the service (ProtectHome=yes)",
                    ["move it under /srv/photofinish (the unit may write there), or:",
                     "sudo systemctl edit photofinish     and add:",
                     "    [Service]",
                     "    ProtectHome=tmpfs",
                     "    BindPaths=\(path)",
                     "sudo systemctl restart photofinish   (a drop-in applies at a restart, not a reload)"])
        }
        if unit.privateTmp, ["/tmp", "/var/tmp"].contains(where: { ServiceUnit.isInside(path, $0) }) {
            return ("\(root) is in a temporary folder, and the service has its own (PrivateTmp=yes): files dropped there never reach it",
                    ["put the hot folder under /srv/photofinish"])
        }
        guard !unit.mayWrite(path) else { return nil }
        let allowed = unit.readWritePaths.isEmpty ? "" : " (\(unit.readWritePaths.joined(separator: " ")))"
        return ("\(root) lies outside the unit's ReadWritePaths\(allowed): the service may not write there", dropIn(path))
    }

    /// The drop-in that lets the service write at `path`, and that it needs a restart.
    static func dropIn(_ path: String) -> [String] {
        ["sudo systemctl edit photofinish     and add:",
         "    [Service]",
         "    ReadWritePaths=\(path)",
         "sudo systemctl restart photofinish   (a drop-in applies at a restart, not a reload)"]
    }

    private static func status(_ path: String) -> stat? {
        var st = stat()
        return stat(path, &st) == 0 ? st : nil
    }

    /// The nearest folder of `path` that exists (`path` itself when it does).
    static func nearestExisting(_ path: String) -> (String?, [String]) {
        var current = path
        var missing: [String] = []
        while status(current) == nil {
            if current == "/" || current.isEmpty { return (nil, missing) }
            missing.insert((current as NSString).lastPathComponent, at: 0)
            current = (current as NSString).deletingLastPathComponent
        }
        return (current, missing)
    }

    /// Whether `who` may make folders in `parent` (write and search).
    static func canCreate(in parent: String, _ who: Subject) -> Bool {
        guard let st = status(parent) else { return false }
        return canWrite(parent, st, who)
    }

    /// Whether `who` may create and remove names in the folder at `path` (write and search),
    /// and reach it (search on every folder above; with `reachedFrom`, only those up to that
    /// folder: the service reaches a bound folder through systemd's own).
    static func canWrite(_ path: String, _ st: stat, _ who: Subject, reachedFrom top: String? = nil) -> Bool {
        if who.isThisProcess { return faccessat(AT_FDCWD, path, W_OK | X_OK, AT_EACCESS) == 0 }
        guard allows(st, who, write: true) else { return false }
        var parent = (path as NSString).deletingLastPathComponent
        while !parent.isEmpty {
            if let top, !ServiceUnit.isInside(parent, top) { break }
            guard let up = status(parent), allows(up, who, write: false) else { return false }
            if parent == "/" { break }
            parent = (parent as NSString).deletingLastPathComponent
        }
        return true
    }

    /// The permission bits' answer for `who` (search, and write when asked), as the kernel
    /// gives it without ACLs: root may do anything; else the owner's, the group's or the
    /// others' bits, whichever class `who` is in first.
    static func allows(_ st: stat, _ who: Subject, write: Bool) -> Bool {
        if who.uid == 0 { return true }
        let mode = st.st_mode
        let want: mode_t = write ? 0o3 : 0o1
        let bits: mode_t = st.st_uid == who.uid ? (mode >> 6) & 0o7 : who.groups.contains(st.st_gid) ? (mode >> 3) & 0o7 : mode & 0o7
        return bits & want == want
    }

    /// `text` as one word for a POSIX shell: as it is when it is plain, else in single quotes.
    public static func shell(_ text: String) -> String {
        let plain = !text.isEmpty && text.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "/._-+=:,@%".unicodeScalars.contains($0)
        }
        return plain ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
