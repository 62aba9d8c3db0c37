import Batches
import Configuration
import Delivery
import Foundation
import HotFolders
import Notifications
import Synchronization
import System

/// The daemon's side of delivery (README "Delivering finished photos"): a finished batch's
/// deliveries planned (one journal per destination in `.work/deliveries/<batch-id>/`) and handed
/// to the `DeliveryWorkers` (a lane per destination); those a stop left resumed at the start;
/// each receipt written into the batch's report (report.json rewritten atomically, and
/// report.html), the board (status, STATUS.txt), the metrics and the journal. A finished batch's
/// life goes on here (`BatchLife`): held while it awaits its deliveries, delivered once each
/// destination verified it.
final class BatchDeliveries: Sendable {
    /// What the config says, as of the last (re)load.
    private struct Settings: Sendable {
        var folders: [String: (layout: HotFolderLayout, destinations: [DestinationSettings], approve: ApproveMode,
                               holdsOriginals: Bool)] = [:]
        var credentials = CredentialStore.defaultPath
        var mail: MailSettings?
    }

    private let settings = Mutex(Settings())
    /// Each hot folder's deliveries not done, by journal path: what status shows.
    private let open = Mutex<[String: [String: String]]>([:])
    /// The lives of the finished batches held for their deliveries, by `inbox/batch`.
    private let lives = Mutex<[String: BatchLife]>([:])
    /// Each hot folder's batches held for their approval, by batch: what status shows.
    private let awaitingApproval = Mutex<[String: [String: ServiceStatus.Held]]>([:])
    /// One report rewritten at a time (two destinations of one batch end together).
    private let reportLock = Mutex(())
    private let workers: DeliveryWorkers
    private let board: StatusBoard
    private let metrics: Metrics
    private let log: Logger
    /// Hears of each delivery done, and of each that gave up (reference: Notifications).
    private let notifier: Notifier?

    init(board: StatusBoard, metrics: Metrics, log: Logger, notifier: Notifier? = nil) {
        self.board = board
        self.metrics = metrics
        self.log = log
        self.notifier = notifier
        let me = Weak()
        workers = DeliveryWorkers(onReceipt: { key, journal in me.value?.receipt(journal, lane: key) },
                                  onOutcome: { _, outcome in me.value?.outcome(outcome) })
        me.value = self
    }

    private final class Weak: @unchecked Sendable {
        weak var value: BatchDeliveries?
    }


    /// Takes the config's destinations (at load and at each reload).
    func configure(_ config: Config) {
        settings.withLock { s in
            s.credentials = config.credentials
            s.mail = config.mail
            s.folders = Dictionary(config.inboxes.map {
                ($0.name, (HotFolderLayout(root: $0.root), $0.deliver, $0.sharing.approve, $0.keep.originals == .untilDelivered))
            }) { $1 }
        }
    }

    /// True when `inbox` keeps its originals until its batches are delivered
    /// (`keep.originals: "until-delivered"`): its finished sources are filed even where the
    /// template says `originals: "delete"`, and removed once delivered.
    func holdsOriginals(_ inbox: String) -> Bool { settings.withLock { $0.folders[inbox]?.holdsOriginals ?? false } }


