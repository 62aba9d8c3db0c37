import Foundation
import Glibc
import Service
import System
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

    /// A status file left by a daemon that died, whose pid the kernel gave to another process
    /// since: the pid runs, but not the process that wrote it (its start time differs).
    @Test func aStatusWhosePidWasGivenToAnotherProcessIsNotRunning() throws {
        let pid = getpid()
        let started = try #require(ProcessResources.startTime(of: pid))
        var status = self.status(pid: pid, updated: "2026-12-05T10:00:00.000Z", state: .running, roots: ["/srv/a"])
        #expect(status.isRunning, "no start time said: taken at its pid's word, as before")
        status.started = started
        #expect(status.isRunning)
        status.started = started - 1
        #expect(!status.isRunning, "the pid is another process's now")
        // What is written is what is read back, start time and all.
        let data = try JSONEncoder().encode(status)
        #expect(try JSONDecoder().decode(ServiceStatus.self, from: data).started == started - 1)
        #expect(ProcessResources.startTime(of: 1) != nil && ProcessResources.startTime(of: -1) == nil)

        // A daemon starting on the same config takes the file over: it is no running process's.
        let dir = try TemporaryFolder.make("status-pid")
        defer { try? FileManager.default.removeItem(atPath: dir) }  // best effort: a temp folder
        let environment = ["RUNTIME_DIRECTORY": dir]
        let parent = getppid()
        let target = StatusFiles.target(for: .config("/etc/shop.json5"), environment: environment)
        var left = self.status(pid: parent, updated: "2026-12-05T10:00:00.000Z", state: .running, roots: ["/srv/a"])
        left.started = try #require(ProcessResources.startTime(of: parent)) + 1
        try left.write(to: target.path)
        #expect(StatusFiles.target(for: .config("/etc/shop.json5"), environment: environment).path == target.path)
        left.started! -= 1
        try left.write(to: target.path)
        #expect(StatusFiles.target(for: .config("/etc/shop.json5"), environment: environment).path == target.path.dropLast(5) + "-\(pid).json",
                "the process that wrote it runs: a file of its own")
    }
}
