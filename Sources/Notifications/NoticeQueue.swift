import Foundation

/// Where a hot folder's notifications go (config `notify`; reference: Notifications): a mail
/// address or a webhook, and the events it hears of.
public struct NotifyTarget: Sendable, Hashable {
    public enum Kind: Sendable, Hashable, CustomStringConvertible {
        /// `mailto:ADDR`: a mail through the config's `mail` server.
        case mail(String)
        /// `{ webhook: URL, secret: NAME }`: a signed POST; `secret` names an entry of the
        /// credentials file (nil: unsigned).
        case webhook(url: String, secret: String?)

        /// How logs name it (never a secret).
        public var description: String {
            switch self {
            case .mail(let address): "mailto:\(address)"
            case .webhook(let url, _): url
            }
        }
    }

    public var kind: Kind
    /// The events it hears of (default: all five).
    public var events: Set<Notice.Event>

    public init(_ kind: Kind, events: Set<Notice.Event> = Set(Notice.Event.allCases)) {
        self.kind = kind
        self.events = events
    }
}

/// The notifications on their way, as a pure state machine (reference: Notifications): each
/// target's notifications go out one at a time and in order (a receiver hears `held` before
/// `approved`), a failure is tried again after 1 s, 2 s, 4 s … (at most `maxDelay` apart), a few
/// targets are sent to at once so one slow receiver holds up only its own, and what waits is
/// bounded. `handle(input, now)` returns what to do; the service's notifier does it, on threads of
/// its own, so finishing never waits for a receiver.
public struct NoticeQueue: Sendable {
    /// One notification for one target.
    public struct Job: Sendable, Equatable {
        public var id: Int
        public var target: NotifyTarget.Kind
        public var notice: Notice
        /// 1 for the first try.
        public var attempt: Int
        /// Not sent before this time.
        public var due: Date
    }

    public enum Input: Sendable {
        /// A notification for a target.
        case submitted(NotifyTarget.Kind, Notice)
        /// The job was received (a 2xx answer; the mail server took it).
        case sent(id: Int)
        /// The job failed; `retryable` false when asking again cannot help (a 4xx other than
        /// 408 and 429, a refused address, a missing secret).
        case failed(id: Int, reason: String, retryable: Bool)
        /// The time came (the wake-up asked for).
        case time
    }

    public enum Effect: Sendable, Equatable {
        /// Send it now.
        case send(Job)
        /// It failed and is tried again at `at`.
        case retry(Job, reason: String, at: Date)
        /// It failed for good.
        case gaveUp(Job, reason: String)
        /// Too many were waiting: the oldest waiting one is dropped.
        case dropped(Job)
        /// Call again with `.time` at this time (nil: nothing waits).
        case wake(Date?)
    }

    public var maxAttempts: Int
    public var firstDelay: Duration
    public var maxDelay: Duration
    /// Sends under way at once, at most.
    public var maxInFlight: Int
    /// Jobs waiting (sent or not) at most.
    public var maxWaiting: Int

    /// Each target's jobs, oldest first; the first is the one sent or waiting to be.
    private var lanes: [NotifyTarget.Kind: [Job]] = [:]
    /// The targets in the order their first job came, so lanes are served fairly.
    private var order: [NotifyTarget.Kind] = []
    private var inFlight: Set<Int> = []
    private var nextID = 1

    public init(maxAttempts: Int = 11, firstDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(300),
                maxInFlight: Int = 4, maxWaiting: Int = 1000) {
        precondition(maxAttempts >= 1 && maxInFlight >= 1 && maxWaiting >= 1)
        self.maxAttempts = maxAttempts
        self.firstDelay = firstDelay
        self.maxDelay = maxDelay
        self.maxInFlight = maxInFlight
        self.maxWaiting = maxWaiting
    }

    /// Jobs waiting or under way.
    public var count: Int { lanes.values.reduce(0) { $0 + $1.count } }

    /// Takes one input and returns what to do now, ending with the next wake-up.
    public mutating func handle(_ input: Input, now: Date) -> [Effect] {
        var effects: [Effect] = []
        switch input {
        case .submitted(let target, let notice):
            let job = Job(id: nextID, target: target, notice: notice, attempt: 1, due: now)
            nextID += 1
            if lanes[target] == nil { order.append(target) }
            lanes[target, default: []].append(job)
            if count > maxWaiting, let oldest = lanes.values.flatMap({ $0 }).filter({ !inFlight.contains($0.id) }).min(by: { $0.id < $1.id }) {
                remove(oldest)
                effects.append(.dropped(oldest))
            }
        case .sent(let id):
            if let job = job(id) {
                inFlight.remove(id)
                remove(job)
            }
        case .failed(let id, let reason, let retryable):
            if var job = job(id) {
                inFlight.remove(id)
                if retryable && job.attempt < maxAttempts {
                    job.due = now + delay(after: job.attempt).timeInterval
                    job.attempt += 1
                    lanes[job.target]![0] = job
                    effects.append(.retry(job, reason: reason, at: job.due))
                } else {
                    remove(job)
                    effects.append(.gaveUp(job, reason: reason))
                }
            }
        case .time:
            break
        }
        // Start what is due, lane by lane, up to the limit.
        for target in order where inFlight.count < maxInFlight {
            guard let head = lanes[target]?.first, !inFlight.contains(head.id), head.due <= now else { continue }
            inFlight.insert(head.id)
            effects.append(.send(head))
        }
        let waiting = order.compactMap { lanes[$0]?.first }.filter { !inFlight.contains($0.id) }
        effects.append(.wake(waiting.map(\.due).min()))
        return effects
    }

    /// The wait before attempt `attempt + 1`: `firstDelay` doubled for each attempt made, at
    /// most `maxDelay`.
    public func delay(after attempt: Int) -> Duration {
        var wait = firstDelay
        for _ in 1..<max(1, attempt) where wait < maxDelay { wait *= 2 }
        return min(wait, maxDelay)
    }

    private func job(_ id: Int) -> Job? {
        for target in order { if let job = lanes[target]?.first(where: { $0.id == id }) { return job } }
        return nil
    }

    private mutating func remove(_ job: Job) {
        lanes[job.target]?.removeAll { $0.id == job.id }
        if lanes[job.target]?.isEmpty == true {
            lanes[job.target] = nil
            order.removeAll { $0 == job.target }
        }
    }
}

extension Duration {
    /// In seconds, as a `TimeInterval`.
    var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
