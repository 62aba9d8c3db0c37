import Foundation
import Synchronization

/// Logged-in sessions, in memory (a restart of the daemon logs everyone out): a random token
/// in an HttpOnly, SameSite=Strict cookie (Secure under HTTPS), each with its own CSRF token
/// that every form carries (field `csrf`). A session ends `lifetime` after its login, at
/// logout, or when its user is removed or given a new password.
final class Sessions: Sendable {
    struct Session: Sendable, Equatable {
        var user: String
        /// The form token of this session.
        var csrf: String
        /// The user's hash at login: a new password ends the session.
        var hash: String
        var expires: ContinuousClock.Instant
    }

    /// The session cookie's name.
    static let cookie = "photofinish_session"
    /// The login form's own token cookie (a form before any session: double submit).
    static let loginCookie = "photofinish_login"
    /// Sessions kept at most (the oldest go first): a flood of logins cannot fill memory.
    static let limit = 10_000

    let lifetime: Duration
    private let table = Mutex<[String: Session]>([:])

    init(lifetime: Duration = .seconds(12 * 3600)) {
        self.lifetime = lifetime
    }

    /// A new session for `user`: its token.
    func open(user: String, hash: String, now: ContinuousClock.Instant = .now) -> String {
        let token = Self.randomToken()
        let session = Session(user: user, csrf: Self.randomToken(), hash: hash, expires: now + lifetime)
        table.withLock { table in
            table = table.filter { $0.value.expires > now }
            if table.count >= Self.limit, let oldest = table.min(by: { $0.value.expires < $1.value.expires }) {
                table[oldest.key] = nil
            }
            table[token] = session
        }
        return token
    }

    /// The live session of `token`, if any.
    func session(_ token: String?, now: ContinuousClock.Instant = .now) -> Session? {
        guard let token, !token.isEmpty else { return nil }
        return table.withLock { table in
            guard let s = table[token] else { return nil }
            guard s.expires > now else {
                table[token] = nil
                return nil
            }
            return s
        }
    }

    func close(_ token: String?) {
        guard let token else { return }
        _ = table.withLock { $0.removeValue(forKey: token) }
    }

    /// 32 random bytes (the system's generator: `getrandom`), as 64 hex digits.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
    }

    /// Whether a form's token is the one expected (constant time).
    static func tokensMatch(_ sent: String?, _ expected: String) -> Bool {
        guard let sent else { return false }
        return PasswordHash.constantTimeEqual(Array(sent.utf8), Array(expected.utf8))
    }
}

/// Failed logins slowed per address: after `free` failures in a row, each next attempt must
/// wait twice as long as the one before (1 s, 2 s, 4 s … at most `maxDelay`); an attempt
/// inside the wait is refused without looking at the password. A success clears the address;
/// an address quiet for an hour is forgotten. Pure (times are given).
struct LoginThrottle: Sendable {
    struct Entry: Sendable, Equatable {
        var failures: Int
        var last: ContinuousClock.Instant
        var nextAllowed: ContinuousClock.Instant
    }

    static let free = 3
    static let maxDelay = Duration.seconds(60)
    static let forgetAfter = Duration.seconds(3600)
    /// Addresses kept at most.
    static let limit = 50_000

    private(set) var entries: [String: Entry] = [:]

    /// How long `address` must still wait before it may try, or nil when it may now.
    func wait(for address: String, now: ContinuousClock.Instant) -> Duration? {
        guard let e = entries[address], e.nextAllowed > now else { return nil }
        return e.nextAllowed - now
    }

    /// Records a failed login; returns how many failures in a row and the wait before the next try.
    mutating func failed(_ address: String, now: ContinuousClock.Instant) -> (failures: Int, wait: Duration) {
        if entries.count >= Self.limit { entries = entries.filter { now - $0.value.last < Self.forgetAfter } }
        var e = entries[address].flatMap { now - $0.last < Self.forgetAfter ? $0 : nil }
            ?? Entry(failures: 0, last: now, nextAllowed: now)
        e.failures += 1
        e.last = now
        let over = e.failures - Self.free
        let wait: Duration = over < 0 ? .zero : min(Self.maxDelay, .seconds(1 << min(over, 10)))
        e.nextAllowed = now + wait
        entries[address] = e
        return (e.failures, wait)
    }

    mutating func succeeded(_ address: String) {
        entries[address] = nil
    }
}
