import Foundation
import Glibc
import Synchronization
import System

/// `.work/<batch-id>/lock`: who owns a batch. Two things must agree before a process takes a
/// batch (recovery), because a share may not carry locks between machines:
///
/// 1. **`flock`**, held for as long as the owner has the batch. The kernel drops it when its
///    owner dies (even by SIGKILL). On one machine (one kernel) this decides alone.
/// 2. **A lease**, for owners on another machine: the lock file says who holds it
///    (`host`, `boot` — the kernel's boot id —, `pid`), and the owner touches it every
///    `Lease.renewal` (10 s) for as long as it holds it. `flock` on NFS (v3 with lockd, v4) and
///    CIFS reaches every client, but on sshfs and other FUSE shares it stays on one machine;
///    so a batch held from another kernel is taken only once its lock file has not changed for
///    `Lease.timeout` (60 s) of this process's own clock (no clock is compared between
///    machines). One held from this host in an earlier boot is free at once.
///
/// Two daemons — on one machine or several — never work on one batch.
public final class BatchLock: Sendable {
    let file: FileDescriptor

    private init(file: FileDescriptor) {
        self.file = file
    }

    public static let fileName = FileName("lock")

    /// The owner's lease: how often it is renewed, and after how long without a renewal a
    /// batch held from another machine is taken.
    public enum Lease {
        public static let renewal = Duration.seconds(10)
        public static let timeout = Duration.seconds(60)
    }

    /// Takes the lock of the batch folder `folder` without waiting.
    /// - Parameter leaseTimeout: how long a lock held from another machine must stay unrenewed
    ///   (as this process sees it) before it is taken.
    /// - Returns: `nil` when another process holds it (here, or on another machine whose lease
    ///   is still renewed), or when the folder was removed (its owner finished) meanwhile.
    public static func tryAcquire(_ folder: Directory, leaseTimeout: Duration = Lease.timeout) -> BatchLock? {
        guard let file = try? folder.open(fileName, .readWrite, [.create, .noFollow], permissions: 0o600),
              (try? file.tryLock()) == true,
              let st = try? file.status(), st.links > 0 else { return nil }
        let key = folder.path.description
        if let owner = try? file.readAll(), let holder = Owner(Array(owner)), !holder.isThisKernel,
           holder.host != Owner.current.host {
            // Held from another machine: free once its lease stops being renewed.
            guard Observed.unchanged(key, st, for: leaseTimeout) else { return nil }
        }
        Observed.forget(key)
        guard (try? file.replaceContents(with: Owner.current.bytes)) != nil else { return nil }
        let lock = BatchLock(file: file)
        Held.add(lock)
        return lock
    }

    /// Takes the lock of the batch folder at `path`.
    public static func tryAcquire(_ path: String, leaseTimeout: Duration = Lease.timeout) -> BatchLock? {
        guard let folder = try? Directory(path) else { return nil }
        return tryAcquire(folder, leaseTimeout: leaseTimeout)
    }

    deinit { Held.remove(self) }

    /// Renews the lease of every lock this process holds (touches its file), at most once
    /// per `Lease.renewal`: called from the loop that watches (and between files of a long claim).
    public static func renewLeases(now: ContinuousClock.Instant = .now) {
        for lock in Held.due(now: now) { try? lock.file.touch() }
    }

    /// Who holds a lock, as its file says.
    struct Owner: Equatable {
        var host: String
        var boot: String
        var pid: Int32

        static let current = Owner(host: hostName(), boot: bootID(), pid: getpid())

        /// This machine: its host name and `/etc/machine-id` (two machines cloned from one
        /// image may share a host name).
        static func hostName() -> String {
            var buffer = [CChar](repeating: 0, count: 256)
            let name = gethostname(&buffer, buffer.count) == 0 ? String(cString: buffer) : "?"
            let machine = (try? Files.read("/etc/machine-id")).flatMap { $0 }.map {
                String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            } ?? "?"
            return name + "/" + machine
        }

