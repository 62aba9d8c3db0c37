import HotFolders
import System

/// Settling and claiming: the photos that settle in `drop/` are claimed at once into the
/// folder's open batch (made with the first of them), whose photos are finished as they come;
/// when the settle rules close it (`quiet`, `maxWait`, `maxBatch`) it is queued for its run. At
/// most one claim of a folder is under way, and at most `ahead` batches wait for its worker
/// (each holds its lock: `OpenFiles`). In a cluster only the folder's claimer opens a batch, and
/// an open batch held in the database is written (and closed) only while that hold is certain:
/// one due to close while it is not waits `closeRetry` and is tried again.
struct Claiming<Batch: FolderBatch>: Sendable {
    /// Batches a folder claims ahead of the one being finished.
    static var ahead: Int { 1 }
    /// How soon an open batch due to close whose hold was not certain is tried again.
    static var closeRetry: Duration { .milliseconds(250) }

    /// The batch its photos are claimed into as they settle, until it closes.
    private(set) var open: Batch?
    /// A claim (or a close on the share) is under way.
    private(set) var claiming = false
    /// The claim under way closes the open batch with its photos.
    private(set) var claimCloses = false
    /// In a cluster: the open batch is due to close but may not be written now: tried again at
    /// `closeCheck`.
    private(set) var closeDue = false
    private(set) var closeCheck: Duration?
    /// Batches claimed (or recovered) that its worker has not started yet.
    private(set) var claimedAhead = 0

    /// What the cluster's database says of a batch (outside a cluster: never held).
    struct Hold: Sendable, Equatable {
        /// Recorded with this host's claimer session.
        var held: Bool
        /// That hold is certain now: the batch may be written.
        var writable: Bool

        static var alone: Hold { Hold(held: false, writable: true) }
    }

    /// What the cluster lets this folder do now (outside a cluster: everything).
    struct Roles: Sendable, Equatable {
        /// This host holds the folder's claimer role (a new batch may be opened).
        var mayClaim: Bool
        /// The open batch may be written (its hold is certain, or it is not held).
        var mayWriteOpen: Bool

        static var alone: Roles { Roles(mayClaim: true, mayWriteOpen: true) }
    }

    enum Event: Sendable {
        /// Settled files to claim into the open batch; `closes`: it closes with them (maybe none).
        /// `hold`: the open batch's, should it close now.
        case settled([FileName], closes: Bool, stopping: Bool, hold: Hold)
        /// The claim ended: the batch it opened, the batch it claimed whole (queued now), or
        /// neither; `unreadable`: the files it claimed that could not be read (each name, and
        /// why). `hold`: of the open batch (the one just opened, if so), should it close.
        case claimed(opened: Batch?, whole: Batch?, unreadable: [Unreadable], stopping: Bool, hold: Hold)
        /// Stopping: the open batch closes into the queue (left in `.work/` for the next start),
        /// unless a claim is under way (it closes it when it ends).
        case stop(hold: Hold)
        /// Its deadline: a close put off may be tried again.
        case due(hold: Hold)
        /// The open batch was closed on the share (its record in the database goes), or could
        /// not be (the batch as it was: its run closes it).
        case closedOnShare(Batch)
        /// Batches to finish (recovered, taken over, or left by a stop): queued.
        case queue([Batch])
        /// A dead claimer's open batch was adopted here: the folder's open batch from now (one
        /// opened meanwhile would be queued instead).
        case adopted(Batch, stopping: Bool, hold: Hold)
        /// Another host (`by`, when known) adopted batch `id` while this host's database session
        /// was gone: it is left to it.
        case lost(id: String, by: String?)
        /// Its worker took a batch off its queue: its claim-ahead place is free.
        case started
    }

    /// A file claimed that could not be read at the claim (it fails as `io-error` unless it can
    /// be read by the time it is finished).
    struct Unreadable: Sendable, Equatable {
        var batch: String
        /// As people read it.
        var file: String
        var error: String
    }

    enum Effect: Sendable {
        /// Claim `names` into `open` (a new batch with them when nil; closed at once when
        /// `closes`, else open).
        case claim([FileName], into: Batch?, closes: Bool)
        /// The open batch closed: nothing more starts for it while it was open.
        case closed(Batch)
        /// Close it on the share too (held in the database: while the hold is certain).
        case closeOnShare(Batch)
        /// Queue it for the folder's worker.
        case queue(Batch)
        /// The open batch is another host's now: forgotten here.
        case forget(Batch)
        case log(LogLine)
    }

