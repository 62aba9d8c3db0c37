import HotFolders

/// Taking a hot folder up — its folders made, its file system probed, its `.work/` recovered,
/// on the work pool — and what becomes of it: watched, or refused with why and the fix and tried
/// again every `rescanInterval` (and at every reload, which is what an administrator does after
/// fixing it). Take-ups are numbered: the answer of an older one is stale. A folder holds one of
/// the places the open-file limit leaves for hot folders (`OpenFiles`) from its first take-up
/// until it is refused.
struct TakingUp: Sendable {
    /// Take-ups started.
    private(set) var attempts = 0
    /// A take-up is under way.
    private(set) var inFlight = false
    /// Taken up: the loop watches it.
    private(set) var isWatched = false
    /// It holds one of the open-file places for hot folders.
    private(set) var hasRoom = false
    /// Why it was refused last (said in the log once, and again only when it changes).
    private(set) var problem: FolderProblem?
    /// When a refused folder is tried again.
    private(set) var nextRetry: Duration?
    /// Its template's proof is to be made (at its take-up, and after its template changed).
    private(set) var proofWanted = true
    var rescanInterval: Duration

    init(rescanInterval: Duration) {
        self.rescanInterval = rescanInterval
    }

    enum Event: Sendable {
        /// Take it up (the service starts). `noRoom`: why it cannot have one of the open-file
        /// places should it need one (nil: there is room).
        case start(noRoom: FolderProblem?)
        /// A reload: its proof is made again when its template changed; a folder not watched
        /// is tried again.
        case reloaded(templateChanged: Bool, noRoom: FolderProblem?)
        /// Its deadline: a retry may be due.
        case due(stopping: Bool, noRoom: FolderProblem?)
        /// Take-up `attempt` ended: ready (`problem` nil), or refused and why.
        case takenUp(attempt: Int, problem: FolderProblem?, stopping: Bool)
    }

    enum Effect: Sendable, Equatable {
        /// It takes one of the open-file places for hot folders.
        case takeRoom
        /// It gives its place back.
        case giveRoomBack
        /// Take it up on the work pool (numbered).
        case takeUp(attempt: Int)
        /// Watch it (its take-up's answer came).
        case watch
        /// It cannot be used: shown with why and the fix; `log`: said in the log (once per reason).
        case refuse(FolderProblem, log: Bool)
        /// Make its template's proof.
        case makeProof
    }

    var nextDeadline: Duration? { nextRetry }

    mutating func handle(_ event: Event, now: Duration) -> [Effect] {
        switch event {
        case .start(let noRoom):
            return start(noRoom: noRoom, now: now)
        case .reloaded(let templateChanged, let noRoom):
            var effects: [Effect] = []
            if templateChanged { proofWanted = true }
            if isWatched && proofWanted {
                proofWanted = false
                effects.append(.makeProof)
            }
            return effects + start(noRoom: noRoom, now: now)
        case .due(let stopping, let noRoom):
            guard let due = nextRetry, now >= due, !stopping else { return [] }
            nextRetry = nil
            return start(noRoom: noRoom, now: now)
        case .takenUp(let attempt, let problem, let stopping):
            guard attempt == attempts else { return [] }  // an older take-up's answer
            inFlight = false
            if let problem { return refuse(problem, logged: true, now: now) }
            if stopping { return [] }
            self.problem = nil
            isWatched = true
            guard proofWanted else { return [.watch] }
            proofWanted = false
            return [.watch, .makeProof]
        }
    }

    /// Starts a take-up, unless one is under way or it is watched; one beyond the open-file
    /// limit is refused (said in one line for all of them by the loop, not each in the log).
    private mutating func start(noRoom: FolderProblem?, now: Duration) -> [Effect] {
        guard !inFlight, !isWatched else { return [] }
        var effects: [Effect] = []
        if !hasRoom {
            if let noRoom { return refuse(noRoom, logged: false, now: now) }
            hasRoom = true
            effects.append(.takeRoom)
        }
        inFlight = true
        attempts += 1
        return effects + [.takeUp(attempt: attempts)]
    }

    private mutating func refuse(_ problem: FolderProblem, logged: Bool, now: Duration) -> [Effect] {
        var effects: [Effect] = []
        if hasRoom {
            hasRoom = false
            effects.append(.giveRoomBack)
        }
        effects.append(.refuse(problem, log: logged && self.problem != problem))
        self.problem = problem
        nextRetry = now + rescanInterval
        return effects
    }
}
