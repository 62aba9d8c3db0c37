import Batches
import Cluster
import Finishing
import Foundation
import System
import Synchronization

/// What `photofinish status` shows, per hot folder: written by each daemon and `watch` process
/// into its own file in a runtime folder (see `StatusFiles`).
public struct ServiceStatus: Codable, Sendable, Equatable {
    public var pid: Int32
    /// When the process `pid` started (`/proc/PID/stat`'s field 22, clock ticks since the boot;
    /// nil in the status of a process from before it): a status file left by a process that
    /// died is not taken for a running one's when the kernel has given its pid to another.
    public var started: UInt64?
    /// ISO 8601 UTC.
    public var updated: String
    /// Running, or stopped (the last thing a daemon writes on its way out).
    public var state: State
    /// What the process runs, as a person would type it: `daemon --config /etc/…`, `watch /srv/…`.
    public var command: String?
    /// The absolute path of the config the process runs (`daemon`, or `watch --config`).
    public var config: String?
    public var inboxes: [Inbox]
    /// The last reload (SIGHUP) failed, and the process runs the configuration it had.
    public var reloadFailed: ReloadFailure?
    /// This daemon as a host of a cluster (`cluster` in its config); nil: it works alone.
    public var cluster: ClusterState?
    /// What the open-file limit allows the hot folders (a daemon's; nil: not known).
    public var openFiles: OpenFiles?

    /// The open-file limit of a daemon and what it allows its hot folders: the hot folders
    /// beyond `watched` are refused until `LimitNOFILE=` is raised to `wanted` and the daemon
    /// restarted (reference: Many hot folders and the open-file limit).
    public struct OpenFiles: Codable, Sendable, Equatable {
        /// The soft limit in force.
        public var limit: UInt64
        /// The hot folders of its configuration.
        public var hotFolders: Int
        /// How many the limit has room for, and how many it refuses for want of it.
        public var watched: Int
        public var refused: Int
        /// The `LimitNOFILE=` that fits them all.
        public var wanted: UInt64
        /// What each folder beyond the limit is told (its state's `why` and `fix`).
        public var why: String
        public var fix: [String]
        /// inotify's part (nil in status files of a daemon from before it): this user's
        /// `fs.inotify.max_user_watches`, how many of the folders let in are polled for want of
        /// watches, the limit that fits them all, and the sentence and fix said of them.
        public var watchesLimit: Int?
        public var polled: Int?
        public var watchesWanted: Int?
        public var inotify: String?
        public var inotifyFix: [String]?

        public init(limit: UInt64, hotFolders: Int, watched: Int, refused: Int, wanted: UInt64, why: String, fix: [String]) {
            self.limit = limit
            self.hotFolders = hotFolders
            self.watched = watched
            self.refused = refused
            self.wanted = wanted
            self.why = why
            self.fix = fix
        }

        /// One line of it: "the open-file limit (256) leaves room for 140 of 2000 hot folders
        /// (…): 1860 are not watched", and what inotify's limit polls.
        public var summary: String {
            ([refusedSummary] + (inotify.map { [$0] } ?? [])).joined(separator: "; ")
        }

        /// The open-file limit's part of `summary`.
        public var refusedSummary: String {
            refused == 0 ? "the open-file limit (\(limit)) has room for all \(hotFolders) hot folders (LimitNOFILE=\(wanted) would leave a quarter to spare)"
                : "\(why): \(refused) hot folder\(refused == 1 ? " is" : "s are") not watched"
        }
    }

    /// This host of the cluster: its name, whether the cluster's database answers (while it
    /// does not, the host works alone: it claims and finishes photos itself), and the cluster as it
    /// was last read (every host, its workers and the tasks it holds: `ClusterStatus`).
    public struct ClusterState: Codable, Sendable, Equatable {
        /// `cluster.host`.
        public var host: String
        /// `connecting` (the first attempt is under way), `reachable` or `unreachable`.
        public var database: String
        /// Since when the database is in that state (ISO 8601 UTC).
        public var since: String
        /// Why it is unreachable, in libpq's words.
        public var reason: String?
        /// The server reached (`PostgreSQL 15.8 on …`).
        public var server: String?
        /// `cluster.lease`, in seconds.
        public var lease: Double
        /// Tasks this host holds now.
        public var held: Int
        /// The cluster as last read from the database, and when (ISO 8601 UTC): older than
        /// `since` while the database is unreachable.
        public var view: ClusterStatus?
        public var read: String?

