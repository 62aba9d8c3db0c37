import Batches
import HotFolders

/// A batch's life from its run on, as the service announces it (docs/architecture.md, A batch's
/// life; `BatchStage`): published, it is *finished* — announced once, for everyone: its line in
/// the journal, its result on the status (STATUS.txt, `photofinish status`, the console), its
/// metrics, its hooks (`onBatch`). A finished batch that still awaits something is *held* until
/// it comes, then *delivered*: the approval and delivery work add what is awaited (`Awaited`)
/// and what each stage tells; hooks, metrics and status read the stage from here.
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
    private(set) var stage: BatchStage = .closed
    /// What it waits for once finished (none yet: no approval or delivery is configured).
    private(set) var awaiting: Set<Awaited>

    init(id: String, inbox: String, folder: String, awaiting: Set<Awaited> = []) {
        self.id = id
        self.inbox = inbox
        self.folder = folder
        self.awaiting = awaiting
    }

    enum Event: Sendable {
        /// Its folder is published with this report (announced once: `BatchWork` calls it
        /// once in the batch's life).
        case published(Report)
    }

    enum Effect: Sendable {
        case log(LogLine)
        /// The status shows it as the folder's last batch.
        case showLast(ServiceStatus.Last)
        /// Its photos and outputs counted (`Metrics.record`; its outputs' sizes read in `folder`).
        case count(Report, folder: String)
        /// Its deliveries start (`deliver`: `BatchDeliveries`, which keeps a delivery that
        /// waits for the batch's approval until it comes).
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
        }
    }
}
