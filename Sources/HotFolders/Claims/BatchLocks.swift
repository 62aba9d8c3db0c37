import Batches
import Foundation
import Glibc
import Synchronization
import System

/// The batch locks one service holds, and what it knows of the others' (docs/architecture.md,
/// Locks): the locks it holds (their leases renewed together), the batch folders it lets go of
/// for an instant (its own recovery leaves them alone meanwhile), the leases of batches held
/// from other machines as it has seen them, and the batches it gave back when a share failed
/// under them. One per service instance, never one per process: two services in one test
/// process, or a tool beside a daemon, each keep their own. Each registry has its own lock.
public final class BatchLocks: Sendable {
    /// Batch folders this service owns while their lock is let go (`letGo`), and how many times.
    private let lettingGo = Mutex<[String: Int]>([:])
    /// The locks this service holds, and when each lease was last renewed.
    private let held = Mutex<[ObjectIdentifier: Held]>([:])
    /// Lock files held from other machines, as this service has seen them: when each last
    /// changed (its size and mtime), on this process's clock.
    private let seen = Mutex<[String: Seen]>([:])
    /// The batches this service gave back when the share failed under them.
    public let givenBack = GivenBack()
    /// How a batch folder's entries are removed (the system's calls; a test's that fail first).
    let removal: Removal

    public init() {
        removal = .system
    }

    /// The locks of a test whose removals go through `removal`.
    init(removal: Removal) {
        self.removal = removal
    }

    /// How `removeFolder` removes a batch folder's entries, and waits between tries: the
    /// system's calls in the service; in a test, calls that fail first (`EBUSY`, as a share does).
    struct Removal: Sendable {
        /// Removes `name` from the folder (and all in it, for a folder).
        var remove: @Sendable (Directory, FileName) throws(SystemError) -> Void
        var pause: @Sendable (Duration) -> Void

        static let system = Removal(remove: { folder, name throws(SystemError) in try folder.removeTree(name) },
                                    pause: { Thread.sleep(forTimeInterval: Double($0 / .microseconds(1)) / 1e6) })

        /// Errors a share answers for a moment after a file was closed (SMB keeps the handle a
        /// while: smbnetfs answers `EBUSY` to an unlink right after the close, 4 times in 300
        /// while another thread uses the mount): tried again.
        static let transient: Set<Int32> = [EBUSY, ETXTBSY, EAGAIN]
        /// The waits between tries: 10 ms, doubling, at most 200 ms apart, 8 tries (0.7 s in all).
        static let waits: [Duration] = [10, 20, 40, 80, 160, 200, 200].map { .milliseconds($0) }

        /// Removes `name` from `folder`, trying again after each `waits` while the answer is
        /// transient (or one of `also`).
        /// - Throws: the last error, when it is not transient or the tries are spent.
        func removing(_ name: FileName, in folder: Directory, also: Set<Int32> = []) throws(SystemError) {
            var waits = Self.waits[...]
            while true {
                do {
                    return try remove(folder, name)
                } catch where (Self.transient.contains(error.code) || also.contains(error.code)) && !waits.isEmpty {
                    pause(waits.removeFirst())
                }
            }
        }
    }

    private struct Held: @unchecked Sendable {
        weak var lock: BatchLock?
        var renewed: ContinuousClock.Instant
    }

    private struct Seen {
        var stamp: BatchLock.Stamp
        var since: ContinuousClock.Instant
        var sinceDate: Date
        var host: String
        var timeout: Duration
    }

    // MARK: - Taking a lock

    /// Takes the lock of the batch folder `folder` without waiting.
    /// - Parameter leaseTimeout: how long a lock held from another machine must stay unrenewed
    ///   (as this service sees it) before it is taken.
    /// - Returns: `nil` when another process holds it (here, or on another machine whose lease
    ///   is still renewed), or when the folder was removed (its owner finished) meanwhile, or
    ///   when this service owns the batch while it lets its lock go for an instant (`letGo`).
    public func tryAcquire(_ folder: Directory, leaseTimeout: Duration = BatchLock.Lease.timeout) -> BatchLock? {
        guard !isLetGo(folder.path.description) else { return nil }
        return acquire(folder, leaseTimeout: leaseTimeout)
    }

    /// Takes the lock of the batch folder at `path`.
    public func tryAcquire(_ path: String, leaseTimeout: Duration = BatchLock.Lease.timeout) -> BatchLock? {
        guard let folder = try? Directory(path) else { return nil }
        return tryAcquire(folder, leaseTimeout: leaseTimeout)
    }