        public static let connecting = "connecting"
        public static let reachable = "reachable"
        public static let unreachable = "unreachable"

        public init(host: String, database: String, since: String, lease: Double, held: Int = 0) {
            self.host = host
            self.database = database
            self.since = since
            self.lease = lease
            self.held = held
        }

        public var isReachable: Bool { database == Self.reachable }
    }

    /// A reload that failed: when, and its errors (the first few).
    public struct ReloadFailure: Codable, Sendable, Equatable {
        /// ISO 8601 UTC.
        public var at: String
        public var errors: [String]

        public init(at: String, errors: [String]) {
            self.at = at
            self.errors = errors
        }
    }

    public init(pid: Int32, updated: String, state: State, command: String? = nil, config: String? = nil,
                inboxes: [Inbox]) {
        self.pid = pid
        self.updated = updated
        self.state = state
        self.command = command
        self.config = config
        self.inboxes = inboxes
    }

    /// Whether the process that wrote this is still there and says it runs.
    public var isRunning: Bool {
        StatusFiles.Writer(pid: pid, started: started, state: state).isRunning
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
        /// The batch being finished (after it closed), as its photos get done.
        public var processing: Progress?
        /// The open batch: photos claimed as they settle and finished while it still takes
        /// more (stage `open`); nil when none is open.
        public var open: Progress?
        public var last: Last?
        /// Files in `drop/` of a hot folder that is not watched (refused): nothing takes them
        /// until it is (nil: not looked at, or drop/ cannot be read).
        public var waiting: Int?
        /// Watching fell back to polling (no inotify watch).
        public var polling: Bool = false
        /// How drop/ is watched: `"inotify"`, `"inotify + polling every 2s (nfs)"`,
        /// `"polling every 2s (no inotify watch)"`.
        public var watching: String?
        /// Files in drop/ the claim could not take, and why (one sentence each).
        public var refused: [String]?
        /// Files in drop/ that are never taken (hidden, partial downloads, folders, hard-linked
        /// files), and why (one sentence each).
        public var neverTaken: [String]?
        /// Sources that could not be filed, by batch: they wait in `.work/<batch>/src/`.
        public var unfiled: [String: [String]]?
        /// What the service does with this hot folder: watching it, or not and why (absent
        /// in status files written before there were states).
        public var state: FolderState?
        /// The proof of its template, when it is not in its own `proof/` folder (no hard link
        /// could be made there: another file system): the one file of every folder using it.
        public var proof: String?
        /// Photos claimed into `.work/` that wait there: in batches waiting their turn, or
        /// left by a stop (they resume at the next start). Pending, as people see it.
        public var parked: Int?
        /// The hot folder's share does not answer, or its disk is full, in words
        /// (`ShareHealth.words`); nil while it answers.
        public var share: String?
        /// Batches held by a host that stopped renewing their lease, each with when it is taken
        /// over (one sentence each).
        public var takeovers: [String]?
        /// In a cluster: the host that claims from this folder now (it holds the folder's
        /// claimer role); nil when none does or the database does not answer.
        public var claimer: String?
        /// Since when `claimer` holds the role (ISO 8601 UTC, as it recorded it).
        public var claimerSince: String?
        /// Deliveries not done (pending, or failed and tried again), one sentence each:
        /// `batch → destination: failed (why); tried again at …` (docs/reference.md
        /// "Delivering finished photos").
        public var deliveries: [String]?
        /// Finished batches held for their approval (`approve`), the oldest first (docs/reference.md
        /// "Approval"); nil when none is.
        public var held: [Held]?

        public init(name: String, root: String) {
            self.name = name
            self.root = root
        }
    }

    /// A finished batch held for its approval (reference: Approval): who approves it, since
    /// when, and its share link.
    public struct Held: Codable, Sendable, Equatable {
        public var batch: String
        /// `owner` (a user of the hot folder, in the console) or `client` (on the share page).
        public var by: Approver
        /// Since when (ISO 8601 UTC): its report's `finished`.
        public var since: String
        /// Its share link, when it has one (its report's `link`).
        public var link: String?

        public init(batch: String, by: Approver, since: String, link: String? = nil) {
            self.batch = batch
            self.by = by
            self.since = since
            self.link = link
        }
    }

