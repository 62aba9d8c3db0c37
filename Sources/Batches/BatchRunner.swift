import Codecs
import Configuration
import Finishing
import Foundation
import Pixels
import Sharing
import Synchronization
import System

/// The limits one batch runs under (reference: Config): the config's, whose defaults are the only
/// ones.
public struct BatchLimits: Sendable {
    public var maxPixels: Int
    public var maxFileBytes: Int
    public var itemTimeout: Duration
    /// Photos in flight at once; 0 = one per core.
    public var workers: Int
    /// When set, each photo also takes one of these slots: a `workers` limit shared by
    /// several batches running side by side (the daemon's hot folders).
    public var sharedSlots: WorkerSlots?
    /// When set, photos are admitted within this memory budget (shared by every batch
    /// running at once).
    public var memoryBudget: MemoryBudget?
    /// The name report items give the host that finished them (`Report.Item.host`):
    /// `cluster.host` in a cluster, else the machine's host name.
    public var host: String
    /// The hot folders' share links, for `{shareURL}` (nil: no `web.publicURL`, or `run`).
    public var shareLinks: ShareLinks?

    /// The limits `config` sets (`maxPixels`, `maxFileBytes`, `itemTimeout`, `workers`); with
    /// no config, its defaults (`Config.defaults`).
    public init(config: Config = .defaults) {
        maxPixels = config.maxPixels
        maxFileBytes = config.maxFileBytes
        itemTimeout = config.itemTimeout
        workers = config.workers
        host = config.cluster?.host ?? Self.machineHost
        shareLinks = config.publicURL.map { url in
            ShareLinks(publicURL: url, folders: Dictionary(config.inboxes.map { ($0.name, ($0.root, $0.sharing.shareExpires)) }) { $1 })
        }
    }

    /// The machine's host name (`gethostname`), read once.
    public static let machineHost: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    /// `workers` with 0 resolved to the core count.
    public var effectiveWorkers: Int {
        workers > 0 ? workers : max(1, ProcessInfo.processInfo.activeProcessorCount)
    }
}

/// A flag that asks a running batch to stop claiming new photos (SIGINT, SIGTERM).
public final class StopRequest: Sendable {
    private let flag = Mutex(false)
    public init() {}
    public func request() { flag.withLock { $0 = true } }
    public var isRequested: Bool { flag.withLock { $0 } }
}

/// Runs one batch: every source in order through the template, `workers` photos in flight
/// at once (a sliding window), results written back by index so the report keeps the order.
/// One failing photo never stops the rest.
public struct BatchRunner: Sendable {
    public let template: Template
    public var limits: BatchLimits
    /// The hot folder's name for the report (nil for `run`).
    public var inbox: String?

    /// The recipe, with the marks' fonts and logo prepared once for the batch.
    public let finisher: PhotoFinisher
    /// The lights of the photos finished while the batch is open (`finishEarly`), with
    /// `harmonize`: shared by the copies of this runner.
    public let openLight: OpenSetLight?

    public init(template: Template, limits: BatchLimits, inbox: String? = nil) {
        self.template = template
        self.limits = limits
        self.inbox = inbox
        finisher = PhotoFinisher(template: template)
        openLight = template.harmonize.map(OpenSetLight.init)
    }

    /// One source to finish.
    public struct Source: Sendable {
        /// Where to read it.
        public var path: FilePath
        /// Its file name as dropped (any bytes).
        public var file: FileName?
        /// What the report's `original` says (where the source is kept afterwards).
        public var original: String?
        /// What the file held when it was claimed (the daemon's manifest): a source that reads
        /// differently now (a power cut emptied it, someone wrote to it) fails as `io-error`.
        public var claimed: Claimed?

        /// A source's size and SHA-256 as claimed.
        public struct Claimed: Sendable, Equatable {
            public var bytes: Int
            public var sha256: String
            public init(bytes: Int, sha256: String) {
                self.bytes = bytes
                self.sha256 = sha256
            }
        }

