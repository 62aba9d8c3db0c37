import Batches
import Configuration
import Finishing
import Foundation
import HotFolders
import JSON5
import Service
import System

/// `photofinish redo ROOT BATCH-ID [--template F] [--config FILE]`: a finished batch of the
/// hot folder ROOT run again from its filed sources, as a new batch (`Redo`), with the folder's
/// current template: `--template`, else the one the config gives ROOT, else — a folder run by
/// `photofinish watch ROOT`, which no config names — the template file the batch was finished
/// with (its report names it) or the built-in one. It says which.
///
/// It writes where the service writes (`.work/`, `out/`, `originals/`, `failed/`): a user who
/// may not is told which rights are missing and how to run it; run as root, it becomes the
/// owner of `.work/` first, so every file it makes is the service's, not root's.
enum RedoCommand {
    static func main(_ a: Arguments) async throws(UsageError) -> Int32 {
        guard a.positional.count == 2 else { throw UsageError("redo needs ROOT and BATCH-ID") }
        let root = WatchCommand.absolute(a.positional[0]), id = a.positional[1]
        let layout = HotFolderLayout(root: root)
        guard layout.exists else { throw UsageError("\(root) is not a hot folder (it has no drop/)") }
        if let missing = missingRights(layout, batch: id) {
            Terminal.error(missing)
            return 2
        }
        let log = ServiceLog.make()
        let choice: Choice
        do {
            choice = try Choice(a, root: root, batch: id, layout: layout)
        } catch let error as UsageError {
            throw error
        } catch let error as JSON5Errors {
            for e in error.errors { Terminal.note(e.description) }
            return 2
        } catch {
            Terminal.error("\(error)")
            return 2
        }
        // The template and config are read (as root, if root may read what the service may
        // not); from here on, the service's folders are written as their owner.
        if ProcessIdentity.isRoot, let owner = try? ProcessIdentity.owner(of: layout.work), owner.uid != 0 {
            do throws(SystemError) {
                try ProcessIdentity.become(owner)
            } catch {
                Terminal.error("redo: cannot become \(owner), the owner of \(layout.work)/: \(error)")
                return 2
            }
            Terminal.note("writing as \(owner), the owner of \(root)/.work/ (the new batch's files are the service's)")
        }
        let batch: ClaimedBatch
        do {
            let mover = try FolderSystem.probe(layout).mover
            batch = try Redo.claim(id, layout: layout, inbox: choice.inbox, template: choice.snapshot, order: choice.order,
                                   locks: BatchLocks(), mover: mover)
        } catch {
            Terminal.error("redo: \(error)")
            return 2
        }
        Terminal.note("redoing batch \(id) as \(batch.id) with \(choice.which) (\(batch.manifest.items.count) \(batch.manifest.items.count == 1 ? "file" : "files"))")
        let stop = StopRequest()
        let signals = StopSignals.requesting(stop)
        defer { withExtendedLifetime(signals) {} }
        let progress = ProgressLine()
        let outcome: BatchWork.Outcome
        do throws(BatchError) {
            outcome = try await BatchWork.finish(batch, limits: choice.limits, stop: stop, log: log) { done, total in
                progress.update(done: done, total: total)
            }
        } catch {
            progress.finish()
            Terminal.error("batch \(batch.id) could not be finished (\(error)): it stays in .work/ and is finished by the daemon's recovery")
            return 1
        }
        progress.finish()
        switch outcome {
        case .finished(let report, let left, let cleanUp):
            RunCommand.summarize(report, folder: layout.out + "/" + batch.id)
            for line in left { Terminal.note(line) }
            if let cleanUp {
                Terminal.note("\(cleanUp): the batch is finished; its work folder .work/\(batch.id)/ is cleaned up by the daemon's recovery")
            }
            return report.status == .complete ? 0 : 1
        case .filing, .interrupted, .givenBack:
            Terminal.note("stopped: batch \(batch.id) stays in \(root)/.work/ and is finished when the daemon (or watch) next recovers it")
            return 1
        }
    }