    /// A hot folder's state (reference: Hot folder states): watching, or not and why, with what
    /// fixes it.
    public struct FolderState: Codable, Sendable, Equatable {
        /// `starting` (being taken up), `watching`, `refused` (cannot be used: `why`, `fix`),
        /// `share-unavailable` (its share does not answer), `low-space` (watched, but nothing
        /// new is claimed: below `minFreeSpace`), `stopped` (the service stopped): `Kind`.
        public var kind: Kind
        /// What is wrong, in words (for `refused`, `share-unavailable`, `low-space`).
        public var why: String?
        /// What fixes it: commands or sentences, one a line.
        public var fix: [String]?
        /// Since when (ISO 8601 UTC).
        public var since: String?

        public init(kind: Kind, why: String? = nil, fix: [String]? = nil, since: String? = nil) {
            self.kind = kind
            self.why = why
            self.fix = fix
            self.since = since
        }

        /// True when the folder is not watched and needs someone to act (`status` exits 1).
        public var isRefused: Bool { kind == .refused }
    }

    /// A batch on its way, counted in photos: how many are done (finished or failed) of how
    /// many, how many are being finished right now, and what the batch does. The words for it
    /// (`words`) are said the same way by `status`, STATUS.txt, `STATUS=` and the console.
    public struct Progress: Codable, Sendable, Equatable {
        public var batch: String
        /// Photos done: finished or failed.
        public var done: Int
        /// Photos in the batch (so far, while it is open).
        public var total: Int
        /// Photos being finished right now.
        public var inProgress: Int?
        /// Of those done, how many failed.
        public var failed: Int?
        /// Absent in status files written before there were stages: `photos`.
        public var stage: Stage?
        /// The batch's own outputs besides its report, in words ("story", "colour card"):
        /// what `outputs` makes.
        public var makes: [String]?