        /// - Parameters:
        ///   - path: where to read it.
        ///   - file: its name as dropped (default: the last component of `path`).
        ///   - original: the report's `original`.
        ///   - claimed: what it held when claimed, to check it against.
        public init(path: FilePath, file: FileName? = nil, original: String? = nil, claimed: Claimed? = nil) {
            self.path = path
            self.file = file ?? path.lastComponent
            self.original = original
            self.claimed = claimed
        }

        /// The source at `path` (text: a `run` argument).
        public init(path: String, original: String? = nil) {
            self.init(path: FilePath(path), original: original)
        }

        /// The name in the report: the name as dropped, escaped where it is not UTF-8
        /// (`FileName.escaped`).
        public var name: String { file?.escaped ?? path.description }

        /// What output names are made from: the name as dropped, as valid UTF-8
        /// (`FileName.readable`).
        public var readableName: String { file?.readable ?? path.description }
    }

    /// Finishes a whole batch into `folder` (which must exist): every photo, then the batch's
    /// own outputs (stitched story, colour card, `report.html`). Returns the report without
    /// writing it: the caller writes it last, after filing the originals. `photofinish run`
    /// and the daemon both finish their batches here.
    /// - Parameters:
    ///   - sources: in batch order; the whole-set outputs read them again.
    ///   - resumable: the batch is resumed after a stop (the daemon's): a stopped batch makes
    ///     no whole-set outputs now; they are made when it is resumed and finished. Without
    ///     it, a stopped batch still gets them (its report says `interrupted`).
    ///   - wholeSet: false when the story and colour card must not be tried again (they
    ///     stopped the finisher twice): `report.html` is still written, with a warning.
    ///   - onStart: also called with 0 just before the whole-set outputs are made.
    ///   - the rest: as `finishPhotos`.
    public func run(batch: String, sources: [Source], contents: BatchContents? = nil, folder: String,
                    stop: StopRequest = StopRequest(),
                    started: Date = Date(), finished alreadyFinished: [Int: Report.Item] = [:],
                    resumable: Bool = false, alone: Set<Int> = [], wholeSet: Bool = true, light: LightPlan? = nil,
                    progress: @escaping @Sendable (Int, Int) -> Void = { _, _ in },
                    onItem: @escaping @Sendable (Report.Item) -> Void = { _ in },
                    onStart: @escaping @Sendable (Int) -> Void = { _ in }) async -> Report {
        // Large pixel blocks go from photo to photo of the batch, and back to the system after it.
        await PixelPool.shared.keeping { () async -> Report in
            let contents = contents ?? BatchContents.read(sources)
            var report = await finishPhotos(batch: batch, sources: sources, contents: contents, folder: folder, stop: stop,
                                            started: started, finished: alreadyFinished, alone: alone, light: light,
                                            progress: progress, onItem: onItem, onStart: onStart)
            if resumable && report.status == .interrupted { return report }
            let sources = contents.photos.map { sources[$0.main] }
            guard wholeSet else {
                report.warnings = (report.warnings ?? []) + [
                    "no stitched story and no colour card: making them stopped the finisher twice (a crash or a kill), so they are not tried again",
                ]
                var plain = template
                plain.stitch = nil
                plain.colorCard = false
                return SetOutputs(template: plain, limits: limits).make(report, sources: sources, folder: folder)
            }
            onStart(0)
            return SetOutputs(runner: self).make(report, sources: sources, folder: folder)
        }
    }

