import Batches
import Foundation
import Synchronization

/// The service's metrics (reference: Metrics), kept as batches finish and rendered in the
/// Prometheus text exposition format (version 0.0.4), the same text for `metricsFile` and `GET
/// /metrics`:
///
/// - `photofinish_photos_total{inbox,status}` (ok, failed, interrupted), counter
/// - `photofinish_errors_total{inbox,code}`, counter
/// - `photofinish_bytes_total{inbox,direction}` (in: the sources read, out: the files written), counter
/// - `photofinish_pending_files{inbox}`, gauge (in `drop/`, settling or waiting for a batch)
/// - `photofinish_photos_in_flight`, gauge (over all hot folders)
/// - `photofinish_share_available{inbox}`, gauge (1: the hot folder's file system answers and
///   takes data; 0: share unavailable or disk full, nothing is claimed)
/// - `photofinish_last_batch_timestamp_seconds{inbox}`, gauge (Unix time the last batch finished)
/// - `photofinish_batch_duration_seconds{inbox}` and `photofinish_photo_duration_seconds{inbox}`,
///   histograms
///
/// - `photofinish_open_files_limit`, `photofinish_open_files_wanted` and
///   `photofinish_hot_folders_beyond_open_files_limit`, gauges: the open-file limit in force, the
///   `LimitNOFILE=` that fits every hot folder, and how many hot folders the limit leaves
///   unwatched (`OpenFiles.Budget`: the numbers the journal, `status` and STATUS.txt say)
///
/// In a cluster (`cluster` in the config) every series carries a `host` label first (the
/// cluster's host name: several hosts' series side by side stay apart), and two more gauges:
///
/// - `photofinish_cluster_database_up{host}` (1: the cluster's database answers; 0: it does not,
///   and this host works alone)
/// - `photofinish_cluster_tasks_held{host}` (the photo tasks this host holds under a lease)
///
/// Counters start at zero with the process (Prometheus handles the reset).
public final class Metrics: Sendable {
    /// Upper bounds of the histogram buckets, in seconds.
    static let batchBuckets: [Double] = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600]
    static let photoBuckets: [Double] = [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120]
    static let photoStatuses = ["ok", "failed", "interrupted"]

    struct Histogram: Equatable {
        var counts: [Int]
        var sum = 0.0
        var count = 0

        init(buckets: Int) { counts = Array(repeating: 0, count: buckets) }

        mutating func observe(_ value: Double, bounds: [Double]) {
            for (i, bound) in bounds.enumerated() where value <= bound { counts[i] += 1 }
            sum += value
            count += 1
        }
    }

    struct Inbox: Equatable {
        var photos: [String: Int] = [:]
        var errors: [String: Int] = [:]
        var bytesIn = 0, bytesOut = 0
        var pending = 0
        var shareAvailable = true
        var lastBatch: Double?
        var batchDuration = Histogram(buckets: Metrics.batchBuckets.count)
        var photoDuration = Histogram(buckets: Metrics.photoBuckets.count)
        /// Deliveries that ended, by destination and result (`delivered`, `failed`).
        var deliveries: [String: [String: Int]] = [:]
    }

    private struct State {
        var inboxes: [String: Inbox] = [:]
        var order: [String] = []
        var inFlight = 0
        var cluster: ClusterGauges?
        var openFiles: ServiceStatus.OpenFiles?
    }

    /// This host of a cluster, as the metrics show it.
    struct ClusterGauges: Equatable {
        var host: String
        var databaseUp: Bool
        var held: Int
    }

    private let state = Mutex(State())
    /// Goes up with every change (the metrics file is rewritten only then).
    private let changes = Atomic<Int>(0)

    public init() {}

    /// How many changes there have been (compare two readings).
    var version: Int { changes.load(ordering: .acquiring) }

    private func changed() { changes.add(1, ordering: .releasing) }

    /// The hot folders shown (others are dropped; new ones start at zero).
    func setInboxes(_ names: [String]) {
        state.withLock { s in
            s.inboxes = Dictionary(uniqueKeysWithValues: names.map { ($0, s.inboxes[$0] ?? Inbox()) })
            s.order = names
        }
        changed()
    }

    /// Counts a finished batch: its photos by status, their errors, bytes and durations.
    /// - Parameter folder: the published batch folder (the batch's own outputs are measured there).
    func record(_ report: Report, inbox: String, folder: String) {
        var setBytes = 0
        for output in report.outputs {
            var st = stat()
            if stat(folder + "/" + output.file, &st) == 0 { setBytes += Int(st.st_size) }
        }
        let finished = HumanTime.date(isoUTC: report.finished)
        let started = HumanTime.date(isoUTC: report.started)
        state.withLock { s in
            guard var entry = s.inboxes[inbox] else { return }
            for item in report.items {
                entry.photos[item.status.rawValue, default: 0] += 1
                if let code = item.error?.code { entry.errors[code, default: 0] += 1 }
                entry.bytesIn += item.bytes ?? 0
                entry.bytesOut += (item.outputs ?? []).reduce(0) { $0 + $1.bytes }
                if item.status != .interrupted, let ms = item.ms {
                    entry.photoDuration.observe(Double(ms) / 1000, bounds: Self.photoBuckets)
                }
            }
            entry.bytesOut += setBytes
            if let finished, let started {
                entry.batchDuration.observe(max(0, finished.timeIntervalSince(started)), bounds: Self.batchBuckets)
            }
            if let finished { entry.lastBatch = finished.timeIntervalSince1970 }
            s.inboxes[inbox] = entry
        }
        changed()
    }

    /// The last batch of a hot folder found on disk at start (no counts: they were before us).
    func setLastBatch(_ inbox: String, finished: String) {
        guard let date = HumanTime.date(isoUTC: finished) else { return }
        state.withLock { s in
            if s.inboxes[inbox]?.lastBatch == nil { s.inboxes[inbox]?.lastBatch = date.timeIntervalSince1970 }
        }
        changed()
    }

    func setPending(_ inbox: String, _ count: Int) {
        let differs = state.withLock { s -> Bool in
            guard let old = s.inboxes[inbox]?.pending, old != count else { return false }
            s.inboxes[inbox]?.pending = count
            return true
        }
        if differs { changed() }
    }

    func setShareAvailable(_ inbox: String, _ available: Bool) {
        state.withLock { $0.inboxes[inbox]?.shareAvailable = available }
    }

    /// A delivery to `destination` ended: `delivered`, or `failed` (an attempt failed).
    func recordDelivery(_ inbox: String, destination: String, result: String) {
        state.withLock { s in s.inboxes[inbox]?.deliveries[destination, default: [:]][result, default: 0] += 1 }
        changed()
    }

    func setInFlight(_ count: Int) {
        state.withLock { $0.inFlight = count }
    }

    /// What the open-file limit allows the hot folders, as of the last (re)load.
    func setOpenFiles(_ openFiles: ServiceStatus.OpenFiles?) {
        state.withLock { $0.openFiles = openFiles }
        changed()
    }

    /// This daemon is host `host` of a cluster: every series gets its `host` label, and the
    /// cluster's gauges are shown.
    func setCluster(host: String, databaseUp: Bool, held: Int) {
        let cluster = ClusterGauges(host: host, databaseUp: databaseUp, held: held)
        let differs = state.withLock { s -> Bool in
            defer { s.cluster = cluster }
            return s.cluster != cluster
        }
        if differs { changed() }
    }

    /// The Prometheus text: `# HELP` and `# TYPE` lines, then the samples, hot folders in config order.
    public func text() -> String {
        let (inboxes, order, inFlight, cluster, openFiles) = state.withLock { ($0.inboxes, $0.order, $0.inFlight, $0.cluster, $0.openFiles) }
        var out = PrometheusText()
        if let cluster { out.common = [("host", cluster.host)] }
        out.family("photofinish_photos_total", .counter, "Photos finished, by hot folder and result.")
        for name in order {
            let entry = inboxes[name]!
            for status in Self.photoStatuses {
                out.sample("photofinish_photos_total", ["inbox": name, "status": status], Double(entry.photos[status] ?? 0))
            }
        }
        out.family("photofinish_errors_total", .counter, "Photos that failed, by hot folder and error code.")
        for name in order {
            for (code, count) in inboxes[name]!.errors.sorted(by: { $0.key < $1.key }) {
                out.sample("photofinish_errors_total", ["inbox": name, "code": code], Double(count))
            }
        }
        out.family("photofinish_bytes_total", .counter, "Bytes read from sources (in) and written as outputs (out).")
        for name in order {
            out.sample("photofinish_bytes_total", ["inbox": name, "direction": "in"], Double(inboxes[name]!.bytesIn))
            out.sample("photofinish_bytes_total", ["inbox": name, "direction": "out"], Double(inboxes[name]!.bytesOut))
        }
        out.family("photofinish_deliveries_total", .counter, "Deliveries of finished batches that ended, by hot folder, destination and result (delivered, failed: an attempt that failed).")
        for name in order {
            for (destination, results) in inboxes[name]!.deliveries.sorted(by: { $0.key < $1.key }) {
                for result in ["delivered", "failed"] {
                    out.sample("photofinish_deliveries_total", ["inbox": name, "destination": destination, "result": result],
                               Double(results[result] ?? 0))
                }
            }
        }
        out.family("photofinish_pending_files", .gauge, "Files in drop/ not yet claimed (settling or waiting for their batch).")
        for name in order { out.sample("photofinish_pending_files", ["inbox": name], Double(inboxes[name]!.pending)) }
        out.family("photofinish_share_available", .gauge, "1 when the hot folder's file system answers and takes data, 0 while it does not (nothing is claimed).")
        for name in order { out.sample("photofinish_share_available", ["inbox": name], inboxes[name]!.shareAvailable ? 1 : 0) }
        out.family("photofinish_photos_in_flight", .gauge, "Photos being finished now, over all hot folders.")
        out.sample("photofinish_photos_in_flight", [:], Double(inFlight))
        out.family("photofinish_last_batch_timestamp_seconds", .gauge, "When the hot folder's last batch finished (Unix time).")
        for name in order {
            if let last = inboxes[name]!.lastBatch { out.sample("photofinish_last_batch_timestamp_seconds", ["inbox": name], last) }
        }
        out.family("photofinish_batch_duration_seconds", .histogram, "Time from a batch's claim to its report.")
        for name in order {
            out.histogram("photofinish_batch_duration_seconds", ["inbox": name], inboxes[name]!.batchDuration, bounds: Self.batchBuckets)
        }
        out.family("photofinish_photo_duration_seconds", .histogram, "Time to finish one photo.")
        for name in order {
            out.histogram("photofinish_photo_duration_seconds", ["inbox": name], inboxes[name]!.photoDuration, bounds: Self.photoBuckets)
        }
        if let openFiles {
            out.family("photofinish_open_files_limit", .gauge, "The open-file limit in force (RLIMIT_NOFILE, raised to the hard limit at start).")
            out.sample("photofinish_open_files_limit", [:], Double(openFiles.limit))
            out.family("photofinish_open_files_wanted", .gauge, "The LimitNOFILE= that fits every hot folder with a quarter to spare.")
            out.sample("photofinish_open_files_wanted", [:], Double(openFiles.wanted))
            out.family("photofinish_hot_folders_beyond_open_files_limit", .gauge, "Hot folders not watched because the open-file limit has no room for them (raise LimitNOFILE= and restart).")
            out.sample("photofinish_hot_folders_beyond_open_files_limit", [:], Double(openFiles.refused))
            if let watches = openFiles.watchesLimit, let polled = openFiles.polled, let wanted = openFiles.watchesWanted {
                out.family("photofinish_inotify_watches_limit", .gauge, "This user's fs.inotify.max_user_watches (two watches a hot folder).")
                out.sample("photofinish_inotify_watches_limit", [:], Double(watches))
                out.family("photofinish_inotify_watches_wanted", .gauge, "The fs.inotify.max_user_watches that fits every hot folder with a quarter to spare.")
                out.sample("photofinish_inotify_watches_wanted", [:], Double(wanted))
                out.family("photofinish_hot_folders_beyond_inotify_watches", .gauge, "Hot folders polled instead of watched because inotify's watches have no room for them (raise fs.inotify.max_user_watches and restart).")
                out.sample("photofinish_hot_folders_beyond_inotify_watches", [:], Double(polled))
            }
        }
        if let cluster {
            out.family("photofinish_cluster_database_up", .gauge, "1 when the cluster's database answers, 0 while it does not (this host works alone meanwhile).")
            out.sample("photofinish_cluster_database_up", [:], cluster.databaseUp ? 1 : 0)
            out.family("photofinish_cluster_tasks_held", .gauge, "Photo tasks this host holds under a lease.")
            out.sample("photofinish_cluster_tasks_held", [:], Double(cluster.held))
        }
        return out.text
    }
}

