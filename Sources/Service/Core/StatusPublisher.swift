import Batches
import Foundation
import HotFolders
import Synchronization
import System

/// The one writer of what the service shows: the status file (`photofinish status`), the
/// `STATUS=` line for systemd, each hot folder's STATUS.txt and the metrics file. On a thread
/// of its own, woken when the board or the metrics change: it writes at most once a second
/// (changes within the second are written together), only the STATUS.txt of the folders that
/// changed, and while batches run a heartbeat every `heartbeat` (the status's `updated`
/// moves, so it is never more than 2 s stale). Idle, it waits and costs nothing.
///
/// Until the service is ready (`ready()`) it writes only the status file (each folder
/// `starting`, then watching or refused): the STATUS.txt files follow at READY, each written
/// once with its folder's state then — not once as starting and again as watching while
/// 10,000 folders are taken up (an eighth of the start-up's CPU, measured with perf).
final class StatusPublisher: Sendable {
    static let interval = Duration.seconds(1)
    /// 1.5 s: a reader polling the status file sees it at most 2 s old (at 2 s, bench/drop.sh
    /// read it 2.2 s old: the write and the read take their time too).
    static let heartbeat = Duration.milliseconds(1500)
    /// Until the service is ready the status file (every folder starting, then watching or
    /// refused) is written at most this often: each write at 10,000 hot folders encodes the
    /// thousands that changed since the last, and a restart is ready within a few seconds.
    static let startingInterval = Duration.seconds(5)
    /// The first status file is written a second after the start, not at the first change: a
    /// start ready within it (a restart at 10,000 hot folders on an idle machine) writes one,
    /// at READY=1, not one more of 10,000 folders all starting.
    static let firstWrite = Duration.seconds(1)

    private struct State {
        var boardVersion = -1
        var metricsVersion = -1
        var stopped = false
        /// When a STATUS.txt held back or to retry is due (the monotonic clock).
        var retryAt: Duration?
        var lastStatus: ServiceStatus?
        var lastSummary: String?
        var lastWrite: Duration = StatusPublisher.firstWrite - StatusPublisher.startingInterval
        var statusWriteFailed = false
        var metricsWarned = false
        /// Publish at once, the second not up (the service just got ready).
        var urgent = false
        /// STATUS.txt files are written (from READY on); `allFolders`: every one at the next
        /// publish (what changed before READY was not written).
        var folderFiles = false
        var allFolders = true
        var text = StatusText.Writer()
        /// The status file's hot folders as last encoded (only the changed ones are again).
        var encoding = ServiceStatus.Encoding()
    }

    private let state = Mutex(State())
    private let condition = NSCondition()
    private let board: StatusBoard
    private let metrics: Metrics
    private let statusPath: String
    private let log: Logger
    /// Where the metrics file goes, as of the last (re)load.
    let metricsFile = Mutex<String?>(nil)
    /// Hot folders whose STATUS.txt is staged in their `.work/` (watched ones).
    let staged = Mutex<Set<String>>([])
    /// The metrics text now (photos in flight counted as they stand).
    private let metricsText: @Sendable () -> String
    private let clock = ContinuousClock()
    private let origin = ContinuousClock.now
    private let finished = DispatchSemaphore(value: 0)

    init(board: StatusBoard, metrics: Metrics, statusPath: String, log: Logger, metricsText: @escaping @Sendable () -> String) {
        self.board = board
        self.metrics = metrics
        self.statusPath = statusPath
        self.log = log
        self.metricsText = metricsText
    }

    private func now() -> Duration { clock.now - origin }

    private let started = Atomic<Bool>(false)