    /// Finishes `sources` into `folder` (which must exist) and returns the report with its
    /// items only (no whole-set outputs), without writing it: one item per photo of
    /// `contents` (the files sorted into photos, pairs and ignored files), in its order.
    /// - Parameters:
    ///   - contents: what the files are (default: read from them, `BatchContents.read`).
    ///     Indexes below (`finished`, `alone`, `onStart`) count its photos.
    ///   - progress: called with (done, total) before the first photo starts (the photos in
    ///     `finished` are done) and after each photo.
    ///   - stop: once requested, no new photo starts; the rest are reported `interrupted`.
    ///   - started: the batch's start time for the report (a resumed batch keeps its own).
    ///   - finished: items already finished by an earlier run of this batch (resuming after a
    ///     crash), by 1-based index: they are not done again.
    ///   - alone: photos (1-based) to finish with no other photo in flight — in this batch nor,
    ///     through `sharedSlots`, in any other: photos in flight when the finisher last
    ///     stopped, so if one of them stops it again, it alone is to blame.
    ///   - onStart: called with a photo's 1-based index just before its work begins (it holds
    ///     its slot), e.g. to journal it.
    ///   - onItem: called with each photo's item once its outputs are in place (one call at a
    ///     time), e.g. to journal it.
    ///   - light: the batch's light (`harmonize`), fixed before (`lightPlan`); with `harmonize`
    ///     and none given, it is fixed here first, from the photos not `finished` (whose records
    ///     give theirs).
    public func finishPhotos(batch: String, sources files: [Source], contents: BatchContents? = nil, folder: String,
                             stop: StopRequest = StopRequest(),
                             started: Date = Date(), finished alreadyFinished: [Int: Report.Item] = [:],
                             alone: Set<Int> = [], light: LightPlan? = nil,
                             progress: @escaping @Sendable (Int, Int) -> Void = { _, _ in },
                             onItem: @escaping @Sendable (Report.Item) -> Void = { _ in },
                             onStart: @escaping @Sendable (Int) -> Void = { _ in }) async -> Report {
        let contents = contents ?? BatchContents.read(files)
        let sources = contents.photos.map { files[$0.main] }
        let alternates = contents.photos.map { $0.alternates.map { files[$0].name } }
        let stems = OutputNames.uniqueStems(sources.map(\.readableName), maxBytes: OutputNames.stemRoom(template))
        var items: [Report.Item?] = sources.indices.map { alreadyFinished[$0 + 1] }
        var plan = light
        if plan == nil, template.harmonize != nil {
            plan = await lightPlan(sources, known: Self.lights(of: Dictionary(uniqueKeysWithValues: alreadyFinished.map { ($0.key - 1, $0.value) })),
                                   batch: batch)
        }
        let window = limits.effectiveWorkers
        let buffers = SourceBuffers()
        await withTaskGroup(of: (Int, Report.Item).self) { group in
            var next = 0
            var done = items.compactMap { $0 }.count
            // Where it starts: the photos finished before (while the batch was open, or by a
            // run a stop cut short) are done already, and say so at once.
            progress(done, sources.count)
            var inFlight = 0
            var exclusive = false
            func admit() -> Bool {
                while next < sources.count && items[next] != nil { next += 1 }
                guard next < sources.count, !stop.isRequested, !exclusive, inFlight < window else { return false }
                let isAlone = alone.contains(next + 1)
                if isAlone {
                    guard inFlight == 0 else { return false }  // once the photos in flight are done
                    exclusive = true
                }
                let index = next
                next += 1
                inFlight += 1
                let source = sources[index], stem = stems[index], light = plan?.photo(index)
                group.addTask {
                    var item = await finishInSlot(source, index: index, stem: stem, batch: batch, count: sources.count,
                                                  folder: folder, alone: isAlone, light: light, buffers: buffers) {
                        onStart(index + 1)
                    }
                    item.alternates = alternates[index].isEmpty ? nil : alternates[index]
                    return (index, item)
                }
                return true
            }
            while admit() {}
            for await (index, item) in group {
                items[index] = item
                inFlight -= 1
                if alone.contains(index + 1) { exclusive = false }
                onItem(item)
                done += 1
                progress(done, sources.count)
                while admit() {}
            }
        }
        let finished = items.enumerated().map { index, item in
            item ?? {
                var skipped = Report.Item(index: index + 1, source: sources[index].name, status: .interrupted)
                skipped.original = sources[index].original
                skipped.alternates = alternates[index].isEmpty ? nil : alternates[index]
                return skipped
            }()
        }
        let ignored = contents.ignored.map {
            Report.IgnoredFile(source: files[$0.file].name, reason: $0.reason, original: files[$0.file].original)
        }
        var report = Report(batch: batch, inbox: inbox,
                            template: .init(name: template.name, sha256: template.sha256, file: template.file),
                            started: BatchID.timestamp(started), finished: BatchID.timestamp(Date()),
                            items: finished, ignored: ignored,
                            interrupted: stop.isRequested && finished.contains { $0.status == .interrupted })
        report.harmonize = Self.summary(plan, items: finished)
        if let warning = plan?.set.warning { report.warnings = (report.warnings ?? []) + [warning] }
        let warnings = MetadataWarnings.batch(template: template, items: finished)
        if !warnings.isEmpty { report.warnings = (report.warnings ?? []) + warnings }
        if template.usesShareURL, let inbox, let links = limits.shareLinks {
            switch links.link(inbox: inbox, batch: batch) {
            case .success(let link): report.link = link
            case .failure(let problem): report.warnings = (report.warnings ?? []) + ["no share link for {shareURL}: \(problem.message)"]
            case nil: break
            }
        }
        return report
    }

