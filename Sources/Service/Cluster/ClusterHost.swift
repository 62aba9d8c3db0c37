import Batches
import Cluster
import Configuration
import Foundation
import HotFolders
import Synchronization
import System

/// The daemon as a host of the cluster (`cluster` in its config): its `ClusterMember` started
/// with the service (the schema migrated, the host registered, its leases renewed on their
/// own thread) and stopped after the drain (what it still holds given back), and the cluster's
/// state where people look — the status file and `photofinish status` (this host, whether the
/// database answers, every host of the cluster with its workers and tasks as last read), each
/// hot folder's STATUS.txt, the journal (one line when the database goes away, one when it
/// answers again) and the metrics (`host` on every series, the database's gauge).
///
/// Without `cluster` there is none: no libpq connection is made.
final class ClusterHost: Sendable {
    let settings: ClusterSettings
    let member: ClusterMember
    /// Each hot folder's claimer role: only its holder claims from the folder (one batch per drop).
    let roles: ClaimerRoles
    private let log: Logger
    private let board: StatusBoard
    private let metrics: Metrics
    private let state = Mutex(State())
    private let wake = NSCondition()
    private let ended = DispatchSemaphore(value: 0)
    private let configured: Mutex<[String]>
    /// How often the folders' states are looked at (a share gone away, a folder refused).
    static let folderLook = Duration.seconds(2)
    /// Hands the member's events to this host (let go at the stop: member and host hold each other).
    private let relay: EventRelay

    /// How often the cluster is read again for the status while the database answers (and at
    /// once when it goes away or comes back).
    static let refresh = Duration.seconds(5)

    private struct State {
        var database = ServiceStatus.ClusterState.connecting
        var since = Date()
        var reason: String?
        var server: String?
        var view: ClusterStatus?
        /// When `view` was read, and when it was last looked for (a look can fail).
        var read: Date?
        var looked: Date?
        /// The database went away since it was last read (or never was: read at once).
        var readNow = true
        var stopping = false
        var started = false
        /// The tasks held as last published.
        var shownHeld = 0
        /// The database has answered once since the start.
        var joined = false
    }

    /// How often the status is written again while the host holds tasks (what it holds changes
    /// photo by photo); idle, every `folderLook`.
    static let busyLook = Duration.milliseconds(500)

    /// A task was taken or let go: when the host starts or stops holding any, the status says
    /// so now (then every `busyLook` while it holds some).
    func tasksChanged() {
        let held = member.held.count
        guard state.withLock({ ($0.shownHeld == 0) != (held == 0) }) else { return }
        wake.lock(); wake.signal(); wake.unlock()
    }

    /// - Parameters:
    ///   - workers: photos this host finishes at once (shown to the other hosts).
    ///   - inboxes: the hot folders whose tasks this host takes.
    init(settings: ClusterSettings, version: String, workers: Int, inboxes: [String], log: Logger,
         board: StatusBoard, metrics: Metrics) {
        self.settings = settings
        configured = Mutex(inboxes)
        let identity = HostIdentity(name: settings.host ?? HostIdentity.machineName(), version: version, workers: workers)
        let log = log.with(["CLUSTER_HOST": identity.name])
        self.log = log
        self.board = board
        self.metrics = metrics
        let relay = EventRelay()
        self.relay = relay
        member = ClusterMember(conninfo: settings.database, identity: identity, inboxes: inboxes, lease: settings.lease,
                               events: { relay.forward($0) })
        var roleSettings = ClaimerRoles.Settings(conninfo: settings.database, host: identity.name, takeover: settings.claimerTakeover)
        roleSettings.lock = BatchLock.ownerText
        roles = ClaimerRoles(roleSettings)
        // No role until this host's own link answers (`handle(.connected)`).
        roles.setLinkUp(false)
        relay.target.withLock { $0 = self }
        roles.want(Set(inboxes))
    }

    /// Called (off the link's thread) each time the database answers again, and the first time.
    func onJoined(_ body: @escaping @Sendable () -> Void) { joined.withLock { $0 = body } }
    private let joined = Mutex<(@Sendable () -> Void)?>(nil)

    /// Called when a role is taken or lost (the loop looks at its folders again).
    func onRolesChanged(_ body: @escaping @Sendable () -> Void) {
        roles.onChange { [weak self] in
            self?.publish()
            body()
        }
    }

    /// The member's events reach the host once it is made (they come from the link's thread,
    /// which starts only with `start`).
    private final class EventRelay: Sendable {
        let target = Mutex<ClusterHost?>(nil)
        func forward(_ event: ClusterMember.Event) { target.withLock { $0 }?.handle(event) }
    }

