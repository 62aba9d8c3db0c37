import Configuration
import HotFolders
import Service
import System

/// What the console shows of the service, asked for at each request: the one interface
/// between the console and the daemon (`ServiceSource` adapts the service's status to it; a
/// test gives its own).
public protocol ConsoleSource: Sendable {
    /// The hot folders as they are now, in the config's order.
    func snapshot() -> ConsoleSnapshot
    /// Finishes the published batch `id` of the hot folder `inbox` again, from its filed
    /// sources (`only`: just these: a failed photo tried again), with the template the folder
    /// uses now, as a new batch the service finishes in turn.
    /// - Returns: the new batch's id, or why it cannot be done, in words.
    func redo(inbox: String, batch id: String, only: Set<FileName>?) -> Result<String, ConsoleRefusal>
    /// How the hot folder `inbox` shares its batches (`approve`, `shareExpires`) and the
    /// console's public address (`web.publicURL`), for the batch page's share panel.
    func sharing(inbox: String) -> ConsoleSharing
    /// The batch `id` of `inbox` was approved in the console, its approval written into its
    /// report: the service starts its `when: "approved"` deliveries and tells its `notify`
    /// targets (`HotFolderService.approved`). Returns at once.
    func approved(inbox: String, batch id: String)
}

extension ConsoleSource {
    public func redo(inbox: String, batch id: String, only: Set<FileName>?) -> Result<String, ConsoleRefusal> {
        .failure(ConsoleRefusal("batches are not finished again from here"))
    }

    public func sharing(inbox: String) -> ConsoleSharing { ConsoleSharing() }

    public func approved(inbox: String, batch id: String) {}
}

/// A hot folder's sharing as the console's batch page needs it.
public struct ConsoleSharing: Sendable, Equatable {
    /// The hot folder's `approve`, `shareExpires` (and `notify`).
    public var settings: ShareSettings
    /// `web.publicURL`: links are whole with it, paths alone without.
    public var publicURL: String?

    public init(settings: ShareSettings = ShareSettings(), publicURL: String? = nil) {
        self.settings = settings
        self.publicURL = publicURL
    }
}

/// Why the console cannot do what it was asked, in a sentence for the person who asked.
public struct ConsoleRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The hot folders at one moment.
public struct ConsoleSnapshot: Sendable, Equatable {
    public var folders: [ConsoleFolder]
    /// Larger uploads are refused (413): the config's `maxFileBytes`.
    public var maxFileBytes: Int
    /// False once the service is stopping (uploads still land in drop/ and wait for the next start).
    public var running: Bool

    public init(folders: [ConsoleFolder], maxFileBytes: Int, running: Bool = true) {
        self.folders = folders
        self.maxFileBytes = maxFileBytes
        self.running = running
    }

    public subscript(name: String) -> ConsoleFolder? { folders.first { $0.name == name } }

    /// Whether a batch is being finished or waits to be, in any folder: the photo workers
    /// want the CPU, and the console's threads step back (nice 10) until they are done.
    public var isFinishing: Bool {
        folders.contains { $0.processing != nil || $0.queued > 0 || ($0.open?.inProgress ?? 0) > 0 }
    }
}

/// One hot folder as the console shows it.
public struct ConsoleFolder: Sendable, Equatable {
    /// How the folder is watched, in a word and a sentence.
    public enum State: Sendable, Equatable {
        /// The service has not started watching it yet (recovery runs first).
        case starting
        case watching
        /// Not watched: why, and what to do (commands or sentences, one a line).
        case refused(why: String, fix: [String])
        /// Its share does not answer (since when, the error).
        case unavailable(since: String?, error: String)
        /// Watched, but below `minFreeSpace`: nothing new is claimed (the free space, in words).
        case lowSpace(why: String)
        case stopped
    }

    /// A batch on its way: id, photos done, in progress, in all, its stage (the service's own type).
    public typealias Progress = ServiceStatus.Progress
    /// The last batch finished (the service's own type).
    public typealias LastBatch = ServiceStatus.Last

    public var name: String
    public var layout: HotFolderLayout
    /// The template's name.
    public var template: String
    public var state: State
    /// Files in drop/ not yet in a batch (settling or waiting for the batch to close).
    public var waiting: Int
    /// Claimed batches waiting for their turn.
    public var queued: Int
    /// The batch being finished (closed).
    public var processing: Progress?
    /// The open batch: its photos finished as they arrive.
    public var open: Progress?
    /// Photos claimed into batches that wait their turn.
    public var parked: Int
    public var last: LastBatch?
    /// Sentences about files in drop/ that are refused or never taken.
    public var notes: [String]

    public init(name: String, layout: HotFolderLayout, template: String, state: State = .watching, waiting: Int = 0,
                queued: Int = 0, processing: Progress? = nil, open: Progress? = nil, parked: Int = 0,
                last: LastBatch? = nil, notes: [String] = []) {
        self.name = name
        self.layout = layout
        self.template = template
        self.state = state
        self.waiting = waiting
        self.queued = queued
        self.processing = processing
        self.open = open
        self.parked = parked
        self.last = last
        self.notes = notes
    }

    /// The batches on their way, by id: the open one and the one being finished.
    public func progress(of batch: String) -> Progress? {
        [processing, open].compactMap { $0 }.first { $0.batch == batch }
    }
}
