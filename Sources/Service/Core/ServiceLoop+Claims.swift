import Batches
import Foundation
import HotFolders
import JSON5
import System

/// Claims (one batch ahead of the one being finished, never beyond the open-file limit),
/// recovery at rescans, retention sweeps and the free-space gate: jobs for the work pool,
/// their results handled here.
extension ServiceLoop {
    /// Whether `folder` may close a batch now: no claim of its under way, fewer than
    /// `claimAhead` batches waiting, enough free space, room in the open-file limit for one
    /// more lock (else it is looked at again when a batch starts).
    func canClaim(_ folder: Folder) -> Bool {
        guard !stopping, !folder.claiming, folder.claimedAhead < Self.claimAhead, folder.lowSpace == nil else { return false }
        // In a cluster only the folder's claimer opens a batch there (one batch per drop); a
        // batch it opened still fills and closes should the role be lost meanwhile.
        if folder.open == nil, let gate = claimGate, !gate.mayClaim(folder.inbox.name) { return false }
        // One more lock must fit in the open-file limit (see `OpenFiles`).
        if let limit = openFileLimit, locksWaiting + claimsInFlight >= work.lockRoom(limit: limit, folders: roomUsed) {
            waitingForLocks.insert(folder.inbox.name)
            return false
        }
        return true
    }

    /// Below `minFreeSpace`, the words that say so (`nil`: enough, or no minimum).
    static func spaceCheck(_ inbox: ServiceSetup.Inbox) -> SpaceCheck {
        guard let minimum = inbox.minFreeSpace else { return SpaceCheck() }
        return SpaceCheck(low: FreeSpace.check(inbox.layout.root, minimum: minimum).words(inbox.layout.root))
    }

    /// Claims `names` into the folder's open batch (made with them if there is none), and
    /// closes it when `closes` (its run puts it in order and makes the whole-set outputs).
    func startClaim(_ folder: Folder, _ names: [FileName], closes: Bool) {
        guard let system = folder.system else { return }
        guard !names.isEmpty else {
            if closes || stopping { closeOpen(folder) }
            return
        }
        folder.claiming = true
        folder.claimCloses = closes
        claimsInFlight += 1
        let name = folder.inbox.name, inbox = folder.inbox, open = folder.open
        let limits = workers.limits.withLock { $0 }
        pool.run(name) { [mailbox, freeSpace] in
            let space = freeSpace(inbox)
            if space.low != nil {
                mailbox.post(.claimed(inbox: name, names: names, .lowSpace(space)))
                return
            }
            let result: ClaimResult
            do throws(SystemError) {
                if let open {
                    let (outcome, added) = try Claim.add(names, to: open) { BatchLock.renewLeases() }
                    result = .added(outcome, added: added, first: open.manifest.items.count + 1, runner: nil)
                } else if closes {
                    result = .outcome(try Claim.claim(names, layout: inbox.layout, inbox: name, template: inbox.template,
                                                      order: inbox.order, mover: system.mover) { BatchLock.renewLeases() })
                } else {
                    let outcome = try Claim.claim(names, layout: inbox.layout, inbox: name, template: inbox.template,
                                                  order: inbox.order, mover: system.mover, open: true) { BatchLock.renewLeases() }
                    let runner = outcome.batch.flatMap { batch in
                        (try? batch.manifest.template.template()).map { BatchRunner(template: $0, limits: limits, inbox: name) }
                    }
                    result = .added(outcome, added: outcome.batch?.manifest.items ?? [], first: 1, runner: runner)
                }
            } catch {
                result = .failed(error)
            }
            mailbox.post(.claimed(inbox: name, names: names, result))
        }
    }