/// Building the Prometheus text exposition format: families with `# HELP` and `# TYPE`,
/// samples with escaped label values, histograms as `_bucket{le=…}`, `_sum`, `_count`.
struct PrometheusText {
    enum Kind: String { case counter, gauge, histogram }

    private(set) var text = ""
    /// Labels every sample carries first (the cluster's `host`).
    var common: [(String, String)] = []

    mutating func family(_ name: String, _ kind: Kind, _ help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(kind.rawValue)\n"
    }

    /// Labels in the order given by `labelOrder` (the metric's own), then `le`.
    mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: Double) {
        sample(name, Array(labels.map { ($0.key, $0.value) }), value)
    }

    mutating func sample(_ name: String, _ labels: [(String, String)], _ value: Double) {
        let labels = common + labels
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.0)=\"\(Self.escape($0.1))\"" }.joined(separator: ",") + "}"
        }
        text += " " + Self.number(value) + "\n"
    }

    mutating func histogram(_ name: String, _ labels: KeyValuePairs<String, String>, _ h: Metrics.Histogram, bounds: [Double]) {
        let base = Array(labels.map { ($0.key, $0.value) })
        for (bound, count) in zip(bounds, h.counts) {
            sample(name + "_bucket", base + [("le", Self.number(bound))], Double(count))
        }
        sample(name + "_bucket", base + [("le", "+Inf")], Double(h.count))
        sample(name + "_sum", base, h.sum)
        sample(name + "_count", base, Double(h.count))
    }

    /// Backslash, double quote and line feed escaped, as the format asks.
    static func escape(_ value: String) -> String {
        // A hot folder's name needs none (letters, digits, '.', '_', '-'): three Foundation
        // replacements of every label of every series were half the metrics' CPU at 2,000
        // hot folders (perf of a stop, which writes the metrics once more).
        guard value.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\n") }) else {
            return value
        }
        return value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    /// `3`, `0.25`, `1764431045.123`: whole numbers without a fraction.
    static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