        var bytes: [UInt8] { Array("host=\(host)\nboot=\(boot)\npid=\(pid)\n".utf8) }

        /// True when it was written under the running kernel (its `flock` is authoritative).
        var isThisKernel: Bool { boot == Owner.current.boot && host == Owner.current.host }

        init(host: String, boot: String, pid: Int32) {
            self.host = host
            self.boot = boot
            self.pid = pid
        }

        /// Parses a lock file; nil when it says nothing (a lock made before leases: local).
        init?(_ bytes: [UInt8]) {
            var fields: [Substring: Substring] = [:]
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
                guard let eq = line.firstIndex(of: "=") else { continue }
                fields[line[..<eq]] = line[line.index(after: eq)...]
            }
            guard let host = fields["host"], let boot = fields["boot"] else { return nil }
            self.init(host: String(host), boot: String(boot), pid: fields["pid"].flatMap { Int32($0) } ?? 0)
        }

        static func bootID() -> String {
            ((try? Files.read("/proc/sys/kernel/random/boot_id")).flatMap { $0 }.map {
                String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            }) ?? "?"
        }
    }

    /// The locks this process holds, and when each lease was last renewed.
    private enum Held {
        private struct Entry: @unchecked Sendable {
            weak var lock: BatchLock?
            var renewed: ContinuousClock.Instant
        }

        private static let entries = Mutex<[ObjectIdentifier: Entry]>([:])

        static func add(_ lock: BatchLock) {
            entries.withLock { $0[ObjectIdentifier(lock)] = Entry(lock: lock, renewed: .now) }
        }

        static func remove(_ lock: BatchLock) {
            _ = entries.withLock { $0.removeValue(forKey: ObjectIdentifier(lock)) }
        }

        static func due(now: ContinuousClock.Instant) -> [BatchLock] {
            entries.withLock { all in
                var due: [BatchLock] = []
                for (key, entry) in all where now - entry.renewed >= Lease.renewal {
                    guard let lock = entry.lock else { continue }
                    due.append(lock)
                    all[key]?.renewed = now
                }
                return due
            }
        }
    }

    /// Lock files held from other machines, as this process has seen them: when each last
    /// changed (its size and mtime), on this process's clock.
    private enum Observed {
        private static let seen = Mutex<[String: (stamp: FileStamp, since: ContinuousClock.Instant)]>([:])

        /// True once `status` has stayed the same for `timeout` since this process first saw it so.
        static func unchanged(_ key: String, _ status: FileStatus, for timeout: Duration) -> Bool {
            let stamp = FileStamp(status), now = ContinuousClock.now
            return seen.withLock { all in
                guard let last = all[key], last.stamp == stamp else {
                    all[key] = (stamp, now)
                    return timeout <= .zero
                }
                return now - last.since >= timeout
            }
        }

        static func forget(_ key: String) {
            _ = seen.withLock { $0.removeValue(forKey: key) }
        }
    }

    /// Lets the lock go now (it is also let go when the value is dropped).
    public func release() {
        file.close()
    }

    /// Removes the batch folder `path`, whose lock `lock` is (everything in it, the lock last).
    /// On a share a file that is still open cannot really go (NFS renames it `.nfsXXXX`, FUSE
    /// `.fuse_hiddenXXXX`, and the folder is then not empty): so everything else is removed
    /// first, then the lock is let go, then its file and the folder. Should another daemon open
    /// the lock in that instant, the folder stays, empty but for the lock, and its recovery
    /// removes it.
    public static func removeFolder(_ path: some FilePathRepresentable, lock: BatchLock?) throws(SystemError) {
        let fs = path.filePath
        let folder: Directory
        do {
            folder = try Directory(fs)
        } catch where error.code == ENOENT {
            return
        }
        for name in try folder.names() where name != fileName { try folder.removeTree(name) }
        lock?.release()
        try folder.remove(fileName)
        guard let name = fs.lastComponent else { return }
        do {
            try Directory(fs.parent).removeTree(name)
        } catch where error.code == ENOTEMPTY || error.code == EBUSY {
            return
        }
    }

}
