/// Housekeeping of a watched hot folder: retention (`keep`) sweeps its finished batches at its
/// take-up and hourly (a minute later when a claim held the sweep back), and the free-space
/// gate (`minFreeSpace`): below it nothing new is claimed, and the space is looked at again
/// every `spaceRecheck` until there is room.
struct Housekeeping: Sendable {
    /// How often a folder below `minFreeSpace` looks again.
    static var spaceRecheck: Duration { .seconds(5) }
    /// How often retention sweeps a folder, and how soon again when a claim held it back.
    static var sweepInterval: Duration { .seconds(3600) }
    static var deferredSweep: Duration { .seconds(60) }

    /// Whether `keep` keeps every batch for ever (then nothing is swept).
    var keepsForever: Bool
    private(set) var nextSweep: Duration?
    /// Below `minFreeSpace`: the words that say so.
    private(set) var lowSpace: String?
    private(set) var nextSpaceCheck: Duration?

    init(keepsForever: Bool) {
        self.keepsForever = keepsForever
    }

    enum Event: Sendable {
        /// The folder is watched now (taken up): swept at once.
        case watching
        /// A reload changed its `keep`: swept at once (or never again).
        case keepChanged(forever: Bool)
        /// Its deadline: a sweep or a look at the free space may be due.
        case due(stopping: Bool)
        /// A sweep ended; `deferred`: a claim or redo was under way, so `originals/` and
        /// `failed/` wait for the next one (soon).
        case swept(deferred: Bool)
        /// The free space was looked at: the words when it is below `minFreeSpace`.
        case space(low: String?)
    }

    enum Effect: Sendable, Equatable {
        case sweep
        case checkSpace
        /// Below `minFreeSpace` (the words): claims stop; said in the log the first time.
        case lowSpace(String, log: Bool)
        /// There is room again: claims resume.
        case roomAgain
    }

    var nextDeadline: Duration? { earliest(nextSweep, nextSpaceCheck) }

    mutating func handle(_ event: Event, now: Duration) -> [Effect] {
        switch event {
        case .watching:
            nextSweep = keepsForever ? nil : now
            return []
        case .keepChanged(let forever):
            keepsForever = forever
            nextSweep = forever ? nil : now
            return []
        case .due(let stopping):
            var effects: [Effect] = []
            if let due = nextSweep, now >= due, !stopping {
                nextSweep = nil
                effects.append(.sweep)
            }
            if let due = nextSpaceCheck, now >= due {
                nextSpaceCheck = nil
                effects.append(.checkSpace)
            }
            return effects
        case .swept(let deferred):
            guard !keepsForever else { return [] }
            nextSweep = now + (deferred ? Self.deferredSweep : Self.sweepInterval)
            return []
        case .space(let low?):
            let first = lowSpace == nil
            lowSpace = low
            nextSpaceCheck = now + Self.spaceRecheck
            return [.lowSpace(low, log: first)]
        case .space(nil):
            guard lowSpace != nil else { return [] }
            lowSpace = nil
            nextSpaceCheck = nil
            return [.roomAgain]
        }
    }
}
