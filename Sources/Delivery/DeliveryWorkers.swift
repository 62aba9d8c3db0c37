import Foundation
import Synchronization
import System

/// The daemon's deliveries: one lane per destination (a hot folder's destination name), each
/// with a thread of its own that takes its due deliveries one after another and sleeps until
/// the next is due. A destination that is down holds only its own lane: never the finishing
/// of batches, never another destination.
public final class DeliveryWorkers: Sendable {
    /// One delivery a lane holds.
    public struct Job: Sendable {
        /// `.work/deliveries/<batch-id>/<destination>.json`.
        public var journal: String
        public var context: DeliveryRun.Context
        /// Seconds since 1970.
        public var due: Double
        /// Carried into the next attempt (an approval, a delivery asked for by hand).
        public var first: DeliveryMachine.Event?

        public init(journal: String, context: DeliveryRun.Context, due: Double, first: DeliveryMachine.Event? = nil) {
            self.journal = journal
            self.context = context
            self.due = due
            self.first = first
        }
    }

    private final class Lane: Sendable {
        let jobs = Mutex<[String: Job]>([:])
        let bell = NSCondition()
        let stopped = Atomic<Bool>(false)
        let done = Atomic<Bool>(false)

        func ring() {
            bell.lock()
            bell.signal()
            bell.unlock()
        }
    }

    /// The nice value of the lanes' threads.
    static let nice: Int32 = 10

    private let lanes = Mutex<[String: Lane]>([:])
    private let stopping = Atomic<Bool>(false)
    private let onReceipt: @Sendable (String, DeliveryJournal) -> Void
    private let onOutcome: @Sendable (String, DeliveryRun.Outcome) -> Void

    /// - Parameters:
    ///   - onReceipt: the lane's key and the journal, each time a receipt changes.
    ///   - onOutcome: the lane's key and how each attempt ended.
    public init(onReceipt: @escaping @Sendable (String, DeliveryJournal) -> Void,
                onOutcome: @escaping @Sendable (String, DeliveryRun.Outcome) -> Void = { _, _ in }) {
        self.onReceipt = onReceipt
        self.onOutcome = onOutcome
    }

    /// Puts `job` in the lane `lane` (made, with its thread, if it has none); a job for the same
    /// journal replaces the one there.
    public func enqueue(_ job: Job, lane key: String) {
        guard !stopping.load(ordering: .relaxed) else { return }
        let (lane, made) = lanes.withLock { all -> (Lane, Bool) in
            if let lane = all[key] { return (lane, false) }
            let lane = Lane()
            all[key] = lane
            return (lane, true)
        }
        lane.jobs.withLock { $0[job.journal] = job }
        if made {
            let thread = Thread { [self] in
                // Below finishing (the threads of its attempts' connections inherit it): a
                // delivery mostly waits on its server, and one that reads back on the same machine
                // (a folder, a server on loopback) takes the CPU only when finishing leaves it.
                // A system call filter that forbids it leaves the lane at normal priority.
                do throws(SystemError) {
                    try ProcessResources.setThreadNice(Self.nice)
                } catch {}
                run(lane, key: key)
            }
            thread.name = "photofinish-deliver"
            thread.start()
        } else {
            lane.ring()
        }
    }

    /// The journals each lane holds (queued or being sent).
    public var queued: [String: [String]] {
        lanes.withLock { $0 }.mapValues { lane in lane.jobs.withLock { Array($0.keys).sorted() } }
    }

    /// Stops every lane: a transfer under way stops where it is (its file is sent again at the
    /// next start); returns once every lane's thread has ended.
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        let all = lanes.withLock { Array($0.values) }
        for lane in all {
            lane.stopped.store(true, ordering: .relaxed)
            lane.ring()
        }
        for lane in all {
            while !lane.done.load(ordering: .acquiring) {
                lane.bell.lock()
                lane.bell.signal()
                _ = lane.bell.wait(until: Date().addingTimeInterval(0.05))
                lane.bell.unlock()
            }
        }
    }

    private func run(_ lane: Lane, key: String) {
        defer { lane.done.store(true, ordering: .releasing) }
        while !lane.stopped.load(ordering: .relaxed) {
            let now = Date().timeIntervalSince1970
            let next = lane.jobs.withLock { jobs in jobs.values.min { ($0.due, $0.journal) < ($1.due, $1.journal) } }
            guard let job = next, job.due <= now else {
                lane.bell.lock()
                if !lane.stopped.load(ordering: .relaxed) {
                    _ = lane.bell.wait(until: Date(timeIntervalSince1970: next?.due ?? now + 3600))
                }
                lane.bell.unlock()
                continue
            }
            lane.jobs.withLock { $0[job.journal]?.first = nil }
            let outcome = DeliveryRun.attempt(job.journal, context: job.context, first: job.first,
                                              shouldStop: { lane.stopped.load(ordering: .relaxed) }) { [onReceipt] journal in
                onReceipt(key, journal)
            }
            onOutcome(key, outcome)
            lane.jobs.withLock { jobs in
                // A newer job for the same journal (enqueued meanwhile) is kept as it is.
                guard jobs[job.journal]?.due == job.due, jobs[job.journal]?.first == nil else { return }
                switch outcome {
                case .ran(_, let retryAt?): jobs[job.journal]?.due = retryAt
                case .ran(_, nil): jobs[job.journal] = nil
                // Someone else sends it now (photofinish deliver): looked at again in a minute.
                case .busy: jobs[job.journal]?.due = now + 60
                case .broken: jobs[job.journal]?.due = now + Double(job.context.settings.retry.first.components.seconds)
                }
            }
        }
    }
}
