import Service
import Testing

/// Which stopped processes `status` still speaks of: a hot folder no running process watches,
/// once, from its newest status.
struct StatusFilesTests {
    func status(pid: Int32, updated: String, state: ServiceStatus.State = .stopped, roots: [String]) -> ServiceStatus {
        ServiceStatus(pid: pid, updated: updated, state: state, command: "watch x",
                      inboxes: roots.map { ServiceStatus.Inbox(name: "f", root: $0) })
    }

    @Test func aFolderNoOneWatchesIsShownOnceFromItsNewestStatus() {
        let stopped = [
            status(pid: 1, updated: "2026-11-01T10:00:00.000Z", roots: ["/srv/a", "/srv/b"]),
            status(pid: 2, updated: "2026-11-20T10:00:00.000Z", roots: ["/srv/a/"]),
            status(pid: 3, updated: "2026-11-10T10:00:00.000Z", roots: ["/srv/c"]),
        ]
        let running = [status(pid: 4, updated: "2026-11-30T10:00:00.000Z", state: .running, roots: ["/srv/c"])]
        let last = StatusFiles.lastStates(of: stopped, watchedBy: running)
        #expect(last.map { "\($0.inbox.root) \($0.status.pid)" } == ["/srv/a/ 2", "/srv/b 1"])
    }
}