    /// When a close put off is tried again.
    var nextDeadline: Duration? { closeDue ? closeCheck : nil }

    /// Whether a batch may be claimed (opened, added to or closed) now: no claim under way,
    /// fewer than `ahead` batches waiting, enough free space, and in a cluster this host's
    /// claimer role (for a new batch) or a certain hold (for the open one). The open-file limit
    /// is the loop's to add.
    func mayClaim(stopping: Bool, lowSpace: Bool, roles: Roles) -> Bool {
        guard !stopping, !claiming, claimedAhead < Self.ahead, !lowSpace else { return false }
        // A batch opened still fills and closes should the role be lost meanwhile.
        if open == nil { return roles.mayClaim }
        // One due to close waits for its close.
        return !closeDue && roles.mayWriteOpen
    }

    mutating func handle(_ event: Event, now: Duration) -> [Effect] {
        switch event {
        case .settled(let names, let closes, let stopping, let hold):
            guard !names.isEmpty else { return closes || stopping ? close(hold: hold, now: now) : [] }
            claiming = true
            claimCloses = closes
            return [.claim(names, into: open, closes: closes)]
        case .claimed(let opened, let whole, let unreadable, let stopping, let hold):
            claiming = false
            let closes = claimCloses
            claimCloses = false
            var effects: [Effect] = []
            if let whole { effects.append(.log(.info("claimed batch of \(photos(whole.photoCount))", batch: whole.id))) }
            for file in unreadable {
                effects.append(.log(.warning("\(file.error): it is claimed and will fail as io-error unless it can be read by then",
                                             batch: file.batch, file: file.file)))
            }
            if let whole { effects += queue(whole) }
            if let opened { open = opened }
            // The open batch closes (whatever became of the last photos): its run finishes it.
            if closes || stopping { effects += close(hold: hold, now: now) }
            return effects
        case .stop(let hold):
            return claiming ? [] : close(hold: hold, now: now)
        case .due(let hold):
            guard closeDue, let due = closeCheck, now >= due else { return [] }
            closeCheck = nil
            return close(hold: hold, now: now)
        case .closedOnShare(let batch):
            claiming = false
            return queue(batch)
        case .queue(let batches):
            return batches.flatMap { queue($0) }
        case .adopted(let batch, let stopping, let hold):
            guard open == nil else { return queue(batch) }
            open = batch
            // Stopping meanwhile: it closes into the queue, left in .work/ for the next start.
            return stopping ? close(hold: hold, now: now) : []
        case .lost(let id, let by):
            guard let batch = open, batch.id == id else { return [] }
            open = nil
            closeDue = false
            closeCheck = nil
            return [.forget(batch),
                    .log(.warning("batch \(id) was adopted by \(by.map { "host \($0)" } ?? "another host") while this host's database session was gone: it is left to it",
                                  batch: id))]
        case .started:
            claimedAhead = max(0, claimedAhead - 1)
            return []
        }
    }

    private mutating func queue(_ batch: Batch) -> [Effect] {
        claimedAhead += 1
        return [.queue(batch)]
    }

    /// The open batch closes: queued for its run, which puts it in order, finishes what was not
    /// finished while it was open and makes the whole-set outputs. Held in the database, it is
    /// closed on the share now, while the hold is certain (a run that waits for a slot would
    /// close it later, when another host may have adopted it); not certain now, it is tried
    /// again shortly (photos are not added meanwhile).
    private mutating func close(hold: Hold, now: Duration) -> [Effect] {
        guard let batch = open else { return [] }
        if hold.held && !hold.writable {
            closeDue = true
            closeCheck = now + Self.closeRetry
            return []
        }
        closeDue = false
        closeCheck = nil
        open = nil
        let closed: [Effect] = [.closed(batch), .log(.info("claimed batch of \(photos(batch.photoCount)) (claimed as they settled)",
                                                           batch: batch.id))]
        guard hold.held else { return closed + queue(batch) }
        claiming = true
        return closed + [.closeOnShare(batch)]
    }
}

extension Claiming.Effect: Equatable where Batch: Equatable {}