    /// Plans and starts the deliveries of a batch just finished in `inbox` (nothing when the
    /// folder has no destination, or the batch no photo that finished).
    func finished(_ report: Report, inbox: String) {
        let (folder, credentials, mail) = settings.withLock { ($0.folders[inbox], $0.credentials, $0.mail) }
        guard let folder, report.counts.ok > 0 else { return }
        let batchFolder = folder.layout.out + "/" + report.batch
        if let held = Self.held(report, approve: folder.approve) { show(report.batch, held, inbox: inbox) }
        // A hot folder with approve holds its batches until they are approved, delivered or not.
        guard !folder.destinations.isEmpty else {
            if folder.approve != .none && report.approval == nil { hold(report.batch, inbox: inbox, folder: batchFolder, [.approval]) }
            return
        }
        let fields: LogFields = ["INBOX": inbox, "BATCH": report.batch]
        let journals = DeliveryReceipts.folder(folder.layout, batch: report.batch)
        var receipts: [Report.Delivery] = []
        var awaited: Set<BatchLife.Awaited> = [], delivered: [String] = []
        var started: [(lane: String, DeliveryWorkers.Job)] = []
        for destination in folder.destinations {
            let path = journals + "/" + destination.name + ".json"
            do throws(SystemError) {
                var journal = try DeliveryRun.read(path)
                if journal == nil {
                    let made = try DeliveryReceipts.plan(report, layout: folder.layout, destination: destination, inbox: inbox,
                                                         approvalAsked: folder.approve != .none)
                    try DeliveryRun.write(made, to: path)
                    journal = made
                }
                receipts.append(DeliveryReceipts.receipt(journal!))
                track(journal!, inbox: inbox)
                awaited.formUnion(Self.awaited(journal!))
                if journal!.phase == .delivered { delivered.append(destination.name) }
                let context = DeliveryRun.Context(settings: destination, credentialsFile: credentials, mail: mail, link: report.link)
                started.append((inbox + "/" + destination.name, .init(journal: path, context: context, due: 0)))
            } catch {
                log.error("delivery to \(destination.name) cannot start: \(error); photofinish deliver \(folder.layout.root) \(report.batch) --to \(destination.name) tries again",
                          fields)
                receipts.append(Report.Delivery(name: destination.name, to: destination.destination.description, status: "failed",
                                                files: 0, bytes: 0, at: BatchID.timestamp(Date()), error: error.description))
                awaited.insert(.delivery(destination.name))
            }
        }
        if folder.approve != .none && report.approval == nil { awaited.insert(.approval) }
        DeliveryReceipts.write(receipts, batchFolder: batchFolder, lock: reportLock, log: log, fields: fields)
        // Held before a lane can verify anything.
        hold(report.batch, inbox: inbox, folder: batchFolder, awaited, deliveredTo: delivered)
        for (lane, job) in started { workers.enqueue(job, lane: lane) }
    }

    /// What a destination's journal leaves its batch awaiting.
    static func awaited(_ journal: DeliveryJournal) -> Set<BatchLife.Awaited> {
        switch journal.phase {
        case .delivered: []
        case .awaitingApproval: [.delivery(journal.destination), .approval]
        case .pending, .sending, .failed: [.delivery(journal.destination)]
        }
    }

    /// A finished batch held while `awaited` has not all come (nothing when it awaits nothing).
    /// - Parameter deliveredTo: the destinations whose journals say they verified it already.
    private func hold(_ batch: String, inbox: String, folder: String, _ awaited: Set<BatchLife.Awaited>, deliveredTo: [String] = []) {
        guard !awaited.isEmpty else { return }
        lives.withLock { all in
            var life = all[inbox + "/" + batch]
                ?? BatchLife(id: batch, inbox: inbox, folder: folder, stage: .finished, deliveredTo: deliveredTo)
            _ = life.handle(.awaits(awaited))
            all[inbox + "/" + batch] = life
        }
    }

    /// `awaited` came for a held batch: the line that says it delivered, once every destination
    /// verified it.
    /// - Returns: the batch's stage now (nil: no held batch of that name).
    @discardableResult
    private func came(_ awaited: BatchLife.Awaited, batch: String, inbox: String) -> BatchStage? {
        let (effects, stage) = lives.withLock { all -> ([BatchLife.Effect], BatchStage?) in
            guard var life = all[inbox + "/" + batch] else { return ([], nil) }
            let effects = life.handle(.came(awaited))
            all[inbox + "/" + batch] = life.stage == .delivered ? nil : life
            return (effects, life.stage)
        }
        for case .log(let line) in effects { log.log(line.priority, line.text, line.fields(inbox: inbox)) }
        return stage
    }

    /// What status says of `report`'s batch while it awaits its approval (nil: it does not).
    static func held(_ report: Report, approve: ApproveMode) -> ServiceStatus.Held? {
        guard approve != .none, report.approval == nil, report.counts.ok > 0 else { return nil }
        return ServiceStatus.Held(batch: report.batch, by: .init(approve.rawValue), since: report.finished, link: report.link)
    }

