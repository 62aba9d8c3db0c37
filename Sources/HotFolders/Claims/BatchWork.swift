import Batches
import Codecs
import Finishing
import Foundation
import Pixels
import Synchronization
import System

/// Finishing a claimed batch, crash-safe at every step (reference: Claims and crash safety). Each
/// step leaves the disk in a state from which `finish` can simply be called again (after a crash,
/// by this or another daemon):
///
/// 1. Photos are finished into `.work/<id>/out/`; each one is journaled as started before its
///    work and as finished once its outputs are in place. Leftover temporary files there are
///    removed first, and photos already journaled are not done again; a photo that stopped the
///    finisher once is done again alone, one that stopped it twice is failed (see
///    `ProgressJournal`). Each source is checked against the manifest's size and SHA-256: one
///    that changed since the claim fails (`io-error`). Then the batch's own outputs (story,
///    colour card, `report.html`) are made, again whole if a crash interrupted them. Files
///    the report does not name (outputs of a failed photo, of an attempt a crash cut short)
///    are removed.
/// 2. Sources are filed: `src/<name>` → `originals/<id>/<name>` (finished) or
///    `failed/<id>/<name>` (failed). A source that cannot be filed fails alone: a finished
///    one goes to `failed/` instead (`io-error`); one that cannot be moved at all stays in
///    `src/`, the report says where, and `.work/<id>/` is kept until it can be filed. With
///    `originals: "delete"`, finished sources stay in `src/` for now.
/// 3. `report.json` is written into `.work/<id>/out/`: the last file of the batch.
/// 4. `.work/<id>/out/` is renamed to `out/<id>/`: the whole batch folder, report included,
///    appears at once, and never holds a temporary name.
/// 5. With `originals: "delete"`, the finished sources are deleted now that the report is
///    durable; then `.work/<id>/` is removed.
///
/// Between 4 and 5 the batch is announced (`announce`: its journal line, STATUS.txt, metrics,
/// hooks), once: its journal records it (`BatchStage.finished`) before the clean-up, so a run
/// that finds the batch published and not announced (the daemon stopped in between) announces
/// it, and one that finds it announced only cleans up. A clean-up that fails (a share answering
/// EBUSY for longer than `BatchLocks.Removal` tries) leaves the work folder to recovery: the
/// batch is finished all the same.
public enum BatchWork {
    /// How a call ended.
    public enum Outcome: Sendable {
        /// The batch folder is published under `out/<id>/` with its report, and announced now.
        /// `left` names the sources that could not be filed and wait in `.work/<id>/src/` (in
        /// words); `cleanUp`: why the work folder could not be cleaned up (recovery does it).
        case finished(Report, left: [String], cleanUp: SystemError?)
        /// The batch was published and announced before (by an earlier run); only its clean-up
        /// was done again: its sources that could not be filed then (`left`: those still
        /// waiting), its work folder (`cleanUp`: why it is still there).
        case filing(left: [String], cleanUp: SystemError?)
        /// Stopped (SIGTERM) before every photo was done: the batch stays in `.work/` and is
        /// resumed by the next start.
        case interrupted
        /// The share failed under the batch (`ShareHealth.isShareFailure`: the connection gone,
        /// an I/O error, a full disk): no photo failed for it, the batch is left in `.work/`
        /// with its lock let go, for recovery to resume once the share answers.
        case givenBack(SystemError)
    }

    /// Finishes (or resumes) `batch`.
    /// - Parameters:
    ///   - limits: the photo limits and workers.
    ///   - stop: once requested, no new photo starts.
    ///   - log: where warnings go.
    ///   - progress: (done, total) as the run starts (the photos finished while the batch
    ///     was open, or before a stop, are done) and after each photo.
    ///   - started: a photo's 1-based index as its work begins in this run; 0 as the batch's own
    ///     outputs (story, colour card) begin, once every photo is done.
    /// - Throws: `BatchError` when a step of the batch itself cannot be done: `.system` (disk
    ///   full while writing the report, permissions on `out/`), `.data` (the template stored
    ///   with the batch no longer validates, its manifest or published report does not decode).
    ///   The batch stays in `.work/` and is retried by recovery. One photo's trouble never
    ///   throws: it fails that photo.
    ///   - early: the photos finished while the batch was open as a cluster's database recorded
    ///     them (laid over the batch's `tasks` journal); nil: the journal alone.
    ///   - announce: called once the batch is published (its report), before its clean-up, once
    ///     in the batch's life: its journal line, STATUS.txt, metrics and hooks.
    ///   - holdOriginals: finished sources are filed in `originals/<id>/` even where the template
    ///     says `originals: "delete"` (`keep.originals: "until-delivered"` removes them later).
    ///   - duplicates: the photos this hot folder finished before, by SHA-256 (`duplicates:
    ///     "skip"`): a photo among them is not finished again but listed as `duplicate`; nil:
    ///     every photo is finished.
    public static func finish(_ batch: ClaimedBatch, limits: BatchLimits, stop: StopRequest, log: Logger,
                              early: EarlyJournal.Progress? = nil, holdOriginals: Bool = false,
                              duplicates: FinishedPhotos? = nil,
                              progress: @escaping @Sendable (Int, Int) -> Void = { _, _ in },
                              started: @escaping @Sendable (Int) -> Void = { _ in },
                              announce: @Sendable (Report) async -> Void = { _ in })
        async throws(BatchError) -> Outcome {
        // A share (or a dead one: statfs fails) counts I/O and connection errors as its own.
        let shared = (try? Files.fileSystem(batch.folder))?.isShared ?? true
        do throws(BatchError) {
            try BatchError.wrap { () throws(SystemError) in try batch.lock.locks.givenBack.settle(batch.journals) }
            return try await steps(batch, limits: limits, stop: stop, shared: shared, early: early, holdOriginals: holdOriginals,
                                   duplicates: duplicates, log: log, progress: progress, started: started, announce: announce)
        } catch .system(let error) where ShareHealth.isShareFailure(error, shared: shared) {
            batch.lock.locks.givenBack.record(batch.folder, [])
            batch.lock.release()
            return .givenBack(error)
        }
    }

