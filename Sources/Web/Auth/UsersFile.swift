import Foundation
import HotFolders
import Synchronization

/// The users file as the console sees it: read again whenever its size, time or inode
/// changed (a `stat` per request), so `photofinish user add|remove` takes effect at the next
/// request, no reload. A file that cannot be read keeps no one logged in (and says why once).
final class UsersFile: Sendable {
    let path: String
    private let log: Logger
    private let state = Mutex<(key: String?, users: Users, problem: String?)>((nil, Users(), "not read yet"))

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
}
