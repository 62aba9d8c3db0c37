import Foundation
import Glibc
import HotFolders
import System

/// Why a hot folder cannot be used, in words, and what fixes it: from the error its take-up
/// met (the root missing, no right to write it, outside the unit's writable paths, no open
/// files left). Shown in the journal, the status file, `photofinish status` and STATUS.txt.
public struct FolderProblem: Sendable, Equatable, Error {
    /// What is wrong: "cannot change the permissions of /srv/x/.work: Operation not permitted".
    public var why: String
    /// What fixes it: commands or sentences, one a line.
    public var fix: [String]

    public init(why: String, fix: [String]) {
        self.why = why
        self.fix = fix
    }

    /// True when systemd runs this process (it sets `INVOCATION_ID`): fixes name the unit.
    static var underSystemd: Bool { ProcessInfo.processInfo.environment["INVOCATION_ID"] != nil }

    /// This process's user and group, as `chown` takes them (`photofinish:photofinish`).
    static var owner: String {
        let user = getpwuid(geteuid()).flatMap { $0.pointee.pw_name.map { String(cString: $0) } } ?? String(geteuid())
        let group = getgrgid(getegid()).flatMap { $0.pointee.gr_name.map { String(cString: $0) } } ?? String(getegid())
        return "\(user):\(group)"
    }

    /// The problem behind `error`, met while taking up the hot folder at `layout`.
    /// - Parameter systemd: whether the service runs under systemd (its `ReadWritePaths=`);
    ///   `nil`: as this process does.
    public static func refusal(_ error: SystemError, layout: HotFolderLayout, systemd: Bool? = nil) -> FolderProblem {
        let systemd = systemd ?? underSystemd
        let root = layout.root
        let then = systemd ? "systemctl reload photofinish" : "send the service SIGHUP (or wait for the next rescan)"
        switch error.code {
        case ENOENT where !Files.exists(root):
            return FolderProblem(why: "\(root) does not exist",
                                 fix: ["photofinish init \(root)", "chown -R \(owner) \(root)", then])
        case EACCES, EPERM:
            return FolderProblem(why: "\(error)", fix: ["chown -R \(owner) \(root)", then])
        case EROFS where systemd:
            return FolderProblem(why: "\(error) (\(root) is outside the service's ReadWritePaths=)",
                                 fix: ["systemctl edit photofinish, and add: [Service] ReadWritePaths=\(root)",
                                       "systemctl restart photofinish (a drop-in needs a restart)"])
        case EROFS:
            return FolderProblem(why: "\(error) (a read-only file system)", fix: ["mount it read-write, then \(then)"])
        case ENOSPC, EDQUOT:
            return FolderProblem(why: "\(error)", fix: ["free space on the disk of \(root)", then])
        case EMFILE, ENFILE:
            return openFiles(why: "\(error)", systemd: systemd)
        case ENOTDIR, ELOOP:
            return FolderProblem(why: "\(error) (a file or a symlink where a folder should be)",
                                 fix: ["replace it with a folder (photofinish init \(root) makes the missing ones)", then])
        default:
            return FolderProblem(why: "\(error)", fix: [then])
        }
    }

    /// No open files left for the hot folder although the budget had room for it: its fix
    /// raises `LimitNOFILE=` to twice the limit in force.
    static func openFiles(why: String, systemd: Bool) -> FolderProblem {
        let limit = try? ProcessResources.openFiles().soft
        return FolderProblem(why: why, fix: OpenFiles.fix(wanted: OpenFiles.doubled(limit), systemd: systemd))
    }
}