        public init(batch: String, done: Int, total: Int, inProgress: Int = 0, failed: Int = 0, stage: Stage = .photos,
                    makes: [String] = []) {
            self.batch = batch
            self.done = done
            self.total = total
            self.inProgress = inProgress > 0 ? inProgress : nil
            self.failed = failed > 0 ? failed : nil
            self.stage = stage
            self.makes = makes.isEmpty ? nil : makes
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

    /// "shop: processing 23 of 80 done, 2 in progress; 2 pending · studio: idle" — the `STATUS=` line (led by
    /// "cluster database unreachable · " while it is).
    /// Beyond `summaryUpTo` hot folders, the idle ones are counted, not named (10,000 of them
    /// made a line of 400 KB at every write: systemd keeps the first few KB).
    public var summary: String {
        let lead = cluster.map { $0.database == ClusterState.unreachable ? "cluster database unreachable · " : "" } ?? ""
        guard inboxes.count > Self.summaryUpTo else { return lead + inboxes.map(Self.summary).joined(separator: " · ") }
        let named = Array(inboxes.lazy.filter { !Self.isIdle($0) }.prefix(Self.summaryUpTo).map(Self.summary))
        let rest = inboxes.count - named.count
        return lead + (named + ["\(rest) more hot folder\(rest == 1 ? "" : "s")" + (named.count < Self.summaryUpTo ? " idle" : "")])
            .joined(separator: " · ")
    }

    static let summaryUpTo = 20

    /// Watching, and nothing in it or under way.
    static func isIdle(_ inbox: Inbox) -> Bool {
        (inbox.state.map { $0.kind == .watching } ?? true) && inbox.processing == nil && inbox.open == nil && inbox.queued == 0
            && inbox.pending + inbox.settling + (inbox.parked ?? 0) == 0
    }

    /// One hot folder's part of `summary`.
    static func summary(_ inbox: Inbox) -> String {
        var parts: [String] = []
        if let state = inbox.state, state.kind != .watching {
            return inbox.name + ": " + state.kind.summaryWords
        }
        if let p = inbox.processing { parts.append("processing " + p.words) }
        if let o = inbox.open { parts.append("open batch " + o.words) }
        if inbox.queued > 0 { parts.append("\(inbox.queued) batch\(inbox.queued == 1 ? "" : "es") queued") }
        let waiting = inbox.pending + inbox.settling + (inbox.parked ?? 0)
        if waiting > 0 { parts.append("\(waiting) pending") }
        if parts.isEmpty {
            parts.append(inbox.last.map { "idle, last batch \($0.batch) \($0.status) (\($0.ok) of \($0.items))" } ?? "idle")
        }
        return inbox.name + ": " + parts.joined(separator: "; ")
    }

    /// Writes the status atomically (a reader never sees half of it).
    /// - Throws: `SystemError` (a full disk: the caller tries again).
    public func write(to path: String) throws(SystemError) {
        var encoding = Encoding()
        try write(to: path, with: &encoding)
    }

    /// Writes the status atomically with `encoding`, which encodes again only the hot folders
    /// that changed since it last encoded them.
    func write(to path: String, with encoding: inout Encoding) throws(SystemError) {
        try Files.makeDirectories(FilePath(path).parent, permissions: 0o755)
        let bytes: [UInt8]
        do {
            bytes = try encoding.encode(self)
        } catch {
            throw SystemError("encode the status for", "\(path): \(error)", errno: EINVAL)
        }
        // Not fsynced: it lives in /run (memory) and is rewritten at every change.
        try PublishedFile.write(bytes, to: path)
    }

    /// The status file's JSON (compact, keys sorted), each hot folder's part kept from the last
    /// encoding while it is unchanged: a status written again because 10 of 10,000 folders
    /// changed encodes 10 (encoding all of them at every write was a tenth of a restart's CPU
    /// at 10,000 hot folders, measured with perf).
    struct Encoding: Sendable {
        private var parts: [String: (inbox: Inbox, json: [UInt8])] = [:]

        mutating func encode(_ status: ServiceStatus) throws -> [UInt8] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            var envelope = status
            envelope.inboxes = []
            let head = [UInt8](try encoder.encode(envelope))
            let marker = Array(#""inboxes":[]"#.utf8)
            guard let at = Self.topLevel(marker, in: head) else { return [UInt8](try encoder.encode(status)) }
            var kept: [String: (inbox: Inbox, json: [UInt8])] = [:]
            kept.reserveCapacity(status.inboxes.count)
            var out = Array(head[..<at.lowerBound]) + Array(#""inboxes":["#.utf8)
            for (i, inbox) in status.inboxes.enumerated() {
                let json: [UInt8]
                if let known = parts[inbox.name], known.inbox == inbox {
                    json = known.json
                } else {
                    json = [UInt8](try encoder.encode(inbox))
                }
                kept[inbox.name] = (inbox, json)
                if i > 0 { out.append(UInt8(ascii: ",")) }
                out += json
            }
            out.append(UInt8(ascii: "]"))
            out += head[at.upperBound...]
            parts = kept
            return out
        }

        /// Where `key` (`"name":…`, as compact JSON writes it) is in the top-level object of
        /// `json`, not in a value nested in it: `cluster` sorts before `inboxes`, and its view
        /// names each host's `inboxes` too (`[]` once a host stopped) — the hot folders were
        /// put there, the status's own list left empty (its claimer unseen by a reader).
        static func topLevel(_ key: [UInt8], in json: [UInt8]) -> Range<Int>? {
            var depth = 0, inString = false, escaped = false
            for (i, byte) in json.enumerated() {
                if inString {
                    if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                    continue
                }
                switch byte {
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
                case UInt8(ascii: "\""):
                    // Outside a string at the top level, a quote opens a key or a value; a value
                    // that reads like the key has its quotes escaped.
                    if depth == 1, json[i...].starts(with: key) { return i..<(i + key.count) }
                    inString = true
                default: break
                }
            }
            return nil
        }
    }

    public static func read(from path: String) throws -> ServiceStatus {
        guard let bytes = try Files.contents(of: path) else { throw SystemError("open", path, errno: ENOENT) }
        return try JSONDecoder().decode(ServiceStatus.self, from: Data(bytes))
    }
}

/// Where status files live: one per process, named for what it runs, so two processes never
/// write the same file and `photofinish status` can find each.
public enum StatusFiles {
    /// What a process is keyed by: the config a daemon runs, or the hot folder a `watch` runs.
    public enum Key: Sendable {
        case config(String)
        case root(String)

        /// `daemon-<config stem>-<8 hex>` or `watch-<folder name>-<8 hex>`; the hex digits are
        /// the start of the SHA-256 of the absolute path (two folders of one name differ).
        var fileStem: String {
            let (kind, path) = switch self {
            case .config(let path): ("daemon", path)
            case .root(let path): ("watch", path)
            }
            let url = URL(fileURLWithPath: path)
            let label = String(url.deletingPathExtension().lastPathComponent.map {
                $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ".") ? $0 : "-"
            }.prefix(40))
            return "\(kind)-\(label)-\(SHA256.hex(of: Array(path.utf8)).prefix(8))"
        }
    }

    /// The folder this process writes its status to: `$RUNTIME_DIRECTORY` (set by systemd),
    /// else `/run/photofinish` when this user may write there, else the user's own folder
    /// (`$XDG_RUNTIME_DIR/photofinish`, else `/tmp/photofinish-<uid>`).
    public static func directory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let dir = runtimeDirectory(environment) { return dir }
        if access(system, W_OK) == 0 { return system }
        return userDirectory(environment)
    }