    var name: String { member.identity.name }

    /// Joins: waits up to `wait` for the database's first answer (the first status then says
    /// how it went), then carries on either way — while the database does not answer, the
    /// daemon watches and claims as ever and takes no task.
    func start(waitingUpTo wait: Duration = .seconds(3)) {
        log.notice("joining the cluster as host \(name) (lease \(Config.words(settings.lease)), claimer takeover \(Config.words(settings.claimerTakeover)))")
        publish()
        let health = member.start(waitingUpTo: wait)
        roles.start(waitingUpTo: wait)
        if case .connecting = health {
            log.notice("cluster: the database has not answered within \(Config.words(wait)): joining as soon as it does")
        }
        state.withLock { $0.started = true }
        let thread = Thread { [self] in
            ProcessResources.nameThisThread("pf-cluster")
            run()
            ended.signal()
        }
        thread.name = "photofinish-cluster"
        thread.start()
    }

    /// Leaves: what this host still holds goes back to the other hosts at once (not counted as
    /// an attempt), the host is marked stopped, the links close — all within `wait`, whatever
    /// the database does: a thread waiting on a statement that does not answer is left to end
    /// at its own timeout (or with the process), what it held to the leases.
    func stop(waitingUpTo wait: Duration = .seconds(4)) {
        let (started, again) = state.withLock { s -> (Bool, Bool) in
            defer { s.stopping = true }
            return (s.started, s.stopping)
        }
        guard !again else { return }
        let deadline = ContinuousClock.now + wait
        wake.lock(); wake.signal(); wake.unlock()
        if started { _ = ended.wait(timeout: .now() + .milliseconds(Int(Self.left(deadline) / .milliseconds(1)) / 4)) }
        let held = member.held.count
        let up = member.health.isUp
        roles.stop(waitingUpTo: Self.left(deadline) / 3)
        member.stop(waitingUpTo: Self.left(deadline))
        relay.target.withLock { $0 = nil }
        if up {
            log.notice("left the cluster" + (held > 0 ? ": gave back the \(held) task\(held == 1 ? "" : "s") it held" : ""))
        } else {
            log.notice("left the cluster (its database did not answer: what it held is taken by the others once its leases expire)")
        }
    }

    /// The time left until `deadline` (zero once past).
    static func left(_ deadline: ContinuousClock.Instant) -> Duration { max(.zero, deadline - .now) }

    /// The hot folders of the config in force (a reload changes them): the host takes tasks of
    /// those among them whose share answers and that it watches (`takeable`).
    func setInboxes(_ inboxes: [String]) {
        configured.withLock { $0 = inboxes }
        followFolders()
    }

    /// Of `configured`, the folders this host can take tasks of now: not refused, not on a
    /// share that does not answer (a host whose share goes away gives its tasks of it back).
    private func takeable() -> [String] {
        configured.withLock { $0 }.filter { name in
            let kind = board.inbox(name)?.state?.kind
            return kind != .shareUnavailable && kind != .refused && kind != .stopped
        }
    }

    /// Takes tasks of the folders it can use now (what it held of the others goes back at once).
    private func followFolders() {
        let now = takeable(), before = member.inboxes
        if !state.withLock({ $0.stopping }) { roles.want(Set(now)) }
        guard now != before else { return }
        let dropped = before.filter { !now.contains($0) }, back = now.filter { !before.contains($0) }
        let given = member.held.filter { dropped.contains($0.key.inbox) }.count
        member.setInboxes(now)
        if !dropped.isEmpty, state.withLock({ $0.started }) {
            log.notice("cluster: takes no tasks of \(dropped.joined(separator: ", ")) while this host cannot use "
                       + (dropped.count == 1 ? "it" : "them") + (given > 0 ? "; gave back the \(given) it held" : ""))
        }
        if !back.isEmpty, state.withLock({ $0.started }) {
            log.notice("cluster: takes tasks of \(back.joined(separator: ", ")) again")
        }
    }

    // MARK: - The member's events (the link's or the keeper's thread)