    /// The board shows `batch` among its hot folder's batches held for approval as `held` (nil:
    /// no longer held).
    private func show(_ batch: String, _ held: ServiceStatus.Held?, inbox: String) {
        let all = awaitingApproval.withLock { all -> [ServiceStatus.Held] in
            all[inbox, default: [:]][batch] = held
            return (all[inbox] ?? [:]).values.sorted { $0.batch < $1.batch }
        }
        board.update(inbox) { $0.held = all.isEmpty ? nil : all }
    }

    /// The batches in `out/` of each hot folder with `approve` that are not approved yet: held,
    /// as status says (read from their reports, once at the start).
    private func findHeld(_ folders: [String: (layout: HotFolderLayout, destinations: [DestinationSettings], approve: ApproveMode,
                                               holdsOriginals: Bool)]) {
        for (inbox, folder) in folders.sorted(by: { $0.key < $1.key }) where folder.approve != .none {
            for batch in Files.textNames(in: folder.layout.out).sorted() where BatchID.isValid(batch) {
                do throws(ReportError) {
                    guard let report = try ReportReader.read(batchFolder: folder.layout.out + "/" + batch),
                          let held = Self.held(report, approve: folder.approve) else { continue }
                    show(batch, held, inbox: inbox)
                } catch {
                    log.warning("cannot tell whether batch \(batch) awaits its approval: \(error)", ["INBOX": inbox, "BATCH": batch])
                }
            }
        }
    }

    /// `batch` of `inbox` left `out/` (retention): no longer shown held.
    func removed(_ batch: String, inbox: String) {
        guard awaitingApproval.withLock({ $0[inbox]?[batch] != nil }) else { return }
        show(batch, nil, inbox: inbox)
    }

    /// Resumes the deliveries a stop left in each hot folder's `.work/deliveries/` (sending,
    /// pending, failed and due again), and removes the journals of batches no longer in `out/`;
    /// at the start, after `configure`. Finds the batches held for approval.
    func resume() {
        let (folders, credentials, mail) = settings.withLock { ($0.folders, $0.credentials, $0.mail) }
        findHeld(folders)
        for (inbox, folder) in folders.sorted(by: { $0.key < $1.key }) where !folder.destinations.isEmpty {
            let root = folder.layout.work + "/" + Recovery.deliveries
            for batch in Files.textNames(in: root).sorted() {
                // Its batch folder removed (retention, or by hand): nothing left to deliver.
                if !Files.exists(folder.layout.out + "/" + batch) {
                    do throws(SystemError) {
                        try Files.removeTree(root + "/" + batch)
                    } catch {
                        log.warning("cannot remove the delivery journals of a removed batch: \(error)", ["INBOX": inbox, "BATCH": batch])
                    }
                    continue
                }
                var awaited: Set<BatchLife.Awaited> = [], delivered: [String] = []
                var resumed: [(lane: String, DeliveryWorkers.Job)] = []
                for destination in folder.destinations {
                    let path = root + "/" + batch + "/" + destination.name + ".json"
                    let read: DeliveryJournal?
                    do throws(SystemError) {
                        read = try DeliveryRun.read(path)
                    } catch {
                        log.error("delivery to \(destination.name) cannot resume: \(error); photofinish deliver \(folder.layout.root) \(batch) --to \(destination.name) plans it afresh once the journal is removed",
                                  ["INBOX": inbox, "BATCH": batch])
                        continue
                    }
                    if read?.phase == .delivered { delivered.append(destination.name) }
                    guard let journal = read, journal.phase != .delivered else { continue }
                    track(journal, inbox: inbox)
                    awaited.formUnion(Self.awaited(journal))
                    guard journal.isResumable else { continue }
                    log.notice("resuming the delivery to \(destination.name) (\(journal.files.filter { $0.stage != .verified }.count) of \(journal.files.count) files to go)",
                               ["INBOX": inbox, "BATCH": batch])
                    let context = DeliveryRun.Context(settings: destination, credentialsFile: credentials, mail: mail)
                    resumed.append((inbox + "/" + destination.name, .init(journal: path, context: context, due: journal.nextAttempt ?? 0)))
                }
                hold(batch, inbox: inbox, folder: folder.layout.out + "/" + batch, awaited, deliveredTo: delivered)
                for (lane, job) in resumed { workers.enqueue(job, lane: lane) }
            }
        }
    }

