import Batches
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
/// Where the held lock's own times do not reach the server while it is open (`rclone mount`
/// without its file cache opens the lock as a writer, and keeps the time a writer sets pending
/// until it is closed), the lease is renewed in `.work/<batch-id>/lease` too: a small file of
/// its own, written and closed at each renewal (rclone uploads it then), whose size and time the
/// other machines' looks count with the lock's.
///
/// Two daemons — on one machine or several — never work on one batch.
public final class BatchLock: Sendable {
    let file: FileDescriptor
    /// The batch folder whose lock this is.
    public let folder: String
    /// The host whose lease on the batch ran out when this lock was taken (a takeover), if any.
    public let takenFrom: String?
    /// True when the lease is also renewed in the lease file (the held lock cannot be read
    /// through: a writer whose times wait for its close, `rclone mount` without its file cache).
    let renewsByFile: Bool
    /// True once the lock is let go or its folder is being removed: no lease file is written
    /// any more (held while one is written, so none is half-written when it turns true).
    private let retired = Mutex<Bool>(false)
    /// The service's locks this one is among (its lease renewed with theirs).
    public let locks: BatchLocks
    /// Appends to the batch's journals, one at a time: the batch folder's own lock, never one
    /// for the process (a share that hangs in `fsync` holds up its own batches alone).
    let appends = AppendLock()

    init(file: FileDescriptor, folder: String, locks: BatchLocks, takenFrom: String? = nil, renewsByFile: Bool = false) {
        self.file = file
        self.folder = folder
        self.locks = locks
        self.takenFrom = takenFrom
        self.renewsByFile = renewsByFile
    }

    public static let fileName = FileName("lock")
    /// The lease file, beside the lock (written only where `renewsByFile`).
    public static let leaseFileName = FileName("lease")

    /// The owner's lease: how often it is renewed, and after how long without a renewal a
    /// batch held from another machine is taken.
    public enum Lease {
        public static let renewal = Duration.seconds(10)
        public static let timeout = Duration.seconds(60)
    }

    /// How long `BatchLocks.takeOver` asks again for a lock found held: far longer than a look
    /// holds it.
    public static let heldForAnInstant = Duration.seconds(2)

    /// This process's words in the lock files it writes (its host, boot and pid): what the
    /// cluster's database records with the open batches it holds.
    public static var ownerText: String { String(decoding: Owner.current.bytes, as: UTF8.self) }

    /// How `fence` ended.
    public enum Fence: Sendable, Equatable {
        /// The lock file says these words now (this process's, with a fence line of its own).
        case written(String)
        /// The lock file says something else than expected: another process took the batch.
        case saysAnother
        /// It could not be read or written (the share), in words.
        case failed(String)
    }

    /// Writes this process's words into the lock file of the batch folder at `path` again, with a
    /// fence line of their own (`fence=<uuid>`), if it still says `expected` — what the cluster's
    /// database recorded for the batch this process holds. A host that adopts a batch takes its
    /// lock only while the file says the recorded words (`takeOver`): once fenced, none does, and
    /// the holder cut off from the database may go on writing into its batch alone. The lock
    /// itself stays held by this process (the file is opened again, not locked again).
    public static func fence(_ path: String, from expected: String) -> Fence {
        do throws(SystemError) {
            let folder = try Directory(path)
            guard let file = openLockFile(in: folder) else { return .failed("cannot open the lock of \(path)") }
            let said = try file.readAll()
            guard String(decoding: said, as: UTF8.self) == expected else { return .saysAnother }
            let words = Owner.current.bytes + Array("fence=\(UUID().uuidString.lowercased())\n".utf8)
            do {
                try file.replaceContents(with: words)
            } catch where error.code == EBADF || error.code == EINVAL {
                let writer = try folder.open(fileName, .write, [.truncate, .noFollow])
                try writer.write(words)
                try writer.closeReporting()
            }
            try file.closeReporting()
            return .written(String(decoding: words, as: UTF8.self))
        } catch {
            return .failed("\(error)")
        }
    }

    /// The lock file, opened to read and write; or only to read where an existing file cannot be
    /// opened to write without truncating it (`rclone mount` without its file cache: `EPERM`) —
    /// `flock`, the owner's words and the lease's `touch` all work on it.
    static func openLockFile(in folder: Directory) -> FileDescriptor? {
        do throws(SystemError) {
            return try folder.open(fileName, .readWrite, [.create, .noFollow], permissions: 0o600)
        } catch where error.code == EPERM {
            return try? folder.open(fileName, .read, [.create, .noFollow], permissions: 0o600)
        } catch {
            return nil
        }
    }

    /// Writes this process as the owner into the lock file `file` (through a second open that
    /// truncates it, where `file` is open only to read).
    static func writeOwner(_ file: FileDescriptor, in folder: Directory) throws(SystemError) {
        do {
            try file.replaceContents(with: Owner.current.bytes)
        } catch where error.code == EBADF || error.code == EINVAL {
            try folder.open(fileName, .write, [.truncate, .noFollow]).write(Owner.current.bytes)
        }
    }

    /// Writes this process as the owner into `folder`'s lock file, made if missing, through an
    /// open of its own that is closed at once: where a client sends a file's data to the server
    /// only when it is closed (`rclone mount` without its file cache), the lock then says who
    /// holds it to other machines while it is held open.
    static func writeOwnerFile(in folder: Directory) throws(SystemError) {
        let file = try folder.open(fileName, .write, [.create, .truncate, .noFollow], permissions: 0o600)
        try file.write(Owner.current.bytes)
        try file.closeReporting()
    }