    /// The batch's own share link for `{shareURL}`, when its template uses one and its hot
    /// folder can give one (made at its first photo, found by the others).
    func shareURL(batch: String) -> String? {
        guard template.usesShareURL, let inbox, case .success(let link)? = limits.shareLinks?.link(inbox: inbox, batch: batch) else {
            return nil
        }
        return link
    }

    /// The lights the records of finished items give (`applied.harmonize.before`), by the same keys.
    static func lights(of items: [Int: Report.Item]) -> [Int: LightEstimate] {
        items.compactMapValues { $0.outputs?.first?.applied.harmonize?.before }
    }

    /// Finishes one photo (0-based `index` of `count`) into `folder` once it holds a worker
    /// slot (every slot when `alone`) and its share of the memory budget.
    /// - Parameters:
    ///   - light: its part of the batch's light (`harmonize`); nil: finished as it came.
    ///   - early: the batch is open (`finishEarly`): with `harmonize`, the photo is looked at first
    ///     and corrected toward the light known so far (`openLight`).
    private func finishInSlot(_ source: Source, index: Int, stem: String, batch: String, count: Int, folder: String,
                              alone: Bool, light: PhotoLight? = nil, early: Bool = false, buffers: SourceBuffers? = nil,
                              onStart: () -> Void) async -> Report.Item {
        let slots = alone ? limits.sharedSlots?.capacity ?? 1 : 1
        await limits.sharedSlots?.acquire(slots)
        defer { limits.sharedSlots?.release(slots) }
        onStart()
        // Read once: the memory budget's cost comes from the same bytes the photo is
        // finished from.
        let reading = ContinuousClock.now
        // A photo held since its light was measured is finished from what is held (decoded
        // with the facts it is finished with: else from its file), its file not read again.
        var light = light
        let held = light?.held?.take().flatMap { held in
            held.held.facts == facts(source, index: index, count: count, stem: stem, batch: batch) ? held : nil
        }
        light?.held = nil
        var buffer = held == nil ? buffers?.take() ?? [] : []
        let read: Result<SourceRead, PhotoError>
        if let held {
            read = .success(.held(held.held, held.file))
        } else {
            do throws(PhotoError) {
                try SourceFile.read(source.path, maxBytes: limits.maxFileBytes, into: &buffer)
                read = .success(.file(buffer))
            } catch {
                read = .failure(error)
            }
        }
        let readTime = ContinuousClock.now - reading
        let budget = limits.memoryBudget
        let cost = budget == nil ? 0 : (try? read.get()).map { read in
            switch read {
            case .file(let bytes): MemoryBudget.cost(ofPhoto: bytes, finisher: finisher, maxFileBytes: limits.maxFileBytes)
            case .held(_, let file): file.cost
            }
        } ?? 0
        await budget?.acquire(cost)
        defer { budget?.release(cost) }
        var lightWarning: String?
        var photo: HeldPhoto?
        if early, let openLight, case .success(.file(let bytes)) = read {
            (light, photo, lightWarning) = lookEarly(source, bytes: bytes,
                                                    facts: facts(source, index: index, count: count, stem: stem, batch: batch),
                                                    in: openLight)
        }
        var item = finishOne(source, read: consume read, readTime: readTime, index: index, stem: stem,
                             batch: batch, count: count, folder: folder, finisher: finisher, light: light, held: photo)
        // Handed back alone (`consume`): a copy still held here would make the next photo's
        // read copy the whole buffer first.
        if held == nil { buffers?.give(consume buffer) }
        if let lightWarning, item.status == .ok { item.warnings = (item.warnings ?? []) + [lightWarning] }
        return item
    }

