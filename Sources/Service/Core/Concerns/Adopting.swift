import Cluster

/// In a cluster: the batches of hosts whose database session ended (`ClaimerRoles.Holding`,
/// the one seam with the cluster). A dead claimer's open batch is adopted at once, once a look
/// at the share finds it still open and takes its lock (it becomes this folder's open batch); a
/// dead holder's closed batch is taken over once its lock on the share has gone unrenewed for
/// `ClaimerRoles.deadLease` (the holder alive but cut off from the database still renews it
/// every 10 s), looked at every `deadLookEvery` — sooner than recovery's full lease.
struct Adopting<Batch: FolderBatch>: Sendable {
    /// How often the locks of dead holders' closed batches are looked at.
    static var deadLookEvery: Duration { .seconds(2) }

    /// A closed batch whose holder's database session is gone: its holder, the holder's lock
    /// text (taken over only while the lock still says it), and whether a look is under way.
    struct DeadHeld: Sendable, Equatable {
        var from: String
        var lock: String
        var looking = false
    }

    /// The hot folder's name (the cluster's batch keys carry it).
    let inbox: String
    /// Closed batches of holders gone, by id.
    private(set) var deadHeld: [String: DeadHeld] = [:]
    private(set) var nextDeadLook: Duration?

    /// What a look at a dead holder's closed batch found.
    enum DeadLook: Sendable {
        /// Its lock was renewed lately: looked at again later.
        case notYet
        case takenOver(Batch)
        case refused(why: String)
    }

    enum Event: Sendable {
        /// What the claimer roles found (`.lost` is the open batch's: `Claiming`). `canAdopt`:
        /// the folder is watched, has no open batch and the service does not stop.
        case holding(ClaimerRoles.Holding, canAdopt: Bool)
        /// The adoption's look at the share: the batch open and its lock taken, or why not.
        /// `canOpen`: the folder is watched and has no open batch.
        case adopted(ClaimerRoles.BatchKey, from: String, Result<Batch, AdoptionRefused>, canOpen: Bool)
        /// Its deadline (`available`: the folder's share answers).
        case due(stopping: Bool, available: Bool)
        /// A look at a dead holder's closed batch ended.
        case deadLooked(ClaimerRoles.BatchKey, from: String, DeadLook)
    }

    enum Effect: Sendable {
        /// Look at the dead claimer's open batch on the share and take its lock.
        case lookToAdopt(ClaimerRoles.BatchKey, from: String, lock: String)
        /// The adoption ended (the roles stop keeping the folder from claiming).
        case adoptionEnded(ClaimerRoles.BatchKey, adopted: Bool)
        /// The folder's open batch from now (its photos dropped from now join it).
        case open(Batch)
        /// Queue it to be finished.
        case queue(Batch)
        /// Look (past the client's caches) at a dead holder's closed batch's lock.
        case lookAtDead(ClaimerRoles.BatchKey, from: String, lock: String)
        /// The cluster forgets the dead holder's record of the batch.
        case dropRecord(ClaimerRoles.BatchKey, lock: String)
        case log(LogLine)
    }

    init(inbox: String) {
        self.inbox = inbox
    }

    var nextDeadline: Duration? { nextDeadLook }

    mutating func handle(_ event: Event, now: Duration) -> [Effect] {
        switch event {
        case .holding(.adopt(let key, let from, let lock), let canAdopt):
            guard canAdopt else { return [.adoptionEnded(key, adopted: false)] }
            return [.lookToAdopt(key, from: from, lock: lock)]
        case .holding(.deadHolder(let key, let from, let lock), _):
            guard deadHeld[key.batch] == nil else { return [] }
            deadHeld[key.batch] = DeadHeld(from: from, lock: lock)
            nextDeadLook = min(nextDeadLook ?? now, now)
            return []
        case .holding(.lost, _):
            return []
        case .adopted(let key, let from, .success(let batch), let canOpen):
            // Opened meanwhile (it should not: the roles keep the folder from claiming): queued.
            guard canOpen else { return [.adoptionEnded(key, adopted: true), .queue(batch)] }
            return [.adoptionEnded(key, adopted: true),
                    .log(.notice("adopted open batch \(key.batch) (\(photos(batch.photoCount))) of host \(from), whose database session ended: the photos dropped from now join it",
                                 batch: key.batch)),
                    .open(batch)]
        case .adopted(let key, let from, .failure(let refused), _):
            return [.adoptionEnded(key, adopted: false),
                    .log(.info("did not adopt batch \(key.batch) of host \(from): \(refused.why); it is taken over as without a cluster",
                               batch: key.batch))]
        case .due(let stopping, let available):
            guard let due = nextDeadLook, now >= due else { return [] }
            nextDeadLook = deadHeld.isEmpty ? nil : now + Self.deadLookEvery
            guard !stopping, available else { return [] }
            var effects: [Effect] = []
            for (batch, dead) in deadHeld.sorted(by: { $0.key < $1.key }) where !dead.looking {
                deadHeld[batch]?.looking = true
                effects.append(.lookAtDead(ClaimerRoles.BatchKey(inbox: inbox, batch: batch), from: dead.from, lock: dead.lock))
            }
            return effects
        case .deadLooked(let key, _, .notYet):
            deadHeld[key.batch]?.looking = false
            return []
        case .deadLooked(let key, let from, .takenOver(let batch)):
            var effects: [Effect] = []
            if let lock = deadHeld.removeValue(forKey: key.batch)?.lock { effects.append(.dropRecord(key, lock: lock)) }
            return effects + [
                .log(.notice("taking over batch \(key.batch) (\(batch.photoCount) photos) from \(from): its database session ended and its lease went unrenewed for \(words(ClaimerRoles.deadLease))",
                             batch: key.batch)),
                .queue(batch),
            ]
        case .deadLooked(let key, let from, .refused(let why)):
            var effects: [Effect] = []
            if let lock = deadHeld.removeValue(forKey: key.batch)?.lock { effects.append(.dropRecord(key, lock: lock)) }
            return effects + [.log(.info("batch \(key.batch) of \(from) is not taken over early: \(why)", batch: key.batch))]
        }
    }
}

/// Why a dead host's batch is not adopted (or taken over) here.
struct AdoptionRefused: Error, Sendable, Equatable {
    var why: String
}

extension Adopting.Effect: Equatable where Batch: Equatable {}