    /// The folders `photofinish status` reads: the system daemon's and this user's; with
    /// `$RUNTIME_DIRECTORY` set, that folder alone (one unit's processes, or one test's daemons
    /// beside an installed service: each sees its own, never the others').
    public static func directories(environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        if let dir = runtimeDirectory(environment) { return [dir] }
        var out: [String] = []
        for dir in [system, userDirectory(environment)]
        where !out.contains(dir) {
            out.append(dir)
        }
        return out
    }

    /// Where a process writes its status, and what it says it runs.
    public struct Target: Sendable {
        public var path: String
        /// `daemon --config /etc/…` or `watch /srv/…`.
        public var command: String
        /// The config a daemon runs (absolute); `nil` for `watch`.
        public var config: String?
    }

    /// This process's status file: `<directory>/<key>.json`, or `<key>-<pid>.json` when another
    /// running process already writes the key's file (two `watch` of one folder).
    /// - Parameter key: the absolute config path of a daemon, or the absolute root of a `watch`.
    public static func target(for key: Key, environment: [String: String] = ProcessInfo.processInfo.environment) -> Target {
        let base = directory(environment: environment) + "/" + key.fileStem
        var path = base + ".json"
        if let other = try? Writer.read(from: path), other.pid != getpid(), other.isRunning {
            path = base + "-\(getpid()).json"
        }
        return switch key {
        case .config(let config): Target(path: path, command: "daemon --config \(config)", config: config)
        case .root(let root): Target(path: path, command: "watch \(root)", config: nil)
        }
    }

    /// Who wrote a status file, read without its hot folders: whether another process writes
    /// the file is known without decoding 10,000 of them (a restart at 10,000 hot folders
    /// spent 0.1 s of CPU there, measured with perf).
    struct Writer: Decodable {
        var pid: Int32
        var started: UInt64?
        var state: ServiceStatus.State

        /// It says it runs, its pid is a process's, and that process is the one that wrote it
        /// (started when it said; a status without its start time is taken at its pid's word).
        var isRunning: Bool {
            guard state == .running, kill(pid, 0) == 0 || errno == EPERM else { return false }
            guard let started, let now = ProcessResources.startTime(of: pid) else { return true }
            return now == started
        }

        static func read(from path: String) throws -> Writer {
            guard let bytes = try Files.contents(of: path) else { throw SystemError("open", path, errno: ENOENT) }
            return try JSONDecoder().decode(Writer.self, from: Data(bytes))
        }
    }

    /// Every status file in `directories`, each with its path; unreadable ones are left out.
    public static func all(environment: [String: String] = ProcessInfo.processInfo.environment)
        -> [(path: String, status: ServiceStatus)] {
        var found: [(path: String, status: ServiceStatus)] = []
        for dir in directories(environment: environment) {
            let names = Files.textNames(in: dir)
            for name in names.sorted() where name.hasSuffix(".json") && !name.hasPrefix(".") {
                // A file another process is replacing, or not a status: not one to show.
                if let status = try? ServiceStatus.read(from: dir + "/" + name) { found.append((dir + "/" + name, status)) }
            }
        }
        return found
    }

    /// How long the status of a process that stopped is kept once none of its hot folders is
    /// there any more (its last states are shown only for folders that are).
    static let leftoverAge: TimeInterval = 86_400

