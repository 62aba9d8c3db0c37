import Batches
import Finishing
import Foundation
import System
import HotFolders
import Synchronization

/// Keeps each hot folder's proof (reference: Proofs of the templates) up to date:
/// `<root>/proof/<template>-<sha>.png`, the template's contact sheet, named by the first 12 hex
/// digits of the template's sha256 so a changed template is seen from the name alone. Rendered at
/// start when missing and after a reload that changed a template; older proofs in `proof/` are
/// removed once the new one is in place.
///
/// Off the hot path: one background thread takes the requests in turn; a render runs on a
/// thread of its own, one at a time — at normal priority while the service has no batch to
/// finish (a first start's proofs in seconds), dropped to the lowest CPU priority (nice 19)
/// as soon as a batch is being finished or queued — and before each of its six sample photos
/// waits (on a condition, woken when the service goes idle) until no batch is: a photo batch
/// never waits for a proof, at most for one sample photo already under way, at nice 19. The
/// links (below) are made at normal priority: a few system calls each, they are not what
/// nice 19 is for (at nice 19 on a loaded machine 9,999 links took 106 s after ready; a thread
/// at nice 19 gets about 1.5 % of what one at 0 gets).
///
/// One render and one file per distinct template: hot folders that share a template (1,000
/// shop folders with one `shop.json5`) get a hard link to the proof rendered for the first
/// of them — one inode, however many folders. Where a link cannot be made (another file
/// system, one without hard links), the folder's STATUS.txt points to the proof instead
/// (`onShared`); a folder on a file system of its own gets its own render.
///
/// Requests and renders are linear: a request replaces the folder's earlier one in place
/// (a dictionary by root and a queue), a render is remembered by what makes the picture.
public final class ProofKeeper: Sendable {
    /// One hot folder's proof to make.
    public struct Job: Sendable, Equatable {
        public var inbox: String
        public var root: String
        public var template: TemplateSnapshot
        /// The config's `maxPixels` (the panorama is 54 MP).
        public var maxPixels: Int

        public init(inbox: String, root: String, template: TemplateSnapshot, maxPixels: Int) {
            self.inbox = inbox
            self.root = root
            self.template = template
            self.maxPixels = maxPixels
        }
    }

    private struct State {
        /// Roots in the order they were asked for (a root asked for again keeps its place).
        var order = Queue<String>()
        /// The latest request of each root not yet started.
        var jobs: [String: Job] = [:]
        /// Where each picture was written (its key: `key(_:)`), to link from.
        var rendered: [String: String] = [:]
        var busy = false
        var stopped = false
        /// The thread rendering a proof now (`ProcessResources.threadID`), and whether it runs
        /// at nice 19 already.
        var renderThread: Int32?
        var renderLowered = false
        /// Hot folders given a link since the queue was last empty, by template: said in one
        /// line when it empties (10,000 folders: one line, not 10,000).
        var linked: [String: Int] = [:]
        /// The service announced READY=1 (`ready()`); until then only the first request of
        /// each picture is made (a first start's render begins at once) and the others
        /// (links, and at a restart the look at each folder's proof/) wait in `held`.
        var ready = false
        var held: [Job] = []
    }

    private let state = Mutex(State())
    /// Woken by a request, by the service going idle, and by `stop`.
    private let condition = NSCondition()
    private let log: Logger
    private let shrink: Int
    private let onShared: @Sendable (_ inbox: String, _ path: String) -> Void

    /// - Parameters:
    ///   - onShared: a hot folder's proof is `path`, elsewhere (no link could be made).
    public init(log: Logger, shrink: Int = ProofKeeper.sampleShrink(),
                onShared: @escaping @Sendable (_ inbox: String, _ path: String) -> Void = { _, _ in }) {
        self.log = log
        self.shrink = shrink
        self.onShared = onShared
        let thread = Thread { [self] in work() }
        thread.name = "photofinish-proof"
        thread.start()
    }

    /// `PHOTOFINISH_PROOF_SHRINK=N` divides the sample photos' sizes: for tests on a debug
    /// build only; the product renders the real sizes.
    public static func sampleShrink(environment: [String: String] = ProcessInfo.processInfo.environment) -> Int {
        environment["PHOTOFINISH_PROOF_SHRINK"].flatMap(Int.init).map { max(1, $0) } ?? 1
    }

