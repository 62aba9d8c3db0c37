import Finishing
import Foundation
import HotFolders
import Synchronization
import System

/// Logged-in sessions: a random token in an HttpOnly, SameSite=Strict cookie (Secure under
/// HTTPS), each with its own CSRF token that every form carries (field `csrf`). A session ends
/// `lifetime` after its login, at logout, or when its user is removed or given a new password.
///
/// Kept in a file (`store`, mode 0600, rewritten whole at each login and logout): a restart of
/// the daemon logs no one out, and a tab open across it goes on as it was. The file holds the
/// SHA-256 of each token, never the token itself (a copy of the file opens no session), and
/// the SHA-256 of the user's password hash at login (never the hash). Times are the wall
/// clock's, which a restart keeps.
///
/// Bounded: at most `perUser` sessions per login (a new one ends that user's oldest: one user
/// logging in again and again ends only their own sessions), and `limit` in all (the oldest go).
final class Sessions: Sendable {
    struct Session: Sendable, Equatable, Codable {
        var user: String
        /// The form token of this session.
        var csrf: String
        /// SHA-256 of the user's password hash at login: a new password ends the session.
        var hash: String
        /// Seconds since 1970.
        var expires: Double
        var opened: Double
    }

    /// The session cookie's name.
    static let cookie = "photofinish_session"
    /// The login form's own token cookie (a form before any session: double submit).
    static let loginCookie = "photofinish_login"
    /// Sessions kept at most.
    static let limit = 10_000
    /// Sessions of one login at most.
    static let perUser = 20

    let lifetime: Duration
    /// Where they are kept (nil: in memory only).
    let store: String?
    private let log: Logger
    /// By the SHA-256 of the token.
    private let table = Mutex<[String: Session]>([:])
    /// Held while the store is written: one writer at a time, each writing the table as it is then.
    private let writing = Mutex(())

    init(lifetime: Duration = .seconds(12 * 3600), store: String? = nil, log: Logger = .silent, now: Date = Date()) {
        self.lifetime = lifetime
        self.store = store
        self.log = log
        guard let store, let bytes = try? Files.contents(of: store) else { return }
        guard let saved = try? JSONDecoder().decode([String: Session].self, from: Data(bytes)) else {
            log.warning("web: the sessions in \(store) cannot be read: everyone logs in again")
            return
        }
        let live = saved.filter { $0.value.expires > now.timeIntervalSince1970 && $0.key.count == 64 }
        table.withLock { $0 = live }
        if !live.isEmpty { log.info("web: \(live.count) session\(live.count == 1 ? "" : "s") kept from \(store)") }
    }

    /// A new session for `user` (whose password hash is `hash`): its token.
    func open(user: String, hash: String, now: Date = Date()) -> String {
        let token = Self.randomToken()
        let t = now.timeIntervalSince1970
        let session = Session(user: user, csrf: Self.randomToken(), hash: Self.digest(hash),
                              expires: t + Double(lifetime.components.seconds), opened: t)
        let changed = table.withLock { table -> Bool in
            table = table.filter { $0.value.expires > t }
            let mine = table.filter { $0.value.user == user }
            if mine.count >= Self.perUser {
                for old in mine.sorted(by: { $0.value.opened < $1.value.opened }).prefix(mine.count - Self.perUser + 1) {
                    table[old.key] = nil
                }
            }
            if table.count >= Self.limit, let oldest = table.min(by: { $0.value.opened < $1.value.opened }) {
                table[oldest.key] = nil
            }
            table[Self.digest(token)] = session
            return true
        }
        if changed { save() }
        return token
    }

    /// The live session of `token`, if any.
    func session(_ token: String?, now: Date = Date()) -> Session? {
        guard let token, token.count == 64 else { return nil }
        let key = Self.digest(token)
        return table.withLock { table in
            guard let s = table[key] else { return nil }
            guard s.expires > now.timeIntervalSince1970 else {
                table[key] = nil
                return nil
            }
            return s
        }
    }

    /// Whether `session` was opened with the password whose hash is `hash`.
    static func matches(_ session: Session, hash: String) -> Bool { session.hash == digest(hash) }

    func close(_ token: String?) {
        guard let token else { return }
        let changed = table.withLock { table -> Bool in
            table.removeValue(forKey: Self.digest(token)) != nil
        }
        if changed { save() }
    }

    /// Ends every session of `user` but the one of `token` (a new password: the other devices log in again).
    func closeOthers(of user: String, keeping token: String?) {
        let keep = token.map(Self.digest)
        let changed = table.withLock { table -> Bool in
            let before = table.count
            table = table.filter { $0.value.user != user || $0.key == keep }
            return table.count != before
        }
        if changed { save() }
    }

    /// The session of `token` now belongs to the password whose hash is `hash` (its user
    /// changed it: this session goes on).
    func rehash(_ token: String?, hash: String) {
        guard let token else { return }
        let key = Self.digest(token)
        let changed = table.withLock { table -> Bool in
            guard table[key] != nil else { return false }
            table[key]?.hash = Self.digest(hash)
            return true
        }
        if changed { save() }
    }

    /// How many sessions there are (the tests').
    var count: Int { table.withLock { $0.count } }

    /// Rewrites the store with the table as it is now.
    private func save() {
        guard let store else { return }
        writing.withLock { _ in
            let snapshot = table.withLock { $0 }
            do throws(SystemError) {
                let data = (try? JSONEncoder().encode(snapshot)) ?? Data("{}".utf8)
                try AtomicFile.write(Array(data), to: store, permissions: 0o600)
            } catch {
                log.warning("web: cannot keep the sessions in \(store): \(error) (a restart logs everyone out)")
            }
        }
    }

    /// 32 random bytes (the system's generator: `getrandom`), as 64 hex digits.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
    }

    /// SHA-256 of `text`, as hex.
    static func digest(_ text: String) -> String { SHA256.hex(of: Array(text.utf8)) }

    /// Whether a form's token is the one expected (constant time).
    static func tokensMatch(_ sent: String?, _ expected: String) -> Bool {
        guard let sent else { return false }
        return PasswordHash.constantTimeEqual(Array(sent.utf8), Array(expected.utf8))
    }
}
