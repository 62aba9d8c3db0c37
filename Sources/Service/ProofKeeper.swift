import Batches
import Finishing
import Foundation
import System
import HotFolders
import Synchronization

/// Keeps each hot folder's proof (SPEC §8) up to date: `<root>/proof/<template>-<sha>.png`,
/// the template's contact sheet, named by the first 12 hex digits of the template's sha256 so
/// a changed template is seen from the name alone. Rendered at start when missing and after a
/// reload that changed a template; older proofs in `proof/` are removed once the new one is in
/// place.
///
/// Off the hot path: one background thread at the lowest CPU priority (nice 19) renders one
/// proof at a time, and before each of its six sample photos waits until no batch is being
/// finished or queued — a photo batch never waits for a proof, at most for one sample photo
/// already under way.
///
/// One render per distinct template: hot folders that share a template (1,000 shop folders
/// with one `shop.json5`) get a copy of the proof rendered for the first of them.
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

    private let jobs = Mutex<[Job]>([])
    /// Proofs rendered, kept while a queued job has the same template (its PNG is copied).
    private let rendered = Mutex<[String: [UInt8]]>([:])
    private let stopped = Mutex(false)
    private let wake = DispatchSemaphore(value: 0)
    private let log: Logger
    private let busy: @Sendable () -> Bool
    private let shrink: Int

    /// - Parameters:
    ///   - busy: true while a batch is being finished or waits its turn.
    public init(log: Logger, busy: @escaping @Sendable () -> Bool, shrink: Int = ProofKeeper.sampleShrink()) {
        self.log = log
        self.busy = busy
        self.shrink = shrink
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
        jobs.withLock { all in
            all.removeAll { $0.root == job.root }
            all.append(job)
        }
        wake.signal()
    }

    /// Stops at the next sample photo; a proof half done is abandoned (made again next start).
    public func stop() {
        stopped.withLock { $0 = true }
        wake.signal()
    }

    private var isStopped: Bool { stopped.withLock { $0 } }

    private func work() {
        // Lowest priority for this thread only: on Linux the nice value is per thread, and
        // `who = 0` is the calling thread.
        ProcessResources.nameThisThread("pf-proofs")
        do throws(SystemError) {
            try ProcessResources.setThreadNice(19)
        } catch {
            log.warning("proofs run at normal priority: \(error)")
        }
        while !isStopped {
            wake.wait()
            while !isStopped, let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
                render(job)
            }
        }
    }

    /// What makes two proofs the same picture: the template's bytes and the sizes.
    private func key(_ job: Job) -> String { "\(job.template.sha256) \(job.maxPixels) \(shrink)" }

    private func render(_ job: Job) {
        let fields: LogFields = ["INBOX": job.inbox]
        let path = Self.path(root: job.root, template: job.template)
        let folder = job.root + "/proof"
        if Files.exists(path) { return }
        let picture = key(job)
        do {
            try Files.makeDirectory(folder, permissions: 0o755)
            if let png = rendered.withLock({ $0[picture] }) {
                try AtomicFile.write(png, to: path)
                log.info("proof of template \(job.template.name) written (rendered once for every hot folder using it): \(path)", fields)
            } else {
                let template = try job.template.template()
                log.info("rendering the proof of template \(template.name) into proof/", fields)
                let sheet = try Proof.render(template: template, shrink: shrink, maxPixels: job.maxPixels) { [self] in
                    while busy() && !isStopped { usleep(200_000) }
                    return !isStopped
                }
                guard let sheet else { return }
                try AtomicFile.write(sheet.png, to: path)
                for failure in sheet.failures { log.warning("proof: \(failure)", fields) }
                log.notice("proof of template \(template.name) written: \(path)", fields)
                rendered.withLock { $0[picture] = sheet.png }
            }
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            where name != (path as NSString).lastPathComponent
                && (name.hasSuffix(".png") || name.hasPrefix(AtomicFile.temporaryPrefix)) {
                try? Files.remove(folder + "/" + name)
            }
        } catch {
            log.warning("cannot render the proof of template \(job.template.name): \(error)", fields)
        }
        // Kept only while a job still queued needs it.
        let needed = Set(jobs.withLock { $0.map(key) })
        rendered.withLock { $0 = $0.filter { needed.contains($0.key) } }
    }
}
