import Glibc
import Synchronization

/// Large blocks of pixel memory kept between the photos of a batch, so the next photo
/// takes pages that are already mapped instead of fresh ones: a turned full-resolution photo
/// builds its upright frame from about a hundred 1 MiB bands, and each fresh band costs page
/// faults and the kernel's zeroing (measured: ≈ 10 % of a 12 MP full-resolution
/// batch there).
///
/// - Only blocks of at least `smallest` bytes are kept (the shared pool: 128 KiB): smaller
///   ones come from malloc's arenas, which keep them anyway. Larger ones do not stay: a
///   block of 1 MiB or more gets a mapping of its own (`mallopt(M_MMAP_THRESHOLD)`), which a
///   plain free gives back, and a freed block above 128 KiB at the top of an arena's heap is
///   given back too (`M_TRIM_THRESHOLD`): a turned photo's last, shorter band and its tile
///   of stored rows were faulted in afresh at every photo.
/// - A block is taken again by a request of its size, or of up to an eighth less (the kept
///   block closest to it): band sizes repeat from photo to photo of a camera, and a portrait
///   photo's bands (1536 px rows, turned) and a landscape one's (2048 px) differ by 2 % — with
///   exact sizes only, a batch of both faulted in a fresh band at nearly every photo.
/// - The pool never makes a batch hold more than it would without it: kept blocks plus
///   blocks in use stay at or under the most that was in use at once in the batch so far
///   (a new block first frees kept ones, oldest first, to stay under it), and at most
///   `capacity` bytes are kept.
/// - Blocks are kept only while someone is `keeping` (a batch): when the last one ends,
///   everything kept goes back to the system.
public final class PixelPool: Sendable {
    /// The pool every `PixelStorage` takes its large blocks from.
    public static let shared = PixelPool(smallest: 128 << 10, capacity: 256 << 20)

    /// The smallest block kept (the shared pool's: glibc's `M_TRIM_THRESHOLD`).
    public let smallest: Int
    /// The most bytes kept at once.
    public let capacity: Int

    public init(smallest: Int, capacity: Int) {
        self.smallest = smallest
        self.capacity = capacity
    }

    private struct State {
        var scopes = 0
        /// Kept blocks, oldest first: address and size.
        var blocks: [(address: UInt, bytes: Int)] = []
        var bytes = 0
        /// Large blocks handed out and not given back, and the most at once in this scope.
        var inUse = 0
        var peak = 0
        var reused = 0
        /// Blocks handed out that are larger than their request: address and size.
        var larger: [UInt: Int] = [:]
    }

    private let state = Mutex(State())

    /// Runs `body` with blocks kept for reuse; when the last `keeping` ends, every kept block
    /// is freed.
    public func keeping<R>(_ body: () async throws -> R) async rethrows -> R {
        state.withLock { s in
            if s.scopes == 0 { s.peak = s.inUse }  // the batch's own peak
            s.scopes += 1
        }
        defer { end() }
        return try await body()
    }

    /// Bytes kept now (for tests).
    public var keptBytes: Int { state.withLock { $0.bytes } }

    /// Blocks handed out again since the pool was made (for tests).
    public var reusedBlocks: Int { state.withLock { $0.reused } }

    /// A block of at least `bytes` bytes: a kept one of that size or up to an eighth larger,
    /// or a new one.
    /// - Parameter prefault: a new block's pages are mapped at once, in one call
    ///   (`madvise(MADV_POPULATE_WRITE)`), instead of a fault at each first write: for a large
    ///   block that is written whole once and kept a while (a photo's outputs held while its
    ///   batch's light is found).
    public func allocate(_ bytes: Int, prefault: Bool = false) -> UnsafeMutablePointer<UInt8> {
        guard bytes >= smallest else { return .allocate(capacity: max(1, bytes)) }
        var evicted: [UInt] = []
        let found = state.withLock { s -> UInt? in
            // The smallest kept block that fits (of equals, the last kept).
            var best: Int?
            for (index, block) in s.blocks.enumerated() where block.bytes >= bytes && block.bytes <= bytes + bytes / 8 {
                if best.map({ block.bytes <= s.blocks[$0].bytes }) ?? true { best = index }
            }
            if let best {
                let block = s.blocks.remove(at: best)
                s.bytes -= block.bytes
                s.inUse += block.bytes
                s.peak = max(s.peak, s.inUse)
                s.reused += 1
                if block.bytes != bytes { s.larger[block.address] = block.bytes }
                return block.address
            }
            s.inUse += bytes
            while s.bytes + s.inUse > s.peak, !s.blocks.isEmpty {
                let oldest = s.blocks.removeFirst()
                s.bytes -= oldest.bytes
                evicted.append(oldest.address)
            }
            s.peak = max(s.peak, s.inUse)
            return nil
        }
        for address in evicted { free(address) }
        if let found { return UnsafeMutablePointer(bitPattern: found)! }
        let block = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes)
        if prefault { Self.prefault(block, bytes: bytes) }
        return block
    }

    /// Maps the whole pages of a new block now (advice: where the kernel does not know it,
    /// before Linux 5.14, they are faulted in as they are written).
    private static func prefault(_ block: UnsafeMutablePointer<UInt8>, bytes: Int) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE))), start = UInt(bitPattern: block)
        let first = (start + UInt(page) - 1) / UInt(page) * UInt(page), end = (start + UInt(bytes)) / UInt(page) * UInt(page)
        guard end > first else { return }
        _ = madvise(UnsafeMutableRawPointer(bitPattern: first), Int(end - first), MADV_POPULATE_WRITE)
    }

    /// Gives a block back: kept while a batch runs and there is room, freed otherwise.
    public func deallocate(_ block: UnsafeMutablePointer<UInt8>, bytes requested: Int) {
        guard requested >= smallest else { return block.deallocate() }
        let address = UInt(bitPattern: block)
        let kept = state.withLock { s -> Bool in
            let bytes = s.larger.removeValue(forKey: address) ?? requested
            s.inUse -= bytes
            guard s.scopes > 0, s.bytes + bytes <= capacity else { return false }
            s.blocks.append((address, bytes))
            s.bytes += bytes
            return true
        }
        if !kept { block.deallocate() }
    }

    private func end() {
        let all = state.withLock { s -> [UInt] in
            s.scopes -= 1
            guard s.scopes == 0 else { return [] }
            defer { s.blocks = []; s.bytes = 0 }
            return s.blocks.map(\.address)
        }
        for address in all { free(address) }
    }

    private func free(_ address: UInt) {
        UnsafeMutablePointer<UInt8>(bitPattern: address)!.deallocate()
    }
}
