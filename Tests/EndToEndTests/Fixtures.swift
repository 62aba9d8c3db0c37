import Foundation

/// Hostile and special files, built byte by byte.
enum Fixtures {
    /// A TIFF with a DNGVersion tag in IFD0: what every DNG starts with.
    static func minimalDNG() -> [UInt8] {
        var b: [UInt8] = [0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0]
        b += [3, 0]  // three entries
        b += [0x00, 0x01, 3, 0, 1, 0, 0, 0, 0x40, 0, 0, 0]          // ImageWidth 64
        b += [0x01, 0x01, 3, 0, 1, 0, 0, 0, 0x40, 0, 0, 0]          // ImageLength 64
        b += [0x12, 0xC6, 1, 0, 4, 0, 0, 0, 1, 4, 0, 0]             // DNGVersion 1.4.0.0
        b += [0, 0, 0, 0]
        return b + [UInt8](repeating: 0, count: 256)
    }

    /// A PNG whose header claims a huge size, with no pixel data behind it.
    static func pngHeaderBomb(width: UInt32, height: UInt32) -> [UInt8] {
        func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
        let ihdr: [UInt8] = Array("IHDR".utf8) + be32(width) + be32(height) + [8, 2, 0, 0, 0]
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        out += be32(13) + ihdr + be32(crc32(ihdr))
        let iend: [UInt8] = Array("IEND".utf8)
        out += be32(0) + iend + be32(crc32(iend))
        return out
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            c ^= UInt32(b)
            for _ in 0..<8 { c = (c & 1) != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        }
        return c ^ 0xFFFF_FFFF
    }

    /// SHA-256 by the system's sha256sum, independent of our own implementation.
    static func sha256Hex(_ bytes: [UInt8]) -> String {
        let path = TemporaryFolder.path("sha")
        FileManager.default.createFile(atPath: path, contents: Data(bytes))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        p.arguments = [path]
        let pipe = Pipe()
        p.standardOutput = pipe
        try? p.run()
        let out = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(String(decoding: out, as: UTF8.self).prefix(64))
    }
}
