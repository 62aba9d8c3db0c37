/// What the daemon knows of a file in `drop/` from one `fstat`: enough to tell whether it is
/// still being written (size, modification time) and whether it is still the same file.
public struct FileStamp: Sendable, Equatable {
    public var size: Int64
    /// Modification time in nanoseconds since the epoch.
    public var mtimeNanoseconds: Int64
    public var device: UInt64
    public var inode: UInt64

    public init(size: Int64, mtimeNanoseconds: Int64, device: UInt64 = 0, inode: UInt64 = 0) {
        self.size = size
        self.mtimeNanoseconds = mtimeNanoseconds
        self.device = device
        self.inode = inode
    }
}

/// When a pending batch closes (SPEC §2).
public struct BatchRules: Sendable, Equatable {
    /// A file joins the pending batch once its size and mtime have held for this long.
    public var settle: Duration
    /// The batch closes after this long with no new arrival (and nothing still settling)…
    public var quiet: Duration
    /// …or once its first file arrived this long ago…
    public var maxWait: Duration
    /// …or when it holds this many files.
    public var maxBatch: Int

    public init(settle: Duration = .seconds(2), quiet: Duration = .seconds(5), maxWait: Duration = .seconds(120),
                maxBatch: Int = 500) {
        precondition(maxBatch > 0, "maxBatch must be positive")
        self.settle = settle
        self.quiet = quiet
        self.maxWait = maxWait
        self.maxBatch = maxBatch
    }
}

/// The settle-and-batch rule of SPEC §2 as a pure state machine: no files, no clock. The
/// caller reports what it sees (`observe`, `vanished`) and asks, with the time, whether a
/// batch has closed (`close`). Times are any monotonic `Duration` since a fixed origin, so
/// tests drive it with plain numbers.
///
/// Decisions the spec leaves open:
/// - An arrival is a file seen for the first time or seen changed (size or mtime). A settled
///   file that changes again leaves the pending batch and settles anew (a writer that
///   reopened it: SMB, some copy tools).
/// - The quiet rule waits for files still settling: a batch does not close on quiet while a
///   file in `drop/` is still being written, so a burst copied slowly stays one batch.
///   `maxWait` and `maxBatch` close it regardless.
/// - `maxWait` counts from the first arrival of the batch's oldest file.
/// - Batch order here is arrival order (first seen, then name); the template's `order` is
///   applied when the batch is claimed.
///
/// `Name` is whatever names the files: `FileName` (any bytes) in the daemon, `String` in tests.
public struct SettleBatcher<Name: Hashable & Comparable & Sendable>: Sendable {
    public var rules: BatchRules

    private struct Tracked: Sendable {
        var stamp: FileStamp
        var firstSeen: Duration
        var lastChange: Duration
        var settled: Bool
    }

    private var files: [Name: Tracked] = [:]
    private var lastArrival: Duration?

    public init(rules: BatchRules) {
        self.rules = rules
    }

    /// Every name being tracked (settling or pending): what the caller re-examines on disk
    /// before each `close(at:)`.
    public var trackedNames: [Name] { Array(files.keys) }

    /// Files still being written (or not yet stable for `settle`).
    public var settlingCount: Int { files.values.filter { !$0.settled }.count }

    /// Files settled and waiting for their batch to close.
    public var pendingCount: Int { files.values.filter(\.settled).count }

    /// Reports a file seen in `drop/` at `now` with this stamp.
    public mutating func observe(_ name: Name, _ stamp: FileStamp, at now: Duration) {
        if var tracked = files[name] {
            guard tracked.stamp != stamp else { return }
            tracked.stamp = stamp
            tracked.lastChange = now
            tracked.settled = false
            files[name] = tracked
        } else {
            files[name] = Tracked(stamp: stamp, firstSeen: now, lastChange: now, settled: false)
        }
        lastArrival = now
    }

    /// Reports that a file is gone from `drop/` (deleted, renamed away, no longer a photo).
    public mutating func vanished(_ name: Name) {
        files[name] = nil
    }

    /// Settles what has held still for `settle`, then returns the batch that closes at `now`
    /// (names in arrival order) and forgets its files; `nil` when none closes. Call again
    /// until `nil`: a burst over `maxBatch` closes as several batches.
    public mutating func close(at now: Duration) -> [Name]? {
        // Nothing tracked (an idle hot folder): nothing to do, and nothing allocated.
        guard !files.isEmpty else { return nil }
        for (name, tracked) in files where !tracked.settled && now - tracked.lastChange >= rules.settle {
            files[name]?.settled = true
        }
        // A closure, not a key path: a key path into this generic type is built at run time.
        let pending = files.filter { $0.value.settled }
        guard !pending.isEmpty else { return nil }
        let oldest = pending.values.map { $0.firstSeen }.min()!
        let quiet = lastArrival.map { now - $0 >= rules.quiet } ?? true
        let stillSettling = pending.count < files.count
        let closes = pending.count >= rules.maxBatch || now - oldest >= rules.maxWait || (quiet && !stillSettling)
        guard closes else { return nil }
        let ordered = pending.sorted { a, b in
            a.value.firstSeen != b.value.firstSeen ? a.value.firstSeen < b.value.firstSeen : a.key < b.key
        }.prefix(rules.maxBatch).map { $0.key }
        for name in ordered { files[name] = nil }
        return ordered
    }
}
