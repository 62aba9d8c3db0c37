import Batches
import Configuration
import Foundation
import HotFolders

/// One hot folder as the loop holds it: its config, what watches its `drop/` once it is taken
/// up, and its concerns (docs/architecture.md, The service core), each with its own state and
/// deadline. Confined to the loop's thread.
final class HotFolder {
    /// Its settings, as the config in force says (`inboxes` there).
    var settings: ServiceSetup.Inbox
    /// Its `drop/` watched (and its settle rules), once taken up.
    var watch: DropWatch?
    /// What its file system allows (found at its take-up).
    var system: FolderSystem?
    /// Its take-up left `.work/` unlooked at (no batch folder in it): recovered with the rest
    /// of what comes after READY=1 (`TakeUp.fileLater`).
    var recoverLater = false
    var takingUp: TakingUp
    var claims = Claiming<ClaimedBatch>()
    var housekeeping: Housekeeping
    var recovering: Recovering
    /// In a cluster only (nil otherwise).
    var adopting: Adopting<ServiceLoop.AdoptedBatch>?
    /// Its state as shown (status, STATUS.txt, the console).
    private(set) var state: ServiceStatus.FolderState
    /// What was last put on the board: the watch's generation, and whether the state changed since.
    var shownGeneration = -1
    var stateChanged = true

    init(_ settings: ServiceSetup.Inbox, config: Config, cluster: Bool, now: String) {
        self.settings = settings
        takingUp = TakingUp(rescanInterval: config.rescanInterval)
        housekeeping = Housekeeping(keepsForever: settings.keep.isForever)
        recovering = Recovering(pollInterval: config.pollInterval, rescanInterval: config.rescanInterval)
        adopting = cluster ? Adopting(inbox: settings.name) : nil
        state = .init(kind: .starting, since: now)
    }

    var name: String { settings.name }

    /// The hot folder's next deadline: the earliest any part of it waits for.
    /// - Parameter canClose: whether a batch may close now (its watch's close deadlines count).
    func nextDeadline(canClose: Bool) -> Duration? {
        guard let watch else { return takingUp.nextDeadline }
        return earliest(watch.nextDeadline(canClose: canClose), recovering.nextDeadline, housekeeping.nextDeadline,
                        claims.nextDeadline, adopting?.nextDeadline, takingUp.nextDeadline)
    }

    /// Sets the state shown; `since` moves only when the state or its reason does.
    func setState(_ kind: ServiceStatus.FolderState.Kind, why: String? = nil, fix: [String]? = nil) {
        let since = state.kind == kind && state.why == why ? state.since : BatchID.timestamp(Date())
        let next = ServiceStatus.FolderState(kind: kind, why: why, fix: fix, since: since)
        guard next != state else { return }
        state = next
        stateChanged = true
    }

    /// The state its watch says while it is watched: the share down or its disk full, `drop/`
    /// gone, or watching (below `minFreeSpace`: `lowSpace`, as housekeeping set it).
    func showWatchState() {
        guard let watch else { return }
        if !watch.health.isAvailable {
            // The share does not answer (or its disk is full): one state until it does.
            let words = watch.health.words
            if case .full = watch.health {
                setState(.lowSpace, why: words, fix: ["free space on the server's disk of \(settings.layout.root)"])
            } else {
                setState(.shareUnavailable, why: words, fix: ["mount the share of \(settings.layout.root) again, or bring its server back"])
            }
        } else if housekeeping.lowSpace == nil {
            // drop/ gone (deleted, moved away, unreadable): not watched until it is back.
            if let error = watch.attachError, !watch.isAttached {
                let problem = FolderProblem.refusal(error, layout: settings.layout)
                setState(.refused, why: problem.why + " (drop/ is looked for every 2 s)",
                         fix: error.code == ENOENT ? ["mkdir \(settings.layout.drop) (or photofinish init \(settings.layout.root))"] : problem.fix)
            } else if watch.isAttached {
                setState(.watching)
            }
        }
    }
}
