import HotFolders

// A hot folder's life as the service core decides it, one concern to a type (docs/architecture.md,
// The service core): taking it up (`TakingUp`), claiming what settles into batches
// (`Claiming`), housekeeping (`Housekeeping`: retention and free space), its batches' leases and
// recovery (`Recovering`), and in a cluster the adoption of dead hosts' batches (`Adopting`).
// Each holds its own state and deadline (`nextDeadline`) and decides in a pure
// `handle(_:now:) -> [Effect]`: no file, no clock, no thread — a test drives a hot folder's whole
// life with plain values, as `SettleBatcher`'s tests do. `ServiceLoop` waits, hands each event to
// its concern and carries out the effects (a job on the work pool, a batch queued, a line logged).

/// A batch as the concerns see it: `ClaimedBatch` in the service, a plain value in tests.
protocol FolderBatch: Sendable {
    var id: String { get }
    /// Its photos (the manifest's items).
    var photoCount: Int { get }
}

extension ClaimedBatch: FolderBatch {
    var photoCount: Int { manifest.items.count }
}

/// A line a concern has the loop log (the hot folder's name is added as `INBOX`).
struct LogLine: Sendable, Equatable {
    var priority: Logger.Priority
    var text: String
    /// The batch it is about (`BATCH`).
    var batch: String?
    /// The file it is about (`FILE`, escaped as people read it).
    var file: String?

    static func notice(_ text: String, batch: String? = nil) -> LogLine { LogLine(priority: .notice, text: text, batch: batch) }
    static func info(_ text: String, batch: String? = nil) -> LogLine { LogLine(priority: .info, text: text, batch: batch) }
    static func warning(_ text: String, batch: String? = nil, file: String? = nil) -> LogLine {
        LogLine(priority: .warning, text: text, batch: batch, file: file)
    }
    static func error(_ text: String, batch: String? = nil) -> LogLine { LogLine(priority: .error, text: text, batch: batch) }

    /// The fields of the line in hot folder `inbox`.
    func fields(inbox: String) -> LogFields {
        var fields: LogFields = ["INBOX": inbox]
        if let batch { fields["BATCH"] = batch }
        if let file { fields["FILE"] = file }
        return fields
    }
}

/// The earliest of some deadlines.
func earliest(_ deadlines: Duration?...) -> Duration? {
    deadlines.compactMap { $0 }.min()
}

/// "5 min", "90 s", "1 h": a duration as the log says it.
func words(_ d: Duration) -> String {
    let s = d.components.seconds
    if s >= 3600 && s % 3600 == 0 { return "\(s / 3600) h" }
    if s >= 60 && s % 60 == 0 { return "\(s / 60) min" }
    return "\(s) s"
}

/// `n photo` or `n photos`.
func photos(_ n: Int) -> String { "\(n) photo\(n == 1 ? "" : "s")" }
