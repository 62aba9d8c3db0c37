import Batches
import Cluster
import Foundation
import HotFolders
import System

/// Carrying out what a hot folder's concerns decided: the slow work queued on the hot folder's strand
/// of the work pool (its answer comes back as a `Message`), batches queued for the hot folder's
/// worker, states shown, lines logged.
extension ServiceLoop {
    // MARK: - What the concerns are told

    /// Whether `hot folder` may claim (open, add to or close a batch) now (`Claiming.mayClaim`), and
    /// one more lock fits in the open-file limit (else it is looked at again when a batch
    /// starts: `OpenFiles`).
    func canClaim(_ hotFolder: HotFolder) -> Bool {
        let name = hotFolder.name
        let open = hotFolder.claims.open
        let roles = self.roles.map { roles in
            Claiming<ClaimedBatch>.Roles(mayClaim: open != nil || roles.mayClaim(name),
                                         mayWriteOpen: open.map { roles.mayWrite($0.key) } ?? true)
        } ?? .alone
        guard hotFolder.claims.mayClaim(stopping: stopping, lowSpace: hotFolder.housekeeping.lowSpace != nil, roles: roles) else { return false }
        if let limit = openFileLimit, locksWaiting + claimsInFlight >= work.lockRoom(limit: limit, folders: roomUsed) {
            waitingForLocks.insert(name)
            return false
        }
        return true
    }

    /// What the cluster's database says of `batch` now (outside a cluster: not held).
    func hold(of batch: ClaimedBatch?) -> Claiming<ClaimedBatch>.Hold {
        guard let roles, let batch else { return .alone }
        let held = roles.isHeld(batch.key)
        return .init(held: held, writable: !held || roles.mayWrite(batch.key))
    }

    /// Why `hot folder` cannot have one of the open-file places for hot folders, should it need one
    /// (nil: there is room).
    func noRoom(for hotFolder: HotFolder) -> FolderProblem? {
        guard !hotFolder.takingUp.hasRoom, roomUsed >= room, let budget else { return nil }
        return budget.problem(systemd: FolderProblem.underSystemd)
    }

    /// Below `minFreeSpace` (`low`: the words) nothing new is claimed; looked at again every
    /// `spaceRecheck` until there is room, then claims resume.
    func setLowSpace(_ hotFolder: HotFolder, _ low: String?, now: Duration) {
        guard hotFolder.watch != nil else { return }
        carryOut(hotFolder.housekeeping.handle(.space(low: low), now: now), hotFolder)
        schedule(hotFolder)
        show(hotFolder)
    }

    func log(_ line: LogLine, _ hotFolder: HotFolder) {
        log.log(line.priority, line.text, line.fields(inbox: hotFolder.name))
    }

    // MARK: - Taking up

    /// Hands the take-ups held while a setup was applied to the pool, up to
    /// `takeUpsTogether` a job and a message: at 10,000 hot folders (a restart's take-up is
    /// two stats) the four threads posting one message each contended for the mailbox's lock,
    /// spinning (a tenth of a restart's CPU, perf). A folder has one take-up in flight at a
    /// time (`TakingUp`), so no strand of its own is needed for it.
    func takeUpTogether() {
        guard let held = heldTakeUps else { return }
        heldTakeUps = nil
        let staleAfter = setup.config.staleAfter, watchedOnly = !readySent
        for (n, start) in stride(from: 0, to: held.count, by: Self.takeUpsTogether).enumerated() {
            let share = Array(held[start..<min(start + Self.takeUpsTogether, held.count)])
            pool.run(" take-up \(n)") { [mailbox, probes, log, locks] in
                mailbox.post(.takenUpTogether(share.map {
                    ($0.name, $0.attempt, TakeUp.run($0.inbox, staleAfter: staleAfter, probes: probes, watchedOnly: watchedOnly,
                                                     locks: locks, log: log))
                }))
            }
        }
    }

    /// Take-ups a job and a message, at most (`takeUpTogether`).
    static let takeUpsTogether = 64