    /// `tryAcquire`, also of a folder this service lets go of (`letGo`: its own claim taking
    /// the lock again).
    func acquire(_ folder: Directory, leaseTimeout: Duration = BatchLock.Lease.timeout) -> BatchLock? {
        // The lock file's size and time asked of the server (a share client's cached
        // attributes may be many seconds old: the lease would look unrenewed too soon or too late).
        guard let file = BatchLock.openLockFile(in: folder), (try? file.tryLock()) == true,
              let st = try? file.freshStatus(), st.links > 0 else { return nil }
        let key = folder.path.description
        var takenFrom: String?
        // The holder as the file says, or (where this open reads nothing: `rclone mount` without
        // its file cache, the lock opened again to take it) as the last look at it found it.
        let read = try? Array(file.readAll())
        let said = read.flatMap { BatchLock.Owner($0) }
        let current = BatchLock.Owner.current
        let foreignHost = said.map { !$0.isThisKernel && $0.host != current.host ? $0.host : nil }
            ?? seen.withLock { $0[key]?.host }
        if let host = foreignHost {
            // Held from another machine: free once its lease stops being renewed.
            guard unchanged(key, BatchLock.stamp(st, in: folder), for: leaseTimeout, host: host) else { return nil }
            takenFrom = String(host.prefix { $0 != "/" })
        }
        forgetSeen(key)
        guard (try? BatchLock.writeOwner(file, in: folder)) != nil else { return nil }
        let lock = BatchLock(file: file, folder: key, locks: self, takenFrom: takenFrom, renewsByFile: read == nil)
        add(lock)
        return lock
    }

    /// Takes the lock of the batch folder at `path` from a holder the cluster's database proved
    /// gone (its claimer session ended; `ClaimerRoles`), without waiting for its lease: only
    /// while the lock file still says `expected` — the holder's words, as it wrote them (a
    /// holder that came back and took its batch up again, or another host that took it over
    /// by the lease, has written its own) — and no process of this machine holds it.
    ///
    /// Every host's recovery takes each batch's `flock` for an instant to look at it (the lease
    /// of a batch held from elsewhere is read under it): a lock found held is asked again for up
    /// to `BatchLock.heldForAnInstant` before it counts as another's.
    public func takeOver(_ path: String, from expected: String) -> BatchLock? {
        guard let folder = try? Directory(path) else { return nil }
        let key = folder.path.description
        guard !isLetGo(key), let file = BatchLock.openLockFile(in: folder), Self.lockSoon(file),
              let st = try? file.freshStatus(), st.links > 0, let said = try? file.readAll(),
              String(decoding: Array(said), as: UTF8.self) == expected else { return nil }
        forgetSeen(key)
        guard (try? BatchLock.writeOwner(file, in: folder)) != nil else { return nil }
        let from = BatchLock.Owner(Array(said)).map { String($0.host.prefix { $0 != "/" }) }
        let lock = BatchLock(file: file, folder: key, locks: self, takenFrom: from)
        add(lock)
        return lock
    }