    static func steps(_ batch: ClaimedBatch, limits: BatchLimits, stop: StopRequest, shared: Bool,
                      early: EarlyJournal.Progress? = nil, holdOriginals: Bool = false, duplicates: FinishedPhotos? = nil,
                      log: Logger,
                      progress: @escaping @Sendable (Int, Int) -> Void,
                      started: @escaping @Sendable (Int) -> Void = { _ in },
                      announce: @Sendable (Report) async -> Void) async throws(BatchError) -> Outcome {
        var batch = batch
        let layout = batch.layout, id = batch.id, folder = batch.folder
        let staged = folder + "/out", published = layout.out + "/" + id
        var template: Template
        do {
            template = try batch.manifest.template.template()
        } catch {
            // The template stored at the claim no longer validates (its logo file was removed):
            // keep the batch, say why, and retry at the next recovery.
            throw .data(BatchDataError(.template, file: folder + "/" + Manifest.fileName, reason: error.description))
        }
        if holdOriginals { template.originals = .keep }
        // An open batch (its photos claimed as they settled) closes now: the manifest as on
        // disk (the last add), its items in the template's order.
        if batch.manifest.open == true {
            if let onDisk = try Manifest.read(fromFolder: folder) { batch.manifest = onDisk }
            batch = try BatchError.wrap { () throws(SystemError) in try Claim.close(batch, order: template.order) }
        }
        // After a crash in step 2 some sources are already filed: the whole-set outputs read
        // them there (the photos needing a finish are all still in src/).
        let srcPath = FilePath(folder).appending(Claim.sourceFolder)
        let sources = batch.manifest.items.map { item in
            var source = BatchRunner.Source(path: srcPath.appending(item.name), file: item.name,
                                            claimed: item.sha256.map { .init(bytes: item.bytes, sha256: $0) })
            for kind in [layout.originals, layout.failed] where !Files.exists(source.path) {
                let filed = FilePath(kind + "/" + id).appending(item.name)
                if Files.exists(filed) { source.path = filed }
            }
            return source
        }
        // What the files are (photos, pairs, sidecars, the rest): decided by their names and
        // contents, so every run of this batch finds the same photos in the same order.
        let contents = BatchContents.read(sources)
        if !Files.exists(staged) && Files.exists(published) {
            let report = try publishedReport(published)
            let announced = try BatchError.wrap { () throws(SystemError) in try ProgressJournal.read(folder: folder) }.stage != nil
            return await completed(batch, report: report, contents: contents, template: template, announced: announced,
                                   log: log, announce: announce)
        }
        do throws(SystemError) {
            return try await run(batch, template: template, sources: sources, contents: contents, limits: limits,
                                 stop: stop, shared: shared, early: early, duplicates: duplicates, log: log, progress: progress,
                                 started: started,
                                 announce: announce)
        } catch {
            throw .system(error)
        }
    }

    /// A published batch: announced (once: `announced` when its journal says it was), then
    /// cleaned up (step 5); a clean-up that fails is left to recovery, the batch finished all
    /// the same.
    static func completed(_ batch: ClaimedBatch, report: Report, contents: BatchContents, template: Template,
                          announced: Bool, log: Logger, announce: @Sendable (Report) async -> Void) async -> Outcome {
        if !announced {
            await announce(report)
            do throws(SystemError) {
                try ProgressJournal.stage(.finished, to: batch.journals)
            } catch {
                log.warning("cannot journal that the batch was announced: \(error) (should its clean-up be cut short too, it is announced again)",
                            ["INBOX": batch.manifest.inbox, "BATCH": batch.id])
            }
        }
        var left: [String] = [], failure: SystemError?
        do throws(SystemError) {
            left = try cleanUp(batch, contents: contents, template: template, report: report, log: log)
        } catch {
            failure = error
            // Recovery's now (this service's, or another host's at once).
            batch.lock.release()
        }
        return announced ? .filing(left: left, cleanUp: failure) : .finished(report, left: left, cleanUp: failure)
    }

