internal import CCrypto

/// HMAC-SHA256 through libcrypto, and the comparison of secrets in constant time. What signs
/// share links and webhook bodies (reference: Share links, QR codes; Notifications).
public enum HMAC {
    /// The 32-byte HMAC-SHA256 of `message` under `key`.
    public static func sha256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let made = key.withUnsafeBytes { k in
            message.withUnsafeBufferPointer { m in
                // libcrypto reads a NULL key as "no key given": a one-byte buffer stands in for an empty one.
                CCrypto.HMAC(EVP_sha256(), k.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(key.count),
                             m.baseAddress, m.count, &out, &length)
            }
        }
        precondition(made != nil && length == 32, "libcrypto cannot make an HMAC-SHA256")
        return out
    }

    /// The HMAC-SHA256 as 64 lowercase hex digits.
    public static func sha256Hex(key: [UInt8], message: [UInt8]) -> String {
        hex(sha256(key: key, message: message))
    }

    /// Lowercase hex digits of `bytes`.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether `a` and `b` are the same bytes, in a time that depends on their length alone
    /// (`CRYPTO_memcmp`): how long a refusal takes tells a guesser nothing of how close they were.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 } }
    }
}
