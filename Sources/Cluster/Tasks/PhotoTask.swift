import Foundation
import Glibc

/// This daemon as a member of the cluster: its name (`cluster.host`), and what tells this start
/// of it from an earlier one.
public struct HostIdentity: Sendable, Equatable {
    /// `cluster.host`: unique in the cluster (two daemons of one name take each other's tasks
    /// back at every start).
    public var name: String
    /// This start of the daemon (a fresh UUID): what an earlier start held is known to be lost.
    public var instance: String
    public var pid: Int32
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`).
    public var boot: String
    /// The program's version, for `cluster status`.
    public var version: String
    /// Photos this host finishes at once.
    public var workers: Int

    public init(name: String, version: String, workers: Int, instance: String = UUID().uuidString.lowercased(),
                pid: Int32 = getpid(), boot: String = HostIdentity.bootID()) {
        self.name = name
        self.instance = instance
        self.pid = pid
        self.boot = boot
        self.version = version
        self.workers = workers
    }

    /// The machine's host name: `cluster.host`'s default.
    public static func machineName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public static func bootID() -> String {
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else { return "?" }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// One task of the task table: a photo of a batch (1, 2, …), or the batch's own outputs (0).
public struct TaskKey: Hashable, Sendable, Codable, CustomStringConvertible {
    public var inbox: String
    public var batch: String
    public var photo: Int

    public init(inbox: String, batch: String, photo: Int) {
        self.inbox = inbox
        self.batch = batch
        self.photo = photo
    }

    public var description: String { "\(inbox) \(batch) " + (photo == 0 ? "outputs" : "photo \(photo)") }
}

/// What proves a host holds a task: given by the take, checked on every write. A holder whose
/// lease expired and was taken by another host has a token that no longer matches.
public struct LeaseToken: Hashable, Sendable, CustomStringConvertible {
    public var uuid: String

    public init(_ uuid: String) {
        self.uuid = uuid
    }

    public var description: String { uuid }
}

/// A task this host holds under a lease.
public struct PhotoTask: Sendable, Equatable {
    public var key: TaskKey
    /// The source's name as the claim recorded it (escaped), for status and logs.
    public var source: String
    /// What the claim stored with the task (JSON), for whoever finishes it.
    public var detail: String?
    /// Earlier starts of this task that ended without completing or giving it back (a host
    /// killed, crashed, or cut off until its lease expired): 1 — finish it alone; 2 — it is
    /// failed ("stopped the finisher twice").
    public var earlierAttempts: Int
    public var token: LeaseToken

    public init(key: TaskKey, source: String, detail: String? = nil, earlierAttempts: Int = 0, token: LeaseToken) {
        self.key = key
        self.source = source
        self.detail = detail
        self.earlierAttempts = earlierAttempts
        self.token = token
    }

    /// The batch's own outputs (story, colour card, report, publishing), not a photo.
    public var isBatchOutputs: Bool { key.photo == 0 }

    /// Starts after which a task no host could finish is left to its batch's run (`TaskBoard.refuse`),
    /// as a photo that stopped the finisher twice is failed.
    public static let attemptsLimit = 2
}

/// A photo the claim adds to a batch.
public struct NewTask: Sendable, Equatable, Encodable {
    /// 1, 2, …: unique in its batch (the order photos were claimed in).
    public var photo: Int
    public var source: String
    /// Anything the finisher needs besides the manifest (JSON text, stored as `jsonb`), or nil.
    public var detail: String?

    public init(photo: Int, source: String, detail: String? = nil) {
        precondition(photo > 0, "photo 0 is the batch's own outputs")
        self.photo = photo
        self.source = source
        self.detail = detail
    }
}

/// How a completion ended.
public enum Completion: Sendable, Equatable {
    /// Recorded. `outputs`: this completion was the batch's last photo and the caller now holds
    /// the batch's own outputs (photo 0), when it asked to take them.
    case completed(outputs: PhotoTask?)
    /// The token no longer holds the task: its lease expired and another host took it (which
    /// finishes it); this host's result is dropped.
    case stale
}

/// A finished task's record.
public struct FinishedTask: Sendable, Equatable {
    public var photo: Int
    /// The report item, as recorded (JSON).
    public var item: String?
    /// The host that finished it.
    public var host: String
}

/// A photo task of a batch as its run reads it (`TaskBoard.records`): in a cluster the tasks'
/// events live in the database, not in the batch's `tasks` journal on the share.
public struct TaskRecord: Sendable, Equatable {
    public var photo: Int
    public var source: String
    public var detail: String?
    /// waiting, ready, running, done.
    public var state: String
    /// What its completion recorded (JSON): the early item, `{"refused": why}`, or nil.
    public var item: String?
    /// Its starts that stopped the finisher (neither completed, given back nor refused: a crash,
    /// a kill, a lease lost).
    public var crashes: Int
}

/// Where a batch stands in the database.
public struct BatchProgress: Sendable, Equatable, Codable {
    public var inbox: String
    public var batch: String
    /// open, closed, published.
    public var state: String
    public var claimedBy: String
    /// Photos (not counting the batch's outputs) by task state.
    public var photos: Int
    public var done: Int
    public var running: Int
    public var ready: Int
    /// The batch's outputs: waiting, ready, running, done; nil while the batch is open.
    public var outputs: String?
}
