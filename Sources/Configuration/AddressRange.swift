import Glibc

/// An IP address, or a network of them (`10.0.0.0/8`, `fd00::/8`), as the config names trusted
/// proxies. IPv4 addresses also match in their IPv6-mapped form (`::ffff:127.0.0.1`), as a
/// dual-stack socket shows them.
public struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    /// The network's bytes (4 for IPv4, 16 for IPv6) and how many leading bits must match.
    private let bytes: [UInt8]
    private let bits: Int
    public let description: String

    /// `nil` for text that is no address (`localhost`, `10.0.0.0/33`).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = Self.parse(String(parts[0])) else { return nil }
        let width = address.count * 8
        if parts.count == 2 {
            guard let n = Int(parts[1]), (0...width).contains(n) else { return nil }
            bits = n
        } else {
            bits = width
        }
        bytes = address
        description = text
    }

    /// Whether `address` (text, as a peer's address is shown) lies in the range.
    public func contains(_ address: String) -> Bool {
        guard var other = Self.parse(address) else { return false }
        // An IPv4 peer on a dual-stack socket: ::ffff:a.b.c.d.
        if other.count == 16, bytes.count == 4, other.prefix(12).elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]) {
            other = Array(other.suffix(4))
        }
        guard other.count == bytes.count else { return false }
        for i in 0..<bytes.count {
            let left = bits - i * 8
            if left <= 0 { return true }
            let mask: UInt8 = left >= 8 ? 0xFF : ~(0xFF >> UInt8(left))
            if bytes[i] & mask != other[i] & mask { return false }
        }
        return true
    }

    /// The 4 or 16 bytes of an IPv4 or IPv6 address.
    static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}