    /// A photo of an open batch decoded and held (`HeldPhoto`), its light measured on its
    /// preview and added to the batch's, and its part toward the reference known now; or why it
    /// is finished as it came.
    private func lookEarly(_ source: Source, bytes: [UInt8], facts: PhotoFacts,
                           in open: OpenSetLight) -> (PhotoLight?, HeldPhoto?, String?) {
        var limits = DecodeLimits(maxPixels: self.limits.maxPixels, maxFileBytes: self.limits.maxFileBytes, damaged: template.damaged)
        limits.deadline = .now + self.limits.itemTimeout
        do throws(PhotoError) {
            let photo = try finisher.hold(bytes: bytes, limits: limits, facts: facts)
            let look = PhotoLook.take(preview: photo.preview)
            let set = open.add(source.name, look.light)
            return (PhotoLight(set: set, before: look.light, faces: look.faces, fromThumbnail: false), photo, nil)
        } catch {
            return (nil, nil, "harmonize: its light could not be measured (\(error.message)): finished as it came")
        }
    }

    /// The facts photo `index` (0-based) of `count` is finished with, named `stem`.
    func facts(_ source: Source, index: Int, count: Int, stem: String, batch: String) -> PhotoFacts {
        var facts = PhotoFacts(filename: source.name, batch: batch, index: index + 1, count: count)
        facts.stem = stem
        facts.hotFolder = inbox
        facts.uploader = Uploader.of(source.path)
        facts.shareURL = shareURL(batch: batch)
        return facts
    }

    /// Finishes a photo corrected toward its batch's light and records it in each output
    /// (`applied.harmonize`) with its light measured after, on the finished photo's preview. A
    /// light read on an embedded thumbnail is checked there too: when the photo's own pixels call
    /// for a visibly different correction (a thumbnail left behind by an editor), the photo is
    /// finished again from what they say, and the record says so.
    /// A photo held since its light was measured (`held`, decoded with the same facts: then
    /// `bytes` may be empty) is finished from what is held.
    private func finishLit(_ bytes: [UInt8], light: PhotoLight, held: HeldPhoto?, limits: DecodeLimits, facts: PhotoFacts,
                           finisher: PhotoFinisher) throws(PhotoError) -> FinishedPhoto {
        var before = light.before, again = light.again
        var correction = light.set.correction(for: before)
        var photo = if let held {
            try finisher.finish(held: held, light: correction, deadline: limits.deadline)
        } else {
            try finisher.finish(bytes: bytes, limits: limits, facts: facts, light: correction)
        }
        var after = photo.preview.map { PhotoLook.measure($0, faces: light.faces) }
        if light.fromThumbnail, let measured = after {
            let own = correction.undone(measured)
            let better = light.set.correction(for: own)
            let change = better.difference(correction)
            if change > SetLight.visible {
                photo = try finisher.finish(bytes: bytes, limits: limits, facts: facts, light: better)
                again = String(format: "its embedded thumbnail shows other light than the photo (the correction "
                               + "moved by ΔE %.1f): finished again from the photo's own pixels", change)
                before = own
                correction = better
                after = photo.preview.map { PhotoLook.measure($0, faces: light.faces) }
            }
        }
        let record = Applied.HarmonizeRecord(correction, before: before, after: after, again: again)
        for i in photo.outputs.indices { photo.outputs[i].applied.harmonize = record }
        return photo
    }

    /// True when a photo's outputs depend on the batch's order only through their stem: no
    /// `{index}` or `{count}` in a mark's text, the credit, the metadata or an output's name, of
    /// any recipe. Such a photo can be finished before its batch closes (`finishEarly`).
    public var finishesEarly: Bool {
        let ordered = ["index", "count"]
        func usesOrder(_ text: String?) -> Bool {
            guard let text else { return false }
            return ordered.contains { text.contains("{\($0)}") }
        }
        return !template.recipes.contains { _, recipe in
            let credit = recipe.output.credit
            return ([recipe.text?.text, recipe.tile?.text, recipe.output.name, credit?.creator, credit?.copyright, credit?.credit]
                    + (recipe.metadata?.keyed.map(\.text) ?? []))
                .contains(where: usesOrder)
        }
    }

