import Batches
import Cluster
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
        if folder.open == nil, let roles, !roles.mayClaim(folder.inbox.name) { return false }
        // An open batch held in the database is written only while that hold is certain (else
        // another host may be adopting it); one due to close waits for its close.
        if let open = folder.open, let roles, folder.closeDue || !roles.mayWrite(open.key) { return false }
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
        let roles = roles, locks = locks
        pool.run(name) { [mailbox, freeSpace] in
            let space = freeSpace(inbox)
            if space.low != nil {
                mailbox.post(.claimed(inbox: name, names: names, .lowSpace(space)))
                return
            }
            let result: ClaimResult
            do throws(SystemError) {
                if let open {
                    let key = open.key
                    let (outcome, added) = try Claim.add(names, to: open, mayWrite: { roles?.mayWrite(key) ?? true }) {
                        locks.renewLeases()
                    }
                    result = .added(outcome, added: added, first: open.manifest.items.count + 1, runner: nil)
                } else if closes {
                    result = .outcome(try Claim.claim(names, layout: inbox.layout, inbox: name, template: inbox.template,
                                                      order: inbox.order, locks: locks, mover: system.mover) { locks.renewLeases() })
                } else {
                    let outcome = try Claim.claim(names, layout: inbox.layout, inbox: name, template: inbox.template,
                                                  order: inbox.order, locks: locks, mover: system.mover, open: true) {
                        locks.renewLeases()
                    }
                    let runner = outcome.batch.flatMap { batch in
                        (try? batch.manifest.template.template()).map { BatchRunner(template: $0, limits: limits, inbox: name) }
                    }
                    // In a cluster: recorded with this host's claimer session before anything
                    // else (a kill now leaves the database's word for the next claimer).
                    if let batch = outcome.batch, runner != nil { roles?.holdNow(batch.key) }
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
                if let runner {
                    workers.early.opened(batch, runner: runner)
                    // In a cluster: held with this host's claimer session (adopted at once should it end).
                    roles?.hold(batch.key)
                }
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
        // Held in the database: closed on the share now, while the hold is certain (a run that
        // waits for a slot would close it later, when another host may have adopted it), then
        // its record goes. Not certain now: tried again shortly (photos are not added meanwhile).
        let held = roles?.isHeld(batch.key) ?? false
        if held, let roles {
            guard roles.mayWrite(batch.key) else {
                folder.closeDue = true
                folder.closeCheck = now() + Self.closeRetry
                schedule(folder)
                return
            }
        }
        folder.closeDue = false
        folder.closeCheck = nil
        folder.open = nil
        workers.early.close(batch)
        let count = batch.manifest.items.count
        log.info("claimed batch of \(count) photo\(count == 1 ? "" : "s") (claimed as they settled)",
                 ["INBOX": folder.inbox.name, "BATCH": batch.id])
        guard held, let roles else {
            enqueue(batch, folder)
            return
        }
        folder.claiming = true
        claimsInFlight += 1
        let name = folder.inbox.name
        pool.run(name) { [mailbox, locks] in
            var closed: ClaimedBatch?
            if roles.mayWrite(batch.key), let template = try? batch.manifest.template.template() {
                closed = try? Claim.close(batch, order: template.order) { locks.renewLeases() }
            }
            mailbox.post(.closedOnShare(inbox: name, batch, closed: closed))
        }
    }

    /// How soon an open batch due to close whose hold was not certain is tried again.
    static let closeRetry = Duration.milliseconds(250)

    // MARK: - Open batches of a cluster's dead claimer

    /// What the claimer roles found: a dead claimer's open batch to adopt, or a batch of this
    /// host's that another adopted while its session was gone.
    func holding(_ event: ClaimerRoles.Holding, now: Duration) {
        switch event {
        case .adopt(let key, let from, let expected):
            guard let folder = folders[key.inbox], folder.watch != nil, folder.open == nil, let system = folder.system,
                  !stopping else {
                roles?.adoptionEnded(key, adopted: false)
                return
            }
            let layout = folder.inbox.layout, limits = workers.limits.withLock { $0 }
            // Counted as a claim (a stop waits for it); the folder claims nothing meanwhile (its
            // role says so until `adoptionEnded`).
            claimsInFlight += 1
            pool.run(key.inbox) { [mailbox, locks] in
                let path = layout.workFolder(key.batch)
                let result: Result<AdoptedBatch, AdoptionRefused>
                if (try? Manifest.read(fromFolder: path))?.open != true {
                    result = .failure(AdoptionRefused(why: "it is closed or gone"))
                } else if let lock = locks.takeOver(path, from: expected) {
                    // Read again under its lock: its holder can no longer write (the database says so).
                    if let manifest = try? Manifest.read(fromFolder: path), manifest.open == true {
                        let runner = (try? manifest.template.template()).map { BatchRunner(template: $0, limits: limits, inbox: key.inbox) }
                        result = .success(AdoptedBatch(batch: ClaimedBatch(layout: layout, manifest: manifest, lock: lock, mover: system.mover),
                                                       runner: runner))
                    } else {
                        result = .failure(AdoptionRefused(why: "it was closed meanwhile"))
                    }
                } else {
                    result = .failure(AdoptionRefused(why: "its lock on the share is held by another process now"))
                }
                mailbox.post(.adopted(key, from: from, result))
            }
        case .deadHolder(let key, let from, let lock):
            guard let folder = folders[key.inbox], folder.deadHeld[key.batch] == nil else { return }
            folder.deadHeld[key.batch] = DeadHeld(from: from, lock: lock)
            folder.nextDeadLook = min(folder.nextDeadLook ?? now, now)
            schedule(folder)
        case .lost(let key, let by):
            guard let folder = folders[key.inbox], let open = folder.open, open.key == key else { return }
            folder.open = nil
            folder.closeDue = false
            folder.closeCheck = nil
            workers.early.forget(open)
            folder.watch?.abandonOpen()
            log.warning("batch \(key.batch) was adopted by \(by.map { "host \($0)" } ?? "another host") while this host's database session was gone: it is left to it",
                        ["INBOX": key.inbox, "BATCH": key.batch])
            schedule(folder)
            show(folder)
        }
    }

    /// How often the locks of dead holders' closed batches are looked at.
    static let deadLookEvery = Duration.seconds(2)

    /// Looks again (past the client's caches) at the lock of each closed batch of a dead holder
    /// not being looked at: one unrenewed for `ClaimerRoles.deadLease` — the holder alive and cut
    /// off from the database still renews it every 10 s — is taken over if it still says the
    /// dead holder's words, and queued to be finished (as recovery does after the full lease).
    func lookAtDeadHeld(_ folder: Folder) {
        guard let system = folder.system, folder.watch?.health.isAvailable == true else { return }
        let layout = folder.inbox.layout, name = folder.inbox.name
        for (batch, dead) in folder.deadHeld where !dead.looking {
            folder.deadHeld[batch]?.looking = true
            claimsInFlight += 1
            let key = ClaimerRoles.BatchKey(inbox: name, batch: batch)
            pool.run(name) { [mailbox, locks] in
                let path = layout.workFolder(batch)
                let result: Result<ClaimedBatch?, AdoptionRefused>
                if !Files.exists(path) {
                    result = .failure(AdoptionRefused(why: "it is gone"))
                } else if let lease = locks.lookAgain(path, leaseTimeout: ClaimerRoles.deadLease), lease.expires > .now {
                    result = .success(nil)
                } else if let lock = locks.takeOver(path, from: dead.lock) {
                    if let manifest = try? Manifest.read(fromFolder: path) {
                        result = .success(ClaimedBatch(layout: layout, manifest: manifest, lock: lock, mover: system.mover))
                    } else {
                        lock.release()
                        result = .failure(AdoptionRefused(why: "its manifest cannot be read"))
                    }
                } else {
                    result = .failure(AdoptionRefused(why: "its lock on the share is another's now"))
                }
                mailbox.post(.deadLook(key, from: dead.from, result))
            }
        }
    }

    func deadLooked(_ key: ClaimerRoles.BatchKey, from: String, _ result: Result<ClaimedBatch?, AdoptionRefused>, now: Duration) {
        claimsInFlight -= 1
        guard let folder = folders[key.inbox] else { return }
        let fields: LogFields = ["INBOX": key.inbox, "BATCH": key.batch]
        switch result {
        case .success(nil):
            folder.deadHeld[key.batch]?.looking = false
        case .success(let batch?):
            let lock = folder.deadHeld.removeValue(forKey: key.batch)?.lock
            if let lock { roles?.drop(key, lock: lock) }
            log.notice("taking over batch \(key.batch) (\(batch.manifest.items.count) photos) from \(from): its database session ended and its lease went unrenewed for \(Self.words(ClaimerRoles.deadLease))",
                       fields)
            enqueue(batch, folder)
        case .failure(let refused):
            let lock = folder.deadHeld.removeValue(forKey: key.batch)?.lock
            if let lock { roles?.drop(key, lock: lock) }
            log.info("batch \(key.batch) of \(from) is not taken over early: \(refused.why)", fields)
        }
        schedule(folder)
        show(folder)
    }

    /// The adoption's look at the share ended: the batch is this folder's open batch now (the
    /// photos dropped from now join it; it closes by the folder's rules), or it stays where it is.
    func adopted(_ key: ClaimerRoles.BatchKey, from: String, _ result: Result<AdoptedBatch, AdoptionRefused>, now: Duration) {
        claimsInFlight -= 1
        let fields: LogFields = ["INBOX": key.inbox, "BATCH": key.batch]
        guard let folder = folders[key.inbox] else {
            roles?.adoptionEnded(key, adopted: false)
            return
        }
        switch result {
        case .success(let adopted) where folder.open == nil && folder.watch != nil:
            let batch = adopted.batch
            folder.open = batch
            roles?.adoptionEnded(key, adopted: true)
            if let runner = adopted.runner { workers.early.opened(batch, runner: runner) }
            folder.watch?.adopt(batch.manifest.items.count, now: now)
            log.notice("adopted open batch \(key.batch) (\(batch.manifest.items.count) photos) of host \(from), whose database session ended: the photos dropped from now join it",
                       fields)
            // Stopping meanwhile: it closes into the queue, left in .work/ for the next start.
            if stopping { closeOpen(folder) }
        case .success(let adopted):
            // The folder opened a batch of its own meanwhile (it should not: the roles keep it from claiming).
            roles?.adoptionEnded(key, adopted: true)
            enqueue(adopted.batch, folder)
        case .failure(let refused):
            roles?.adoptionEnded(key, adopted: false)
            log.info("did not adopt batch \(key.batch) of host \(from): \(refused.why); it is taken over as without a cluster", fields)
        }
        schedule(folder)
        show(folder)
    }

    func enqueue(_ batch: ClaimedBatch, _ folder: Folder) {
        folder.claimedAhead += 1
        locksWaiting += 1
        workers.enqueue(batch, to: folder.inbox.name)
    }

    func startRecovery(_ folder: Folder) {
        guard let system = folder.system else { return }
        let name = folder.inbox.name, layout = folder.inbox.layout, staleAfter = setup.config.staleAfter
        pool.run(name) { [mailbox, log, locks] in
            let batches = TakeUp.recover(layout, system: system, staleAfter: staleAfter, locks: locks, log: log)
            if !batches.isEmpty { mailbox.post(.recovered(inbox: name, batches)) }
        }
    }

    /// The leases of the batches in a shared `.work/` held from other machines, looked at on
    /// the work pool (`Recovery.leases`: a listing and a read of each lock, past the client's
    /// caches): a dead host's batch is taken over within `Lease.timeout` + `pollInterval`.
    func startLeaseLook(_ folder: Folder) {
        folder.leaseLooking = true
        let name = folder.inbox.name, layout = folder.inbox.layout
        pool.run(name) { [mailbox, locks] in
            let look = Recovery.leases(layout: layout, locks: locks)
            let waiting = locks.foreignLeases(in: layout.work).filter(\.isStale).map(\.words)
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
            setState(folder, .lowSpace, why: low,
                     fix: ["free space on the disk of \(folder.inbox.layout.root), or lower minFreeSpace"])
            folder.nextSpaceCheck = now + Self.spaceRecheck
        } else if folder.lowSpace != nil {
            log.notice("there is room again: claims resume", ["INBOX": folder.inbox.name])
            folder.lowSpace = nil
            folder.nextSpaceCheck = nil
            setState(folder, .watching)
        }
        schedule(folder)
        show(folder)
    }
}

extension ClaimedBatch {
    /// The batch as the cluster's claimer roles name it.
    var key: ClaimerRoles.BatchKey { ClaimerRoles.BatchKey(inbox: manifest.inbox, batch: id) }
}