    private func handle(_ event: ClusterMember.Event) {
        switch event {
        case .connected(let server):
            let (was, since, first) = state.withLock { s in
                defer {
                    s.database = ServiceStatus.ClusterState.reachable
                    s.since = Date()
                    s.reason = nil
                    s.server = server
                    s.readNow = true
                    s.joined = true
                }
                return (s.database, s.since, !s.joined)
            }
            roles.setLinkUp(true)
            if let body = joined.withLock({ $0 }) { DispatchQueue.global().async { body() } }
            let gone = Duration.seconds(Int64(Date().timeIntervalSince(since).rounded()))
            if first && was == ServiceStatus.ClusterState.unreachable {
                // Started without the database (a power cut: the photo hosts boot first).
                log.notice("cluster: joined as host \(name) (\(server)) once the database answered, after \(Config.words(gone)) alone: taking tasks and spreading the batches claimed meanwhile")
            } else if was == ServiceStatus.ClusterState.unreachable {
                log.notice("cluster: the database answers again after \(Config.words(gone)): taking tasks again (\(server))")
            } else if was == ServiceStatus.ClusterState.connecting {
                log.notice("cluster: joined as host \(name) (\(server))")
            }
        case .unreachable(let reason):
            roles.setLinkUp(false)
            let was = state.withLock { s in
                defer {
                    if s.database != ServiceStatus.ClusterState.unreachable { s.since = Date() }
                    s.database = ServiceStatus.ClusterState.unreachable
                    s.reason = reason
                    s.readNow = true
                }
                return s.database
            }
            if was != ServiceStatus.ClusterState.unreachable {
                log.warning("cluster: the database does not answer: \(reason); this host works alone until it answers (it claims and finishes photos itself; the tasks it holds are finished and recorded when it answers)")
            }
        case .migrated(let outcome):
            if outcome.from != outcome.to {
                log.notice("cluster: the schema was " + (outcome.from == 0 ? "made" : "migrated from version \(outcome.from)")
                           + " (version \(outcome.to))")
            }
        case .registered(let registration):
            if registration.released > 0 {
                log.notice("cluster: \(registration.released) task\(registration.released == 1 ? "" : "s") an earlier start of this host held are ready again")
            }
            if registration.looksAlive(lease: settings.lease, identity: member.identity) {
                log.warning("cluster: another daemon registered as host \(name) less than a lease ago and looks alive: give each daemon a cluster.host of its own, or they take each other's tasks back at every start")
            }
        case .lost(let tasks):
            log.warning("cluster: \(tasks.count) task\(tasks.count == 1 ? "" : "s") this host held were taken over by another host (its lease ran out): "
                        + tasks.prefix(5).map(\.key.description).joined(separator: ", "))
        case .refused(let error):
            log.error("cluster: not joining: \(error)")
        }
        wake.lock(); wake.signal(); wake.unlock()
        publish()
    }

    // MARK: - Reading the cluster for the status (its own thread)

    private func run() {
        while true {
            let (stopping, readNow, looked) = state.withLock { ($0.stopping, $0.readNow, $0.looked) }
            if stopping { return }
            let due = looked.map { $0.addingTimeInterval(Double(Self.refresh / .milliseconds(1)) / 1000) } ?? Date()
            if (readNow || due <= Date()) && member.health.isUp {
                let view = try? ClusterStatus.read(member.database)
                state.withLock { s in
                    if let view {
                        s.view = view
                        s.read = Date()
                    }
                    // Read, or looked and not read (a statement refused): the next look in `refresh`.
                    s.looked = Date()
                    s.readNow = false
                }
                publish()
                continue
            }
            followFolders()
            let every = member.held.isEmpty ? Self.folderLook : Self.busyLook
            let look = Date().addingTimeInterval(Double(every / .milliseconds(1)) / 1000)
            let until = member.health.isUp ? min(look, max(due, Date())) : look
            wake.lock()
            // Looked at under the lock its ringers take: a stop or an event just made is not missed.
            if !state.withLock({ $0.stopping || ($0.readNow && member.health.isUp) }) { _ = wake.wait(until: until) }
            wake.unlock()
            publish()  // the tasks held change between readings
        }
    }

    /// The state as the status, STATUS.txt and the metrics show it.
    private func publish() {
        let held = member.held.count
        let cluster = state.withLock { s in
            s.shownHeld = held
            var c = ServiceStatus.ClusterState(host: name, database: s.database, since: BatchID.timestamp(s.since),
                                               lease: Double(settings.lease / .milliseconds(1)) / 1000, held: held)
            c.reason = s.reason
            c.server = s.server
            c.view = s.view
            c.read = s.read.map(BatchID.timestamp)
            return c
        }
        board.setCluster(cluster)
        for name in configured.withLock({ $0 }) {
            let claimer = roles.holder(of: name), since = roles.holderSince(of: name).map(BatchID.timestamp)
            board.update(name) {
                if $0.claimer != claimer { $0.claimer = claimer }
                if $0.claimerSince != since { $0.claimerSince = since }
            }
        }
        metrics.setCluster(host: name, databaseUp: cluster.isReachable, held: held)
    }
}