    /// The stem `source` is named with when its batch gives no other photo the same stem.
    public func earlyStem(_ source: Source) -> String {
        OutputNames.uniqueStems([source.readableName], maxBytes: OutputNames.stemRoom(template))[0]
    }

    /// Finishes one source of an open batch into `folder` (which must exist), numbered `photo`
    /// in the claim order, under the same worker slots and memory budget as the batches: the
    /// item is the one `finishPhotos` makes for it when the batch's order gives it the same
    /// stem (with `finishesEarly`), but for its index and `alternates`.
    /// - Parameter onStart: called once it holds its slot, just before its work begins.
    public func finishEarly(_ source: Source, photo: Int, batch: String, folder: String,
                            onStart: () -> Void = {}) async -> EarlyItem {
        let stem = earlyStem(source)
        let item = await PixelPool.shared.keeping {
            await finishInSlot(source, index: photo - 1, stem: stem, batch: batch, count: photo, folder: folder,
                               alone: false, early: true, onStart: onStart)
        }
        return EarlyItem(stem: stem, item: item)
    }

    /// Finishes and writes one photo read in `readTime`; every failure becomes a failed item.
    /// - Parameter held: the photo of an open batch decoded and held from `read`'s bytes (`lookEarly`).
    private func finishOne(_ source: Source, read: consuming Result<SourceRead, PhotoError>, readTime: Duration,
                           index: Int, stem: String, batch: String, count: Int, folder: String,
                           finisher: PhotoFinisher, light: PhotoLight? = nil, held: HeldPhoto? = nil) -> Report.Item {
        let clock = ContinuousClock()
        let start = clock.now - readTime
        var item = Report.Item(index: index + 1, source: source.name, status: .failed)
        item.host = limits.host
        item.original = source.original
        // What this photo wrote, removed again if it fails: a failed photo leaves no outputs.
        var written: [String] = []
        do throws(PhotoError) {
            var bytes: [UInt8] = [], held = held
            switch try (consume read).get() {
            case .file(let file):
                bytes = file
                item.bytes = bytes.count
                item.sha256 = SHA256.hex(of: bytes)
            case .held(let photo, let file):
                held = photo
                item.bytes = file.bytes
                item.sha256 = file.sha256
            }
            if let claimed = source.claimed, let size = item.bytes, claimed.bytes != size || claimed.sha256 != item.sha256 {
                throw PhotoError(.ioError, "changed since it was claimed: it held \(ByteCount.words(claimed.bytes)) "
                                 + "(sha256 \(claimed.sha256.prefix(12))…) and now holds \(ByteCount.words(size)) "
                                 + "(sha256 \(item.sha256!.prefix(12))…); it is filed as failed, never as the original")
            }
            var decodeLimits = DecodeLimits(maxPixels: limits.maxPixels, maxFileBytes: limits.maxFileBytes)
            decodeLimits.deadline = start + limits.itemTimeout
            let facts = self.facts(source, index: index, count: count, stem: stem, batch: batch)
            var photo: FinishedPhoto
            if let light {
                photo = try finishLit(bytes, light: light, held: held, limits: decodeLimits, facts: facts, finisher: finisher)
            } else {
                photo = try finisher.finish(bytes: consume bytes, limits: decodeLimits, facts: facts)
            }
            item.format = photo.format
            item.size = [photo.uprightSize.width, photo.uprightSize.height]
            item.orientation = photo.orientation
            var outputs: [Report.Output] = []
            for output in photo.outputs {
                do {
                    // The bytes synced, not the folder: the batch syncs its folders once, before
                    // publishing; a journaled photo whose output a power cut took is done again.
                    try AtomicFile.write(output.bytes, to: folder + "/" + output.name, .contents)
                    written.append(output.name)
                } catch {
                    throw PhotoError(.ioError, error.description)
                }
                outputs.append(Report.Output(file: output.name, size: [output.size.width, output.size.height],
                                             bytes: output.bytes.count, variant: output.variant, applied: output.applied))
            }
            item.outputs = outputs
            item.skipped = photo.skipped.map(Skipped.init)
            item.warnings = photo.warnings
            item.faces = photo.faces?.map { [$0.x, $0.y, $0.width, $0.height] }
            if let preview = photo.preview {
                SetExtras.record(preview, stem: stem, folder: folder, color: template.colorCard, into: &item)
            }
            item.status = .ok
        } catch {
            item.error = .init(code: error.code.rawValue, message: error.message)
            for name in written { try? Files.remove(folder + "/" + name) }
        }
        item.ms = Int((clock.now - start) / .milliseconds(1))
        return item
    }
}