    /// Removes the status files of processes that are gone when none of their hot folders
    /// exists and their last write is older than `leftoverAge` (a test's or a benchmark's
    /// daemon, whose folders were removed with it): they showed nothing and were kept forever.
    /// What cannot be removed (another user's) stays.
    /// - Returns: the files kept.
    public static func removeLeftovers(_ found: [(path: String, status: ServiceStatus)], now: Date = Date())
        -> [(path: String, status: ServiceStatus)] {
        found.filter { path, status in
            guard !status.isRunning, let written = HumanTime.date(isoUTC: status.updated),
                  now.timeIntervalSince(written) > leftoverAge,
                  !status.inboxes.contains(where: { Files.existsFollowingLinks($0.root) }) else { return true }
            return unlink(path) != 0 && errno != ENOENT
        }
    }

    /// The last state of each hot folder that no running process watches: from the newest of
    /// the `stopped` statuses naming its root (one entry per folder, however many processes
    /// watched it once), newest first.
    /// - Parameters:
    ///   - stopped: statuses of processes that no longer run.
    ///   - running: statuses of the processes that run.
    public static func lastStates(of stopped: [ServiceStatus], watchedBy running: [ServiceStatus])
        -> [(inbox: ServiceStatus.Inbox, status: ServiceStatus)] {
        // Each root standardized resolves its symlinks (a readlink a component): a quarter of
        // `photofinish status`'s CPU at 10,000 hot folders when nothing had stopped.
        guard !stopped.isEmpty else { return [] }
        let watched = Set(running.flatMap { $0.inboxes.map { ($0.root as NSString).standardizingPath } })
        var newest: [String: (inbox: ServiceStatus.Inbox, status: ServiceStatus)] = [:]
        for status in stopped {
            for inbox in status.inboxes {
                let root = (inbox.root as NSString).standardizingPath
                guard !watched.contains(root) else { continue }
                if let known = newest[root], known.status.updated >= status.updated { continue }
                newest[root] = (inbox, status)
            }
        }
        return newest.values.sorted { ($0.status.updated, $1.inbox.root) > ($1.status.updated, $0.inbox.root) }
    }

    static let system = "/run/photofinish"

    private static func runtimeDirectory(_ environment: [String: String]) -> String? {
        guard let dir = environment["RUNTIME_DIRECTORY"], !dir.isEmpty else { return nil }
        return dir.split(separator: ":").first.map(String.init)
    }

    private static func userDirectory(_ environment: [String: String]) -> String {
        if let xdg = environment["XDG_RUNTIME_DIR"], !xdg.isEmpty { return xdg + "/photofinish" }
        return "/tmp/photofinish-\(getuid())"
    }
}

/// The live status, shared by the watching loop, the batch workers and the publisher. Each
/// change marks its hot folder dirty and tells the publisher (`onChange`), which writes only
/// what changed.
final class StatusBoard: Sendable {
    private let target: StatusFiles.Target
    /// This process's start time, said in its status (`ServiceStatus.started`).
    private static let started = ProcessResources.startTime(of: getpid())
    private struct State {
        var inboxes: [String: ServiceStatus.Inbox] = [:]
        var order: [String] = []
        var reloadFailed: ServiceStatus.ReloadFailure?
        var cluster: ServiceStatus.ClusterState?
        var openFiles: ServiceStatus.OpenFiles?
        /// Hot folders changed since the publisher last took them.
        var dirty: Set<String> = []
        /// Everything changed (the order, a reload's outcome): every STATUS.txt again.
        var allDirty = false
        /// Batches being finished or waiting their turn, over all hot folders.
        var busy = 0
    }
    private let state = Mutex(State())
    /// Goes up with every change: an unchanged board is not looked at again.
    private let changes = Atomic<Int>(0)
    /// A closure in a struct: a closure stored straight in a `Mutex` is wrapped in two more
    /// reabstraction thunks at every `withLock` (its `inout` value goes out to the generic
    /// form and back), so the 10,000th call went through 20,000 thunks (measured with perf:
    /// start-up with 10,000 hot folders never got ready).
    private struct Listener: Sendable {
        let call: @Sendable () -> Void
    }
    private let onChange = Mutex<Listener?>(nil)

    /// How many changes there have been (compare two readings).
    var version: Int { changes.load(ordering: .acquiring) }

    init(target: StatusFiles.Target) {
        self.target = target
    }

    /// Who hears of changes (the publisher): called after each, outside the board's lock.
    func setOnChange(_ body: @escaping @Sendable () -> Void) {
        onChange.withLock { $0 = Listener(call: body) }
    }

    private func changed() {
        changes.add(1, ordering: .releasing)
        onChange.withLock { $0 }?.call()
    }

