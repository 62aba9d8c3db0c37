import Foundation
import System

/// The secret a hot folder's share links are signed with: 32 random bytes in
/// `.work/shares/key` (0600), made at the first share. It lives in the hot folder, so every host
/// of a cluster that finishes the folder's batches signs and checks the same links; removing it
/// ends every link of the folder at once (reference: Share links, QR codes).
public struct ShareKey: Sendable, Equatable {
    public let bytes: [UInt8]

    public static let fileName = "key"
    static let length = 32

    public init(bytes: [UInt8]) {
        precondition(bytes.count >= 16, "a share key needs at least 16 bytes")
        self.bytes = bytes
    }

    /// A value signed for one purpose with this key (a cookie, a form field), as URL-safe text:
    /// the first 16 bytes of HMAC-SHA256(key, purpose | parts…).
    public func sign(_ purpose: String, _ parts: String...) -> String {
        let message = ([purpose] + parts).joined(separator: "|")
        return Base64URL.encode(Array(HMAC.sha256(key: bytes, message: Array(message.utf8)).prefix(16)))
    }

    /// Whether `value` is what `sign(purpose, parts…)` makes, compared in constant time.
    public func verify(_ value: String, _ purpose: String, _ parts: String...) -> Bool {
        let message = ([purpose] + parts).joined(separator: "|")
        let expected = Array(HMAC.sha256(key: bytes, message: Array(message.utf8)).prefix(16))
        guard let sent = Base64URL.decode(value) else { return false }
        return HMAC.constantTimeEqual(sent, expected)
    }

    /// The key in `folder`, or nil when there is none yet.
    /// - Throws: `ShareError` when the file cannot be read or is not a key.
    static func read(in folder: String) throws(ShareError) -> ShareKey? {
        let path = folder + "/" + fileName
        let bytes: [UInt8]?
        do throws(SystemError) {
            bytes = try Files.read(path)
        } catch {
            throw ShareError(.unreadable, "the share key \(path) cannot be read: \(error.reason)")
        }
        guard let bytes else { return nil }
        guard bytes.count == length else {
            throw ShareError(.unreadable, "the share key \(path) holds \(bytes.count) bytes, not \(length): remove it to make a new one (every link of the hot folder then ends)")
        }
        return ShareKey(bytes: bytes)
    }

    /// The key in `folder`, made (with the folder, 0700) when there is none. Two processes
    /// making it at once agree on one: each writes a temporary file and links it to the key's
    /// name, and the one that finds the name taken reads the other's.
    /// - Throws: `ShareError` when the folder or the file cannot be made or read.
    static func readOrMake(in folder: String) throws(ShareError) -> ShareKey {
        if let key = try read(in: folder) { return key }
        var generator = SystemRandomNumberGenerator()
        let fresh = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let path = folder + "/" + fileName
        let temporary = folder + "/.key-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))"
        do throws(SystemError) {
            try Files.makeDirectories(folder, permissions: 0o700)
            let file = try FileDescriptor.open(temporary, .write, [.create, .exclusive, .noFollow], permissions: 0o600)
            defer { file.close() }
            try file.write(fresh)
            try file.sync()
            do throws(SystemError) {
                try Files.hardLink(temporary, to: path)
                try Files.remove(temporary)
            } catch where error.code == EEXIST {
                // Another process made it first: theirs is the key.
                try Files.remove(temporary)
            } catch where [EPERM, EIO, ENOTSUP, EOPNOTSUPP, ENOSYS].contains(error.code) {
                // No hard links on this file system (rclone mount): a rename, which a second
                // process making the key at the same instant could overwrite.
                try AtomicFile.write(fresh, to: path)
                try Files.remove(temporary)
            }
            try Files.syncDirectory(folder)
        } catch {
            try? Files.remove(temporary)
            throw ShareError(.unwritable, "cannot make the share key \(path): \(error.reason)")
        }
        guard let key = try read(in: folder) else {
            throw ShareError(.unwritable, "the share key \(path) vanished as it was made")
        }
        return key
    }
}