    /// The gate of `when: "approved"` deliveries: the batch's approval (in its report by now)
    /// opens it. Each such delivery still waiting is planned again with the approved photos
    /// alone (and the report), then sent (reference: Approval).
    func approve(batch: String, inbox: String) {
        let (folder, credentials, mail) = settings.withLock { ($0.folders[inbox], $0.credentials, $0.mail) }
        guard let folder else { return }
        show(batch, nil, inbox: inbox)
        let fields: LogFields = ["INBOX": inbox, "BATCH": batch]
        let batchFolder = folder.layout.out + "/" + batch
        let journals = DeliveryReceipts.folder(folder.layout, batch: batch)
        let report: Report
        do throws(ReportError) {
            guard let read = try ReportReader.read(batchFolder: batchFolder) else { return }
            report = read
        } catch {
            log.error("the approved deliveries cannot start: \(error)", fields)
            return
        }
        came(.approval, batch: batch, inbox: inbox)
        var receipts: [Report.Delivery] = []
        let waiting = folder.destinations.filter { destination in
            destination.when == .approved
                && ((try? DeliveryRun.read(journals + "/" + destination.name + ".json"))??.phase ?? .awaitingApproval) == .awaitingApproval
        }
        guard !waiting.isEmpty else { return }
        // What a plan made before the approval left for these destinations (none of it was sent).
        try? Files.removeTree(journals + "/" + DeliveryReceipts.approvedFolder)
        for destination in waiting {
            let path = journals + "/" + destination.name + ".json"
            do throws(SystemError) {
                let journal = try DeliveryReceipts.plan(report, layout: folder.layout, destination: destination, inbox: inbox,
                                                        approvalAsked: true)
                try DeliveryRun.write(journal, to: path)
                receipts.append(DeliveryReceipts.receipt(journal))
                track(journal, inbox: inbox)
                log.info("approved: \(journal.files.count) file\(journal.files.count == 1 ? "" : "s") for \(destination.name)", fields)
                let context = DeliveryRun.Context(settings: destination, credentialsFile: credentials, mail: mail, link: report.link)
                workers.enqueue(.init(journal: path, context: context, due: 0), lane: inbox + "/" + destination.name)
            } catch {
                log.error("the approved delivery to \(destination.name) cannot start: \(error); photofinish deliver \(folder.layout.root) \(batch) --to \(destination.name) tries again",
                          fields)
            }
        }
        DeliveryReceipts.write(receipts, batchFolder: batchFolder, lock: reportLock, log: log, fields: fields)
    }

    /// Stops every lane (a transfer under way stops where it is; resumed at the next start).
    func stop() { workers.stop() }

    /// A receipt changed: into the report, the board, the metrics and the journal.
    private func receipt(_ journal: DeliveryJournal, lane: String) {
        guard let inbox = journal.inbox, let folder = settings.withLock({ $0.folders[inbox] }) else { return }
        let fields: LogFields = ["INBOX": inbox, "BATCH": journal.batch]
        let receipt = DeliveryReceipts.receipt(journal)
        DeliveryReceipts.write([receipt], batchFolder: folder.layout.out + "/" + journal.batch, lock: reportLock, log: log, fields: fields)
        track(journal, inbox: inbox)
        switch journal.phase {
        case .delivered:
            metrics.recordDelivery(inbox, destination: journal.destination, result: "delivered")
            log.notice("delivered to \(journal.destination): \(journal.files.count) file\(journal.files.count == 1 ? "" : "s"), \(journal.bytes) bytes, verified by \(receipt.verified ?? "-")"
                       + (journal.attempts > 1 ? " (attempt \(journal.attempts))" : ""), fields)
            // Its last destination verified it (the batch's life is delivered, said once): with
            // keep.originals "until-delivered" its originals go. One a stop cut off between
            // the two is removed by the sweep at the next start (the journals' rule).
            if came(.delivery(journal.destination), batch: journal.batch, inbox: inbox) == .delivered, folder.holdsOriginals {
                _ = Retention.removeDelivered(journal.batch, layout: folder.layout, inbox: inbox, log: log)
            }
            tell(.delivered, journal, folder: folder.layout.out + "/" + journal.batch, fields: fields)
        case .failed:
            metrics.recordDelivery(inbox, destination: journal.destination, result: "failed")
            let then = journal.final ? "; not tried again until photofinish deliver \(folder.layout.root) \(journal.batch) --to \(journal.destination)"
                : receipt.next.map { "; tried again at \($0)" } ?? ""
            log.warning("delivery to \(journal.destination) failed (attempt \(journal.attempts)): \(journal.error ?? "")\(then)", fields)
            if journal.final { tell(.failed, journal, folder: folder.layout.out + "/" + journal.batch, fields: fields) }
        case .pending, .sending, .awaitingApproval:
            break
        }
    }

