import Codecs
import Finishing
import Foundation
import Synchronization
import System

/// The `memoryBudget` (reference: Config): photos are admitted while what those in flight hold at
/// most (`cost(ofPhoto:)`: from the header and the recipe, plus the file itself) stays
/// under the budget. Shared by every batch running at once. A photo bigger than the
/// whole budget is admitted alone, once nothing else is in flight, so it is never stuck.
/// Admission is first come first served: a big photo is not overtaken forever by small ones.
///
/// The cost is an upper bound of what the photo holds (every output at its largest at
/// once), measured against `PixelMeter` in the tests: a 48 MP photo finished upright at full
/// resolution costs a few MB, the same photo turned a quarter its 146 MB frame.
public final class MemoryBudget: Sendable {
    /// The budget in bytes.
    public let bytes: Int

    private struct Waiter {
        var cost: Int
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var inUse = 0
        var running = 0
        var waiting: [Waiter] = []
    }

    private let state = Mutex(State())

    /// - Parameter bytes: the budget (at least 1).
    public init(bytes: Int) {
        self.bytes = max(1, bytes)
    }

    /// Photos waiting for admission.
    public var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Waits until `cost` bytes fit (or nothing else is in flight).
    public func acquire(_ cost: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.waiting.isEmpty && (s.running == 0 || s.inUse + cost <= bytes) {
                    s.inUse += cost
                    s.running += 1
                    return true
                }
                s.waiting.append(Waiter(cost: cost, continuation: continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Gives `cost` bytes back and admits the waiters that now fit, in order.
    public func release(_ cost: Int) {
        let admitted = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.inUse -= cost
            s.running -= 1
            var out: [CheckedContinuation<Void, Never>] = []
            while let first = s.waiting.first, s.running == 0 || s.inUse + first.cost <= bytes {
                s.waiting.removeFirst()
                s.inUse += first.cost
                s.running += 1
                out.append(first.continuation)
            }
            return out
        }
        for c in admitted { c.resume() }
    }

    /// The admission cost of a photo, from its bytes and the recipe it is finished with: what
    /// finishing it holds at most (`PhotoFinisher.memoryCost`: the decoder's working memory,
    /// the bands or frames its outputs hold) plus its file size, from the header only. A file
    /// that cannot be decoded costs its size: it fails fast without decoding.
    public static func cost(ofPhoto bytes: [UInt8], finisher: PhotoFinisher, maxFileBytes: Int) -> Int {
        guard let decoder = try? openDecoder(bytes: bytes, limits: DecodeLimits(maxPixels: .max, maxFileBytes: maxFileBytes)) else {
            return bytes.count
        }
        // The header's sizes may be anything up to 2^32 each: a cost past `largestCost` is
        // `largestCost` (the photo then fails too-large once it is opened for real).
        return min(finisher.memoryCost(of: decoder), largestCost) + bytes.count
    }

    /// The largest decoded size counted (4 PiB): more than any machine has, and small enough
    /// that adding a few costs never overflows.
    static let largestCost = 1 << 52

    /// `"auto"`: half of the cgroup's `memory.max`, or of the machine's RAM when the cgroup
    /// sets no limit.
    /// - Parameters:
    ///   - memoryMax: the text of the cgroup's `memory.max` (`"max"` or a number), if found.
    ///   - ram: the machine's RAM in bytes.
    public static func automatic(memoryMax: String?, ram: Int) -> Int {
        let text = memoryMax?.trimmingCharacters(in: .whitespacesAndNewlines)
        let limit = text.flatMap { Int($0) }.map { min($0, ram) } ?? ram
        return max(1, limit / 2)
    }

    /// `"auto"` for this process: reads its cgroup v2 `memory.max` (`/proc/self/cgroup`).
    public static func automaticForThisProcess() -> Int {
        let ram = Int(sysconf(Int32(_SC_PHYS_PAGES))) * Int(sysconf(Int32(_SC_PAGESIZE)))
        var memoryMax: String?
        if let cgroup = try? Files.text(of: "/proc/self/cgroup"),
           let line = cgroup.split(separator: "\n").first(where: { $0.hasPrefix("0::") }) {
            let path = "/sys/fs/cgroup" + line.dropFirst(3) + "/memory.max"
            memoryMax = try? Files.text(of: path)
        }
        return automatic(memoryMax: memoryMax, ram: ram)
    }
}
