internal import CLibcrypt
import Foundation

/// Password hashes as Debian's own `/etc/shadow` has them: yescrypt (`$y$…`), made and
/// checked with libxcrypt's `crypt_r` (its scratch area is 32 KiB: allocated per call, never
/// shared between threads).
public enum PasswordHash {
    /// Why a password was refused for a new hash.
    public struct Refused: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// The fewest characters a new password may have.
    public static let minimumLength = 8

    /// A new yescrypt hash of `password` with a fresh random salt (libxcrypt's default cost).
    /// - Throws: `Refused` for a password that is too short or holds a NUL; or when libcrypt
    ///   cannot make a salt (no entropy source).
    public static func make(_ password: String) throws(Refused) -> String {
        guard password.count >= minimumLength else {
            throw Refused(description: "a password needs at least \(minimumLength) characters")
        }
        guard !password.utf8.contains(0) else { throw Refused(description: "a password cannot hold a NUL byte") }
        var salt = [CChar](repeating: 0, count: Int(CRYPT_GENSALT_OUTPUT_SIZE))
        // A nil random source: libcrypt takes its own from the kernel (getrandom).
        guard crypt_gensalt_rn("$y$", 0, nil, 0, &salt, Int32(salt.count)) != nil else {
            throw Refused(description: "libcrypt cannot make a yescrypt salt: \(String(cString: strerror(errno)))")
        }
        guard let hash = run(password, setting: salt), hash.hasPrefix("$y$") else {
            throw Refused(description: "libcrypt cannot make a yescrypt hash")
        }
        return hash
    }

    /// Whether `password` is the one `hash` was made from (compared in constant time).
    public static func verify(_ password: String, against hash: String) -> Bool {
        guard !hash.isEmpty, !hash.hasPrefix("*"), !hash.hasPrefix("!"), !password.utf8.contains(0),
              let made = run(password, setting: Array(hash.utf8CString)) else { return false }
        return constantTimeEqual(Array(made.utf8), Array(hash.utf8))
    }

    /// Spends the time of one verification, for a login name that has no hash (a missing user
    /// answers no faster than a wrong password).
    public static func verifyNothing(_ password: String) {
        _ = verify(password, against: decoy)
    }

    /// Whether `hash` looks like a hash libcrypt can check (`crypt_checksalt`).
    public static func isUsable(_ hash: String) -> Bool {
        crypt_checksalt(hash) == CRYPT_SALT_OK
    }

    /// A yescrypt hash of a random password nobody knows (made once, at first use).
    private static let decoy: String = {
        let random = (0..<24).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
        return (try? make(random)) ?? "*"
    }()

    private static func run(_ password: String, setting: [CChar]) -> String? {
        let data = UnsafeMutablePointer<crypt_data>.allocate(capacity: 1)
        defer {
            // The scratch area held the password: wipe it before it goes back to malloc.
            memset(data, 0, MemoryLayout<crypt_data>.size)
            data.deallocate()
        }
        memset(data, 0, MemoryLayout<crypt_data>.size)
        guard let out = crypt_r(password, setting, data) else { return nil }
        let text = String(cString: out)
        return text.hasPrefix("*") ? nil : text
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}