    /// The notice of a delivery done or given up, with its batch's counts and link from the report.
    private func tell(_ event: Notice.Event, _ journal: DeliveryJournal, folder: String, fields: LogFields) {
        guard let notifier, let inbox = journal.inbox else { return }
        do throws(ReportError) {
            guard let report = try ReportReader.read(batchFolder: folder) else { return }
            let delivery = Notice.DeliverySummary(name: journal.destination, files: journal.files.count,
                                                  error: event == .failed ? journal.error : nil)
            notifier.notify(Notice(report, event, inbox: inbox, at: Date(), delivery: delivery))
        } catch {
            log.warning("no \(event.rawValue) notice for the delivery to \(journal.destination): \(error)", fields)
        }
    }

    private func outcome(_ outcome: DeliveryRun.Outcome) {
        if case .broken(let why) = outcome { log.error("delivery: \(why)", [:]) }
    }

    /// The board's sentences for the deliveries not done.
    private func track(_ journal: DeliveryJournal, inbox: String) {
        let key = journal.batch + "/" + journal.destination
        let receipt = DeliveryReceipts.receipt(journal)
        let lines = open.withLock { all -> [String] in
            if journal.phase == .delivered {
                all[inbox]?[key] = nil
            } else {
                var line = "\(journal.batch) → \(journal.destination): \(receipt.status)"
                if let error = receipt.error { line += " (\(error))" }
                if let next = receipt.next { line += next == "approval" ? ", waits for approval" : "; tried again at \(next)" }
                all[inbox, default: [:]][key] = line
            }
            return (all[inbox] ?? [:]).sorted { $0.key < $1.key }.map(\.value)
        }
        board.update(inbox) { $0.deliveries = lines.isEmpty ? nil : lines }
    }
}

/// A batch's delivery receipts in its report, for the daemon and `photofinish deliver` alike.
public enum DeliveryReceipts {
    /// The folder of a batch's delivery journals: `.work/deliveries/<batch-id>`.
    public static func folder(_ layout: HotFolderLayout, batch: String) -> String { layout.work + "/" + Recovery.deliveries + "/" + batch }

    /// True when `batch` of the hot folder at `layout` has deliveries and every one is delivered
    /// (what `keep.originals: "until-delivered"` waits for).
    public static func delivered(_ batch: String, layout: HotFolderLayout) -> Bool {
        DeliveryRun.allDelivered(folder: folder(layout, batch: batch))
    }

    /// The files of a batch folder a delivery may send: the outputs the report names, then the
    /// report's own files (`report.json`, `report.html`, the thumbnails it shows).
    /// - Parameter approved: the photos approved (`Report.photoName`): only theirs, and no batch
    ///   output; nil: every photo's and the batch's.
    public static func parts(of report: Report, in batchFolder: String, approved: Set<String>? = nil) -> [DeliveryPlan.Part] {
        var parts: [DeliveryPlan.Part] = []
        for item in report.items where item.status == .ok {
            if let approved, !approved.contains(Report.photoName(item) ?? "") { continue }
            for output in item.outputs ?? [] { parts.append(.init(output.file)) }
        }
        if approved == nil { for output in report.outputs { parts.append(.init(output.file)) } }
        parts.append(.init(ReportReader.fileName.escaped, isReport: true))
        if Files.exists(batchFolder + "/report.html") { parts.append(.init("report.html", isReport: true)) }
        for item in report.items {
            if let thumbnail = item.thumbnail, Files.exists(batchFolder + "/" + thumbnail) { parts.append(.init(thumbnail, isReport: true)) }
        }
        return parts
    }

