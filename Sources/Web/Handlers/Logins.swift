import Foundation
import HTTP
import HotFolders

/// Logging in and out, and a person's own password.
extension ConsoleHandler {
    func loginPage(_ request: HTTPRequest, error: String? = nil, name: String = "", status: Int = 200,
                   extra: [(name: String, value: String)] = []) -> HTTPResponse {
        if error == nil, viewer(request) != nil { return redirect(Self.safeNext(request.query["next"])) }
        let token = Sessions.randomToken()
        var response = page(status, Pages.login(error: error, name: name, csrf: token, next: Self.safeNext(request.query["next"])), request)
        response.headers.append(("Set-Cookie", Self.cookie(Sessions.loginCookie, token, path: "/login", maxAge: 3600, secure: peer(request).secure)))
        response.headers += extra
        return response
    }

    func login(_ fields: [String: [String]], _ request: HTTPRequest) -> HTTPResponse {
        let peer = peer(request)
        var r = request
        r.query["next"] = fields["next"]?.first
        guard let expected = request.cookies[Sessions.loginCookie], !expected.isEmpty,
              Sessions.tokensMatch(fields["csrf"]?.first, expected) else {
            return loginPage(r, error: "The login form had expired: please log in again.", status: 403)
        }
        let name = String((fields["user"]?.first ?? "").prefix(128))
        let password = fields["password"]?.first ?? ""
        switch logins.withLock({ $0.begin(name: name, address: peer.address, now: .now) }) {
        case .busy?:
            return loginPage(r, error: "A login for this user or from your address is being checked: try again in a moment.",
                             name: name, status: 429, extra: [("Retry-After", "1")])
        case .wait(let wait, let account)?:
            let seconds = Self.seconds(wait)
            let whose = account ? "for this user" : "from your address"
            return loginPage(r, error: "Too many failed logins \(whose): try again in \(seconds) s.", name: name,
                             status: 429, extra: [("Retry-After", "\(seconds)")])
        case nil:
            break
        }
        let (users, problem) = self.users.current()
        let user = users[name]
        let ok = hashing.withLock { _ in
            guard let user else {
                PasswordHash.verifyNothing(password)
                return false
            }
            return PasswordHash.verify(password, against: user.hash)
        }
        let (failures, wait) = logins.withLock { $0.end(name: name, address: peer.address, ok: ok && user != nil, now: .now) }
        guard ok, let user else {
            log.warning("web: failed login as '\(name.prefix(64))' from \(peer.address) (\(failures) in a row"
                        + (wait > .zero ? "; the next attempt waits \(wait.components.seconds) s" : "") + ")",
                        ["USER": String(name.prefix(64)), "ADDRESS": peer.address])
            let message = problem.map { _ in "Logins are not set up on this server yet." } ?? "Wrong user or password."
            return loginPage(r, error: message, name: name, status: 401)
        }
        let token = sessions.open(user: user.name, hash: user.hash)
        log.notice("web: \(user.name) logged in from \(peer.address)", ["USER": user.name, "ADDRESS": peer.address])
        var response = redirect(Self.safeNext(fields["next"]?.first))
        response.headers.append(("Set-Cookie", Self.cookie(Sessions.cookie, token, path: "/", maxAge: Int(sessions.lifetime.components.seconds), secure: peer.secure)))
        response.headers.append(("Set-Cookie", Self.cookie(Sessions.loginCookie, "", path: "/login", maxAge: 0, secure: peer.secure)))
        return response
    }

    func logout(_ fields: [String: [String]], _ viewer: Viewer, _ request: HTTPRequest) -> HTTPResponse {
        guard Self.checked(fields, viewer) else { return staleForm(viewer, request) }
        sessions.close(viewer.token)
        log.info("web: \(viewer.name) logged out", ["USER": viewer.name])
        var response = redirect("/login")
        response.headers.append(("Set-Cookie", Self.cookie(Sessions.cookie, "", path: "/", maxAge: 0, secure: peer(request).secure)))
        return response
    }

    /// `POST /account`: the current password, the new one twice. The other sessions of the
    /// user end; this one goes on.
    func changeOwnPassword(_ fields: [String: [String]], _ viewer: Viewer, _ request: HTTPRequest) -> HTTPResponse {
        guard Self.checked(fields, viewer) else { return staleForm(viewer, request) }
        let current = fields["current"]?.first ?? "", new = fields["password"]?.first ?? "", again = fields["again"]?.first ?? ""
        let address = peer(request).address
        // The current password is a password check like a login's: one at a time, slowed when wrong.
        switch logins.withLock({ $0.begin(name: viewer.name, address: address, now: .now) }) {
        case .busy?, .wait?:
            return page(429, Pages.account(viewer, message: .failure("Too many wrong passwords: wait a minute, then try again.")), request)
        case nil:
            break
        }
        let ok = hashing.withLock { _ in PasswordHash.verify(current, against: viewer.user.hash) }
        logins.withLock { _ = $0.end(name: viewer.name, address: address, ok: ok, now: .now) }
        guard ok else {
            log.warning("web: \(viewer.name) gave a wrong current password to change it, from \(address)", ["USER": viewer.name, "ADDRESS": address])
            return page(403, Pages.account(viewer, message: .failure("Your current password is not that one: nothing changed.")), request)
        }
        guard new == again else {
            return page(422, Pages.account(viewer, message: .failure("The two new passwords differ: nothing changed.")), request)
        }
        let hash: String
        do throws(PasswordHash.Refused) {
            hash = try hashing.withLock { _ throws(PasswordHash.Refused) in try PasswordHash.make(new) }
        } catch {
            return page(422, Pages.account(viewer, message: .failure("The new password cannot be used: \(error).")), request)
        }
        switch users.update({ users throws(ConsoleRefusal) in
            guard let i = users.users.firstIndex(where: { $0.name == viewer.name }) else {
                throw ConsoleRefusal("\(viewer.name) is no longer in the users file")
            }
            users.users[i].hash = hash
        }) {
        case .failure(let refusal):
            return page(500, Pages.account(viewer, message: .failure("Your password could not be changed: \(refusal).")), request)
        case .success:
            sessions.rehash(viewer.token, hash: hash)
            sessions.closeOthers(of: viewer.name, keeping: viewer.token)
            log.notice("web: \(viewer.name) changed their password (their other sessions end)", ["USER": viewer.name])
            return page(200, Pages.account(viewer, message: .success("Your password is changed. Other devices logged in as \(viewer.name) must log in again.")), request)
        }
    }

    /// A wait in whole seconds, rounded up.
    static func seconds(_ wait: Duration) -> Int {
        Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up))
    }
}