    func carryOut(_ effects: [TakingUp.Effect], _ hotFolder: HotFolder) {
        let name = hotFolder.name
        for effect in effects {
            switch effect {
            case .takeRoom:
                roomUsed += 1
            case .giveRoomBack:
                roomUsed -= 1
            case .takeUp(let attempt):
                takeUps += 1
                if heldTakeUps != nil {
                    heldTakeUps?.append((name, attempt, hotFolder.settings))
                    continue
                }
                let inbox = hotFolder.settings, staleAfter = setup.config.staleAfter, watchedOnly = !readySent
                pool.run(name) { [mailbox, probes, log, locks] in
                    mailbox.post(.takenUp(inbox: name, attempt: attempt,
                                          TakeUp.run(inbox, staleAfter: staleAfter, probes: probes, watchedOnly: watchedOnly,
                                                     locks: locks, log: log)))
                }
            case .watch:
                break  // `takenUp` sets the watch up: it has the take-up's answer
            case .refuse(let problem, let logged):
                if logged {
                    let every = words(setup.config.rescanInterval)
                    log.error("\(problem.why): this hot folder is not watched; it is tried again at every reload and every \(every)"
                              + (problem.fix.isEmpty ? "" : " (to fix it: \(problem.fix.joined(separator: "; then ")))"), ["INBOX": name])
                }
                hotFolder.setState(.refused, why: problem.why, fix: problem.fix)
                publisher.staged.withLock { _ = $0.remove(name) }
                // What waits in its drop/ meanwhile (STATUS.txt says it), counted again at each
                // retry; the board may not show it refused yet (`show` follows), but watched it is
                // counted no more.
                let drop = hotFolder.settings.layout.drop
                pool.run(name) { [board] in
                    let waiting = Self.waiting(in: drop)
                    board.update(name) { $0.waiting = $0.state?.kind == .watching ? nil : waiting }
                }
            case .makeProof:
                proofs.request(.init(inbox: name, root: hotFolder.settings.layout.root, template: hotFolder.settings.template,
                                     maxPixels: setup.config.maxPixels))
            }
        }
    }

    /// How many files wait in a `drop/` nothing takes from (hidden ones aside: never taken);
    /// nil when it cannot be listed (a folder refused for that is told why already).
    static func waiting(in drop: String) -> Int? {
        guard let names = try? Directory(drop).names() else { return nil }
        return names.count { $0.bytes.first != UInt8(ascii: ".") }
    }

    // MARK: - Claiming

    func carryOut(_ effects: [Claiming<ClaimedBatch>.Effect], _ hotFolder: HotFolder) {
        for effect in effects {
            switch effect {
            case .claim(let names, let open, let closes):
                startClaim(hotFolder, names, into: open, closes: closes)
            case .closed(let batch):
                workers.showOpen(inbox: hotFolder.name, nil)
                workers.early.close(batch)
            case .closeOnShare(let batch):
                closeOnShare(batch, hotFolder)
            case .queue(let batch):
                locksWaiting += 1
                workers.enqueue(batch, to: hotFolder.name)
            case .forget(let batch):
                workers.showOpen(inbox: hotFolder.name, nil)
                workers.early.forget(batch)
                hotFolder.watch?.abandonOpen()
            case .log(let line):
                log(line, hotFolder)
            }
        }
    }