    deinit { locks.forget(self) }

    /// Touches the lock file; and, where its times wait for its close (`renewsByFile`), writes
    /// the lease file beside it — never while the folder is let go (a claim renaming it, which
    /// must go with no file in it on rclone), nor in a staging `.new-` folder, nor once retired.
    /// - Returns: why the renewal failed, when the one before did not (said once per outage:
    ///   unrenewed for `Lease.timeout`, the batch may be taken over by another machine).
    func renew() -> SystemError? {
        let failure = renewing()
        return failed.withLock { failed in
            defer { failed = failure != nil }
            return failed ? nil : failure
        }
    }

    /// The last renewal failed.
    private let failed = Mutex(false)

    /// The renewal itself: the touch, and the lease file where there is one (each tried even
    /// when the other fails: where the lock's times do not reach the server, the lease file is
    /// what renews). The lease file's failure is the one said, when both fail.
    private func renewing() -> SystemError? {
        var failure: SystemError?
        do throws(SystemError) {
            try file.touch()
        } catch {
            failure = error
        }
        guard renewsByFile else { return failure }
        return retired.withLock { retired -> SystemError? in
            guard !retired, !locks.isLetGo(folder), let last = FilePath(folder).lastComponent,
                  !last.escaped.hasPrefix(".") else { return failure }
            do throws(SystemError) {
                try Self.writeLeaseFile(in: try Directory(folder))
                return nil
            } catch {
                return error
            }
        }
    }

    /// Writes the lease file in `folder` through an open of its own, closed at once (where a
    /// client sends a file to the server only when it is closed, the renewal reaches it then).
    static func writeLeaseFile(in folder: Directory) throws(SystemError) {
        let file = try folder.open(leaseFileName, .write, [.create, .truncate, .noFollow], permissions: 0o600)
        try file.write(Owner.current.bytes + Array("renewed=\(Int(Date().timeIntervalSince1970))\n".utf8))
        try file.closeReporting()
    }

    /// Stops the lease file's renewals (waits for one being written).
    func retire() {
        retired.withLock { $0 = true }
    }

    /// What a look sees of a lease: the lock file's size and time, and the lease file's (nil where
    /// there is none: the holder renews the lock alone).
    struct Stamp: Equatable {
        var lock: FileStamp
        var lease: FileStamp?
    }

    /// The stamp of the lease of `folder`, whose lock file's status (asked of the server) is `lock`.
    static func stamp(_ lock: FileStatus, in folder: Directory) -> Stamp {
        let lease = (try? folder.freshStatus(of: leaseFileName)).flatMap { $0 }
        return Stamp(lock: FileStamp(lock), lease: lease.map { FileStamp($0) })
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
            let name = gethostname(&buffer, buffer.count) == 0
                ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
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

    /// A batch held from another machine, as this process sees its lease.
    public struct ForeignLease: Sendable, Equatable {
        /// The batch folder.
        public var folder: String
        /// The holder's host name (without its machine id).
        public var host: String
        /// When this process first saw the lock file as it is now (its last renewal, within a look).
        public var unchanged: Date
        /// When the batch can be taken if the lease is not renewed by then (this process's clock).
        public var expires: ContinuousClock.Instant
        /// The same, on the wall clock (for people).
        public var expiresAt: Date

        /// True once the holder has missed two renewals: its host stopped answering (or was cut
        /// off), and the batch waits to be taken over.
        public var isStale: Bool { Date().timeIntervalSince(unchanged) >= Double((Lease.renewal * 2) / .milliseconds(1)) / 1000 }

        /// For STATUS.txt and `status`: "Batch 20261201-101500-3f2a of host-b waits to be taken
        /// over: its host stopped renewing its lease at 10:15:42; taken over at about 10:16:42
        /// unless it answers."
        public var words: String {
            let id = folder.split(separator: "/").last.map(String.init) ?? folder
            return "Batch \(id) of \(host) waits to be taken over: its host stopped renewing its lease at \(HumanTime.words(unchanged)); taken over at about \(HumanTime.words(expiresAt)) unless it answers."
        }
    }

    /// What a look at a batch folder's lock finds.
    enum Look {
        /// Held from another machine: its lease as it stands.
        case foreign(ForeignLease)
        /// Nobody holds it: written under this kernel and not locked (its owner died, or a share
        /// client brought a removed batch folder back: `rclone mount`'s cache uploads a lock a
        /// folder rename left pending after the folder was removed), or written by this host
        /// in an earlier boot. Recovery takes it at once.
        case orphaned
        /// Held by a live process of this machine, or gone.
        case held
    }

    /// The leases of one hot folder's batches, looked at again (`Recovery.leases`).
    public struct LeaseLook: Sendable {
        /// Batches held from other machines, oldest first.
        public var leases: [ForeignLease] = []
        /// Batch folders nobody holds (`Look.orphaned`).
        public var orphaned: [String] = []

        /// True when recovery should run now: a lease ran out, or a batch lies unheld.
        public var isDue: Bool { !orphaned.isEmpty || leases.contains { $0.expires <= .now } }
    }

    /// Lets the lock go now (it is also let go when the value is dropped).
    public func release() {
        retire()
        file.close()
    }
}
