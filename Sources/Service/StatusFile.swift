import Batches
import Foundation
import Synchronization

/// What `photofinish status` shows, per hot folder: written by the daemon as `status.json`
/// in its runtime folder (`$RUNTIME_DIRECTORY`, i.e. `/run/photofinish` under systemd).
public struct ServiceStatus: Codable, Sendable, Equatable {
    public var pid: Int32
    /// ISO 8601 UTC.
    public var updated: String
    /// "running" or "stopped" (the last thing a daemon writes on its way out).
    public var state: String
    public var inboxes: [Inbox]

    public init(pid: Int32, updated: String, state: String, inboxes: [Inbox]) {
        self.pid = pid
        self.updated = updated
        self.state = state
        self.inboxes = inboxes
    }

    public struct Inbox: Codable, Sendable, Equatable {
        public var name: String
        public var root: String
        /// Files in `drop/` still being written or not yet stable for `settle`.
        public var settling: Int = 0
        /// Files settled, waiting for their batch to close.
        public var pending: Int = 0
        /// Claimed batches waiting for their turn.
        public var queued: Int = 0
        public var processing: Progress?
        public var last: Last?
        /// Watching fell back to polling (no inotify watch).
        public var polling: Bool = false

        public init(name: String, root: String) {
            self.name = name
            self.root = root
        }
    }

    public struct Progress: Codable, Sendable, Equatable {
        public var batch: String
        public var done: Int
        public var total: Int

        public init(batch: String, done: Int, total: Int) {
            self.batch = batch
            self.done = done
            self.total = total
        }
    }

    /// The last batch finished.
    public struct Last: Codable, Sendable, Equatable {
        public var batch: String
        public var status: String
        public var items: Int
        public var ok: Int
        public var failed: Int
        public var finished: String

        public init(batch: String, status: String, items: Int, ok: Int, failed: Int, finished: String) {
            self.batch = batch
            self.status = status
            self.items = items
            self.ok = ok
            self.failed = failed
            self.finished = finished
        }
    }

    /// "shop: processing 23 of 80; 2 pending · studio: idle" — the `STATUS=` line.
    public var summary: String {
        inboxes.map { inbox in
            var parts: [String] = []
            if let p = inbox.processing { parts.append("processing \(p.done) of \(p.total)") }
            if inbox.queued > 0 { parts.append("\(inbox.queued) batch\(inbox.queued == 1 ? "" : "es") queued") }
            let waiting = inbox.pending + inbox.settling
            if waiting > 0 { parts.append("\(waiting) pending") }
            if parts.isEmpty {
                parts.append(inbox.last.map { "idle, last batch \($0.batch) \($0.status) (\($0.ok) of \($0.items))" } ?? "idle")
            }
            return inbox.name + ": " + parts.joined(separator: "; ")
        }.joined(separator: " · ")
    }

    /// Where the status file lives: `$RUNTIME_DIRECTORY` (set by systemd), else
    /// `/run/photofinish` when it exists, else `$XDG_RUNTIME_DIR/photofinish`, else
    /// `/tmp/photofinish-<uid>`.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let dir = environment["RUNTIME_DIRECTORY"], !dir.isEmpty {
            return dir.split(separator: ":").first.map(String.init)! + "/status.json"
        }
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: "/run/photofinish", isDirectory: &isDir), isDir.boolValue {
            return "/run/photofinish/status.json"
        }
        if let xdg = environment["XDG_RUNTIME_DIR"], !xdg.isEmpty { return xdg + "/photofinish/status.json" }
        return "/tmp/photofinish-\(getuid())/status.json"
    }

    /// Writes the status atomically (a reader never sees half of it).
    public func write(to path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try AtomicFile.write([UInt8](try encoder.encode(self)), to: path)
    }

    public static func read(from path: String) throws -> ServiceStatus {
        try JSONDecoder().decode(ServiceStatus.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }
}

/// The live status, shared by the watching loop and the batch workers.
final class StatusBoard: Sendable {
    private let inboxes = Mutex<[String: ServiceStatus.Inbox]>([:])
    private let order = Mutex<[String]>([])

    func set(_ names: [(String, String)]) {
        inboxes.withLock { all in
            var next: [String: ServiceStatus.Inbox] = [:]
            for (name, root) in names {
                var entry = all[name] ?? ServiceStatus.Inbox(name: name, root: root)
                entry.root = root
                next[name] = entry
            }
            all = next
        }
        order.withLock { $0 = names.map(\.0) }
    }

    func update(_ name: String, _ change: (inout ServiceStatus.Inbox) -> Void) {
        inboxes.withLock { all in
            if var entry = all[name] {
                change(&entry)
                all[name] = entry
            }
        }
    }

    /// True while a batch is being finished or waits its turn (a proof waits then).
    var isBusy: Bool {
        inboxes.withLock { $0.values.contains { $0.processing != nil || $0.queued > 0 } }
    }

    func snapshot(state: String) -> ServiceStatus {
        let all = inboxes.withLock { $0 }
        let names = order.withLock { $0 }
        return ServiceStatus(pid: getpid(), updated: BatchID.timestamp(Date()), state: state,
                             inboxes: names.compactMap { all[$0] })
    }
}
