import Foundation
import Sharing
import System
import Testing

/// A hot folder's share store on a real folder: what it writes, reads back, and what two
/// writers at once leave.
@Suite struct ShareStoreTests {
    let now = Date(timeIntervalSince1970: 1_790_000_000)

    @Test func aShareIsMadeFoundListedAndRevoked() throws {
        let root = try TemporaryFolder.make("share-store")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let store = ShareStore(root: root)
        #expect(try store.key() == nil)
        #expect(try store.all().isEmpty)
        let (share, token) = try store.make(batch: "20261129-150405-3f2a", expires: now + 86_400, password: "$y$hash",
                                            by: "anna", now: now)
        #expect(share.batch == "20261129-150405-3f2a" && share.by == "anna" && share.password == "$y$hash")
        #expect(share.expires == now + 86_400 && share.created == now)
        // The folder and the key are the daemon's alone.
        #expect(try Files.status(root + "/.work/shares")?.permissions == 0o700)
        #expect(try Files.status(root + "/.work/shares/key")?.permissions == 0o600)
        #expect(try store.share(named: share.name) == share)
        #expect(try store.find(token) == .signed(try #require(share.token), share))
        #expect(try store.all() == [share])

        let second = try store.make(batch: "20261129-160000-0001", expires: now + 60, by: "root (photofinish share)", now: now + 1)
        #expect(try store.all().map(\.name) == [share.name, second.share.name])

        let revoked = try store.revoke(named: share.name, by: "anna", at: now + 10)
        #expect(revoked.revoked == Share.Revocation(at: now + 10, by: "anna"))
        // Revoked twice: the first revocation stays.
        #expect(try store.revoke(named: share.name, by: "carl", at: now + 20).revoked?.by == "anna")
        #expect(try store.share(named: share.name)?.revoked?.at == now + 10)
        #expect(throws: ShareError.self) { try store.revoke(named: String(repeating: "0", count: 32), by: "anna") }

        // Another folder's store does not know the token.
        let other = ShareStore(root: try TemporaryFolder.make("share-store-other"))
        defer { try? FileManager.default.removeItem(atPath: other.folder) }
        _ = try other.keyMadeIfMissing()
        #expect(try other.find(token) == .notOurs)
        #expect(try store.find(String(token.reversed())) == .notOurs)
    }

    @Test func aBatchsOwnLinkIsMadeOnce() throws {
        let root = try TemporaryFolder.make("share-batch-link")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let store = ShareStore(root: root)
        let first = try store.batchLink(batch: "20261129-150405-3f2a", expires: now + 30 * 86_400, now: now)
        // Asked again later, with another end (the config changed): the same link.
        let again = try store.batchLink(batch: "20261129-150405-3f2a", expires: now + 7 * 86_400, now: now + 5)
        #expect(again.token == first.token && again.share == first.share)
        #expect(first.share.by == ShareStore.batchLinkMaker)
        // A store on another host, over the same folder (a cluster), makes the same link.
        #expect(try ShareStore(root: root + "/").batchLink(batch: "20261129-150405-3f2a", expires: now).token == first.token)
        #expect(try store.batchLink(batch: "20261129-150405-3f2b", expires: now + 60, now: now).token != first.token)
    }

    /// Openings are appended whole by any number of writers at once, while the share is revoked:
    /// none is lost and the revocation stays.
    @Test func openingsAndARevocationAtOnceLoseNothing() throws {
        let root = try TemporaryFolder.make("share-openings")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let store = ShareStore(root: root)
        let (share, _) = try store.make(batch: "20261129-150405-3f2a", expires: now + 60, by: "anna", now: now)
        DispatchQueue.concurrentPerform(iterations: 8) { writer in
            if writer == 0 { _ = try? store.revoke(named: share.name, by: "anna", at: now) }
            for i in 0..<50 {
                try? store.record(Opening(at: now + Double(i), what: .opened, address: "203.0.113.\(writer)",
                                          agent: String(repeating: "Mozilla ", count: 40)), of: share.name)
            }
        }
        let openings = try store.openings(of: share.name)
        #expect(openings.count == 400)
        #expect(Set(openings.map(\.address)).count == 8)
        #expect(openings.allSatisfy { $0.agent?.count == 160 })
        #expect(try store.share(named: share.name)?.revoked != nil)
        #expect(try Files.status(root + "/.work/shares/\(share.name).openings")?.permissions == 0o600)
    }

    @Test func twoStoresMakingTheKeyAtOnceAgree() throws {
        let root = try TemporaryFolder.make("share-key-race")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let keys = Locked<[ShareKey]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            if let key = try? ShareStore(root: root).keyMadeIfMissing() { keys.update { $0.append(key) } }
        }
        let made = keys.value
        #expect(made.count == 8 && Set(made.map(\.bytes)).count == 1)
        // No temporary file left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/.work/shares") == ["key"])
    }

    @Test func aBrokenStoreSaysWhichFileAndWhy() throws {
        let root = try TemporaryFolder.make("share-broken")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let store = ShareStore(root: root)
        try FileManager.default.createDirectory(atPath: store.folder, withIntermediateDirectories: true)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: store.folder + "/key"))
        do {
            _ = try store.key()
            Issue.record("a 3-byte key was read")
        } catch {
            #expect(error.code == .unreadable && error.message.contains("/key holds 3 bytes"))
        }
        try FileManager.default.removeItem(atPath: store.folder + "/key")
        let name = String(repeating: "a", count: 32)
        try Data("{ not json".utf8).write(to: URL(fileURLWithPath: store.folder + "/\(name).json"))
        #expect(throws: ShareError.self) { try store.all() }
        #expect(try store.share(named: "../../etc/passwd") == nil)
    }

    @Test func theSharesOfARemovedBatchGo() throws {
        let root = try TemporaryFolder.make("share-remove")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let store = ShareStore(root: root)
        let a = try store.make(batch: "20261129-150405-3f2a", expires: now + 60, by: "anna", now: now)
        let b = try store.make(batch: "20261129-150405-3f2a", expires: now + 60, by: "anna", now: now)
        let kept = try store.make(batch: "20261129-160000-0001", expires: now + 60, by: "anna", now: now)
        try store.record(Opening(at: now, what: .zip, address: "::1"), of: a.share.name)
        #expect(try store.removeShares(of: "20261129-150405-3f2a") == 2)
        #expect(try store.all() == [kept.share])
        #expect(try store.find(b.token) == .signed(try #require(b.share.token), nil))
        #expect(try store.openings(of: a.share.name).isEmpty)
    }
}