    func claimed(_ name: String, _ names: [FileName], _ result: ClaimResult, now: Duration) {
        claimsInFlight -= 1
        guard let folder = folders[name] else { return }
        folder.claiming = false
        let closes = folder.claimCloses
        folder.claimCloses = false
        let fields: LogFields = ["INBOX": name]
        var taken: Set<FileName> = []
        var lookAgain = true
        switch result {
        case .outcome(let outcome):
            for (file, error) in outcome.refused { folder.watch?.refuse(file, because: error, now: now) }
            if let batch = outcome.batch {
                taken = Set(batch.manifest.items.map(\.name))
                log.info("claimed batch of \(batch.manifest.items.count) photo\(batch.manifest.items.count == 1 ? "" : "s")",
                         fields.with("BATCH", batch.id))
                for item in batch.manifest.items where item.error != nil {
                    log.warning("\(item.error!): it is claimed and will fail as io-error unless it can be read by then",
                                fields.with("BATCH", batch.id).with("FILE", item.name.escaped))
                }
                enqueue(batch, folder)
            }
        case .added(let outcome, let added, let first, let runner):
            for (file, error) in outcome.refused { folder.watch?.refuse(file, because: error, now: now) }
            if let batch = outcome.batch {
                taken = Set(added.map(\.name))
                folder.open = batch
                if let runner { workers.early.opened(batch, runner: runner) }
                workers.early.add(batch, items: added, first: first)
                for item in added where item.error != nil {
                    log.warning("\(item.error!): it is claimed and will fail as io-error unless it can be read by then",
                                fields.with("BATCH", batch.id).with("FILE", item.name.escaped))
                }
            }
        case .failed(let error) where ShareHealth.isShareFailure(error, shared: folder.system?.isShared ?? false):
            // The files claimed so far wait in .work/ and go back to drop/ when the share answers.
            folder.watch?.shareFailed(error, now: now)
            lookAgain = false
        case .failed(let error):
            log.error("cannot claim a batch: \(error) (the files stay in drop/ and are tried again at the next full scan, or recovered)", fields)
            lookAgain = false
        case .lowSpace(let check):
            setLowSpace(folder, check.low, now: now)
        }
        folder.watch?.claimEnded(names, taken: taken, lookAgain: lookAgain, early: !closes, now: now)
        // The open batch closes (whatever became of the last photos): its run finishes it.
        if closes || stopping { closeOpen(folder) }
        schedule(folder)
        show(folder)
    }

    /// The folder's open batch closes: queued for its run, which puts it in order, finishes
    /// what was not finished while it was open and makes the whole-set outputs.
    func closeOpen(_ folder: Folder) {
        guard let batch = folder.open else { return }
        folder.open = nil
        workers.early.close(batch)
        let count = batch.manifest.items.count
        log.info("claimed batch of \(count) photo\(count == 1 ? "" : "s") (claimed as they settled)",
                 ["INBOX": folder.inbox.name, "BATCH": batch.id])
        enqueue(batch, folder)
    }

    func enqueue(_ batch: ClaimedBatch, _ folder: Folder) {
        folder.claimedAhead += 1
        locksWaiting += 1
        workers.enqueue(batch, to: folder.inbox.name)
    }

    func startRecovery(_ folder: Folder) {
        guard let system = folder.system else { return }
        let name = folder.inbox.name, layout = folder.inbox.layout, staleAfter = setup.config.staleAfter
        pool.run(name) { [mailbox, log] in
            let batches = TakeUp.recover(layout, system: system, staleAfter: staleAfter, log: log)
            if !batches.isEmpty { mailbox.post(.recovered(inbox: name, batches)) }
        }
    }

    /// The leases of the batches in a shared `.work/` held from other machines, looked at on
    /// the work pool (`Recovery.leases`: a listing and a read of each lock, past the client's
    /// caches): a dead host's batch is taken over within `Lease.timeout` + `pollInterval`.
    func startLeaseLook(_ folder: Folder) {
        folder.leaseLooking = true
        let name = folder.inbox.name, layout = folder.inbox.layout
        pool.run(name) { [mailbox] in
            let look = Recovery.leases(layout: layout)
            let waiting = BatchLock.foreignLeases(in: layout.work).filter(\.isStale).map(\.words)
            mailbox.post(.leases(inbox: name, due: look.isDue, waiting: waiting))
        }
    }

    /// Retention (`keep`): batch folders older than it are removed, never one this folder works
    /// on (queued, running, or redone by one).
    func startSweep(_ folder: Folder) {
        let name = folder.inbox.name, layout = folder.inbox.layout, keep = folder.inbox.keep
        let inUse = workers.inUse(name)
        pool.run(name) { [mailbox, log] in
            let outcome = Retention.sweep(layout: layout, keep: keep, inUse: inUse, inbox: name, log: log)
            mailbox.post(.swept(inbox: name, deferred: outcome.deferred))
        }
    }

    /// Below `minFreeSpace` (`low`: the words) nothing new is claimed; looked at again every
    /// `spaceRecheck` until there is room, then claims resume.
    func setLowSpace(_ folder: Folder, _ low: String?, now: Duration) {
        guard folder.watch != nil else { return }
        if let low {
            if folder.lowSpace == nil { log.warning("\(low)", ["INBOX": folder.inbox.name]) }
            folder.lowSpace = low
            setState(folder, ServiceStatus.FolderState.lowSpace, why: low,
                     fix: ["free space on the disk of \(folder.inbox.layout.root), or lower minFreeSpace"])
            folder.nextSpaceCheck = now + Self.spaceRecheck
        } else if folder.lowSpace != nil {
            log.notice("there is room again: claims resume", ["INBOX": folder.inbox.name])
            folder.lowSpace = nil
            folder.nextSpaceCheck = nil
            setState(folder, ServiceStatus.FolderState.watching)
        }
        schedule(folder)
        show(folder)
    }
}