    /// The proof's path for a hot folder and template.
    public static func path(root: String, template: TemplateSnapshot) -> String {
        "\(root)/proof/\(template.name)-\(template.sha256.prefix(12)).png"
    }

    /// Asks for the proof of `job` (replacing a request for the same hot folder not started yet).
    public func request(_ job: Job) {
        let wake = state.withLock { s -> Bool in
            if s.jobs.updateValue(job, forKey: job.root) == nil { s.order.append(job.root) }
            return !s.busy
        }
        if wake { signal() }
    }

    /// The service is ready: the requests held until now are made (in the order they came).
    public func ready() {
        let wake = state.withLock { s -> Bool in
            guard !s.ready else { return false }
            s.ready = true
            // A request that came for the same hot folder since replaces the one held.
            for job in s.held where s.jobs[job.root] == nil {
                s.jobs[job.root] = job
                s.order.append(job.root)
            }
            s.held = []
            return !s.jobs.isEmpty
        }
        if wake { signal() }
    }

    /// Whether batches are being finished or wait their turn: proofs wait while they are.
    /// A render under way at normal priority drops to nice 19 when batches come (for the rest
    /// of that proof).
    public func setBusy(_ busy: Bool) {
        let changed = state.withLock { s -> Bool in
            defer { s.busy = busy }
            // Under the lock: the render thread forgets its id under it before it ends.
            if busy, let thread = s.renderThread, !s.renderLowered {
                s.renderLowered = true
                do throws(SystemError) {
                    try ProcessResources.setNice(19, ofThread: thread)
                } catch {
                    log.warning("the proof under way goes on at normal priority: \(error)")
                }
            }
            return s.busy != busy
        }
        if changed && !busy { signal() }
    }

    /// Stops at the next sample photo; a proof half done is abandoned (made again next start).
    public func stop() {
        state.withLock { $0.stopped = true }
        signal()
    }

