import Foundation

/// Failed logins slowed per key (an address, or a login name): after `free` failures in a row,
/// each next attempt must wait twice as long as the one before (1 s, 2 s, 4 s … at most
/// `maxDelay`); an attempt inside the wait is refused without looking at the password. A
/// success clears the key; a key quiet for `forgetAfter` is forgotten.
///
/// Bounded: at most `limit` keys. When full, the forgotten ones go, then the quietest tenth
/// (those whose last failure is the oldest): a flood of made-up addresses costs a fixed amount
/// of memory and evicts nobody's recent failures first. Pure (times are given).
struct LoginThrottle: Sendable {
    struct Entry: Sendable, Equatable {
        var failures: Int
        var last: ContinuousClock.Instant
        var nextAllowed: ContinuousClock.Instant
    }

    static let maxDelay = Duration.seconds(60)
    static let forgetAfter = Duration.seconds(3600)

    /// Failures in a row that wait nothing.
    let free: Int
    /// Keys kept at most.
    let limit: Int
    private(set) var entries: [String: Entry] = [:]

    init(free: Int = 3, limit: Int = 10_000) {
        self.free = free
        self.limit = limit
    }

    /// How long `key` must still wait before it may try, or nil when it may now.
    func wait(for key: String, now: ContinuousClock.Instant) -> Duration? {
        guard let e = entries[key], e.nextAllowed > now else { return nil }
        return e.nextAllowed - now
    }

    /// Records a failed login; returns how many failures in a row and the wait before the next try.
    mutating func failed(_ key: String, now: ContinuousClock.Instant) -> (failures: Int, wait: Duration) {
        var e = entries[key].flatMap { now - $0.last < Self.forgetAfter ? $0 : nil }
            ?? Entry(failures: 0, last: now, nextAllowed: now)
        if entries[key] == nil && entries.count >= limit { trim(now: now) }
        e.failures += 1
        e.last = now
        let over = e.failures - free
        let wait: Duration = over < 0 ? .zero : min(Self.maxDelay, .seconds(1 << min(over, 10)))
        e.nextAllowed = now + wait
        entries[key] = e
        return (e.failures, wait)
    }

    mutating func succeeded(_ key: String) {
        entries[key] = nil
    }

    /// Room for a new key: the forgotten ones go, then the tenth whose last failure is oldest.
    private mutating func trim(now: ContinuousClock.Instant) {
        entries = entries.filter { now - $0.value.last < Self.forgetAfter }
        guard entries.count >= limit else { return }
        let quietest = entries.sorted { $0.value.last < $1.value.last }.prefix(max(1, limit / 10))
        for (key, _) in quietest { entries[key] = nil }
    }
}

/// Who may try a password now (pure: times are given, the caller holds it under one lock).
///
/// - One check at a time per login name and per address: a second attempt for the same name,
///   or from the same address, while one is being checked is refused at once (yescrypt is
///   slow on purpose: four threads checking one account's passwords at once would take four
///   guesses in the time of one, and the throttle would count them only afterwards).
/// - Failures slow the address (after 3, `LoginThrottle`) and the login name (after 10: many
///   addresses guessing one account's password are slowed too, while its owner, who fails
///   now and then, is not).
///
/// Addresses are keyed by what one client holds: an IPv4 address, an IPv6 address's /64 (a
/// client is given a whole /64, and would otherwise have 2⁶⁴ addresses to try from).
struct LoginGuard: Sendable {
    /// Why an attempt may not be checked now.
    enum Refusal: Equatable {
        /// Another attempt for this name or from this address is being checked.
        case busy
        /// Too many failures: wait this long (for the address, or for the name).
        case wait(Duration, account: Bool)
    }

    private(set) var addresses = LoginThrottle(free: 3)
    private(set) var accounts = LoginThrottle(free: 10)
    private var checking: Set<String> = []

    /// May `name` be tried from `address` now? When it may, the check is marked as under way:
    /// `end` it.
    mutating func begin(name: String, address: String, now: ContinuousClock.Instant) -> Refusal? {
        let (a, n) = Self.keys(name: name, address: address)
        if let wait = addresses.wait(for: a, now: now) { return .wait(wait, account: false) }
        if let wait = accounts.wait(for: n, now: now) { return .wait(wait, account: true) }
        guard !checking.contains(a), !checking.contains(n) else { return .busy }
        checking.insert(a)
        checking.insert(n)
        return nil
    }

    /// The check that `begin` allowed is over: `ok` or not. Returns the failures in a row of
    /// the address and the wait before its next try (after a failure).
    @discardableResult
    mutating func end(name: String, address: String, ok: Bool, now: ContinuousClock.Instant) -> (failures: Int, wait: Duration) {
        let (a, n) = Self.keys(name: name, address: address)
        checking.remove(a)
        checking.remove(n)
        guard !ok else {
            addresses.succeeded(a)
            accounts.succeeded(n)
            return (0, .zero)
        }
        let byName = accounts.failed(n, now: now)
        let byAddress = addresses.failed(a, now: now)
        return (byAddress.failures, max(byAddress.wait, byName.wait))
    }

    /// The throttles' keys: `address:` and `user:` apart, so a login name never counts as an address.
    static func keys(name: String, address: String) -> (address: String, name: String) {
        ("address:" + addressKey(address), "user:" + String(name.prefix(64)))
    }

    /// An IPv4 address as it is; an IPv6 address as its /64 (`2001:db8:1:2::/64`).
    static func addressKey(_ address: String) -> String {
        var v6 = in6_addr()
        guard address.contains(":"), inet_pton(AF_INET6, address, &v6) == 1 else { return address }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes.prefix(12).elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]) {
            return bytes.suffix(4).map(String.init).joined(separator: ".")  // IPv4, mapped
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }
}