    /// The hot folders shown, in this order: the ones kept keep what they showed.
    func set(_ names: [(String, String)]) {
        state.withLock { s in
            var next: [String: ServiceStatus.Inbox] = [:]
            for (name, root) in names {
                var entry = s.inboxes[name] ?? ServiceStatus.Inbox(name: name, root: root)
                if entry.root != root {
                    entry = ServiceStatus.Inbox(name: name, root: root)
                }
                next[name] = entry
            }
            s.inboxes = next
            s.order = names.map(\.0)
            s.allDirty = true
            s.busy = next.values.reduce(0) { $0 + Self.busy($1) }
        }
        changed()
    }

    private static func busy(_ inbox: ServiceStatus.Inbox) -> Int {
        (inbox.processing != nil ? 1 : 0) + inbox.queued + ((inbox.open?.inProgress ?? 0) > 0 ? 1 : 0)
    }

    func update(_ name: String, _ change: (inout ServiceStatus.Inbox) -> Void) {
        let didChange = state.withLock { s -> Bool in
            guard var entry = s.inboxes[name] else { return false }
            let before = entry
            change(&entry)
            guard entry != before else { return false }
            s.busy += Self.busy(entry) - Self.busy(before)
            s.inboxes[name] = entry
            s.dirty.insert(name)
            return true
        }
        if didChange { changed() }
    }

    /// One hot folder as it stands (nil when it is not on the board).
    func inbox(_ name: String) -> ServiceStatus.Inbox? {
        state.withLock { $0.inboxes[name] }
    }

    /// True while a batch is being finished or waits its turn (a proof waits then).
    var isBusy: Bool {
        state.withLock { $0.busy > 0 }
    }

    func snapshot(state kind: ServiceStatus.State) -> ServiceStatus {
        let (all, names, failed, cluster, openFiles) = state.withLock { ($0.inboxes, $0.order, $0.reloadFailed, $0.cluster, $0.openFiles) }
        var status = ServiceStatus(pid: getpid(), updated: BatchID.timestamp(Date()), state: kind,
                                   command: target.command, config: target.config, inboxes: names.compactMap { all[$0] })
        status.started = Self.started
        status.reloadFailed = failed
        status.cluster = cluster
        status.openFiles = openFiles
        return status
    }

    /// What the open-file limit allows, as of the last (re)load.
    func setOpenFiles(_ openFiles: ServiceStatus.OpenFiles?) {
        let didChange = state.withLock { s -> Bool in
            defer { s.openFiles = openFiles }
            // Each polled folder's STATUS.txt says why with these words (`StatusText.pollingLines`).
            if s.openFiles?.inotify != openFiles?.inotify || s.openFiles?.inotifyFix != openFiles?.inotifyFix { s.allDirty = true }
            return s.openFiles != openFiles
        }
        if didChange { changed() }
    }

    /// This host of the cluster as it stands now. Every hot folder's STATUS.txt is looked at
    /// again only when what it says of the cluster changed (the database's state, the hosts up),
    /// not at each reading of the cluster.
    func setCluster(_ cluster: ServiceStatus.ClusterState) {
        let didChange = state.withLock { s -> Bool in
            guard s.cluster != cluster else { return false }
            if StatusText.clusterLines(s.cluster) != StatusText.clusterLines(cluster) { s.allDirty = true }
            s.cluster = cluster
            return true
        }
        if didChange { changed() }
    }

    /// The snapshot and the hot folders changed since the last call (`nil`: all of them).
    func take(state kind: ServiceStatus.State) -> (status: ServiceStatus, dirty: Set<String>?) {
        let dirty = state.withLock { s -> Set<String>? in
            defer { s.dirty = []; s.allDirty = false }
            return s.allDirty ? nil : s.dirty
        }
        return (snapshot(state: kind), dirty)
    }

    /// A reload failed (its errors), or, with `nil`, one succeeded.
    func reload(failed errors: [String]?) {
        let failure = errors.map { ServiceStatus.ReloadFailure(at: BatchID.timestamp(Date()), errors: Array($0.prefix(5))) }
        let didChange = state.withLock { s -> Bool in
            // A success after a success changes nothing (no STATUS.txt rewritten for it).
            guard failure != nil || s.reloadFailed != nil else { return false }
            s.reloadFailed = failure
            s.allDirty = true
            return true
        }
        if didChange { changed() }
    }
}