    func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            ProcessResources.nameThisThread("pf-status")
            run()
            finished.signal()
        }
        thread.name = "photofinish-status"
        thread.start()
    }

    /// Publish now, without waiting for the second to be up: what `READY=1` announces is on
    /// disk when `photofinish status` is asked right after.
    func publishNow() {
        state.withLock { $0.urgent = true }
        poke()
    }

    /// The service is ready: publish now, every folder's STATUS.txt with it.
    func ready() {
        state.withLock {
            $0.folderFiles = true
            $0.urgent = true
        }
        poke()
    }

    /// Whether a change since the last publish woke the thread already.
    private let changePending = Atomic<Bool>(false)

    /// The board changed: publish it (within the second). Only the first change since the
    /// last publish wakes the thread — it publishes them all when the second is up; at
    /// 10,000 hot folders each take-up woke it (a futex wake, the thread's look at what is
    /// due), a sixth of a restart's CPU with the rest of the publisher (perf).
    func changed() {
        guard !changePending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        poke()
    }

    /// Something changed: publish it (within the second).
    func poke() {
        condition.lock()
        condition.signal()
        condition.unlock()
    }

    /// Stops the thread and writes `final` (every folder's STATUS.txt, the status file, the
    /// metrics) before returning.
    func stop(final: ServiceStatus) {
        state.withLock { $0.stopped = true }
        poke()
        if started.load(ordering: .acquiring) { finished.wait() }
        var text = state.withLock { $0.text }
        text.update(final, now: .zero, log: log)
        writeStatus(final)
        writeMetrics(force: true)
    }

    private func run() {
        while true {
            condition.lock()
            var wait: Duration?
            while true {
                let (due, stop) = dueNow()
                if stop { condition.unlock(); return }
                if let due, due <= .zero { break }
                wait = due
                if let wait {
                    _ = condition.wait(until: Date(timeIntervalSinceNow: Double(wait / .microseconds(1)) / 1e6))
                } else {
                    condition.wait()
                }
            }
            condition.unlock()
            publish()
        }
    }

    /// How long until the next publish is due (≤ 0: now; `nil`: only a change can make one),
    /// and whether to stop.
    private func dueNow() -> (Duration?, Bool) {
        let t = now()
        let boardVersion = board.version, metricsVersion = metrics.version
        return state.withLock { s in
            if s.stopped { return (nil, true) }
            if s.urgent { return (.zero, false) }
            var due: Duration?
            func at(_ time: Duration) { due = min(due ?? time, time) }
            let interval = s.folderFiles ? Self.interval : Self.startingInterval
            if boardVersion != s.boardVersion || metricsVersion != s.metricsVersion { at(s.lastWrite + interval) }
            if let retry = s.retryAt { at(max(retry, s.lastWrite + Self.interval)) }
            if s.statusWriteFailed { at(s.lastWrite + Self.interval) }
            if board.isBusy { at(s.lastWrite + Self.heartbeat) }
            return (due.map { $0 - t }, false)
        }
    }

    private func publish() {
        changePending.store(false, ordering: .releasing)
        let t = now()
        let boardVersion = board.version, metricsVersion = metrics.version
        let (status, dirty) = board.take(state: .running)
        let staged = staged.withLock { $0 }
        // One reading of what to do, `urgent` taken with it: a `ready()` or `publishNow()` that
        // comes while this publish runs asks for the next one (cleared at the end instead, a
        // `ready()` during the status file's write was lost: no STATUS.txt until the board
        // changed again — an idle folder's kept saying "stopped" after a restart).
        let was = state.withLock { s in
            s.urgent = false
            return s
        }
        var (text, last, lastSummary, failed) = (was.text, was.lastStatus, was.lastSummary, was.statusWriteFailed)
        let (lastWrite, folderFiles, allFolders) = (was.lastWrite, was.folderFiles, was.allFolders)
        var comparable = status
        comparable.updated = last?.updated ?? ""
        let heartbeat = board.isBusy && t - lastWrite >= Self.heartbeat
        var wrote = false
        if comparable != last || heartbeat || failed {
            if status.summary != lastSummary {
                Notify.status(status.summary)
                lastSummary = status.summary
            }
            failed = !writeStatus(status)
            last = status
            wrote = true
        }
        let retryAt = !folderFiles ? nil : text.update(status, only: allFolders ? nil : dirty, now: t, log: log) { inbox in
            staged.contains(inbox.name) ? inbox.root + "/.work" : nil
        }
        let metricsChanged = state.withLock { $0.metricsVersion != metricsVersion }
        if metricsChanged || wrote { writeMetrics(force: false) }
        state.withLock { s in
            s.text = text
            s.lastStatus = last
            s.lastSummary = lastSummary
            s.lastWrite = t
            s.statusWriteFailed = failed
            s.retryAt = retryAt
            if folderFiles { s.allFolders = false }
            s.boardVersion = boardVersion
            s.metricsVersion = metricsVersion
        }
    }

    @discardableResult
    private func writeStatus(_ status: ServiceStatus) -> Bool {
        // Only this thread (and `stop`, once it has ended) writes: the encoding is taken out
        // and put back around the write, not encoded under the lock.
        var encoding = state.withLock { s in
            defer { s.encoding = ServiceStatus.Encoding() }
            return s.encoding
        }
        defer { state.withLock { [encoding] in $0.encoding = encoding } }
        do throws(SystemError) {
            try status.write(to: statusPath, with: &encoding)
            return true
        } catch {
            log.log(.debug, "cannot write \(statusPath): \(error)")
            return false
        }
    }

    /// Writes `metricsFile` (atomically: node_exporter never reads half of it), if there is one.
    private func writeMetrics(force: Bool) {
        guard let path = metricsFile.withLock({ $0 }) else { return }
        do throws(SystemError) {
            try PublishedFile.write(Array(metricsText().utf8), to: path)
            state.withLock { $0.metricsWarned = false }
        } catch {
            let first = state.withLock { s in
                defer { s.metricsWarned = true }
                return !s.metricsWarned
            }
            log.log(first ? .warning : .debug, "cannot write the metrics file: \(error) (the unit may write only where ReadWritePaths= allows: see the reference, Metrics)")
        }
    }
}
