/// SHA-256 (FIPS 180-4), written here because Foundation on Linux has no CryptoKit.
///
/// Used for the report: the template's hash and every source photo's hash. Streaming,
/// so a large photo is hashed while it is read rather than held twice.
///
/// ```swift
/// var hash = SHA256()
/// hash.update(chunk1)
/// hash.update(chunk2)
/// let hex = hash.finalize()
/// ```
public struct SHA256: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a,
         0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19)
    /// Bytes not yet hashed because they do not fill a 64-byte block.
    private var pending: [UInt8] = []
    private var totalBytes: UInt64 = 0

    /// A fresh hash.
    public init() {
        pending.reserveCapacity(64)
    }

    /// The hex SHA-256 of `bytes` (64 lowercase hex digits).
    public static func hex(of bytes: [UInt8]) -> String {
        var hash = SHA256()
        hash.update(bytes)
        return hash.finalize()
    }

    /// Adds `bytes` to the message.
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { update($0) }
    }

    /// Adds raw bytes to the message, e.g. from `Data.withUnsafeBytes` while reading a file.
    public mutating func update(_ buffer: UnsafeRawBufferPointer) {
        update(buffer.assumingMemoryBound(to: UInt8.self))
    }

    /// Adds the bytes in `buffer` to the message (no copy of whole blocks).
    public mutating func update(_ buffer: UnsafeBufferPointer<UInt8>) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        totalBytes &+= UInt64(buffer.count)
        var offset = 0
        if !pending.isEmpty {
            let take = min(64 - pending.count, buffer.count)
            pending.append(contentsOf: UnsafeBufferPointer(start: base, count: take))
            offset = take
            if pending.count < 64 { return }
            pending.withUnsafeBufferPointer { compress($0.baseAddress!, blocks: 1) }
            pending.removeAll(keepingCapacity: true)
        }
        let blocks = (buffer.count - offset) / 64
        if blocks > 0 {
            compress(base + offset, blocks: blocks)
            offset += blocks * 64
        }
        if offset < buffer.count {
            pending.append(contentsOf: UnsafeBufferPointer(start: base + offset, count: buffer.count - offset))
        }
    }

    /// Pads the message, and returns its hash as 64 lowercase hex digits. Call once: the
    /// value is spent afterwards (`consuming`).
    public consuming func finalize() -> String {
        let bitLength = totalBytes &* 8
        var tail = pending
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) {
            tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        tail.withUnsafeBufferPointer { compress($0.baseAddress!, blocks: tail.count / 64) }
        let words = [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7]
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for word in words {
            for shift in stride(from: 28, through: 0, by: -4) {
                out.append(digits[Int((word >> UInt32(shift)) & 0xf)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    /// Runs the compression function over `blocks` consecutive 64-byte blocks at `data`.
    /// Raw pointers and a fixed-size tuple state keep this loop free of array bounds
    /// checks and copy-on-write, which is what makes hashing a 12 MB photo cheap.
    private mutating func compress(_ data: UnsafePointer<UInt8>, blocks: Int) {
        var (h0, h1, h2, h3, h4, h5, h6, h7) = state
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            Self.k.withUnsafeBufferPointer { k in
                for block in 0..<blocks {
                    let p = data + block * 64
                    for i in 0..<16 {
                        w[i] = UInt32(p[4 * i]) << 24 | UInt32(p[4 * i + 1]) << 16
                            | UInt32(p[4 * i + 2]) << 8 | UInt32(p[4 * i + 3])
                    }
                    for i in 16..<64 {
                        let a = w[i - 15], b = w[i - 2]
                        let s0 = a.rotr(7) ^ a.rotr(18) ^ (a >> 3)
                        let s1 = b.rotr(17) ^ b.rotr(19) ^ (b >> 10)
                        w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
                    }
                    var a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7
                    for i in 0..<64 {
                        let s1 = e.rotr(6) ^ e.rotr(11) ^ e.rotr(25)
                        let ch = (e & f) ^ (~e & g)
                        let t1 = h &+ s1 &+ ch &+ k[i] &+ w[i]
                        let s0 = a.rotr(2) ^ a.rotr(13) ^ a.rotr(22)
                        let maj = (a & b) ^ (a & c) ^ (b & c)
                        let t2 = s0 &+ maj
                        h = g; g = f; f = e; e = d &+ t1
                        d = c; c = b; b = a; a = t1 &+ t2
                    }
                    h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d
                    h4 &+= e; h5 &+= f; h6 &+= g; h7 &+= h
                }
            }
        }
        state = (h0, h1, h2, h3, h4, h5, h6, h7)
    }
}

extension UInt32 {
    @inline(__always)
    fileprivate func rotr(_ n: UInt32) -> UInt32 { (self >> n) | (self << (32 - n)) }
}
