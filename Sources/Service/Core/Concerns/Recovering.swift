/// Leases and recovery of a watched hot folder's `.work/`: recovery runs every
/// `rescanInterval` (it takes up the batches of a daemon that died while this one ran), at once
/// when the folder's share answers again (what was given back resumes), and on a share the locks
/// of the batches other machines hold are looked at every `pollInterval` (`Recovery.leases`):
/// when one's lease ran out, or a batch lies unheld, recovery runs now. The batches whose holder
/// stopped renewing are shown (`takeovers`) until they are taken over.
struct Recovering: Sendable {
    var pollInterval: Duration
    var rescanInterval: Duration
    private(set) var nextRecovery: Duration?
    /// On a share: when the leases are next looked at, and whether a look is under way.
    private(set) var nextLeaseLook: Duration?
    private(set) var leaseLooking = false

    init(pollInterval: Duration, rescanInterval: Duration) {
        self.pollInterval = pollInterval
        self.rescanInterval = rescanInterval
    }

    enum Event: Sendable {
        /// The folder is watched now (taken up; its `.work/` recovered by the take-up);
        /// `shared`: on a share (its leases are looked at).
        case watching(shared: Bool)
        /// Its deadline (`shareReturned`: its share answers again just now; `available`: it
        /// answers now).
        case due(stopping: Bool, available: Bool, shareReturned: Bool)
        /// The leases were looked at: `due` when recovery should run now, `waiting` the
        /// sentences for the batches whose holder stopped renewing.
        case leasesLooked(due: Bool, waiting: [String], stopping: Bool, available: Bool)
        /// A finished batch's work folder could not be cleaned up: recovery runs within
        /// `leftOverDelay` (once the folder is a minute old: recovery leaves a younger empty one
        /// alone, for a claim may be putting it in place).
        case leftOver
    }

    static var leftOverDelay: Duration { .seconds(65) }

    enum Effect: Sendable, Equatable {
        case recover
        case lookAtLeases
        /// The batches waiting to be taken over, in words (none: nothing to show).
        case showTakeovers([String])
    }

    var nextDeadline: Duration? { earliest(nextRecovery, nextLeaseLook) }

    mutating func handle(_ event: Event, now: Duration) -> [Effect] {
        switch event {
        case .watching(let shared):
            nextRecovery = now + rescanInterval
            nextLeaseLook = shared ? now + pollInterval : nil
            return []
        case .due(let stopping, let available, let shareReturned):
            guard !stopping else { return [] }
            var effects: [Effect] = []
            // What was given back when the share failed resumes at once.
            if shareReturned { effects.append(.recover) }
            if let due = nextLeaseLook, now >= due {
                nextLeaseLook = now + pollInterval
                if available && !leaseLooking {
                    leaseLooking = true
                    effects.append(.lookAtLeases)
                }
            }
            if let due = nextRecovery, now >= due {
                nextRecovery = now + rescanInterval
                effects.append(.recover)
            }
            return effects
        case .leftOver:
            nextRecovery = earliest(nextRecovery, now + Self.leftOverDelay)
            return []
        case .leasesLooked(let due, let waiting, let stopping, let available):
            leaseLooking = false
            var effects: [Effect] = [.showTakeovers(waiting)]
            if due && available && !stopping { effects.append(.recover) }
            return effects
        }
    }
}
