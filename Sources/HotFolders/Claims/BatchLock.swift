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

    private init(file: FileDescriptor, folder: String, takenFrom: String? = nil, renewsByFile: Bool = false) {
        self.file = file
        self.folder = folder
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

    /// Takes the lock of the batch folder `folder` without waiting.
    /// - Parameter leaseTimeout: how long a lock held from another machine must stay unrenewed
    ///   (as this process sees it) before it is taken.
    /// - Returns: `nil` when another process holds it (here, or on another machine whose lease
    ///   is still renewed), or when the folder was removed (its owner finished) meanwhile, or
    ///   when this process owns the batch while it lets its lock go for an instant (`letGo`).
    public static func tryAcquire(_ folder: Directory, leaseTimeout: Duration = Lease.timeout) -> BatchLock? {
        guard !LetGo.contains(folder.path.description) else { return nil }
        return acquire(folder, leaseTimeout: leaseTimeout)
    }

    /// `tryAcquire`, also of a folder this process lets go of (`letGo`: its own claim taking
    /// the lock again).
    static func acquire(_ folder: Directory, leaseTimeout: Duration = Lease.timeout) -> BatchLock? {
        // The lock file's size and time asked of the server (a share client's cached
        // attributes may be many seconds old: the lease would look unrenewed too soon or too late).
        guard let file = openLockFile(in: folder), (try? file.tryLock()) == true,
              let st = try? file.freshStatus(), st.links > 0 else { return nil }
        let key = folder.path.description
        var takenFrom: String?
        // The holder as the file says, or (where this open reads nothing: `rclone mount` without
        // its file cache, the lock opened again to take it) as the last look at it found it.
        let read = try? Array(file.readAll())
        let said = read.flatMap { Owner($0) }
        let foreignHost = said.map { !$0.isThisKernel && $0.host != Owner.current.host ? $0.host : nil }
            ?? Observed.host(key)
        if let host = foreignHost {
            // Held from another machine: free once its lease stops being renewed.
            guard Observed.unchanged(key, stamp(st, in: folder), for: leaseTimeout, host: host) else { return nil }
            takenFrom = String(host.prefix { $0 != "/" })
        }
        Observed.forget(key)
        guard (try? writeOwner(file, in: folder)) != nil else { return nil }
        let lock = BatchLock(file: file, folder: key, takenFrom: takenFrom, renewsByFile: read == nil)
        Held.add(lock)
        return lock
    }

    /// This process's words in the lock files it writes (its host, boot and pid): what the
    /// cluster's database records with the open batches it holds.
    public static var ownerText: String { String(decoding: Owner.current.bytes, as: UTF8.self) }

    /// Takes the lock of the batch folder at `path` from a holder the cluster's database proved
    /// gone (its claimer session ended; `ClaimerRoles`), without waiting for its lease: only
    /// while the lock file still says `expected` — the holder's words, as it wrote them (a
    /// holder that came back and took its batch up again, or another host that took it over
    /// by the lease, has written its own) — and no process of this machine holds it.
    ///
    /// Every host's recovery takes each batch's `flock` for an instant to look at it (the lease
    /// of a batch held from elsewhere is read under it): a lock found held is asked again for up
    /// to `heldForAnInstant` before it counts as another's.
    public static func takeOver(_ path: String, from expected: String) -> BatchLock? {
        guard let folder = try? Directory(path) else { return nil }
        let key = folder.path.description
        guard !LetGo.contains(key), let file = openLockFile(in: folder), lockSoon(file),
              let st = try? file.freshStatus(), st.links > 0, let said = try? file.readAll(),
              String(decoding: Array(said), as: UTF8.self) == expected else { return nil }
        Observed.forget(key)
        guard (try? writeOwner(file, in: folder)) != nil else { return nil }
        let from = Owner(Array(said)).map { String($0.host.prefix { $0 != "/" }) }
        let lock = BatchLock(file: file, folder: key, takenFrom: from)
        Held.add(lock)
        return lock
    }

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

    /// How long `takeOver` asks again for a lock found held: far longer than a look holds it.
    public static let heldForAnInstant = Duration.seconds(2)

    /// Takes `file`'s `flock`, asking again every 20 ms for `heldForAnInstant` while it is held.
    private static func lockSoon(_ file: FileDescriptor) -> Bool {
        let deadline = ContinuousClock.now + heldForAnInstant
        while true {
            guard let taken = try? file.tryLock() else { return false }
            if taken { return true }
            guard ContinuousClock.now < deadline else { return false }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// The lock file, opened to read and write; or only to read where an existing file cannot be
    /// opened to write without truncating it (`rclone mount` without its file cache: `EPERM`) —
    /// `flock`, the owner's words and the lease's `touch` all work on it.
    private static func openLockFile(in folder: Directory) -> FileDescriptor? {
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
    private static func writeOwner(_ file: FileDescriptor, in folder: Directory) throws(SystemError) {
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

    /// Takes the lock of the batch folder at `path`.
    public static func tryAcquire(_ path: String, leaseTimeout: Duration = Lease.timeout) -> BatchLock? {
        guard let folder = try? Directory(path) else { return nil }
        return tryAcquire(folder, leaseTimeout: leaseTimeout)
    }

    deinit { Held.remove(self) }

    /// Runs `body` with the batch folder at `path` marked as this process's own while its lock
    /// is let go (a claim renaming its folder where an open file cannot be renamed; a finished
    /// batch's folder being removed): no recovery of this process takes it meanwhile.
    static func letGo<T>(_ path: some FilePathRepresentable, _ body: () throws(SystemError) -> T) throws(SystemError) -> T {
        let key = path.filePath.description
        LetGo.insert(key)
        defer { LetGo.remove(key) }
        return try body()
    }

    /// Batch folders this process owns while their lock is let go (`letGo`).
    private enum LetGo {
        private static let paths = Mutex<[String: Int]>([:])
        static func insert(_ path: String) { paths.withLock { $0[path, default: 0] += 1 } }
        static func remove(_ path: String) {
            paths.withLock { all in
                all[path, default: 1] -= 1
                if all[path] == 0 { all[path] = nil }
            }
        }
        static func contains(_ path: String) -> Bool { paths.withLock { $0[path] != nil } }
    }

    /// Renews the lease of every lock this process holds (touches its file), at most once
    /// per `Lease.renewal`: called from the loop that watches (and between files of a long claim).
    public static func renewLeases(now: ContinuousClock.Instant = .now) {
        for lock in Held.due(now: now) { lock.renew() }
    }

    /// Touches the lock file; and, where its times wait for its close (`renewsByFile`), writes
    /// the lease file beside it — never while the folder is let go (a claim renaming it, which
    /// must go with no file in it on rclone), nor in a staging `.new-` folder, nor once retired.
    private func renew() {
        try? file.touch()
        guard renewsByFile else { return }
        retired.withLock { retired in
            guard !retired, !LetGo.contains(folder), let last = FilePath(folder).lastComponent,
                  !last.escaped.hasPrefix("."), let dir = try? Directory(folder) else { return }
            try? Self.writeLeaseFile(in: dir)
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
    private func retire() {
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

        static func contains(_ folder: String) -> Bool {
            entries.withLock { all in all.values.contains { $0.lock?.folder == folder } }
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

    /// The leases of batches held from other machines that this process has looked at, as of its
    /// last look at each. `BatchLock.tryAcquire` (recovery) records them; `lookAgain` renews the
    /// look between recoveries.
    public static var foreignLeases: [ForeignLease] { Observed.all() }

    /// `foreignLeases` of the batch folders in `work` (one hot folder's `.work/`).
    public static func foreignLeases(in work: String) -> [ForeignLease] {
        Observed.all().filter { $0.folder.hasPrefix(work + "/") }
    }

    /// True when this process holds the batch folder at `path` (its lock, or the folder while
    /// its lock is let go for an instant).
    public static func isHeldHere(_ path: some FilePathRepresentable) -> Bool {
        let key = path.filePath.description
        return LetGo.contains(key) || Held.contains(key)
    }

    /// Looks at the lock file of the batch folder `folder` again (its time and size asked of the
    /// server): a lease renewed since the last look starts its timeout afresh.
    /// - Returns: the lease as it stands now, or nil when the folder is gone (its owner finished)
    ///   or no longer held from another machine.
    @discardableResult
    public static func lookAgain(_ folder: String, leaseTimeout: Duration = Lease.timeout) -> ForeignLease? {
        if case .foreign(let lease) = look(folder, leaseTimeout: leaseTimeout) { return lease }
        return nil
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

    /// Looks at the lock file of the batch folder `folder` (its time and size asked of the
    /// server).
    static func look(_ folder: String, leaseTimeout: Duration) -> Look {
        guard let dir = try? Directory(folder), let file = try? dir.open(fileName, .read, [.noFollow]),
              let st = try? file.freshStatus(), st.links > 0, let owner = try? file.readAll() else {
            Observed.forget(folder)
            return .held
        }
        if let holder = Owner(Array(owner)), !holder.isThisKernel {
            guard holder.host != Owner.current.host else {
                Observed.forget(folder)
                return .orphaned
            }
            _ = Observed.unchanged(folder, stamp(st, in: dir), for: leaseTimeout, host: holder.host)
            return Observed.all().first { $0.folder == folder }.map(Look.foreign) ?? .held
        }
        Observed.forget(folder)
        // This kernel's: flock tells (taken for an instant, let go when `file` closes).
        return (try? file.tryLock()) == true ? .orphaned : .held
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

    /// Looks again at the lock of every batch folder in `work` (a hot folder's `.work/`) that
    /// this process does not hold, past the client's caches: batches another machine claimed
    /// since the last look are seen, renewed leases start their timeout afresh, batches gone
    /// are forgotten, and batches nobody holds are found.
    /// - Parameter folders: the batch folders in `work` now (the caller listed it).
    static func lookAgain(in work: String, folders: [String], leaseTimeout: Duration = Lease.timeout) -> LeaseLook {
        let paths = folders.map { work + "/" + $0 }
        Observed.forget(in: work, keeping: Set(paths))
        var result = LeaseLook()
        for path in paths where !isHeldHere(path) {
            switch look(path, leaseTimeout: leaseTimeout) {
            case .foreign(let lease): result.leases.append(lease)
            case .orphaned: result.orphaned.append(path)
            case .held: break
            }
        }
        return result
    }

    /// Lock files held from other machines, as this process has seen them: when each last
    /// changed (its size and mtime), on this process's clock.
    private enum Observed {
        private struct Seen {
            var stamp: Stamp
            var since: ContinuousClock.Instant
            var sinceDate: Date
            var host: String
            var timeout: Duration
        }

        private static let seen = Mutex<[String: Seen]>([:])

        /// True once `stamp` (the lock's, and its lease file's) has stayed the same for `timeout`
        /// since this process first saw it so.
        static func unchanged(_ key: String, _ stamp: Stamp, for timeout: Duration, host: String) -> Bool {
            let now = ContinuousClock.now
            return seen.withLock { all in
                guard let last = all[key], last.stamp == stamp else {
                    all[key] = Seen(stamp: stamp, since: now, sinceDate: Date(), host: host, timeout: timeout)
                    return timeout <= .zero
                }
                all[key]?.timeout = timeout
                return now - last.since >= timeout
            }
        }

        /// The host a look found holding `key`, if one did.
        static func host(_ key: String) -> String? { seen.withLock { $0[key]?.host } }

        static func forget(_ key: String) {
            _ = seen.withLock { $0.removeValue(forKey: key) }
        }

        /// Forgets the batch folders in `work` that are not in `present` (gone: finished or taken).
        static func forget(in work: String, keeping present: Set<String>) {
            seen.withLock { all in
                for key in all.keys where key.hasPrefix(work + "/") && !present.contains(key) { all[key] = nil }
            }
        }

        static func all() -> [ForeignLease] {
            let now = ContinuousClock.now, wall = Date()
            return seen.withLock { all in
                all.map { key, s in
                    let expires = s.since + s.timeout
                    let host = String(s.host.prefix { $0 != "/" })
                    return ForeignLease(folder: key, host: host, unchanged: s.sinceDate, expires: expires,
                                        expiresAt: wall.addingTimeInterval(Double((expires - now) / .milliseconds(1)) / 1000))
                }.sorted { $0.folder < $1.folder }
            }
        }
    }

    /// Lets the lock go now (it is also let go when the value is dropped).
    public func release() {
        retire()
        file.close()
    }

    /// Removes the batch folder `path`, whose lock `lock` is (everything in it, the lock last).
    /// On a share a file that is still open cannot really go (NFS renames it `.nfsXXXX`, FUSE
    /// `.fuse_hiddenXXXX`, and the folder is then not empty): so everything else is removed
    /// first, then the lock is let go, then its file and the folder — this process's own
    /// recovery leaves the folder alone meanwhile (`letGo`). Should another daemon open the
    /// lock in that instant, the folder stays, empty but for the lock, and its recovery removes
    /// it (quietly: there is nothing to roll back).
    public static func removeFolder(_ path: some FilePathRepresentable, lock: BatchLock?) throws(SystemError) {
        let fs = path.filePath
        let folder: Directory
        do {
            folder = try Directory(fs)
        } catch where error.code == ENOENT {
            return
        }
        lock?.retire()
        for name in try folder.names() where name != fileName { try folder.removeTree(name) }
        try letGo(fs) { () throws(SystemError) in
            lock?.release()
            try folder.remove(fileName)
            guard let name = fs.lastComponent else { return }
            do throws(SystemError) {
                try Directory(fs.parent).removeTree(name)
            } catch where error.code == ENOTEMPTY || error.code == EBUSY {
                return
            }
        }
    }

}
