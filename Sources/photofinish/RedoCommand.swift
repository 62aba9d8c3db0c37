import Batches
import Configuration
import Finishing
import Foundation
import HotFolders
import JSON5
import Service
import System

/// `photofinish redo ROOT BATCH-ID [--template F] [--config FILE]`: a finished batch of the
/// hot folder ROOT run again from its filed sources with the folder's current template, as a
/// new batch (`Redo`). The template is `--template`, else the one the config gives ROOT.
enum RedoCommand {
    static func main(_ a: Arguments) async throws(UsageError) -> Int32 {
        guard a.positional.count == 2 else { throw UsageError("redo needs ROOT and BATCH-ID") }
        let root = WatchCommand.absolute(a.positional[0]), id = a.positional[1]
        let layout = HotFolderLayout(root: root)
        guard layout.exists else { throw UsageError("\(root) is not a hot folder (it has no drop/)") }
        let log = ServiceLog.make()
        var limits = BatchLimits()
        let snapshot: TemplateSnapshot, order: Template.Order, inbox: String
        do {
            var config: Config?
            let configPath = a.options["config"] ?? (a.options["template"] == nil ? Commands.defaultConfig : nil)
            if let configPath { config = try Config.load(path: configPath) }
            if let config {
                limits.maxPixels = config.maxPixels
                limits.maxFileBytes = config.maxFileBytes
                limits.itemTimeout = config.itemTimeout
                limits.workers = config.workers
            }
            if let path = a.options["template"] {
                let (s, t) = try TemplateSnapshot.load(path: path)
                (snapshot, order, inbox) = (s, t.order, InitCommand.inboxName(for: root))
            } else {
                guard let config, let entry = config.inboxes.first(where: { WatchCommand.absolute($0.root) == root }) else {
                    throw UsageError("\(root) is not a hot folder of \(configPath ?? Commands.defaultConfig): "
                                     + "name its template with --template F")
                }
                let (s, t) = try TemplateSnapshot.load(path: config.templatePath(named: entry.template))
                (snapshot, order, inbox) = (s, t.order, entry.name)
            }
        } catch let error as UsageError {
            throw error
        } catch let error as JSON5Errors {
            for e in error.errors { Terminal.note(e.description) }
            return 2
        } catch {
            Terminal.error("\(error)")
            return 2
        }
        let batch: ClaimedBatch
        do {
            let mover = try FolderSystem.probe(layout).mover
            batch = try Redo.claim(id, layout: layout, inbox: inbox, template: snapshot, order: order, mover: mover)
        } catch {
            Terminal.error("redo: \(error)")
            return 2
        }
        Terminal.note("redoing batch \(id) as \(batch.id) with the template '\(snapshot.name)' (\(batch.manifest.items.count) files)")
        let stop = StopRequest()
        let signals = StopSignals(stop: stop)
        defer { withExtendedLifetime(signals) {} }
        let progress = ProgressLine()
        let outcome: BatchWork.Outcome
        do throws(SystemError) {
            outcome = try await BatchWork.finish(batch, limits: limits, stop: stop, log: log) { done, total in
                progress.update(done: done, total: total)
            }
        } catch {
            progress.finish()
            Terminal.error("batch \(batch.id) could not be finished (\(error)): it stays in .work/ and is finished by the daemon's recovery")
            return 1
        }
        progress.finish()
        switch outcome {
        case .finished(let report, let left):
            RunCommand.summarize(report, folder: layout.out + "/" + batch.id)
            for line in left { Terminal.note(line) }
            return report.status == .complete ? 0 : 1
        case .filing, .interrupted:
            Terminal.note("stopped: batch \(batch.id) stays in \(root)/.work/ and is finished when the daemon (or watch) next recovers it")
            return 1
        }
    }
}