    private func signal() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until `ready` holds (checked under the condition's lock, so a wake-up between
    /// the check and the wait is never lost).
    private func wait(until ready: (State) -> Bool) {
        condition.lock()
        while !state.withLock({ ready($0) }) { condition.wait() }
        condition.unlock()
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    private func work() {
        ProcessResources.nameThisThread("pf-proofs")
        while true {
            wait { $0.stopped || !$0.jobs.isEmpty }
            let job = state.withLock { s -> Job? in
                while let root = s.order.first {
                    s.order.removeFirst()
                    guard let job = s.jobs.removeValue(forKey: root) else { continue }
                    // Before READY=1 only what the first of a picture's folders needs: the
                    // others' links and looks (10,000 at a restart) wait for it.
                    if !s.ready, s.rendered[key(job)] != nil {
                        s.held.append(job)
                        continue
                    }
                    return job
                }
                return nil
            }
            if isStopped { return }
            if let job { make(job) }
            let done = state.withLock { s -> [String: Int] in
                guard s.jobs.isEmpty else { return [:] }
                defer { s.linked = [:] }
                return s.linked
            }
            for (template, count) in done.sorted(by: { $0.key < $1.key }) {
                log.info("proof of template \(template) linked into \(count) hot folder\(count == 1 ? "" : "s") (rendered once for every hot folder using it)")
            }
        }
    }

    /// What makes two proofs the same picture: the template's bytes and the sizes.
    private func key(_ job: Job) -> String { "\(job.template.sha256) \(job.maxPixels) \(shrink)" }

    private func make(_ job: Job) {
        let fields: LogFields = ["INBOX": job.inbox]
        let path = Self.path(root: job.root, template: job.template)
        let name = FileName((path as NSString).lastPathComponent)!
        let folder = job.root + "/proof"
        let picture = key(job)
        do throws(SystemError) {
            // A proof/ made just now holds no older proof to remove.
            var fresh = false
            if !Files.exists(path) {
                fresh = try Files.makeDirectory(folder, permissions: 0o755)
                if let source = state.withLock({ $0.rendered[picture] }), source != path, try link(source, to: folder, as: name) {
                    state.withLock { $0.linked[job.template.name, default: 0] += 1 }
                    log.log(.debug, "proof of template \(job.template.name) linked (rendered once for every hot folder using it): \(path)", fields)
                } else if let source = state.withLock({ $0.rendered[picture] }), source != path, Files.exists(source) {
                    // No link here (another file system, or none with hard links): STATUS.txt
                    // points to the one file.
                    onShared(job.inbox, source)
                    log.info("proof of template \(job.template.name) is \(source) (rendered once for every hot folder using it; no hard link can be made in \(folder))", fields)
                    if !fresh { removeOlder(in: folder, keeping: nil) }
                    return
                } else {
                    guard try render(job, to: path, fields: fields) else { return }
                }
            }
            state.withLock { s in
                if s.rendered[picture] == nil { s.rendered[picture] = path }
            }
            if !fresh { removeOlder(in: folder, keeping: name) }
        } catch {
            log.warning("cannot make the proof of template \(job.template.name): \(error)", fields)
        }
    }

    /// Renders the proof into `path`, a sample photo at a time while the service is idle.
    /// - Returns: false when stopped half way.
    private func render(_ job: Job, to path: String, fields: LogFields) throws(SystemError) -> Bool {
        let template: Template
        let sheet: Proof.Sheet?
        do {
            template = try job.template.template()
            log.info("rendering the proof of template \(template.name) into proof/", fields)
            sheet = try onRenderThread { [self] in
                try Proof.render(template: template, shrink: shrink, maxPixels: job.maxPixels) { [self] in
                    wait { $0.stopped || !$0.busy }
                    return !isStopped
                }
            }
        } catch {
            log.warning("cannot render the proof of template \(job.template.name): \(error)", fields)
            return false
        }
        guard let sheet else { return false }
        try AtomicFile.write(sheet.png, to: path)
        for failure in sheet.failures { log.warning("proof: \(failure)", fields) }
        log.notice("proof of template \(template.name) written: \(path)", fields)
        return true
    }

    /// Runs `body` on a thread of its own, waiting for it here. The thread runs at normal
    /// priority while no batch is being finished or waits its turn, else at nice 19 (on Linux
    /// the nice value is per thread): a proof asked for when nothing else is to be done — the
    /// first start, a reload that changed a template — is there in a few seconds, not after
    /// whatever a nice-19 thread gets on a busy server; once a batch comes, the render drops
    /// to nice 19 (`setBusy`) and waits before its next sample photo.
    private func onRenderThread<T>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        let outcome = RenderOutcome<T>(), done = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            ProcessResources.nameThisThread("pf-proof-render")
            let lower = state.withLock { s -> Bool in
                s.renderThread = ProcessResources.threadID()
                s.renderLowered = s.busy
                return s.busy
            }
            if lower {
                do throws(SystemError) {
                    try ProcessResources.setThreadNice(19)
                } catch {
                    log.warning("proofs run at normal priority: \(error)")
                }
            }
            outcome.result = Result { try body() }
            state.withLock { $0.renderThread = nil }
            done.signal()
        }
        thread.name = "photofinish-proof-render"
        thread.start()
        done.wait()
        return try outcome.result!.get()
    }

    /// A hard link of `source` as `folder/name`.
    /// - Returns: false where the file system cannot link it there (another file system, no
    ///   hard links, the file's link limit reached); throws on other errors.
    private func link(_ source: String, to folder: String, as name: FileName) throws(SystemError) -> Bool {
        do throws(SystemError) {
            // By path: no folder opened for it (9,999 links at a first start).
            try Files.hardLink(FilePath(source), to: FilePath(folder).appending(name))
            return true
        } catch where [EXDEV, EPERM, EOPNOTSUPP, ENOTSUP, EMLINK, ENOENT, EIO].contains(error.code) {
            // EIO: rclone mounts have no hard links (TRAPS.md).
            return false
        } catch where error.code == EEXIST {
            return true
        }
    }

    /// Removes the older proofs in `folder` (and temporary files a crash left).
    private func removeOlder(in folder: String, keeping name: FileName?) {
        guard let dir = try? Directory(folder), let names = try? dir.names() else { return }
        // Older proofs, and temporary files a crash left (never another daemon's write under
        // way: two daemons starting together on one share render the same proof).
        for other in names where other != name {
            let text = other.string ?? ""
            if text.hasPrefix(AtomicFile.temporaryPrefix) ? AtomicFile.isLeftover(other, in: dir) : text.hasSuffix(".png") {
                try? dir.remove(other)
            }
        }
    }
}

/// What the render thread hands back: written before `done.signal()`, read after `done.wait()`.
private final class RenderOutcome<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}
