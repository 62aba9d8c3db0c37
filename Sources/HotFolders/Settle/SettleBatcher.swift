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

/// When a pending batch closes (reference: From arrival to batch).
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

/// The settle-and-batch rule (reference: From arrival to batch) as a pure state machine: no files,
/// no clock. The caller reports what it sees (`observe`, `vanished`) and asks, with the time,
/// whether a batch has closed (`close`). Times are any monotonic `Duration` since a fixed origin,
/// so tests drive it with plain numbers.
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
/// Cost: linear in the files. Settling files wait in a queue by the time they last changed
/// (so `close` looks only at those whose `settle` is up: `namesToCheck`), settled ones in a
/// heap by arrival (a batch of k files costs k·log n, never a sort of all that is pending), and
/// the counts are kept as they change. A 100,000-file drop closes 200 batches of 500 in
/// n·log n, where sorting every pending file for each batch cost n²/500·log n.
///
/// `Name` is whatever names the files: `FileName` (any bytes) in the daemon, `String` in tests.
public struct SettleBatcher<Name: Hashable & Comparable & Sendable>: Sendable {
    public var rules: BatchRules

    private struct Tracked: Sendable {
        var stamp: FileStamp
        var firstSeen: Duration
        var lastChange: Duration
        var settled: Bool
        /// Which settling (queue entry) and which settled state (heap entry) is current: an
        /// entry with another ticket is stale and skipped.
        var ticket: UInt64
    }

    /// A settled file in arrival order (first seen, then name).
    private struct Arrival: Comparable, Sendable {
        var firstSeen: Duration
        var name: Name
        var ticket: UInt64

        static func < (a: Arrival, b: Arrival) -> Bool {
            a.firstSeen != b.firstSeen ? a.firstSeen < b.firstSeen : a.name < b.name
        }
    }

    private var files: [Name: Tracked] = [:]
    private var lastArrival: Duration?
    /// Settling files by the time they last changed, oldest first (times only grow); entries
    /// whose ticket is no longer the file's are skipped.
    private var settling = Queue<(name: Name, ticket: UInt64, lastChange: Duration)>()
    private var pending = MinHeap<Arrival>()
    private var nextTicket: UInt64 = 0
    public private(set) var settlingCount = 0
    public private(set) var pendingCount = 0
    /// Files taken into the open batch before it closed (`takeSettled`), and the first arrival
    /// among them: they count for its `maxBatch` and `maxWait` as if still pending.
    public private(set) var openCount = 0
    private var openSince: Duration?

    public init(rules: BatchRules) {
        self.rules = rules
    }

    /// Takes the settled files (arrival order, at most `limit`, never more than the open batch
    /// has room for) into the open batch now, before it closes: the caller claims them at once
    /// (their photos start as they settle) and `closeBatch` says when the batch closes, by the
    /// same rules, counting them (it then returns the files settled since, maybe none).
    public mutating func takeSettled(at now: Duration, limit: Int = .max) -> [(name: Name, stamp: FileStamp)] {
        dropStale()
        var taken: [(name: Name, stamp: FileStamp)] = []
        while taken.count < limit, openCount < rules.maxBatch, let next = pending.pop() {
            guard let tracked = files[next.name], tracked.settled, tracked.ticket == next.ticket else { continue }
            files[next.name] = nil
            pendingCount -= 1
            openCount += 1
            openSince = min(openSince ?? tracked.firstSeen, tracked.firstSeen)
            taken.append((next.name, tracked.stamp))
        }
        return taken
    }

    /// An open batch taken over with `count` photos already in it (a dead claimer's, in a
    /// cluster): they count for its `maxBatch`, and its `quiet` and `maxWait` run from `now`.
    public mutating func adopt(_ count: Int, at now: Duration) {
        openCount += count
        openSince = min(openSince ?? now, now)
        lastArrival = max(lastArrival ?? now, now)
    }

    /// Files taken early that the caller could not claim after all (gone, refused): they leave
    /// the open batch's count.
    public mutating func untake(_ count: Int) {
        openCount = max(0, openCount - count)
        if openCount == 0 { openSince = nil }
    }

    /// Every name being tracked (settling or pending): what a full scan compares with what
    /// `drop/` holds.
    public var trackedNames: [Name] { Array(files.keys) }

    /// Whether `name` is tracked (settling or pending).
    public func isTracked(_ name: Name) -> Bool { files[name] != nil }

    /// Reports a file seen in `drop/` at `now` with this stamp.
    public mutating func observe(_ name: Name, _ stamp: FileStamp, at now: Duration) {
        if let tracked = files[name], tracked.stamp == stamp { return }
        let ticket = nextTicket
        nextTicket += 1
        if var tracked = files[name] {
            if tracked.settled {
                pendingCount -= 1
                settlingCount += 1
            }
            tracked.stamp = stamp
            tracked.lastChange = now
            tracked.settled = false
            tracked.ticket = ticket
            files[name] = tracked
        } else {
            files[name] = Tracked(stamp: stamp, firstSeen: now, lastChange: now, settled: false, ticket: ticket)
            settlingCount += 1
        }
        settling.append((name, ticket, now))
        lastArrival = max(lastArrival ?? now, now)
    }

