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
        /// The first photo's name as dropped (the label's).
        var first: String?
        /// Every item's source name as the report writes it (escaped), in order: where an
        /// upload's photos went.
        var sources: [String]
        /// Those that failed (or were not finished).
        var failedSources: [String] = []

        /// "Tue 5 Dec, 14:32 · IMG_0001.jpg and 5 more".
        var label: BatchLabel { BatchLabel(started: started, first: first, count: items) }
    }

    private struct Cached: Sendable {
        var key: String
        var summary: Summary
    }

    private static let report = ReportReader.fileName
    private let cache = Mutex<[String: Cached]>([:])
    private static let cacheLimit = 4_000
    /// Thumbnails a batch's card shows.
    static let thumbnailsShown = 6

    /// The newest published batches of a hot folder, at most `limit`, older than `before`
    /// (a batch id) when given; and whether there are more.
    func batches(of layout: HotFolderLayout, limit: Int, before: String? = nil) -> (batches: [Summary], more: Bool) {
        var ids = ids(layout)
        if let before { ids = ids.filter { $0 < before } }
        var found: [Summary] = []
        var index = 0
        while found.count < limit && index < ids.count {
            if let s = summary(layout, ids[index]) { found.append(s) }
            index += 1
        }
        return (found, index < ids.count)
    }

    /// The ids of the batch folders in out/, newest first.
    func ids(_ layout: HotFolderLayout) -> [String] {
        guard let out = try? Directory(layout.out), let names = try? out.names() else { return [] }
        return names.compactMap(\.string).filter(BatchID.isValid).sorted(by: >)
    }

    /// One batch's summary; nil while it has no report (or it cannot be read).
    func summary(_ layout: HotFolderLayout, _ id: String) -> Summary? {
        guard let folder = try? BatchFiles.folder(layout, id),
              let st = try? folder.status(of: Self.report), st.isRegular else { return nil }
        let cacheName = layout.root + "\u{0}" + id
        let key = "\(st.size) \(st.modifiedNanoseconds) \(st.inode)"
        if let hit = cache.withLock({ $0[cacheName] }), hit.key == key { return hit.summary }
        guard let report = Self.read(folder) else { return nil }
        let thumbs = report.items.compactMap(\.thumbnail).prefix(Self.thumbnailsShown).compactMap(BatchFiles.path)
        let s = Summary(id: id, status: report.status.rawValue, items: report.counts.items, ok: report.counts.ok,
                        failed: report.counts.failed, started: report.started, finished: report.finished,
                        thumbnails: Array(thumbs), redoes: report.redoes, first: report.items.first?.source,
                        sources: report.items.map(\.source),
                        failedSources: report.items.filter { $0.status != .ok }.map(\.source))
        cache.withLock { cache in
            if cache.count >= Self.cacheLimit { cache.removeAll() }
            cache[cacheName] = Cached(key: key, summary: s)
        }
        return s
    }

    /// A batch's report in full (the batch page's), nil while it has none.
    func report(_ layout: HotFolderLayout, _ id: String) -> Report? {
        guard let folder = try? BatchFiles.folder(layout, id) else { return nil }
        return Self.read(folder)
    }

    /// The report of a batch folder, opened beneath it (never through a symlink, never a FIFO).
    private static func read(_ folder: Directory) -> Report? {
        guard let file = try? folder.open(report, .read, [.noFollow, .nonBlocking]), let st = try? file.status(), st.isRegular,
              let bytes = try? file.readAll(limit: 64 << 20) else { return nil }
        return try? ReportReader.decode(bytes)
    }

    /// The published batches that run `id` again (a redo, a photo tried again), newest first,
    /// among the newest `window` of the folder.
    func redoes(of id: String, in layout: HotFolderLayout, window: Int = 200) -> [Summary] {
        ids(layout).prefix(window).filter { $0 > id }.compactMap { summary(layout, $0) }.filter { $0.redoes == id }
    }

    /// Forgets a batch (deleted).
    func forget(_ layout: HotFolderLayout, _ id: String) {
        _ = cache.withLock { $0.removeValue(forKey: layout.root + "\u{0}" + id) }
    }
}

/// How a person recognises a batch: when it started (the day and the time, in local time), the
/// first photo's name and how many there are: "Tue 5 Dec, 14:32 · IMG_0001.jpg and 5 more".
struct BatchLabel: Equatable {
    var started: String
    var first: String?
    var count: Int

    /// The photos part: "IMG_0001.jpg and 5 more", "IMG_0001.jpg", "no photo".
    var photos: String {
        guard let first else { return "no photo" }
        return count > 1 ? "\(first) and \(count - 1) more" : first
    }

    /// The time part in this machine's local time: "Tue 5 Dec, 14:32" (the year when it is
    /// not this one); the page's script says it again in the reader's own time zone.
    func when(now: Date = Date()) -> String {
        guard let date = HumanTime.date(isoUTC: started) else { return started }
        return Self.local(date, now: now)
    }

    /// "Sat 5 Dec, 05:49" from a batch id (`YYYYMMDD-HHMMSS-xxxx`, its UTC claim time): how a
    /// page names a batch it knows only by id. The id itself when it is none.
    static func when(id: String, now: Date = Date()) -> String {
        let d = Array(id.utf8)
        guard BatchID.isValid(id), d.count >= 15 else { return id }
        let iso = String(decoding: d[0..<4], as: UTF8.self) + "-" + String(decoding: d[4..<6], as: UTF8.self) + "-"
            + String(decoding: d[6..<8], as: UTF8.self) + "T" + String(decoding: d[9..<11], as: UTF8.self) + ":"
            + String(decoding: d[11..<13], as: UTF8.self) + ":" + String(decoding: d[13..<15], as: UTF8.self) + "Z"
        return HumanTime.date(isoUTC: iso).map { local($0, now: now) } ?? id
    }

    static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// "Tue 5 Dec, 14:32", "Tue 5 Dec 2025, 14:32", with `localtime_r` (no ICU object).
    static func local(_ date: Date, now: Date = Date()) -> String {
        func parts(_ d: Date) -> tm {
            var t = time_t(d.timeIntervalSince1970.rounded(.down))
            var p = tm()
            localtime_r(&t, &p)
            return p
        }
        let p = parts(date), n = parts(now)
        let year = p.tm_year == n.tm_year ? "" : " \(p.tm_year + 1900)"
        return "\(weekdays[Int(p.tm_wday)]) \(p.tm_mday) \(months[Int(p.tm_mon)])\(year), "
            + String(format: "%02d:%02d", p.tm_hour, p.tm_min)
    }
}