    /// Steps 1 to 5 of a batch not published yet (`steps` has read its template and closed it).
    static func run(_ batch: ClaimedBatch, template: Template, sources: [BatchRunner.Source], contents: BatchContents,
                    limits: BatchLimits, stop: StopRequest, shared: Bool, early: EarlyJournal.Progress? = nil,
                    duplicates: FinishedPhotos? = nil, log: Logger,
                    progress: @escaping @Sendable (Int, Int) -> Void,
                    started photoStarted: @escaping @Sendable (Int) -> Void = { _ in },
                    announce: @Sendable (Report) async -> Void) async throws(SystemError) -> Outcome {
        let layout = batch.layout, id = batch.id, folder = batch.folder
        let staged = folder + "/out"
        let fields: LogFields = ["INBOX": batch.manifest.inbox, "BATCH": id]
        try Files.makeDirectory(staged, permissions: 0o755)
        try removeTemporaryFiles(in: try Directory(staged))

        // What an earlier run of this batch did, and what stopped it; then the photos finished
        // while it was open, taken where the batch's order gives them the same stem.
        var journal = try ProgressJournal.read(folder: folder)
        forgetLost(&journal, staged: staged, log: log, fields: fields)
        let runner = BatchRunner(template: template, limits: limits, inbox: batch.manifest.inbox)
        let onShare = try EarlyJournal.read(folder: folder)
        let early = early.map { onShare.merging($0) } ?? onShare
        // With `harmonize`, the batch's light is fixed from every photo before any is adopted
        // or finished: photos finished while it was open are taken only when the fixed
        // reference leaves their correction as it was (reference: `harmonize`).
        var light = await lightPlan(batch, runner: runner, sources: sources, contents: contents, journal: journal, early: early)
        try adoptEarly(batch, contents: contents, runner: runner, staged: staged, journal: &journal, early: early,
                       light: &light, log: log)
        if var plan = light, !plan.again.isEmpty, let looked = await runner.lightPlan(
            contents.photos.map { sources[$0.main] }, known: plan.lights.enumerated().reduce(into: [:]) { $0[$1.offset] = $1.element },
            look: Set(plan.again.keys), batch: batch.id) {
            plan.take(looksOf: looked)
            light = plan
        }
        var done = journal.finished
        var alone: Set<Int> = []
        for (index, count) in journal.unfinished.sorted(by: { $0.key < $1.key }) where index <= contents.photos.count {
            let photo = contents.photos[index - 1]
            if count >= 2 {
                var item = stoppedTwice(index, batch.manifest.items[photo.main])
                item.alternates = photo.alternates.isEmpty ? nil : photo.alternates.map { batch.manifest.items[$0].name.escaped }
                done[index] = item
                do throws(SystemError) {
                    try ProgressJournal.append(item, to: batch.journals)
                } catch {
                    log.warning("cannot journal \(item.source) as failed: \(error) (it is failed again, as now, if the batch runs again)",
                                fields.with("FILE", item.source))
                }
                log.error("\(item.error!.message)", fields.with("FILE", item.source))
            } else {
                alone.insert(index)
                log.warning("photo \(index) was being finished when the daemon stopped: it is done again, alone",
                            fields.with("FILE", batch.manifest.items[photo.main].name.escaped))
            }
        }
        if let duplicates, batch.manifest.redoes == nil {
            try skipDuplicates(batch, contents: contents, duplicates: duplicates, done: &done, alone: &alone, log: log)
        }
        let wholeSet = (journal.starts[0] ?? 0) < 2
        if !wholeSet { log.error("the batch's own outputs (story, colour card) stopped the finisher twice: not made again", fields) }

        let started = Self.date(batch.manifest.claimed) ?? Date()
        // The share failing under the batch stops it (no new photo starts) and gives it back:
        // what failed for the share is neither journaled nor reported (`ShareWatch`).
        let watch = ShareWatch(layout: layout, shared: shared, stop: stop)
        let journaling = ProgressJournal.Writer(batch.journals, shared: shared)
        var report = await runner.run(batch: id, sources: sources, contents: contents, folder: staged, stop: watch.stop,
                                      started: started,
                                      finished: done, resumable: true, alone: alone, wholeSet: wholeSet, light: light,
                                      progress: progress, onItem: { item in
            watch.mirror()
            guard !watch.isShareFailure(item) else { return }
            do throws(SystemError) {
                try journaling.append(item)
                watch.journaled(item.index)
            } catch where ShareHealth.isShareFailure(error, shared: shared) {
                watch.failed(error)
            } catch {
                log.warning("cannot journal \(item.source) (it would be done again after a crash): \(error)", fields)
            }
        }, onStart: { index in
            photoStarted(index)
            watch.mirror()
            watch.starting(index)
            do throws(SystemError) {
                try journaling.started(index)
            } catch where ShareHealth.isShareFailure(error, shared: shared) {
                watch.failed(error)
            } catch {
                log.warning("cannot journal the start of photo \(index): \(error)", fields)
            }
        })
        // The items written since the last start line, synced before anything relies on them
        // (the sources are filed next: a photo done again needs its source).
        guard watch.failure == nil, !report.items.contains(where: { $0.status == .interrupted }) else {
            do throws(SystemError) {
                try journaling.flush()
            } catch {
                log.warning("cannot sync the batch's journal as it stops: \(error) (after a power cut its last photos are finished again)",
                            fields)
            }
            return stopped(batch, watch: watch, log: log)
        }
        try journaling.flush()
        report.redoes = batch.manifest.redoes

        // 2. File the sources (by their names in the manifest: the report shows them escaped).
        _ = fileSources(&report, batch: batch, contents: contents, template: template, log: log)
        // The moves made durable once for all (not one folder sync a source), before the
        // report says where the sources are.
        for kind in [layout.originals, layout.failed] { try Files.syncDirectory(kind + "/" + id) }
        try removeUnreferencedFiles(in: staged, report: report)
        // 3. The report (its page, then report.json), last.
        do {
            report = try ReportWriter.write(report, toFolder: staged)
        } catch {
            throw SystemError("write the report in", staged, errno: error.code)
        }
        // 4. Publish the batch folder at once, every name in it durable first: the photos'
        // outputs and thumbnails were written with their bytes synced, not their folders
        // (`AtomicFile.Durability.contents`): one sync of each folder for the whole batch.
        try syncFolders(in: try Directory(staged))
        try Files.makeDirectory(layout.out, permissions: 0o755)
        let out = try Directory(layout.out)
        try batch.mover.renameFolder("out", in: try Directory(folder), to: out, as: FileName(id)!)
        try out.sync()
        try Files.syncDirectory(folder)
        // The batch is finished for everyone: announced, then (5) what the template says to
        // delete is deleted and the work folder removed.
        return await completed(batch, report: report, contents: contents, template: template, announced: false,
                               log: log, announce: announce)
    }