    /// The folder, in a batch's journals, of what its `when: "approved"` deliveries send that
    /// is made for them (the ZIP and the report's copy of the approved set).
    public static let approvedFolder = "approved"

    /// Plans a batch's delivery to `destination`. A `when: "approved"` one carries the approved
    /// photos alone (all their outputs; no story or colour card, which show the others too) and
    /// the report's files; it waits, planned empty, until the batch is approved — unless its hot
    /// folder asks for no approval (`approve: "none"`): then it carries every photo at once.
    /// - Throws: `SystemError` when a file cannot be read or the journal's folder written.
    public static func plan(_ report: Report, layout: HotFolderLayout, destination: DestinationSettings, inbox: String,
                            approvalAsked: Bool) throws(SystemError) -> DeliveryJournal {
        let batchFolder = layout.out + "/" + report.batch
        let journals = folder(layout, batch: report.batch)
        guard destination.when == .approved, approvalAsked else {
            var journal = try DeliveryPlan.make(batch: report.batch, inbox: inbox, batchFolder: batchFolder,
                                                parts: parts(of: report, in: batchFolder), settings: destination, folder: journals)
            journal.phase = .pending
            return journal
        }
        guard let approval = report.approval else {
            return try DeliveryPlan.make(batch: report.batch, inbox: inbox, batchFolder: batchFolder, parts: [],
                                         settings: destination, folder: journals + "/" + approvedFolder)
        }
        var journal = try DeliveryPlan.make(batch: report.batch, inbox: inbox, batchFolder: batchFolder,
                                            parts: parts(of: report, in: batchFolder, approved: Set(approval.approved)),
                                            settings: destination, folder: journals + "/" + approvedFolder)
        journal.phase = .pending
        return journal
    }

    public static func receipt(_ journal: DeliveryJournal) -> Report.Delivery {
        let status: String = switch journal.phase {
        case .delivered: "delivered"
        case .failed: "failed"
        case .pending, .sending, .awaitingApproval: "pending"
        }
        let next: String? = switch journal.phase {
        case .awaitingApproval: "approval"
        case .failed where !journal.final: journal.nextAttempt.map { BatchID.timestamp(Date(timeIntervalSince1970: $0)) }
        default: nil
        }
        return Report.Delivery(name: journal.destination, to: journal.to, status: status, files: journal.files.count,
                               bytes: journal.bytes, verified: journal.verified?.rawValue,
                               at: journal.at.map { BatchID.timestamp(Date(timeIntervalSince1970: $0)) },
                               attempts: journal.attempts, error: journal.phase == .failed ? journal.error : nil, next: next)
    }

    /// Puts `receipts` into the batch's report (each replacing the one of its destination) and
    /// writes it again: report.html, then report.json, each atomically.
    /// - Parameter lock: held while the report is read and written (two destinations of one
    ///   batch end together).
    public static func write(_ receipts: [Report.Delivery], batchFolder: String, lock: borrowing Mutex<Void>, log: Logger, fields: LogFields) {
        lock.withLock { _ in
            do throws(ReportError) {
                try ReportRewrite.change(batchFolder: batchFolder) { report in
                    var all = report.deliveries ?? []
                    for receipt in receipts {
                        if let i = all.firstIndex(where: { $0.name == receipt.name }) { all[i] = receipt } else { all.append(receipt) }
                    }
                    guard all != report.deliveries ?? [] else { return false }
                    report.deliveries = all
                    return true
                }
            } catch {
                log.error("cannot write the delivery receipt into \(batchFolder)/report.json: \(error)", fields)
            }
        }
    }
}