    /// Reports that a file is gone from `drop/` (deleted, renamed away, no longer a photo).
    public mutating func vanished(_ name: Name) {
        guard let tracked = files.removeValue(forKey: name) else { return }
        if tracked.settled { pendingCount -= 1 } else { settlingCount -= 1 }
    }

    /// The settling names whose `settle` time is up at `now` (at most `limit`), oldest change
    /// first: what the caller looks at on disk again (and reports with `observe` if changed)
    /// before it settles them (`settle(_:at:)`).
    public func namesToCheck(at now: Duration, limit: Int = .max) -> [Name] {
        var out: [Name] = []
        for entry in settling.elements {
            guard out.count < limit, entry.lastChange + rules.settle <= now else { break }
            if isLive(entry) { out.append(entry.name) }
        }
        return out
    }

    /// A queue entry is the file's current settling one.
    private func isLive(_ entry: (name: Name, ticket: UInt64, lastChange: Duration)) -> Bool {
        guard let tracked = files[entry.name] else { return false }
        return tracked.ticket == entry.ticket && !tracked.settled
    }

    /// When `close` may next have something to do: a settling file's `settle` is up, or (with
    /// `includingClose`) the pending batch's `quiet` or `maxWait` — now, when it is full;
    /// `nil` when nothing is tracked.
    public mutating func nextDeadline(includingClose: Bool = true) -> Duration? {
        dropStale()
        var next = settling.first.map { $0.lastChange + rules.settle }
        if includingClose, let oldest = oldestInBatch {
            var due = oldest + rules.maxWait
            if pendingCount + openCount >= rules.maxBatch { due = .zero }
            if settlingCount == 0, let lastArrival { due = min(due, lastArrival + rules.quiet) }
            next = min(next ?? due, due)
        }
        return next
    }

    /// The first arrival of the batch that closes next (pending or taken early).
    private var oldestInBatch: Duration? {
        switch (pending.first?.firstSeen, openSince) {
        case let (a?, b?): min(a, b)
        case let (a, b): a ?? b
        }
    }

    /// Settles what has held still for `settle` at `now` (what `close` does first).
    public mutating func settle(at now: Duration) {
        while let entry = settling.first, entry.lastChange + rules.settle <= now {
            settling.removeFirst()
            if isLive(entry) { settle(entry.name) }
        }
    }

    /// Settles those of `names` that have held still for `settle` at `now` (the caller looked
    /// at them again: `namesToCheck`); the others are left as they are.
    public mutating func settle(_ names: [Name], at now: Duration) {
        for name in names {
            if let tracked = files[name], !tracked.settled, tracked.lastChange + rules.settle <= now { settle(name) }
        }
        dropStale()
    }

    private mutating func settle(_ name: Name) {
        guard var tracked = files[name] else { return }
        tracked.settled = true
        files[name] = tracked
        settlingCount -= 1
        pendingCount += 1
        pending.push(Arrival(firstSeen: tracked.firstSeen, name: name, ticket: tracked.ticket))
    }

    /// Settles what has held still for `settle`, then returns the batch that closes at `now`
    /// (names in arrival order) and forgets its files; `nil` when none closes. Call again
    /// until `nil`: a burst over `maxBatch` closes as several batches.
    public mutating func close(at now: Duration) -> [Name]? {
        guard !files.isEmpty || openCount > 0 else { return nil }
        settle(at: now)
        return closeBatch(at: now)?.map(\.name)
    }

    /// `close` without settling first (the caller settled what it looked at again), with the
    /// stamp each file had when it settled (the caller checks them once more). With files taken
    /// early (`takeSettled`), the batch that closes is theirs: the files returned (maybe none)
    /// complete it.
    public mutating func closeBatch(at now: Duration) -> [(name: Name, stamp: FileStamp)]? {
        // Nothing tracked (an idle hot folder): nothing to do, and nothing allocated.
        guard !files.isEmpty || openCount > 0 else { return nil }
        dropStale()
        guard let oldest = oldestInBatch else { return nil }
        let quiet = lastArrival.map { now - $0 >= rules.quiet } ?? true
        let closes = pendingCount + openCount >= rules.maxBatch || now - oldest >= rules.maxWait || (quiet && settlingCount == 0)
        guard closes else { return nil }
        let room = rules.maxBatch - openCount
        let wasOpen = openCount > 0
        openCount = 0
        openSince = nil
        var batch: [(name: Name, stamp: FileStamp)] = []
        while batch.count < room, let next = pending.pop() {
            guard let tracked = files[next.name], tracked.settled, tracked.ticket == next.ticket else { continue }
            files[next.name] = nil
            pendingCount -= 1
            batch.append((next.name, tracked.stamp))
        }
        return batch.isEmpty && !wasOpen ? nil : batch
    }

    /// Drops the stale entries at the front of the queue and the top of the heap.
    private mutating func dropStale() {
        while let entry = settling.first, !isLive(entry) { settling.removeFirst() }
        while let top = pending.first {
            if let tracked = files[top.name], tracked.settled, tracked.ticket == top.ticket { break }
            pending.pop()
        }
        if files.isEmpty {
            settling.removeAll()
            pending.removeAll()
        }
    }
}