    /// A run that did not get every photo done: the share failed under it (the batch given
    /// back), or it was stopped (SIGTERM: resumed by the next start).
    private static func stopped(_ batch: ClaimedBatch, watch: ShareWatch, log: Logger) -> Outcome {
        guard let error = watch.failure else { return .interrupted }
        let givenBack = batch.lock.locks.givenBack
        givenBack.record(batch.folder, watch.cutShort)
        do throws(SystemError) {
            try givenBack.settle(batch.journals)
        } catch {
            // The share that failed: the lines stay owed, written when the batch resumes (`finish`
            // settles them first). The next line of the log says the batch was given back.
            log.log(.debug, "the photos the share cut short are journaled when the batch resumes (\(error))",
                    ["INBOX": batch.manifest.inbox, "BATCH": batch.id])
        }
        batch.lock.release()
        return .givenBack(error)
    }

    /// Drops from `journal` the finished photos whose outputs or thumbnail are not all in
    /// `staged` with their bytes: names a power cut took, written with their bytes synced but
    /// not their folder (`AtomicFile.Durability.contents`: the folders are synced once, before
    /// publishing), or files removed by hand. Those photos are done again; the start the
    /// journal has of them does not count as one that stopped the finisher.
    static func forgetLost(_ journal: inout ProgressJournal.Progress, staged: String, log: Logger, fields: LogFields) {
        func has(_ file: String, bytes: Int?) -> Bool {
            guard let status = try? Files.status(staged + "/" + file), status.isRegular else { return false }
            return bytes.map { Int64($0) == status.size } ?? true
        }
        for (index, item) in journal.finished.sorted(by: { $0.key < $1.key }) where item.status == .ok {
            let whole = (item.outputs ?? []).allSatisfy { has($0.file, bytes: $0.bytes) }
                && (item.thumbnail.map { has($0, bytes: nil) } ?? true)
            guard !whole else { continue }
            journal.finished[index] = nil
            if let starts = journal.starts[index], starts > 0 { journal.starts[index] = starts - 1 }
            log.warning("photo \(index)'s outputs are not all there (a power cut, or removed by hand): it is done again",
                        fields.with("FILE", item.source))
        }
    }

    /// What one run of a batch learns about its share: whether it failed under the batch (an
    /// item that failed with the share's error, confirmed by a look at the share; a journal line
    /// that cannot be written), the photos started and journaled, and its own stop request (the
    /// service's, mirrored, plus the share's).
    final class ShareWatch: Sendable {
        let layout: HotFolderLayout
        let shared: Bool
        let outer: StopRequest
        let stop = StopRequest()
        private let state = Mutex<(failure: SystemError?, started: Set<Int>, journaled: Set<Int>)>((nil, [], []))

        init(layout: HotFolderLayout, shared: Bool, stop: StopRequest) {
            self.layout = layout
            self.shared = shared
            outer = stop
            if stop.isRequested { self.stop.request() }
        }

        var failure: SystemError? { state.withLock { $0.failure } }
        /// Photos started in this run and never journaled as finished.
        var cutShort: Set<Int> { state.withLock { $0.started.subtracting($0.journaled) } }

        func mirror() { if outer.isRequested { stop.request() } }
        func starting(_ index: Int) { _ = state.withLock { $0.started.insert(index) } }
        func journaled(_ index: Int) { _ = state.withLock { $0.journaled.insert(index) } }

