import Batches
import Finishing
import Foundation
import System

/// Finishing a claimed batch, crash-safe at every step (SPEC §1, §7). Each step leaves the
/// disk in a state from which `finish` can simply be called again (after a crash, by this
/// or another daemon):
///
/// 1. Photos are finished into `.work/<id>/out/`; each one's report item is journaled once
///    its outputs are in place. Leftover temporary files there are removed first, and photos
///    already journaled are not done again. Then the batch's own outputs (story, colour
///    card, `report.html`) are made, again whole if a crash interrupted them.
/// 2. Sources are filed: `src/<name>` → `originals/<id>/<name>` (finished) or
///    `failed/<id>/<name>` (failed). With `originals: "delete"`, finished sources stay in
///    `src/` for now.
/// 3. `report.json` is written into `.work/<id>/out/`: the last file of the batch.
/// 4. `.work/<id>/out/` is renamed to `out/<id>/`: the whole batch folder, report included,
///    appears at once, and never holds a temporary name.
/// 5. With `originals: "delete"`, the finished sources are deleted now that the report is
///    durable; then `.work/<id>/` is removed.
public enum BatchWork {
    /// How a call ended.
    public enum Outcome: Sendable {
        /// The batch folder is published under `out/<id>/` with its report.
        case finished(Report)
        /// Stopped (SIGTERM) before every photo was done: the batch stays in `.work/` and is
        /// resumed by the next start.
        case interrupted
    }

    /// Finishes (or resumes) `batch`.
    /// - Parameters:
    ///   - limits: the photo limits and workers.
    ///   - stop: once requested, no new photo starts.
    ///   - log: where warnings go.
    ///   - progress: (done, total) after each photo.
    /// - Throws: `SystemError` when a step cannot be done (disk full, permissions): the batch
    ///   stays in `.work/` and is retried by recovery.
    public static func finish(_ batch: ClaimedBatch, limits: BatchLimits, stop: StopRequest, log: Logger,
                              progress: @escaping @Sendable (Int, Int) -> Void = { _, _ in })
        async throws(SystemError) -> Outcome {
        let layout = batch.layout, id = batch.id, folder = batch.folder
        let staged = folder + "/out", published = layout.out + "/" + id
        let fields: LogFields = ["INBOX": batch.manifest.inbox, "BATCH": id]
        let template: Template
        do {
            template = try batch.manifest.template.template()
        } catch {
            // The template stored at the claim no longer validates (its logo file was removed):
            // keep the batch, say why, and retry at the next recovery.
            throw SystemError("use the template stored with the batch (\(error.description); restore what it names and the batch resumes)",
                              folder, errno: EINVAL)
        }
        if !Files.exists(staged) && Files.exists(published) {
            try cleanUp(batch, template: template)
            return .finished(try publishedReport(published))
        }
        try Files.makeDirectory(staged, permissions: 0o755)
        try removeTemporaryFiles(in: try Directory(staged))
        let done = try ProgressJournal.read(folder: folder)
        // After a crash in step 2 some sources are already filed: the whole-set outputs read
        // them there (the photos needing a finish are all still in src/).
        let srcPath = FilePath(folder).appending(Claim.sourceFolder)
        let sources = batch.manifest.items.map { item in
            var source = BatchRunner.Source(path: srcPath.appending(item.name), file: item.name)
            for kind in [layout.originals, layout.failed] where !Files.exists(source.path) {
                let filed = FilePath(kind + "/" + id).appending(item.name)
                if Files.exists(filed) { source.path = filed }
            }
            return source
        }
        let runner = BatchRunner(template: template, limits: limits, inbox: batch.manifest.inbox)
        let started = Self.date(batch.manifest.claimed) ?? Date()
        var report = await runner.run(batch: id, sources: sources, folder: staged, stop: stop, started: started,
                                      finished: done, resumable: true, progress: progress, onItem: { item in
            do throws(SystemError) {
                try ProgressJournal.append(item, folder: folder)
            } catch {
                log.warning("cannot journal \(item.source) (it would be done again after a crash): \(error)", fields)
            }
        })
        if report.items.contains(where: { $0.status == .interrupted }) { return .interrupted }

        // 2. File the sources (by their names in the manifest: the report shows them escaped).
        let src = try Directory(FilePath(folder).appending(Claim.sourceFolder))
        for (i, item) in report.items.enumerated() {
            let keep = item.status != .ok || template.originals == .keep
            guard keep else { continue }
            let name = batch.manifest.items[i].name
            let kind = item.status == .ok ? layout.originals : layout.failed
            let target = kind + "/" + id
            try Files.makeDirectory(kind, permissions: 0o755)
            try Files.makeDirectory(target, permissions: 0o755)
            let destination = try Directory(target)
            let moved = try batch.mover.take(name, from: src, into: destination)
            if !moved, try destination.status(of: name) == nil {
                log.warning("source \(name.escaped) is missing from the batch (removed by hand?)", fields.with("FILE", name.escaped))
                continue
            }
            try destination.sync()
            report.items[i].original = (item.status == .ok ? "originals/" : "failed/") + id + "/" + name.escaped
        }
        try src.sync()
        // 3. The report, last.
        do {
            try ReportWriter.write(report, toFolder: staged)
        } catch {
            throw SystemError("write the report in", staged, errno: error.code)
        }
        // 4. Publish the batch folder at once.
        try Files.makeDirectory(layout.out, permissions: 0o755)
        let out = try Directory(layout.out)
        try batch.mover.renameFolder(FileName("out"), in: try Directory(folder), to: out, as: FileName(id)!)
        try out.sync()
        try Files.syncDirectory(folder)
        // 5. Delete what the template says to delete, then the work folder.
        try cleanUp(batch, template: template)
        return .finished(report)
    }

    /// Step 5: deletes finished sources left in `src/` (`originals: "delete"`) and the work folder.
    static func cleanUp(_ batch: ClaimedBatch, template: Template) throws(SystemError) {
        let folder = batch.folder
        if template.originals == .delete, let src = try? Directory(FilePath(folder).appending(Claim.sourceFolder)) {
            for item in batch.manifest.items { try src.remove(item.name) }
        }
        try Files.removeTree(folder)
        try Files.syncDirectory(batch.layout.work)
    }

    /// Removes `.pf-tmp-*` files a crash left behind in `folder` and its subfolders
    /// (`thumbs/`).
    static func removeTemporaryFiles(in folder: Directory) throws(SystemError) {
        for name in try folder.names() {
            if name.bytes.starts(with: AtomicFile.temporaryPrefix.utf8) {
                try folder.remove(name)
            } else if try folder.status(of: name)?.isDirectory == true {
                try removeTemporaryFiles(in: try folder.folder(name))
            }
        }
    }

    static func publishedReport(_ folder: String) throws(SystemError) -> Report {
        guard let bytes = try Files.read(folder + "/report.json"),
              let report = try? JSONDecoder().decode(Report.self, from: Data(bytes)) else {
            throw SystemError("read the report in", folder, errno: EINVAL)
        }
        return report
    }

    static func date(_ iso: String) -> Date? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: iso)
    }
}
