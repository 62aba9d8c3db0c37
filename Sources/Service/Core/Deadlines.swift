import HotFolders

/// When each of many keys (hot folders) next wants a turn: a heap of deadlines, one live
/// entry per key, so the loop's next wake-up is the earliest of all in O(log n) and an idle
/// folder costs nothing between its deadlines. Setting a key again makes its earlier entry
/// stale (skipped when it surfaces).
struct Deadlines<Key: Hashable & Sendable>: Sendable {
    private struct Entry: Comparable, Sendable {
        var at: Duration
        var stamp: UInt64
        var key: Key

        static func < (a: Entry, b: Entry) -> Bool { a.at != b.at ? a.at < b.at : a.stamp < b.stamp }
        static func == (a: Entry, b: Entry) -> Bool { a.at == b.at && a.stamp == b.stamp }
    }

    private var heap = MinHeap<Entry>()
    private var current: [Key: UInt64] = [:]
    private var stamps: UInt64 = 0

    /// `key` wants a turn at `at` (replacing its earlier deadline), or none with `nil`.
    mutating func set(_ key: Key, at: Duration?) {
        guard let at else {
            current[key] = nil
            return
        }
        stamps += 1
        current[key] = stamps
        heap.push(Entry(at: at, stamp: stamps, key: key))
        // Stale entries pile up only as fast as deadlines are set; rebuilt when they
        // outnumber the live ones four to one.
        if heap.count > 4 * current.count + 1024 { rebuild() }
    }

    /// The earliest deadline, if any.
    mutating func next() -> Duration? {
        dropStale()
        return heap.first?.at
    }

    /// Removes and returns the keys whose deadline is at or before `now`.
    mutating func due(at now: Duration) -> [Key] {
        var out: [Key] = []
        while true {
            dropStale()
            guard let top = heap.first, top.at <= now else { return out }
            heap.pop()
            current[top.key] = nil
            out.append(top.key)
        }
    }

    private mutating func dropStale() {
        while let top = heap.first, current[top.key] != top.stamp { heap.pop() }
    }

    private mutating func rebuild() {
        var fresh = MinHeap<Entry>()
        while let entry = heap.pop() {
            if current[entry.key] == entry.stamp { fresh.push(entry) }
        }
        heap = fresh
    }
}