    /// The rights `redo` needs and lacks, in words with the way out; nil when it has them
    /// (root has them all: it writes as the folder's owner).
    static func missingRights(_ layout: HotFolderLayout, batch id: String) -> String? {
        guard !ProcessIdentity.isRoot else { return nil }
        let written = [layout.work, layout.out, layout.originals, layout.failed]
        let read = [layout.originals + "/" + id, layout.failed + "/" + id].filter { Files.exists($0) }
        let lacking = written.filter { !ProcessIdentity.mayUse($0, write: true) }
            + read.filter { !ProcessIdentity.mayUse($0, write: false) }
        guard !lacking.isEmpty else { return nil }
        let owner = try? ProcessIdentity.owner(of: layout.work)
        let user = owner?.user ?? owner.map { String($0.uid) } ?? "the service's user"
        let mode = (try? Files.status(layout.work)).map { "0" + String($0.permissions & 0o7777, radix: 8) }
        let names = lacking.map { String($0.dropFirst(layout.root.count + 1)) + "/" }.joined(separator: ", ")
        let how = user == "root" ? "Run it as root (sudo photofinish redo \(layout.root) \(id))"
            : "Run it as \(user) (sudo -u \(user) photofinish redo \(layout.root) \(id)) or as root, which writes as \(user)"
        return "redo finishes a new batch where the service does, so it needs to write \(layout.root)/.work/, out/, "
            + "originals/ and failed/, and to read the batch's filed sources; it may not use \(names) "
            + "(they belong to \(owner.map { "\($0)" } ?? "another user")\(mode.map { "; .work/ is mode \($0)" } ?? "")). " + how
    }

    /// The template a redo finishes with, why that one, and the limits.
    struct Choice {
        var snapshot: TemplateSnapshot
        var order: Template.Order
        var inbox: String
        /// Which template, in words ("the built-in template, the one batch … was finished with").
        var which: String
        var limits = BatchLimits()

        init(_ a: Arguments, root: String, batch id: String, layout: HotFolderLayout) throws {
            let given = a[.config]
            // Without --config, the default config is read only when it exists and no template
            // is named: a folder run by `watch` has none.
            let configPath = given ?? (a[.template] == nil && Files.exists(Commands.defaultConfig)
                                       ? Commands.defaultConfig : nil)
            let config = try configPath.map { path throws(JSON5Errors) in try Config.load(path: path) }
            let entry = config?.inboxes.first { WatchCommand.absolute($0.root) == root }
            if let config, given != nil || entry != nil { limits = BatchLimits(config: config) }
            let report = Self.report(layout, batch: id)
            inbox = entry?.name ?? report?.inbox ?? InitCommand.inboxName(for: root)
            if let path = a[.template] {
                let (s, t) = try TemplateSnapshot.load(path: path)
                (snapshot, order, which) = (s, t.order, "the template '\(s.name)' (--template \(path))")
            } else if let config, let entry {
                let (s, t) = try TemplateSnapshot.load(path: config.templatePath(named: entry.template))
                (snapshot, order, which) = (s, t.order, "the template '\(s.name)' the config \(configPath!) gives \(root)")
            } else {
                let unnamed = configPath.map { "\($0) does not name \(root)" } ?? "no config names \(root)"
                (snapshot, order, which) = try Self.asFinished(report, batch: id, unnamed: unnamed)
            }
        }

        /// The template batch `id` was finished with, as its report names it: the built-in one,
        /// or its file read again now (the folder's current template: a fix made since is used).
        /// - Parameter unnamed: why no config gives the template, for the words.
        /// - Throws: `UsageError` when the report names a template file that cannot be used.
        static func asFinished(_ report: Report?, batch id: String,
                               unnamed: String) throws -> (TemplateSnapshot, Template.Order, String) {
            guard let used = report?.template else {
                return (.builtIn, Template.builtInDefault.order,
                        "the built-in template (\(unnamed), and batch \(id) has no report naming another)")
            }
            if used.sha256 == TemplateSnapshot.builtIn.sha256 && used.file == nil {
                return (.builtIn, Template.builtInDefault.order,
                        "the built-in template, the one batch \(id) was finished with (\(unnamed))")
            }
            guard let file = used.file else {
                throw UsageError("batch \(id) was finished with the template '\(used.name)', and \(unnamed): "
                                 + "name its file with --template F")
            }
            guard Files.exists(file) else {
                throw UsageError("batch \(id) was finished with the template '\(used.name)' from \(file), which is gone, "
                                 + "and \(unnamed): name a template with --template F")
            }
            let (snapshot, template) = try TemplateSnapshot.load(path: file)
            let changed = snapshot.sha256 == used.sha256 ? "" : "; the file has changed since, and is used as it is now"
            return (snapshot, template.order,
                    "the template '\(snapshot.name)' (\(file)), the one batch \(id) was finished with (\(unnamed)\(changed))")
        }

        /// Batch `id`'s report, nil when it has none that can be read.
        static func report(_ layout: HotFolderLayout, batch id: String) -> Report? {
            guard BatchID.isValid(id) else { return nil }
            return (try? ReportReader.read(batchFolder: layout.out + "/" + id)) ?? nil
        }
    }
}
