import Batches
import HotFolders

/// A batch's life from its run on, as the service announces it (docs/architecture.md, A batch's
/// life; `BatchStage`): published, it is *finished* — announced once, for everyone: its line in
/// the journal, its result on the status (STATUS.txt, `photofinish status`, the console), its
/// metrics, its hooks (`onBatch`). A finished batch whose hot folder delivers it is *held* while
/// it awaits its deliveries (and the approval a `when: "approved"` one waits for), then
/// *delivered* once each destination has verified it — said in one line. `FolderWorkers` drives
/// it up to the announcement, `BatchDeliveries` from there.
struct BatchLife: Sendable {
    /// What a finished batch may wait for before it is done.
    enum Awaited: Hashable, Sendable {
        /// Its approval (owner or client).
        case approval
        /// A delivery, by destination name.
        case delivery(String)
    }

    let id: String
    /// Its hot folder's name.
    let inbox: String
    /// `out/<id>` of its hot folder.
    let folder: String
    private(set) var stage: BatchStage
    /// What it waits for once finished.
    private(set) var awaiting: Set<Awaited>
    /// The destinations it was delivered to, in the order they verified it.
    private(set) var deliveredTo: [String] = []

    /// - Parameters:
    ///   - stage: `.closed` for a batch in its run; `.finished` for one found finished (a
    ///     restart's deliveries resumed).
    ///   - awaiting: what it awaits once finished.
    ///   - deliveredTo: the destinations that verified it already (before a restart).
    init(id: String, inbox: String, folder: String, stage: BatchStage = .closed, awaiting: Set<Awaited> = [],
         deliveredTo: [String] = []) {
        self.id = id
        self.inbox = inbox
        self.folder = folder
        self.stage = stage
        self.awaiting = awaiting
        self.deliveredTo = deliveredTo
    }

    enum Event: Sendable {
        /// Its folder is published with this report (announced once: `BatchWork` calls it
        /// once in the batch's life).
        case published(Report)
        /// Its deliveries are planned: what it awaits now (a delivery a destination, its approval
        /// when one of them waits for it).
        case awaits(Set<Awaited>)
        /// Something it awaited came: its approval, or a delivery verified.
        case came(Awaited)
    }

    enum Effect: Sendable {
        case log(LogLine)
        /// The status shows it as the folder's last batch.
        case showLast(ServiceStatus.Last)
        /// Its photos and outputs counted (`Metrics.record`; its outputs' sizes read in `folder`).
        case count(Report, folder: String)
        /// Its deliveries start (`deliver`: `BatchDeliveries`, which keeps a delivery that
        /// waits for the batch's approval until it comes, and the batch's life from here).
        case deliver(Report)
        /// Its hooks run (`onBatch`).
        case runHooks(FinishedBatch)
    }

    mutating func handle(_ event: Event) -> [Effect] {
        switch event {
        case .published(let report):
            guard stage == .closed || stage == .open else { return [] }  // announced once
            stage = awaiting.isEmpty ? .finished : .held
            let c = report.counts
            let line = "batch \(report.status.rawValue): \(c.ok) of \(c.items) finished"
                + (c.failed > 0 ? ", \(c.failed) failed" : "") + " → out/\(id)/"
            var effects: [Effect] = [.log(c.failed > 0 ? .warning(line, batch: id) : .notice(line, batch: id))]
            for item in report.items where item.status == .failed {
                effects.append(.log(.warning("\(item.error.map { "\($0.code): \($0.message)" } ?? "failed")", batch: id, file: item.source)))
            }
            effects.append(.showLast(.init(batch: id, status: report.status.rawValue, items: c.items, ok: c.ok, failed: c.failed,
                                           finished: report.finished)))
            effects.append(.count(report, folder: folder))
            effects.append(.deliver(report))
            effects.append(.runHooks(FinishedBatch(inbox: inbox, batch: id, status: report.status.rawValue,
                                                   folder: folder, items: c.items, ok: c.ok, failed: c.failed)))
            return effects
        case .awaits(let more):
            guard stage == .finished || stage == .held else { return [] }
            awaiting.formUnion(more)
            if !awaiting.isEmpty { stage = .held }
            return []
        case .came(let awaited):
            guard stage == .held, awaiting.remove(awaited) != nil else { return [] }  // said once
            if case .delivery(let name) = awaited { deliveredTo.append(name) }
            guard awaiting.isEmpty else { return [] }
            stage = .delivered
            guard !deliveredTo.isEmpty else { return [] }
            return [.log(.notice("batch delivered: every destination verified it (\(deliveredTo.joined(separator: ", ")))", batch: id))]
        }
    }
}