        func failed(_ error: SystemError) {
            state.withLock { if $0.failure == nil { $0.failure = error } }
            stop.request()
        }

        /// True when `item` failed because of the share, not the photo: an `io-error` whose
        /// reason is a full disk, or — on a share — an I/O or connection error while the share
        /// does not answer or take data either (a file that alone cannot be read fails alone).
        func isShareFailure(_ item: Report.Item) -> Bool {
            if failure != nil { return item.status == .failed }
            guard item.status == .failed, item.error?.code == PhotoError.Code.ioError.rawValue,
                  let message = item.error?.message, ShareHealth.isShareFailure(message: message, shared: shared) else { return false }
            let noSpace = ShareHealth.isShareFailure(message: message, shared: false)
            let health = ShareHealth.check(layout)
            guard noSpace || !health.isAvailable else { return false }
            failed(SystemError("finish", item.source + " (" + message + ")", errno: noSpace ? ENOSPC : EIO))
            return true
        }
    }

    /// Takes the photos finished while the batch was open (`EarlyJournal`) into the batch:
    /// each one not journaled yet whose stem is the one the batch's order gives it has its
    /// outputs moved from `early/<task>/` into `staged` and its item journaled under its place
    /// (its `alternates` as the batch's contents say); a task started and never done counts as
    /// a start of its photo. Any other photo is finished by the run, as it would be anyway.
    /// Safe to repeat after a crash: a file moved already is where it goes.
    /// - Parameter recorded: what a cluster's database recorded of the batch's tasks (its hosts
    ///   do not journal them on the share), laid over the `tasks` journal.
    /// - Parameter light: the batch's light (`harmonize`): an early photo whose correction the
    ///   fixed reference moves visibly (`SetLight.visible`) is not taken; it is finished again,
    ///   and `light.again` says why.
    static func adoptEarly(_ batch: ClaimedBatch, contents: BatchContents, runner: BatchRunner, staged: String,
                           journal: inout ProgressJournal.Progress, early: EarlyJournal.Progress,
                           light: inout LightPlan?, log: Logger) throws(SystemError) {
        guard !early.done.isEmpty || !early.starts.isEmpty else { return }
        let items = batch.manifest.items
        let srcPath = FilePath(batch.folder).appending(Claim.sourceFolder)
        let sources = contents.photos.map { BatchRunner.Source(path: srcPath.appending(items[$0.main].name), file: items[$0.main].name) }
        let stems = OutputNames.uniqueStems(sources.map(\.readableName), maxBytes: OutputNames.stemRoom(runner.template))
        let reusable = runner.finishesEarly
        var adopted: [Report.Item] = []
        for (i, photo) in contents.photos.enumerated() where journal.finished[i + 1] == nil {
            let name = items[photo.main].name
            if let count = early.starts[name] {
                journal.starts[i + 1, default: 0] += count
                continue
            }
            guard reusable, let (task, finished) = early.done[name], finished.stem == stems[i] else { continue }
            if let set = light?.set, let record = finished.item.outputs?.first?.applied.harmonize {
                let change = set.change(from: record.correction, light: record.before)
                if change > SetLight.visible {
                    light?.again[i] = String(format: "finished while the batch was open, toward the light known then; the "
                                             + "batch's reference moved its correction by ΔE %.1f: finished again", change)
                    continue
                }
            }
            var item = finished.item
            let from = EarlyJournal.outputFolder(task, batchFolder: batch.folder)
            var files = (item.outputs ?? []).map(\.file)
            if let thumbnail = item.thumbnail { files.append(thumbnail) }
            var moved = true
            for file in files where moved {
                moved = try moveEarly(file, from: from, to: staged, mover: batch.mover)
            }
            guard moved else { continue }
            item.index = i + 1
            item.alternates = photo.alternates.isEmpty ? nil : photo.alternates.map { items[$0].name.escaped }
            adopted.append(item)
        }
        guard !adopted.isEmpty else { return }
        // The moves durable, then the items journaled (one append): a crash between them finds
        // the files where they go and takes them again.
        let thumbnails = Set(adopted.compactMap(\.thumbnail).compactMap { path in path.lastIndex(of: "/").map { String(path[..<$0]) } })
        for folder in [""] + thumbnails.sorted().map({ "/" + $0 }) { try Files.syncDirectory(staged + folder) }
        try ProgressJournal.append(adopted, to: batch.journals)
        for item in adopted { journal.finished[item.index] = item }
        log.info("\(adopted.count) of \(contents.photos.count) photos were finished while the batch was open",
                 ["INBOX": batch.manifest.inbox, "BATCH": batch.id])
    }

