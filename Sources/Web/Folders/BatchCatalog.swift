import Batches
import Foundation
import HotFolders
import Synchronization
import System

/// What the folder page shows of each published batch, read from its `report.json` once and
/// kept (a published batch does not change; a report whose size or time changed is read again).
final class BatchCatalog: Sendable {
    struct Summary: Sendable, Equatable {
        var id: String
        var status: String
        var items: Int
        var ok: Int
        var failed: Int
        var started: String
        var finished: String
        /// The first few items' thumbnails, as paths below the batch folder.
        var thumbnails: [[FileName]]
        /// The batch this one redoes, if any.
        var redoes: String?
    }

    private struct Cached: Sendable {
        var key: String
        var summary: Summary
    }

    private static let report = ReportReader.fileName
    private let cache = Mutex<[String: Cached]>([:])
    private static let cacheLimit = 20_000

    /// The newest published batches of a hot folder, at most `limit`, older than `before`
    /// (a batch id) when given; and whether there are more.
    func batches(of layout: HotFolderLayout, limit: Int, before: String? = nil) -> (batches: [Summary], more: Bool) {
        guard let out = try? Directory(layout.out), let names = try? out.names() else { return ([], false) }
        var ids = names.compactMap(\.string).filter(BatchID.isValid).sorted(by: >)
        if let before { ids = ids.filter { $0 < before } }
        var found: [Summary] = []
        var index = 0
        while found.count < limit && index < ids.count {
            if let s = summary(layout, ids[index]) { found.append(s) }
            index += 1
        }
        return (found, index < ids.count)
    }

    /// One batch's summary; nil while it has no report (or it cannot be read).
    func summary(_ layout: HotFolderLayout, _ id: String) -> Summary? {
        guard let folder = try? BatchFiles.folder(layout, id),
              let st = try? folder.status(of: Self.report), st.isRegular else { return nil }
        let cacheName = layout.root + "\u{0}" + id
        let key = "\(st.size) \(st.modifiedNanoseconds) \(st.inode)"
        if let hit = cache.withLock({ $0[cacheName] }), hit.key == key { return hit.summary }
        guard let file = try? folder.open(Self.report, .read, [.noFollow]), let bytes = try? file.readAll(limit: 64 << 20),
              let report = try? ReportReader.decode(bytes) else { return nil }
        let thumbs = report.items.compactMap(\.thumbnail).prefix(4).compactMap { path -> [FileName]? in
            let parts = path.split(separator: "/").compactMap { FileName(String($0)) }
            return parts.isEmpty ? nil : parts
        }
        let s = Summary(id: id, status: report.status.rawValue, items: report.counts.items, ok: report.counts.ok,
                        failed: report.counts.failed, started: report.started, finished: report.finished,
                        thumbnails: Array(thumbs), redoes: report.redoes)
        cache.withLock { cache in
            if cache.count >= Self.cacheLimit { cache.removeAll() }
            cache[cacheName] = Cached(key: key, summary: s)
        }
        return s
    }
}
