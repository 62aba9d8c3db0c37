import Foundation
import JSON5
import HotFolders
import Synchronization
import System

/// The users file as the console sees it: read again whenever its size, time or inode
/// changed (a `stat` per request), so `photofinish user add|remove` takes effect at the next
/// request, no reload. A file that cannot be read keeps no one logged in (and says why once).
final class UsersFile: Sendable {
    let path: String
    private let log: Logger
    private let state = Mutex<(key: String?, users: Users, problem: String?)>((nil, Users(), "not read yet"))
    /// Held while the file is changed (`update`).
    private let writing = Mutex(())

    init(path: String, log: Logger) {
        self.path = path
        self.log = log
    }

    /// The users now; `problem` says why there are none when the file is missing or broken.
    func current() -> (users: Users, problem: String?) {
        var st = stat()
        let key: String? = stat(path, &st) == 0 ? "\(st.st_size) \(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec) \(st.st_ino)" : nil
        if let cached = state.withLock({ $0.key == key && key != nil ? ($0.users, $0.problem) : nil }) { return cached }
        var users = Users()
        var problem: String?
        if key == nil {
            problem = "no users file at \(path) (add a login: photofinish user add NAME --inbox A | --admin)"
        } else {
            do {
                users = try Users.load(path: path)
            } catch {
                problem = error.errors.map(\.description).joined(separator: "; ")
            }
        }
        let changed = state.withLock { s in
            defer { s = (key, users, problem) }
            return s.problem != problem || (problem == nil && s.key != key)
        }
        if changed {
            if let problem { log.warning("web: \(problem): nobody can log in") } else { log.info("web: \(users.users.count) login\(users.users.count == 1 ? "" : "s") in \(path)") }
        }
        return (users, problem)
    }

    /// Changes the users file: read afresh, changed by `change`, written atomically (as
    /// `photofinish user` writes it). One change at a time.
    func update(_ change: (inout Users) throws(ConsoleRefusal) -> Void) -> Result<Void, ConsoleRefusal> {
        writing.withLock { _ in
            var users = Users()
            if Files.existsFollowingLinks(path) {
                do throws(JSON5Errors) {
                    users = try Users.load(path: path)
                } catch {
                    return .failure(ConsoleRefusal("\(path) has errors (\(error.errors.first.map(\.description) ?? "")): fix them with photofinish user first"))
                }
            }
            do throws(ConsoleRefusal) {
                try change(&users)
            } catch {
                return .failure(error)
            }
            do throws(SystemError) {
                try users.write(to: path)
            } catch {
                log.error("web: cannot write \(path): \(error)")
                return .failure(ConsoleRefusal("the users file cannot be written (\(error.reason))" + (writeProblem.map { ": \($0)" } ?? "")))
            }
            _ = current()
            return .success(())
        }
    }

    /// Why the console cannot change the users file (its folder is not this process's to
    /// write: a users file in /etc, which the service may not write), nil when it can.
    var writeProblem: String? {
        let folder = (path as NSString).deletingLastPathComponent
        guard access(folder.isEmpty ? "." : folder, W_OK) != 0 else { return nil }
        return "the service cannot write the folder of the users file \(path): logins can be changed with photofinish user only "
            + "(the package's default, /var/lib/photofinish/users.json5, is the service's to write)"
    }
}