/// What a photo is finished from: its file's bytes, or (`harmonize`) the photo decoded and
/// held while its batch's light was found, with its file's size and digest (the file was read
/// once, to be decoded, and is not read again).
enum SourceRead {
    case file([UInt8])
    case held(HeldPhoto, HeldSource.File)
}

/// Reading a source file: size checked from `fstat` before a byte is read (`maxFileBytes`).
enum SourceFile {
    /// The whole file.
    /// - Throws: `too-large` over `maxBytes`; `io-error` with the system's reason when it cannot
    ///   be opened or read (or is not a regular file).
    static func read(_ path: FilePath, maxBytes: Int) throws(PhotoError) -> [UInt8] {
        let file = try open(path, maxBytes: maxBytes)
        do throws(SystemError) {
            return try file.readAll(limit: maxBytes)
        } catch {
            throw ioError(error)
        }
    }

    /// The whole file, into `buffer` (its contents replaced, its storage reused:
    /// `FileDescriptor.readAll(into:)`).
    /// - Throws: as `read(_:maxBytes:)`.
    static func read(_ path: FilePath, maxBytes: Int, into buffer: inout [UInt8]) throws(PhotoError) {
        let file = try open(path, maxBytes: maxBytes)
        do throws(SystemError) {
            try file.readAll(into: &buffer, limit: maxBytes)
        } catch {
            throw ioError(error)
        }
    }

    /// The file opened for reading, once it is known to be a regular file within `maxBytes`.
    private static func open(_ path: FilePath, maxBytes: Int) throws(PhotoError) -> FileDescriptor {
        let file: FileDescriptor, status: FileStatus
        do throws(SystemError) {
            file = try FileDescriptor.open(path, .read)
            status = try file.status()
        } catch {
            throw ioError(error)
        }
        guard status.isRegular else { throw PhotoError(.ioError, "not a regular file") }
        if status.size > Int64(maxBytes) {
            throw PhotoError(.tooLarge, "the file is \(ByteCount.words(Int(status.size))), over the limit of \(ByteCount.words(maxBytes))")
        }
        return file
    }

    private static func ioError(_ error: SystemError) -> PhotoError {
        PhotoError(.ioError, "cannot \(error.call): \(error.reason)")
    }
}

/// The file buffers of a batch's photos: a photo reads its source into the buffer an earlier photo
/// of the batch gave back, so a batch maps its files' memory once per photo in flight instead of
/// once per photo (a 12 MP JPEG's 3 MB faulted in and zeroed page by page: about 2 % of its CPU).
/// Kept as long as the batch runs; at most one per photo in flight.
final class SourceBuffers: Sendable {
    private let kept = Mutex<[[UInt8]]>([])

    /// A buffer given back, or an empty one.
    func take() -> [UInt8] { kept.withLock { $0.popLast() ?? [] } }

    /// Gives a buffer back once nothing else holds it (else its next use would copy it first).
    func give(_ buffer: consuming [UInt8]) {
        let buffer = buffer
        kept.withLock { $0.append(buffer) }
    }
}

/// Byte counts in words ("12.3 MiB").
public enum ByteCount {
    public static func words(_ n: Int) -> String {
        let units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
        var v = Double(n), u = 0
        while v >= 1024 && u < units.count - 1 { v /= 1024; u += 1 }
        return u == 0 ? "\(n) bytes" : String(format: "%.1f %@", v, units[u])
    }
}