    /// Claims `names` into the hot folder's open batch (made with them if there is none), and
    /// closes it when `closes` (its run puts it in order and makes the whole-set outputs).
    func startClaim(_ hotFolder: HotFolder, _ names: [FileName], into open: ClaimedBatch?, closes: Bool) {
        guard let system = hotFolder.system else { return }
        claimsInFlight += 1
        let name = hotFolder.name, inbox = hotFolder.settings
        let limits = workers.limits.withLock { $0 }
        let roles = roles, locks = locks
        pool.run(name) { [mailbox, freeSpace, log] in
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
                    let runner = outcome.batch.flatMap { batch in Self.runner(for: batch.manifest, limits: limits, log: log) }
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

    /// The runner of an open batch's photos (finished as they come), from the template it was
    /// claimed with; nil, said in the log, when that template no longer validates (its photos
    /// are then finished at its close, whose run says why if it still does not).
    static func runner(for manifest: Manifest, limits: BatchLimits, log: Logger) -> BatchRunner? {
        do {
            return BatchRunner(template: try manifest.template.template(), limits: limits, inbox: manifest.inbox)
        } catch {
            log.warning("the template of open batch \(manifest.batch) does not validate (\(error)): its photos are finished when it closes",
                        ["INBOX": manifest.inbox, "BATCH": manifest.batch])
            return nil
        }
    }

    /// Closes an open batch held in the database on the share, while that hold is certain; its
    /// record goes then (`closedOnShare`).
    func closeOnShare(_ batch: ClaimedBatch, _ hotFolder: HotFolder) {
        guard let roles else { return }
        claimsInFlight += 1
        let name = hotFolder.name
        pool.run(name) { [mailbox, locks, log] in
            var closed: ClaimedBatch?
            if roles.mayWrite(batch.key) {
                do {
                    let template = try batch.manifest.template.template()
                    closed = try Claim.close(batch, order: template.order) { locks.renewLeases() }
                } catch {
                    log.warning("cannot close open batch \(batch.id) on the share now (\(error)): its run closes it",
                                ["INBOX": name, "BATCH": batch.id])
                }
            }
            mailbox.post(.closedOnShare(inbox: name, batch, closed: closed))
        }
    }

    // MARK: - Housekeeping

    func carryOut(_ effects: [Housekeeping.Effect], _ hotFolder: HotFolder) {
        let name = hotFolder.name
        for effect in effects {
            switch effect {
            case .sweep:
                let layout = hotFolder.settings.layout, keep = hotFolder.settings.keep
                let inUse = workers.inUse(name)
                pool.run(name) { [mailbox, log, deliveries = workers.deliveries] in
                    let outcome = Retention.sweep(layout: layout, keep: keep, inUse: inUse, inbox: name, log: log,
                                                  delivered: { DeliveryReceipts.delivered($0, layout: layout) })
                    for removal in outcome.removed where removal.kind == .out { deliveries.removed(removal.batch, inbox: name) }
                    mailbox.post(.swept(inbox: name, deferred: outcome.deferred))
                }
            case .checkSpace:
                let inbox = hotFolder.settings
                pool.run(name) { [mailbox, freeSpace] in mailbox.post(.space(inbox: name, freeSpace(inbox))) }
            case .lowSpace(let low, let logged):
                if logged { log.warning("\(low)", ["INBOX": name]) }
                hotFolder.setState(.lowSpace, why: low, fix: ["free space on the disk of \(hotFolder.settings.layout.root), or lower minFreeSpace"])
            case .roomAgain:
                log.notice("there is room again: claims resume", ["INBOX": name])
                hotFolder.setState(.watching)
            }
        }
    }

    /// Below `minFreeSpace`, the words that say so (`nil`: enough, or no minimum).
    static func spaceCheck(_ inbox: ServiceSetup.Inbox) -> SpaceCheck {
        guard let minimum = inbox.minFreeSpace else { return SpaceCheck() }
        return SpaceCheck(low: FreeSpace.check(inbox.layout.root, minimum: minimum).words(inbox.layout.root))
    }

    // MARK: - Leases and recovery

    func carryOut(_ effects: [Recovering.Effect], _ hotFolder: HotFolder) {
        let name = hotFolder.name
        for effect in effects {
            switch effect {
            case .recover:
                guard let system = hotFolder.system else { continue }
                let layout = hotFolder.settings.layout, staleAfter = setup.config.staleAfter
                pool.run(name) { [mailbox, log, locks] in
                    let batches = TakeUp.recover(layout, system: system, staleAfter: staleAfter, locks: locks, log: log)
                    if !batches.isEmpty { mailbox.post(.recovered(inbox: name, batches)) }
                }
            case .lookAtLeases:
                // A listing of .work/ and a read of each lock, past the client's caches
                // (`Recovery.leases`): a dead host's batch is taken over within
                // `Lease.timeout` + `pollInterval`.
                let layout = hotFolder.settings.layout
                pool.run(name) { [mailbox, locks] in
                    let look = Recovery.leases(layout: layout, locks: locks)
                    // A batch published meanwhile waits for no one (its host may have stopped
                    // before its work hot folder was removed: recovery removes it).
                    let waiting = locks.foreignLeases(in: layout.work).filter { lease in
                        lease.isStale && !Files.exists(layout.out + "/" + (FilePath(lease.folder).lastComponent?.escaped ?? ""))
                    }.map(\.words)
                    mailbox.post(.leases(inbox: name, due: look.isDue, waiting: waiting))
                }
            case .showTakeovers(let waiting):
                board.update(name) { $0.takeovers = waiting.isEmpty ? nil : waiting }
            }
        }
    }

    // MARK: - Adopting (a cluster's dead hosts' batches)

    func carryOut(_ effects: [Adopting<AdoptedBatch>.Effect], _ hotFolder: HotFolder) {
        for effect in effects {
            switch effect {
            case .lookToAdopt(let key, let from, let expected):
                lookToAdopt(key, from: from, expected: expected, hotFolder)
            case .adoptionEnded(let key, let adopted):
                roles?.adoptionEnded(key, adopted: adopted)
            case .open(let batch):
                if let runner = batch.runner { workers.early.opened(batch.batch, runner: runner) }
                hotFolder.watch?.adopt(batch.batch.photoCount, now: now())
                carryOut(hotFolder.claims.handle(.adopted(batch.batch, stopping: stopping, hold: hold(of: batch.batch)), now: now()),
                         hotFolder)
                if hotFolder.claims.open?.id == batch.batch.id { workers.showOpen(inbox: hotFolder.name, batch.batch) }
            case .queue(let batch):
                carryOut(hotFolder.claims.handle(.queue([batch.batch]), now: now()), hotFolder)
            case .lookAtDead(let key, let from, let lock):
                lookAtDead(key, from: from, lock: lock, hotFolder)
            case .dropRecord(let key, let lock):
                roles?.drop(key, lock: lock)
            case .log(let line):
                log(line, hotFolder)
            }
        }
    }

    /// Looks at a dead claimer's open batch on the share: still open, its lock taken (the
    /// database says its holder can no longer write), and read again under it.
    func lookToAdopt(_ key: ClaimerRoles.BatchKey, from: String, expected: String, _ hotFolder: HotFolder) {
        guard let system = hotFolder.system else { return }
        let layout = hotFolder.settings.layout, limits = workers.limits.withLock { $0 }
        // Counted as a claim (a stop waits for it); the hot folder claims nothing meanwhile (its
        // role says so until `adoptionEnded`).
        claimsInFlight += 1
        pool.run(key.inbox) { [mailbox, locks, log] in
            let path = layout.workFolder(key.batch)
            let result: Result<AdoptedBatch, AdoptionRefused>
            switch Self.openManifest(path) {
            case .failure(let refused):
                result = .failure(refused)
            case .success:
                if let lock = locks.takeOver(path, from: expected) {
                    // Read again under its lock: its holder can no longer write (the database says so).
                    switch Self.openManifest(path) {
                    case .success(let manifest):
                        let batch = ClaimedBatch(layout: layout, manifest: manifest, lock: lock, mover: system.mover)
                        result = .success(AdoptedBatch(batch: batch, runner: Self.runner(for: manifest, limits: limits, log: log)))
                    case .failure(let refused):
                        result = .failure(AdoptionRefused(why: refused.why + " (read under its lock)"))
                    }
                } else {
                    result = .failure(AdoptionRefused(why: "its lock on the share is held by another process now"))
                }
            }
            mailbox.post(.adopted(key, from: from, result))
        }
    }

    /// The manifest of the batch hot folder at `path` when it is an open batch's; else why it is
    /// not to be adopted.
    static func openManifest(_ path: String) -> Result<Manifest, AdoptionRefused> {
        do throws(BatchError) {
            guard let manifest = try Manifest.read(fromFolder: path), manifest.open == true else {
                return .failure(AdoptionRefused(why: "it is closed or gone"))
            }
            return .success(manifest)
        } catch {
            return .failure(AdoptionRefused(why: "its manifest cannot be read (\(error))"))
        }
    }

    /// Looks again (past the client's caches) at the lock of a dead holder's closed batch: one
    /// unrenewed for `ClaimerRoles.deadLease` is taken over if it still says the dead holder's
    /// words, and queued to be finished (as recovery does after the full lease).
    func lookAtDead(_ key: ClaimerRoles.BatchKey, from: String, lock expected: String, _ hotFolder: HotFolder) {
        guard let system = hotFolder.system else { return }
        let layout = hotFolder.settings.layout
        claimsInFlight += 1
        pool.run(hotFolder.name) { [mailbox, locks] in
            let path = layout.workFolder(key.batch)
            let result: Adopting<AdoptedBatch>.DeadLook
            if !Files.exists(path) {
                result = .refused(why: "it is gone")
            } else if let lease = locks.lookAgain(path, leaseTimeout: ClaimerRoles.deadLease), lease.expires > .now {
                result = .notYet
            } else if let lock = locks.takeOver(path, from: expected) {
                do throws(BatchError) {
                    guard let manifest = try Manifest.read(fromFolder: path) else { throw .data(BatchDataError(.manifest, file: path, reason: "it is missing")) }
                    result = .takenOver(AdoptedBatch(batch: ClaimedBatch(layout: layout, manifest: manifest, lock: lock, mover: system.mover)))
                } catch {
                    lock.release()
                    result = .refused(why: "its manifest cannot be read (\(error))")
                }
            } else {
                result = .refused(why: "its lock on the share is another's now")
            }
            mailbox.post(.deadLook(key, from: from, result))
        }
    }
}

extension ClaimedBatch {
    /// The batch as the cluster's claimer roles name it.
    var key: ClaimerRoles.BatchKey { ClaimerRoles.BatchKey(inbox: manifest.inbox, batch: id) }
}
