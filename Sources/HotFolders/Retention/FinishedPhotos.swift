import Batches
import Synchronization
import System

/// The photos a hot folder has finished, by the SHA-256 of their bytes: what `duplicates:
/// "skip"` looks each photo of a batch up in (reference: Duplicates).
///
/// The truth is `out/`: every batch folder there holds a report whose finished items carry their
/// source's SHA-256. The index is those reports, read once each and kept in memory; before each
/// look-up it is brought up to date with a listing of `out/` — a batch published since (by this
/// daemon, another host of a cluster, or `redo`) is read, a batch removed (retention's `keep.out`,
/// or by hand) is forgotten. So it survives restarts with nothing of its own on disk, and it is
/// as large as `out/` is: bounded by `keep.out`, some 200 bytes of memory a finished photo.
public final class FinishedPhotos: Sendable {
    /// Where a photo was finished.
    public typealias Place = Report.DuplicateOf

    /// The hot folder's `out/`.
    public let out: String
    private let index = Mutex(FinishedIndex())

    public init(layout: HotFolderLayout) { out = layout.out }

    /// Where the photo whose bytes hash to `sha256` (hex) was finished first, among the batches
    /// in `out/` at the last `refresh`; nil: none.
    public func place(of sha256: String) -> Place? {
        index.withLock { $0.place(of: sha256) }
    }

    /// Reads the reports of the batches published since the last look, forgets the ones gone.
    /// A report that cannot be read is tried again at the next look.
    public func refresh() {
        let present = Set(Files.textNames(in: out).filter(BatchID.isValid))
        let known = index.withLock { $0.batches }
        var read: [String: [(sha256: String, source: String)]] = [:]
        for batch in present.subtracting(known) {
            guard let report = try? ReportReader.read(batchFolder: out + "/" + batch) else { continue }
            read[batch] = report.items.compactMap { item in
                item.status == .ok ? item.sha256.map { ($0, item.source) } : nil
            }
        }
        index.withLock { $0.update(present: present, read: read) }
    }
}

/// The pure part of `FinishedPhotos`: finished photos by SHA-256, by batch.
struct FinishedIndex: Sendable {
    /// A SHA-256 as four words (32 bytes, not a 64-character string).
    struct Digest: Hashable, Sendable {
        var a: UInt64, b: UInt64, c: UInt64, d: UInt64

        init?(hex: String) {
            let u = Array(hex.utf8)
            guard u.count == 64 else { return nil }
            var words: [UInt64] = []
            for w in 0..<4 {
                var v: UInt64 = 0
                for ch in u[(w * 16)..<(w * 16 + 16)] {
                    let n: UInt8
                    switch ch {
                    case 48...57: n = ch - 48
                    case 97...102: n = ch - 87
                    case 65...70: n = ch - 55
                    default: return nil
                    }
                    v = v << 4 | UInt64(n)
                }
                words.append(v)
            }
            (a, b, c, d) = (words[0], words[1], words[2], words[3])
        }
    }

    /// Each photo's first place (the oldest batch that finished it).
    private var first: [Digest: Report.DuplicateOf] = [:]
    /// Each batch's photos.
    private var byBatch: [String: [(Digest, String)]] = [:]

    /// The batches indexed.
    var batches: Set<String> { Set(byBatch.keys) }

    func place(of sha256: String) -> Report.DuplicateOf? { Digest(hex: sha256).flatMap { first[$0] } }

    /// Adds the batches `read` (batch → its finished photos' hashes and names) and forgets the
    /// indexed ones not in `present`.
    mutating func update(present: Set<String>, read: [String: [(sha256: String, source: String)]]) {
        let gone = batches.subtracting(present)
        for batch in gone {
            for (digest, _) in byBatch.removeValue(forKey: batch) ?? [] where first[digest]?.batch == batch {
                first[digest] = nil
            }
        }
        for (batch, photos) in read where present.contains(batch) {
            byBatch[batch] = photos.compactMap { photo in Digest(hex: photo.sha256).map { ($0, photo.source) } }
        }
        // A photo of a forgotten batch may have been finished in a later one too; batch ids
        // sort by their claim time, so the first place is the smallest id.
        let changed = gone.isEmpty ? Set(read.keys) : Set(byBatch.keys)
        for batch in changed.sorted() {
            for (digest, source) in byBatch[batch] ?? [] where first[digest].map({ batch < $0.batch }) ?? true {
                first[digest] = Report.DuplicateOf(batch: batch, source: source)
            }
        }
    }
}
