import Batches
import Delivery
import Foundation
import HotFolders
import JSON5
import System

/// Reloads (SIGHUP): the config read on the work pool, what changed applied here.
extension ServiceLoop {

    func startReload() {
        reloading = true
        Notify.reloading()
        log.notice("reloading the configuration")
        pool.run(" reload") { [mailbox, reload] in
            mailbox.post(.reloaded(Result { () throws(JSON5Errors) in try reload() }))
        }
    }

    func reloaded(_ result: Result<ServiceSetup, JSON5Errors>) {
        reloading = false
        switch result {
        case .success(let new):
            let old = setup
            setup = new
            apply(new, previous: old)
            board.reload(failed: nil)
            log.notice("configuration reloaded")
            reloadAwaitsReady = true
            announceReady()
        case .failure(let error):
            board.reload(failed: error.errors.map(\.description))
            for e in error.errors { log.error("reload: \(e.description)") }
            log.error("the new configuration has errors: keeping the old one")
            Notify.ready(status: board.snapshot(state: .running).summary)
        }
        if reloadAgain {
            reloadAgain = false
            startReload()
        }
    }

    /// What the work in flight needs of the open files. Asked before every claim and for every
    /// hot folder scheduled: the workers are the shared slots' count (made from `effectiveWorkers`
    /// at each apply), not `effectiveWorkers` again — that asks Foundation for the processor
    /// count, which reads the cgroup's files each time (a third of the loop's CPU at start-up
    /// with 3,000 hot folders, measured with perf).
    var work: OpenFiles.Work {
        OpenFiles.Work(claimThreads: pool.threads, batchSlots: workers.slots.capacity,
                       workers: workers.limits.withLock { $0.sharedSlots?.capacity ?? $0.effectiveWorkers })
    }

    /// Starts what a (new) setup needs and stops what it no longer has; a hot folder refused is
    /// tried again (the reload is what an administrator does after fixing it).
    func apply(_ new: ServiceSetup, previous: ServiceSetup?) {
        let now = now()
        board.set(new.inboxes.map { ($0.name, $0.layout.root) })
        metrics.setInboxes(new.inboxes.map(\.name))
        publisher.metricsFile.withLock { $0 = new.config.metricsFile }
        workers.hooks.withLock { current in
            current = [:]
            for inbox in new.inboxes { current[inbox.name] = inbox.hooks }
        }
        if new.inboxes.contains(where: { $0.hooks?.webhook != nil }), BatchHookRunner.networkIsPrivate {
            log.warning("onBatch.webhook is set, but this service has no network (the unit's PrivateNetwork=yes): install the drop-in /usr/share/doc/photofinish/examples/webhook-network.conf (see its first lines)")
        }
        workers.deliveries.configure(new.config)
        workers.notifier.configure(new.config)
        workers.configureDuplicates(new.config)
        if previous == nil { workers.deliveries.resume() }
        if new.config.inboxes.flatMap(\.deliver).contains(where: { $0.destination.kind != .file }), BatchHookRunner.networkIsPrivate {
            log.warning("deliver names destinations on the network, but this service has no network (the unit's PrivateNetwork=yes): install the drop-in /usr/share/doc/photofinish/examples/delivery-network.conf (see its first lines)")
        }
        workers.limits.withLock { current in
            // One workers limit over all hot folders: the slots are made again only when it changes.
            var next = new.limits
            next.sharedSlots = current.workers == next.workers && current.sharedSlots != nil
                ? current.sharedSlots : WorkerSlots(next.effectiveWorkers)
            let budget = switch new.config.memoryBudget {
            case .auto: MemoryBudget.automaticForThisProcess()
            case .bytes(let n): n
            }
            next.memoryBudget = current.memoryBudget?.bytes == budget ? current.memoryBudget : MemoryBudget(bytes: budget)
            current = next
        }
        let l = workers.limits.withLock { $0 }
        log.info("at most \(l.effectiveWorkers) photo\(l.effectiveWorkers == 1 ? "" : "s") in flight, memory budget \(ByteCount.words(l.memoryBudget?.bytes ?? 0))")

        // A hot folder whose root moved is a different hot folder: stop the old, start anew.
        let wanted = Dictionary(new.inboxes.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for (name, hotFolder) in hotFolders where wanted[name]?.layout != hotFolder.settings.layout {
            if let watch = hotFolder.watch {
                watch.close(watcher.inotify)
                watcher.remove(inbox: name)
                log.notice("no longer watching \(hotFolder.settings.layout.root) (changed in the config)", ["INBOX": name])
            }
            workers.remove(inbox: name)
            // Its open batch stays in .work/ for recovery (it closes then), once no photo of it
            // is in flight.
            if let open = hotFolder.claims.open {
                let early = workers.early
                early.close(open)
                Task {
                    await early.drained(open)
                    open.lock.release()
                }
            }
            if hotFolder.takingUp.hasRoom { roomUsed -= 1 }
            hotFolders[name] = nil
            deadlines.set(name, at: nil)
            publisher.staged.withLock { _ = $0.remove(name) }
        }
        let inotify = Inotify.Limits.current(), pollEvery = words(new.config.pollInterval)
        budget = openFileLimit.map {
            OpenFiles.Budget(limit: $0, folders: new.inboxes.count, work: work, inotify: inotify, pollEvery: pollEvery,
                             hasInstance: watcher.inotify != nil)
        }
        if let budget {
            room = budget.work.room(limit: budget.limit)
            if let shortage = budget.shortage(systemd: FolderProblem.underSystemd) { log.warning(shortage) }
        }
        let openFiles = budget?.status(systemd: FolderProblem.underSystemd)
        board.setOpenFiles(openFiles)
        metrics.setOpenFiles(openFiles)
        let stamp = BatchID.timestamp(Date())
        heldTakeUps = []
        for inbox in new.inboxes {
            if let hotFolder = hotFolders[inbox.name] {
                let templateChanged = hotFolder.settings.template.sha256 != inbox.template.sha256
                if hotFolder.watch != nil, inbox.keep != hotFolder.settings.keep {
                    _ = hotFolder.housekeeping.handle(.keepChanged(forever: inbox.keep.isForever), now: now)
                }
                hotFolder.housekeeping.keepsForever = inbox.keep.isForever
                hotFolder.settings = inbox
                hotFolder.watch?.update(rules: new.rules, pollInterval: new.config.pollInterval,
                                     rescanInterval: new.config.rescanInterval)
                hotFolder.recovering.pollInterval = new.config.pollInterval
                hotFolder.recovering.rescanInterval = new.config.rescanInterval
                hotFolder.takingUp.rescanInterval = new.config.rescanInterval
                hotFolder.stateChanged = true
                carryOut(hotFolder.takingUp.handle(.reloaded(templateChanged: templateChanged, noRoom: noRoom(for: hotFolder)), now: now),
                         hotFolder)
                schedule(hotFolder)
                show(hotFolder)
            } else {
                let hotFolder = HotFolder(inbox, config: new.config, cluster: roles != nil, now: stamp)
                hotFolders[inbox.name] = hotFolder
                show(hotFolder)
                carryOut(hotFolder.takingUp.handle(.start(noRoom: noRoom(for: hotFolder)), now: now), hotFolder)
                schedule(hotFolder)
                show(hotFolder)
            }
        }
        takeUpTogether()
        announceReady()
    }
}
