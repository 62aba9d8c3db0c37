import Foundation
import HTTP
import HotFolders

/// The logins page (`/users`, administrators only): who may log in and see which hot
/// folders; add a login, give one a new password, change its folders, remove it. The same
/// users file `photofinish user add|remove` writes, written the same way.
extension ConsoleHandler {
    func usersPage(_ viewer: Viewer, _ request: HTTPRequest, message: Pages.Message?, status: Int = 200) -> HTTPResponse {
        let (users, problem) = self.users.current()
        let folders = source.snapshot().folders.map(\.name)
        return page(status, Pages.users(viewer, users: users.users, folders: folders, problem: problem ?? self.users.writeProblem,
                                        message: message), request)
    }

    /// `POST /users`: a new login (name, password, `admin` or `inbox` fields).
    func addUser(_ fields: [String: [String]], _ viewer: Viewer, _ request: HTTPRequest) -> HTTPResponse {
        guard Self.checked(fields, viewer) else { return staleForm(viewer, request) }
        let name = (fields["name"]?.first ?? "").trimmingCharacters(in: .whitespaces)
        guard Users.isValidName(name) else {
            return usersPage(viewer, request, message: .failure("“\(name)” cannot be a login name: letters, digits, '.', '_', '-' or '@', at most 64."), status: 422)
        }
        let admin = fields["admin"]?.first == "on"
        let known = Set(source.snapshot().folders.map(\.name))
        let inboxes = (fields["inbox"] ?? []).filter(known.contains)
        guard admin || !inboxes.isEmpty else {
            return usersPage(viewer, request, message: .failure("Choose the hot folders \(name) may use, or make them an administrator."), status: 422)
        }
        let password = fields["password"]?.first ?? ""
        let hash: String
        do throws(PasswordHash.Refused) {
            hash = try hashing.withLock { _ throws(PasswordHash.Refused) in try PasswordHash.make(password) }
        } catch {
            return usersPage(viewer, request, message: .failure("\(name): \(error)."), status: 422)
        }
        let result = users.update { users throws(ConsoleRefusal) in
            guard users[name] == nil else { throw ConsoleRefusal("there is a login \(name) already: give it a new password below") }
            users.users.append(Users.User(name: name, hash: hash, inboxes: admin ? [] : inboxes, admin: admin))
        }
        if case .failure(let refusal) = result {
            return usersPage(viewer, request, message: .failure("\(name) was not added: \(refusal)."), status: 409)
        }
        let scope = admin ? "an administrator" : "for " + inboxes.joined(separator: ", ")
        log.notice("web: \(viewer.name) added the login \(name) (\(admin ? "admin" : inboxes.joined(separator: ", ")))", ["USER": viewer.name])
        return usersPage(viewer, request, message: .success("\(name) may log in now, \(scope)."))
    }

    /// `POST /users/NAME`: `do` = `password` (field `password`), `folders` (`admin`, `inbox`)
    /// or `remove`. An administrator cannot remove themselves nor take away their own
    /// administration (someone must be left who can).
    func changeUser(_ name: String, _ fields: [String: [String]], _ viewer: Viewer, _ request: HTTPRequest) -> HTTPResponse {
        guard Self.checked(fields, viewer) else { return staleForm(viewer, request) }
        let what = fields["do"]?.first ?? ""
        var said = ""
        var newHash: String?
        switch what {
        case "password":
            do throws(PasswordHash.Refused) {
                let password = fields["password"]?.first ?? ""
                newHash = try hashing.withLock { _ throws(PasswordHash.Refused) in try PasswordHash.make(password) }
            } catch {
                return usersPage(viewer, request, message: .failure("\(name): \(error)."), status: 422)
            }
            said = "\(name) has a new password; their sessions end"
        case "folders":
            said = "\(name)'s hot folders are changed"
        case "remove":
            guard name != viewer.name else {
                return usersPage(viewer, request, message: .failure("You cannot remove your own login (another administrator can)."), status: 422)
            }
            said = "\(name) is removed; their sessions end"
        default:
            return usersPage(viewer, request, message: .failure("Nothing to do."), status: 400)
        }
        let known = Set(source.snapshot().folders.map(\.name))
        let result = users.update { users throws(ConsoleRefusal) in
            guard let i = users.users.firstIndex(where: { $0.name == name }) else { throw ConsoleRefusal("there is no login \(name)") }
            switch what {
            case "password":
                users.users[i].hash = newHash!
            case "folders":
                let admin = fields["admin"]?.first == "on"
                let inboxes = (fields["inbox"] ?? []).filter(known.contains)
                guard admin || !inboxes.isEmpty else { throw ConsoleRefusal("choose at least one hot folder, or make them an administrator") }
                guard admin || name != viewer.name else { throw ConsoleRefusal("you cannot take away your own administration") }
                users.users[i].admin = admin
                users.users[i].inboxes = admin ? [] : inboxes
            default:
                users.users.remove(at: i)
            }
        }
        if case .failure(let refusal) = result {
            return usersPage(viewer, request, message: .failure("Nothing changed: \(refusal)."), status: 409)
        }
        // Their own new password: this session goes on.
        if what == "password", name == viewer.name, let newHash { sessions.rehash(viewer.token, hash: newHash) }
        log.notice("web: \(viewer.name): \(said)", ["USER": viewer.name])
        return usersPage(viewer, request, message: .success(said.prefix(1).uppercased() + said.dropFirst() + "."))
    }
}