    /// Takes `file`'s `flock`, asking again every 20 ms for `heldForAnInstant` while it is held.
    private static func lockSoon(_ file: FileDescriptor) -> Bool {
        let deadline = ContinuousClock.now + BatchLock.heldForAnInstant
        while true {
            guard let taken = try? file.tryLock() else { return false }
            if taken { return true }
            guard ContinuousClock.now < deadline else { return false }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    // MARK: - The locks held

    private func add(_ lock: BatchLock) {
        held.withLock { $0[ObjectIdentifier(lock)] = Held(lock: lock, renewed: .now) }
    }

    /// A lock let go (dropped): no longer renewed.
    func forget(_ lock: BatchLock) {
        _ = held.withLock { $0.removeValue(forKey: ObjectIdentifier(lock)) }
    }

    /// Renews the lease of every lock this service holds (touches its file), at most once
    /// per `Lease.renewal`: called from the loop that watches (and between files of a long claim).
    /// - Returns: the batch folders whose lease could not be renewed, each once per outage, and why.
    @discardableResult
    public func renewLeases(now: ContinuousClock.Instant = .now) -> [(folder: String, error: SystemError)] {
        let due = held.withLock { all in
            var due: [BatchLock] = []
            for (key, entry) in all where now - entry.renewed >= BatchLock.Lease.renewal {
                guard let lock = entry.lock else { continue }
                due.append(lock)
                all[key]?.renewed = now
            }
            return due
        }
        return due.compactMap { lock in lock.renew().map { (lock.folder, $0) } }
    }

    /// True when this service holds the batch folder at `path` (its lock, or the folder while
    /// its lock is let go for an instant).
    public func isHeldHere(_ path: some FilePathRepresentable) -> Bool {
        let key = path.filePath.description
        return isLetGo(key) || held.withLock { all in all.values.contains { $0.lock?.folder == key } }
    }

    // MARK: - Letting go for an instant

    /// Runs `body` with the batch folder at `path` marked as this service's own while its lock
    /// is let go (a claim renaming its folder where an open file cannot be renamed; a finished
    /// batch's folder being removed): no recovery of this service takes it meanwhile.
    func letGo<T>(_ path: some FilePathRepresentable, _ body: () throws(SystemError) -> T) throws(SystemError) -> T {
        let key = path.filePath.description
        lettingGo.withLock { $0[key, default: 0] += 1 }
        defer {
            lettingGo.withLock { all in
                all[key, default: 1] -= 1
                if all[key] == 0 { all[key] = nil }
            }
        }
        return try body()
    }

    func isLetGo(_ path: String) -> Bool { lettingGo.withLock { $0[path] != nil } }

    // MARK: - Other machines' leases

    /// True once `stamp` (the lock's, and its lease file's) has stayed the same for `timeout`
    /// since this service first saw it so.
    private func unchanged(_ key: String, _ stamp: BatchLock.Stamp, for timeout: Duration, host: String) -> Bool {
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

    private func forgetSeen(_ key: String) {
        _ = seen.withLock { $0.removeValue(forKey: key) }
    }

    /// The leases of batches held from other machines that this service has looked at, as of
    /// its last look at each. `tryAcquire` (recovery) records them; `lookAgain` renews the look
    /// between recoveries.
    public var foreignLeases: [BatchLock.ForeignLease] {
        let now = ContinuousClock.now, wall = Date()
        return seen.withLock { all in
            all.map { key, s in
                let expires = s.since + s.timeout
                let host = String(s.host.prefix { $0 != "/" })
                return BatchLock.ForeignLease(folder: key, host: host, unchanged: s.sinceDate, expires: expires,
                                              expiresAt: wall.addingTimeInterval(Double((expires - now) / .milliseconds(1)) / 1000))
            }.sorted { $0.folder < $1.folder }
        }
    }

    /// `foreignLeases` of the batch folders in `work` (one hot folder's `.work/`).
    public func foreignLeases(in work: String) -> [BatchLock.ForeignLease] {
        foreignLeases.filter { $0.folder.hasPrefix(work + "/") }
    }

    /// Looks at the lock file of the batch folder `folder` again (its time and size asked of the
    /// server): a lease renewed since the last look starts its timeout afresh.
    /// - Returns: the lease as it stands now, or nil when the folder is gone (its owner finished)
    ///   or no longer held from another machine.
    @discardableResult
    public func lookAgain(_ folder: String, leaseTimeout: Duration = BatchLock.Lease.timeout) -> BatchLock.ForeignLease? {
        if case .foreign(let lease) = look(folder, leaseTimeout: leaseTimeout) { return lease }
        return nil
    }

    /// Looks at the lock file of the batch folder `folder` (its time and size asked of the
    /// server).
    func look(_ folder: String, leaseTimeout: Duration) -> BatchLock.Look {
        guard let dir = try? Directory(folder), let file = try? dir.open(BatchLock.fileName, .read, [.noFollow]),
              let st = try? file.freshStatus(), st.links > 0, let owner = try? file.readAll() else {
            forgetSeen(folder)
            return .held
        }
        if let holder = BatchLock.Owner(Array(owner)), !holder.isThisKernel {
            guard holder.host != BatchLock.Owner.current.host else {
                forgetSeen(folder)
                return .orphaned
            }
            _ = unchanged(folder, BatchLock.stamp(st, in: dir), for: leaseTimeout, host: holder.host)
            return foreignLeases.first { $0.folder == folder }.map(BatchLock.Look.foreign) ?? .held
        }
        forgetSeen(folder)
        // This kernel's: flock tells (taken for an instant, let go when `file` closes).
        return (try? file.tryLock()) == true ? .orphaned : .held
    }

    /// Looks again at the lock of every batch folder in `work` (a hot folder's `.work/`) that
    /// this service does not hold, past the client's caches: batches another machine claimed
    /// since the last look are seen, renewed leases start their timeout afresh, batches gone
    /// are forgotten, and batches nobody holds are found.
    /// - Parameter folders: the batch folders in `work` now (the caller listed it).
    func lookAgain(in work: String, folders: [String], leaseTimeout: Duration = BatchLock.Lease.timeout) -> BatchLock.LeaseLook {
        let paths = folders.map { work + "/" + $0 }
        let present = Set(paths)
        seen.withLock { all in
            // Gone: finished or taken.
            for key in all.keys where key.hasPrefix(work + "/") && !present.contains(key) { all[key] = nil }
        }
        var result = BatchLock.LeaseLook()
        for path in paths where !isHeldHere(path) {
            switch look(path, leaseTimeout: leaseTimeout) {
            case .foreign(let lease): result.leases.append(lease)
            case .orphaned: result.orphaned.append(path)
            case .held: break
            }
        }
        return result
    }

    // MARK: - Removing a batch folder

    /// Removes the batch folder `path`, whose lock `lock` is (everything in it, the lock last).
    /// On a share a file that is still open cannot really go (NFS renames it `.nfsXXXX`, FUSE
    /// `.fuse_hiddenXXXX`, and the folder is then not empty): so everything else is removed
    /// first, then the lock is let go, then its file and the folder — this service's own
    /// recovery leaves the folder alone meanwhile (`letGo`). Should another daemon open the
    /// lock in that instant, the folder stays, empty but for the lock, and its recovery removes
    /// it (quietly: there is nothing to roll back). What a share answers for a moment after a
    /// file is closed (`EBUSY`, `ETXTBSY`; and a folder not empty yet, where a FUSE client still
    /// holds an unlinked file as `.fuse_hidden*` until its close is done) is tried again a few
    /// times within a second (`Removal`).
    /// - Returns: false when the folder itself stays (not empty: another process holds a file in
    ///   it): recovery removes it.
    /// - Throws: what kept an entry from going; the folder is then left for recovery.
    @discardableResult
    public func removeFolder(_ path: some FilePathRepresentable, lock: BatchLock?) throws(SystemError) -> Bool {
        let fs = path.filePath
        let folder: Directory
        do {
            folder = try Directory(fs)
        } catch where error.code == ENOENT {
            return true
        }
        lock?.retire()
        for name in try folder.names() where name != BatchLock.fileName { try removal.removing(name, in: folder) }
        return try letGo(fs) { () throws(SystemError) -> Bool in
            lock?.release()
            try removal.removing(BatchLock.fileName, in: folder)
            guard let name = fs.lastComponent else { return true }
            do throws(SystemError) {
                try removal.removing(name, in: try Directory(fs.parent), also: [ENOTEMPTY])
                return true
            } catch where error.code == ENOTEMPTY || error.code == EBUSY {
                return false
            }
        }
    }
}

/// Batches given back when the share failed under them (by folder), with the photos whose
/// start the share cut short: their `released` lines are written to the journal as soon as
/// it can be written, so those starts never count as a crash. One service's (`BatchLocks`).
public final class GivenBack: Sendable {
    /// The `released` lines owed, by batch folder; and the batch folders given back and not
    /// resumed since.
    private let state = Mutex<(owed: [String: Set<Int>], left: Set<String>)>(([:], []))

    init() {}

    func record(_ folder: String, _ photos: Set<Int>) {
        state.withLock {
            $0.owed[folder, default: []].formUnion(photos)
            $0.left.insert(folder)
        }
    }

    /// True when this service gave back the batch at `folder` and has not taken it up
    /// since; the next call says false (recovery asks once, as it resumes the batch).
    public func takeUp(_ folder: String) -> Bool { state.withLock { $0.left.remove(folder) != nil } }

    /// Writes the `released` lines still owed to the batch whose journals are `journals`.
    /// - Throws: `SystemError` when its journal cannot be written yet (kept for the next try).
    func settle(_ journals: BatchJournals) throws(SystemError) {
        guard let photos = state.withLock({ $0.owed[journals.folder] }) else { return }
        for index in photos.sorted() { try ProgressJournal.released(index, to: journals) }
        _ = state.withLock { $0.owed.removeValue(forKey: journals.folder) }
    }
}