    /// The batch's light (`harmonize`; nil without): the lights of photos finished already (by an
    /// earlier run, or while the batch was open) are their records'; the others are looked at.
    static func lightPlan(_ batch: ClaimedBatch, runner: BatchRunner, sources: [BatchRunner.Source], contents: BatchContents,
                          journal: ProgressJournal.Progress, early: EarlyJournal.Progress) async -> LightPlan? {
        guard runner.template.harmonize != nil else { return nil }
        var known: [Int: LightEstimate] = [:]
        for (i, photo) in contents.photos.enumerated() {
            let item = journal.finished[i + 1] ?? early.done[batch.manifest.items[photo.main].name]?.early.item
            if let light = item?.outputs?.first?.applied.harmonize?.before { known[i] = light }
        }
        return await runner.lightPlan(contents.photos.map { sources[$0.main] }, known: known, batch: batch.id)
    }

    /// Moves `file` (a path under both folders: `thumbnails/x.jpg`) from `from` to `to`,
    /// replacing what is there. False when it is in neither (removed by hand: the photo is
    /// finished again).
    private static func moveEarly(_ file: String, from: String, to: String, mover: Mover) throws(SystemError) -> Bool {
        let parts = file.split(separator: "/").map(String.init)
        guard let last = parts.last, let name = FileName(last) else { return false }
        let sub = parts.dropLast().map { "/" + $0 }.joined()
        guard Files.exists(from + "/" + file) else { return Files.exists(to + "/" + file) }
        try Files.makeDirectories(to + sub)
        let source = try Directory(from + sub), target = try Directory(to + sub)
        do {
            return try mover.move(name, from: source, to: target)
        } catch where error.code == EEXIST {
            try target.remove(name)
            return try mover.move(name, from: source, to: target)
        }
    }

    /// `duplicates: "skip"`: each photo of the batch whose bytes this hot folder finished before
    /// (in a batch still in `out/`), or an earlier photo of the same batch has, is not finished
    /// again: its item says `duplicate` and where it was finished, and is journaled (a resumed
    /// batch says the same). One finished while the batch was open is replaced (its outputs are
    /// removed with the files the report does not name). A redo finishes its photos whatever
    /// came before (not called for one).
    static func skipDuplicates(_ batch: ClaimedBatch, contents: BatchContents, duplicates: FinishedPhotos,
                               done: inout [Int: Report.Item], alone: inout Set<Int>, log: Logger) throws(SystemError) {
        duplicates.refresh()
        var skipped: [Report.Item] = []
        /// The first photo of this batch with each SHA-256 (in the batch's order).
        var firstHere: [String: String] = [:]
        for (i, photo) in contents.photos.enumerated() {
            let claimed = batch.manifest.items[photo.main]
            guard let sha256 = claimed.sha256 else { continue }
            let here = firstHere[sha256].map { Report.DuplicateOf(batch: batch.id, source: $0) }
            if here == nil { firstHere[sha256] = claimed.name.escaped }
            guard done[i + 1]?.status != .duplicate, let place = duplicates.place(of: sha256) ?? here else { continue }
            var item = Report.Item(index: i + 1, source: claimed.name.escaped, status: .duplicate)
            item.bytes = claimed.bytes
            item.sha256 = sha256
            item.duplicateOf = place
            item.alternates = photo.alternates.isEmpty ? nil : photo.alternates.map { batch.manifest.items[$0].name.escaped }
            skipped.append(item)
            done[i + 1] = item
            alone.remove(i + 1)
            let whereFinished = place.batch == batch.id ? "in the same batch" : "finished in batch \(place.batch)"
            log.notice("\(item.source) is a duplicate of \(place.source), \(whereFinished): not finished again (duplicates: skip)",
                       ["INBOX": batch.manifest.inbox, "BATCH": batch.id, "FILE": item.source])
        }
        if !skipped.isEmpty { try ProgressJournal.append(skipped, to: batch.journals) }
    }

    /// The item of a photo that stopped the finisher twice.
    static func stoppedTwice(_ index: Int, _ claimed: Manifest.Item) -> Report.Item {
        var item = Report.Item(index: index, source: claimed.name.escaped, status: .failed)
        item.bytes = claimed.bytes
        item.sha256 = claimed.sha256
        item.error = .init(code: PhotoError.Code.corruptImage.rawValue,
                           message: "stopped the finisher twice: the daemon crashed or was killed twice while finishing it, so it is not tried again")
        return item
    }

    /// Step 2: every source to `originals/<id>/` or `failed/<id>/`, each on its own: a source
    /// that cannot be filed fails (a finished one is tried in `failed/` instead), and one that
    /// cannot be moved anywhere stays in `src/`, its item saying so. A photo's alternates and
    /// sidecars follow it; files that are no photo go to `originals/<id>/` (whatever
    /// `originals` says: they were not finished, so they are never deleted).
    /// - Returns: whether an item changed (it failed at filing).
    static func fileSources(_ report: inout Report, batch: ClaimedBatch, contents: BatchContents, template: Template,
                            log: Logger) -> Bool {
        let id = batch.id
        let fields: LogFields = ["INBOX": batch.manifest.inbox, "BATCH": id]
        var changed = false
        let src: Directory
        do throws(SystemError) {
            src = try Directory(FilePath(batch.folder).appending(Claim.sourceFolder))
        } catch {
            log.error("cannot open .work/\(id)/src/ to file the sources: \(error); they stay there and are filed when the batch is looked at again (recovery)",
                      fields)
            return false
        }
        /// Where each photo's files went ("originals", "failed"; nil: they stay in src/).
        var homes: [String?] = Array(repeating: nil, count: report.items.count)
        var opened: [String: Directory] = [:]
        for (i, item) in report.items.enumerated() {
            guard item.status != .ok || template.originals == .keep else { continue }
            let name = batch.manifest.items[contents.photos[i].main].name
            let fileFields = fields.with("FILE", name.escaped)
            // A duplicate was not finished: kept with the originals (never deleted), not failed.
            var kind = item.status == .failed || item.status == .interrupted ? "failed" : "originals"
            do throws(SystemError) {
                guard try file(name, from: src, into: kind, batch: batch, sync: false, opened: &opened) else {
                    log.warning("source \(name.escaped) is missing from the batch (removed by hand?)", fileFields)
                    homes[i] = kind
                    continue
                }
            } catch {
                if item.status == .ok {
                    // A finished photo whose original cannot be kept is not finished: fail it,
                    // and keep the source in failed/ if that works.
                    report.items[i].status = .failed
                    report.items[i].error = .init(code: PhotoError.Code.ioError.rawValue,
                                                  message: "finished, but the original could not be filed in originals/\(id)/: \(error)")
                    report.items[i].outputs = nil
                    report.items[i].thumbnail = nil
                    changed = true
                    log.error("\(error): the photo is failed", fileFields)
                    kind = "failed"
                    do throws(SystemError) {
                        if try file(name, from: src, into: kind, batch: batch, sync: false, opened: &opened) {
                            report.items[i].original = "failed/\(id)/\(name.escaped)"
                            homes[i] = kind
                            continue
                        }
                    } catch let again {
                        log.error("\(again): it cannot be filed in failed/ either", fileFields)
                    }
                }
                report.items[i].original = ".work/\(id)/src/\(name.escaped)"
                report.items[i].warnings = (report.items[i].warnings ?? []) + [
                    "the file could not be moved to \(kind)/\(id)/ (\(error.reason)): it stays in .work/\(id)/src/ and is moved once that works",
                ]
                changed = true
                log.error("\(error): the file stays in .work/\(id)/src/", fileFields)
                continue
            }
            report.items[i].original = kind + "/" + id + "/" + name.escaped
            homes[i] = kind
        }
        // The photos' other files, beside them; the files that are no photo, with the originals.
        for (i, photo) in contents.photos.enumerated() {
            guard let kind = homes[i] else { continue }
            for f in photo.alternates + photo.sidecars {
                changed = fileBeside(batch.manifest.items[f].name, into: kind, from: src, batch: batch, log: log,
                                     report: &report) || changed
            }
        }
        for (k, ignored) in contents.ignored.enumerated() {
            let name = batch.manifest.items[ignored.file].name
            if ignored.photo == nil {
                changed = fileBeside(name, into: "originals", from: src, batch: batch, log: log, report: &report) || changed
            }
            // A sidecar of a photo whose files stay in src/ (to be deleted, or not movable) has
            // no home to name.
            let kind = ignored.photo == nil ? "originals" : homes[ignored.photo!]
            let moved = (try? src.status(of: name)) == nil
            report.ignored?[k].original = kind.map { moved ? "\($0)/\(id)/\(name.escaped)" : ".work/\(id)/src/\(name.escaped)" }
        }
        do throws(SystemError) {
            try src.sync()
        } catch {
            log.warning("cannot sync .work/\(id)/src/ after filing its sources: \(error) (after a power cut a filed source may be in src/ again: it is filed again then)",
                        fields)
        }
        return changed
    }

    /// Files one more file of the batch (an alternate, a sidecar, a file that is no photo)
    /// into `kind`; one that cannot be moved stays in `src/`, the batch's warnings say so.
    /// - Returns: whether the report changed.
    private static func fileBeside(_ name: FileName, into kind: String, from src: Directory, batch: ClaimedBatch,
                                   log: Logger, report: inout Report) -> Bool {
        do throws(SystemError) {
            _ = try file(name, from: src, into: kind, batch: batch, sync: false)
            return false
        } catch {
            let id = batch.id
            report.warnings = (report.warnings ?? []) + [
                "\(name.escaped) could not be moved to \(kind)/\(id)/ (\(error.reason)): it stays in .work/\(id)/src/ and is moved once that works",
            ]
            log.error("\(error): the file stays in .work/\(id)/src/",
                      ["INBOX": batch.manifest.inbox, "BATCH": id, "FILE": name.escaped])
            return true
        }
    }

    /// Moves one source into `<root>/<kind>/<id>/` (made if missing) and syncs that folder
    /// (with `sync` false, the caller syncs it once for all its sources, before the report).
    /// - Returns: false when the source is neither in `src/` nor filed there already.
    static func file(_ name: FileName, from src: Directory, into kind: String, batch: ClaimedBatch,
                     sync: Bool = true) throws(SystemError) -> Bool {
        var opened: [String: Directory] = [:]
        return try file(name, from: src, into: kind, batch: batch, sync: sync, opened: &opened)
    }

    /// `file`, with the folders made and opened once for a batch's sources (`opened`, by kind):
    /// not two mkdirs and an open a source.
    static func file(_ name: FileName, from src: Directory, into kind: String, batch: ClaimedBatch,
                     sync: Bool = true, opened: inout [String: Directory]) throws(SystemError) -> Bool {
        let destination: Directory
        if let open = opened[kind] {
            destination = open
        } else {
            let root = batch.layout.root + "/" + kind, target = root + "/" + batch.id
            try Files.makeDirectory(root, permissions: 0o755)
            try Files.makeDirectory(target, permissions: 0o755)
            destination = try Directory(target)
            opened[kind] = destination
        }
        let moved = try batch.mover.take(name, from: src, into: destination)
        if !moved, try destination.status(of: name) == nil { return false }
        if sync { try destination.sync() }
        return true
    }

    /// Step 5: deletes finished sources left in `src/` (`originals: "delete"`), tries again to
    /// file a source step 2 could not move, and removes the work folder once `src/` holds
    /// nothing of the batch.
    /// - Returns: the sources still waiting in `src/`, in words.
    static func cleanUp(_ batch: ClaimedBatch, contents: BatchContents, template: Template, report: Report,
                        log: Logger) throws(SystemError) -> [String] {
        let folder = batch.folder
        var left: [String] = []
        // No src/ any more: every source is filed. Any other reason it cannot be opened stops
        // the clean-up (the batch folder stays, its sources with it).
        let src: Directory?
        do throws(SystemError) {
            src = try Directory(FilePath(folder).appending(Claim.sourceFolder))
        } catch where error.code == ENOENT {
            src = nil
        }
        if let src {
            for (i, item) in batch.manifest.items.enumerated() where try src.status(of: item.name) != nil {
                // A file that is no photo is kept with the originals, never deleted.
                let photo = contents.photo(ofFile: i)
                let status = photo.flatMap { $0 < report.items.count ? report.items[$0].status : nil }
                if status == .ok && template.originals == .delete {
                    try src.remove(item.name)
                    continue
                }
                let kind = status == .failed || status == .interrupted || (photo != nil && status == nil) ? "failed" : "originals"
                do throws(SystemError) {
                    _ = try file(item.name, from: src, into: kind, batch: batch)
                    log.notice("\(item.name.escaped) is filed in \(kind)/\(batch.id)/ at last",
                               ["INBOX": batch.manifest.inbox, "BATCH": batch.id, "FILE": item.name.escaped])
                } catch {
                    left.append("\(item.name.escaped) could not be filed (\(error.reason)); it waits in .work/\(batch.id)/src/")
                }
            }
        }
        guard left.isEmpty else { return left }
        let removed = try batch.lock.locks.removeFolder(folder, lock: batch.lock)
        try Files.syncDirectory(batch.layout.work)
        // Another process holds a file in it (a share client still closing one, a recovery
        // looking at its lock): empty now, recovery removes it.
        guard removed else { throw SystemError("remove the emptied folder", folder, errno: ENOTEMPTY) }
        return []
    }

    /// `fsync` of every folder under `folder` (`thumbs/`), then of `folder` itself.
    static func syncFolders(in folder: Directory) throws(SystemError) {
        for name in try folder.names() where try folder.status(of: name)?.isDirectory == true {
            try syncFolders(in: try folder.folder(name))
        }
        try folder.sync()
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

    /// Removes every file of the batch folder the report does not name: the outputs of a
    /// photo that failed (disk full half way through), or of an attempt a crash cut short
    /// that then failed. What is left is exactly what the report lists.
    static func removeUnreferencedFiles(in folder: String, report: Report) throws(SystemError) {
        var named: Set<String> = ["report.json", "report.html"]
        for item in report.items {
            for output in item.outputs ?? [] { named.insert(output.file) }
            if let thumbnail = item.thumbnail { named.insert(thumbnail) }
        }
        for output in report.outputs { named.insert(output.file) }
        func sweep(_ dir: Directory, prefix: String) throws(SystemError) {
            for name in try dir.names() {
                let relative = prefix + name.escaped
                if try dir.status(of: name)?.isDirectory == true {
                    try sweep(try dir.folder(name), prefix: relative + "/")
                } else if !named.contains(relative) {
                    try dir.remove(name)
                }
            }
        }
        try sweep(try Directory(folder), prefix: "")
    }

    /// The report of the batch published in `folder`.
    /// - Throws: `.system` when it cannot be read, `.data` when it is missing or does not decode.
    static func publishedReport(_ folder: String) throws(BatchError) -> Report {
        let file = folder + "/" + ReportReader.fileName.escaped
        guard let bytes = try BatchError.wrap({ () throws(SystemError) in try Files.read(file) }) else {
            throw .data(BatchDataError(.report, file: file, reason: "it is missing (the batch folder is there without it)"))
        }
        do {
            return try ReportReader.decode(bytes)
        } catch {
            throw .data(BatchDataError(.report, file: file, reason: error.description))
        }
    }

    static func date(_ iso: String) -> Date? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: iso)
    }
}
