import Batches
@testable import Cluster
import Foundation
import HotFolders
@testable import Service
import Testing

/// What a person reads: the `STATUS=` line, `status.json`, its place.
struct StatusTests {
    @Test func theStatusLineSaysWhatIsGoingOnPerHotFolder() {
        var shop = ServiceStatus.Inbox(name: "shop", root: "/srv/photofinish/shop")
        shop.processing = .init(batch: "20261129-150405-3f2a", done: 23, total: 80)
        shop.pending = 2
        var studio = ServiceStatus.Inbox(name: "studio", root: "/srv/photofinish/studio")
        studio.last = .init(batch: "20261129-140000-0001", status: "complete", items: 12, ok: 12, failed: 0,
                            finished: "2026-11-29T14:00:09.000Z")
        let idle = ServiceStatus.Inbox(name: "new", root: "/srv/photofinish/new")
        let status = ServiceStatus(pid: 1, updated: "", state: .running, inboxes: [shop, studio, idle])
        #expect(status.summary == "shop: processing 23 of 80 done; 2 pending · studio: idle, last batch 20261129-140000-0001 complete (12 of 12) · new: idle")
    }

    /// Beyond 20 hot folders the line names those that are not idle and counts the rest.
    @Test func theStatusLineOfManyHotFoldersCountsTheIdleOnes() {
        var inboxes = (0..<3000).map { ServiceStatus.Inbox(name: "f\($0)", root: "/srv/f\($0)") }
        inboxes[7].pending = 2
        inboxes[2999].state = .init(kind: .refused, why: "no drop/", since: "")
        let status = ServiceStatus(pid: 1, updated: "", state: .running, inboxes: inboxes)
        #expect(status.summary == "f7: 2 pending · f2999: refused · 2998 more hot folders idle")
        for i in 100..<130 { inboxes[i].queued = 1 }
        let busy = ServiceStatus(pid: 1, updated: "", state: .running, inboxes: inboxes).summary
        #expect(busy.hasSuffix(" · 2980 more hot folders") && busy.components(separatedBy: " · ").count == 21)
    }

    /// The status file is encoded a hot folder at a time, each kept until it changes: what is
    /// written decodes to the status, whatever changed since the last write.
    @Test func theStatusFileEncodesOnlyWhatChangedAndReadsBackWhole() throws {
        let dir = TemporaryFolder.path("status-encoding")
        defer { try? FileManager.default.removeItem(atPath: dir) }  // best effort: a temp folder
        let path = dir + "/daemon.json"
        var status = ServiceStatus(pid: 12, updated: "2026-12-05T10:00:00.000Z", state: .running, command: "daemon --config /x",
                                   config: "/x", inboxes: (0..<50).map { ServiceStatus.Inbox(name: "f\($0)", root: "/srv/f\($0)/\"q\"") })
        status.openFiles = OpenFiles.Budget(limit: 256, folders: 50, work: .init(claimThreads: 4, batchSlots: 4, workers: 2)).status(systemd: true)
        var encoding = ServiceStatus.Encoding()
        try status.write(to: path, with: &encoding)
        #expect(try ServiceStatus.read(from: path) == status)
        status.inboxes[3].pending = 4
        status.inboxes[49].state = .init(kind: .refused, why: "gone", fix: ["mkdir it"], since: "now")
        status.inboxes.remove(at: 10)
        status.inboxes.append(.init(name: "new", root: "/srv/new"))
        status.updated = "2026-12-05T10:00:01.000Z"
        try status.write(to: path, with: &encoding)
        #expect(try ServiceStatus.read(from: path) == status)
        // The cluster's view sorts before the hot folders and names each host's folders too: a
        // stopped host's are `[]`, the status's own are still where a reader looks for them.
        var cluster = ServiceStatus.ClusterState(host: "pf-c", database: ServiceStatus.ClusterState.reachable,
                                                 since: "2026-12-05T10:00:00.000Z", lease: 3)
        cluster.view = ClusterStatus(server: "PostgreSQL 15", schema: 3, schemaKnown: 3, history: [], hosts: [
            ClusterStatus.Host(name: "pf-b", pid: 2, version: "0.9.0", workers: 2, inboxes: [], seenAgo: 9, started: 0, stopped: true, tasks: []),
            ClusterStatus.Host(name: "pf-c", pid: 3, version: "0.9.0", workers: 2, inboxes: ["f3"], seenAgo: 0, started: 0, stopped: false, tasks: []),
        ], batches: [])
        status.cluster = cluster
        status.inboxes[3].claimer = "pf-c"
        try status.write(to: path, with: &encoding)
        #expect(try ServiceStatus.read(from: path) == status)
        var empty = status
        empty.inboxes = []
        try empty.write(to: path, with: &encoding)
        #expect(try ServiceStatus.read(from: path) == empty)
        #expect(try StatusFiles.Writer.read(from: path).pid == 12)
    }

    /// The status of a process that is gone, older than a day, none of whose hot folders is
    /// there any more, is removed when read; the others are kept.
    @Test func leftoverStatusesOfGoneProcessesAgeOut() throws {
        let dir = TemporaryFolder.path("status-leftovers")
        defer { try? FileManager.default.removeItem(atPath: dir) }  // best effort: a temp folder
        try FileManager.default.createDirectory(atPath: dir + "/kept", withIntermediateDirectories: true)
        let now = try #require(HumanTime.date(isoUTC: "2026-12-05T12:00:00Z"))
        func write(_ name: String, updated: String, state: ServiceStatus.State = .stopped, root: String) throws -> String {
            let path = dir + "/" + name + ".json"
            try ServiceStatus(pid: 999_999, updated: updated, state: state, inboxes: [.init(name: "f", root: root)]).write(to: path)
            return path
        }
        let gone = try write("gone", updated: "2026-12-03T12:00:00.000Z", root: dir + "/removed")
        let crashed = try write("crashed", updated: "2026-12-03T12:00:00.000Z", state: .running, root: dir + "/removed")
        let recent = try write("recent", updated: "2026-12-05T11:00:00.000Z", root: dir + "/removed")
        let there = try write("there", updated: "2026-12-01T12:00:00.000Z", root: dir + "/kept")
        let found = try [gone, crashed, recent, there].map { ($0, try ServiceStatus.read(from: $0)) }
        let kept = StatusFiles.removeLeftovers(found, now: now).map(\.path)
        #expect(kept == [recent, there])
        #expect(!FileManager.default.fileExists(atPath: gone) && !FileManager.default.fileExists(atPath: crashed))
        #expect(FileManager.default.fileExists(atPath: recent) && FileManager.default.fileExists(atPath: there))
    }

    @Test func eachProcessHasItsOwnStatusFileInTheRuntimeDirectory() throws {
        let dir = TemporaryFolder.path("status")
        defer { try? FileManager.default.removeItem(atPath: dir) }  // best effort: a temp folder
        let env = ["RUNTIME_DIRECTORY": dir, "XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(StatusFiles.directory(environment: env) == dir)
        // Its runtime folder alone: a test's daemons beside an installed service see only their own.
        #expect(StatusFiles.directories(environment: env) == [dir])
        #expect(StatusFiles.directories(environment: ["XDG_RUNTIME_DIR": "/run/user/1000"])
                == ["/run/photofinish", "/run/user/1000/photofinish"])
        let daemon = StatusFiles.target(for: .config("/etc/photofinish/photofinish.json5"), environment: env)
        let shop = StatusFiles.target(for: .root("/srv/photofinish/shop"), environment: env)
        let web = StatusFiles.target(for: .root("/srv/other/shop"), environment: env)
        #expect(daemon.command == "daemon --config /etc/photofinish/photofinish.json5")
        #expect(daemon.config == "/etc/photofinish/photofinish.json5" && shop.config == nil)
        #expect(shop.command == "watch /srv/photofinish/shop")
        #expect((daemon.path as NSString).lastPathComponent.hasPrefix("daemon-photofinish-"))
        #expect((shop.path as NSString).lastPathComponent.hasPrefix("watch-shop-"))
        #expect(Set([daemon.path, shop.path, web.path]).count == 3, "two folders of one name still differ")

        let status = ServiceStatus(pid: getpid(), updated: "2026-11-29T15:00:00.000Z", state: .running,
                                   command: shop.command, inboxes: [.init(name: "shop", root: "/srv/photofinish/shop")])
        try status.write(to: shop.path)
        #expect(try ServiceStatus.read(from: shop.path) == status)
        #expect(StatusFiles.all(environment: env).map(\.status) == [status])
        // Another running process on the same folder writes beside it, never over it.
        let second = StatusFiles.target(for: .root("/srv/photofinish/shop"), environment: env)
        #expect(second.path == shop.path, "our own file is ours to rewrite")
        var other = status
        other.pid = getppid()
        try other.write(to: shop.path)
        let beside = StatusFiles.target(for: .root("/srv/photofinish/shop"), environment: env)
        #expect(beside.path == shop.path.replacingOccurrences(of: ".json", with: "-\(getpid()).json"))
    }
}

/// `<root>/STATUS.txt`: the hot folder in words, CRLF, ASCII.
struct StatusTextTests {
    let updated = Date(timeIntervalSince1970: 1_796_000_000)  // 2026-11-29 …

    @Test func processingPendingAndTheLastBatchInWords() {
        var shop = ServiceStatus.Inbox(name: "shop", root: "/srv/shop")
        shop.processing = .init(batch: "20261129-150405-3f2a", done: 23, total: 80)
        shop.settling = 1
        shop.pending = 2
        shop.queued = 1
        shop.last = .init(batch: "20261129-140000-0001", status: "partial", items: 12, ok: 10, failed: 2,
                          finished: "2026-11-29T14:00:09.250Z")
        let text = StatusText.render(shop, running: true, updated: updated)
        #expect(text.hasSuffix("\r\n") && !text.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
        #expect(text.unicodeScalars.allSatisfy { $0.isASCII })
        let lines = text.components(separatedBy: "\r\n")
        #expect(lines[0] == "PhotoFinish - hot folder \"shop\"")
        // Local time with its offset from UTC ("Updated 2026-11-29 16:04:05 +01:00").
        #expect(lines[1] == "Updated " + HumanTime.words(updated))
        #expect(lines[1].range(of: #"^Updated 2026-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d$"#, options: .regularExpression) != nil, "\(lines[1])")
        #expect(lines.contains("Processing batch 20261129-150405-3f2a: 23 of 80 photos done."))
        #expect(lines.contains("1 more batch waiting its turn."))
        #expect(lines.contains("Pending in drop/: 3 files (1 still arriving, 2 ready for the next batch)."))
        #expect(lines.contains("Last batch: 20261129-140000-0001, finished \(HumanTime.words(isoUTC: "2026-11-29T14:00:09Z")): 10 of 12 photos finished, 2 failed (see failed/20261129-140000-0001/)."))
    }

    /// A batch on its way is counted alike everywhere: the open batch as its photos finish
    /// ("4 of 6 done, 2 in progress"), then the run, then its last stage.
    @Test func progressIsSaidAlikeEverywhere() {
        var shop = ServiceStatus.Inbox(name: "shop", root: "/srv/shop")
        shop.open = .init(batch: "20261205-021627-05c3", done: 4, total: 6, inProgress: 2, stage: .open)
        var status = ServiceStatus(pid: 1, updated: "", state: .running, inboxes: [shop])
        #expect(status.summary == "shop: open batch 4 of 6 done, 2 in progress")
        var lines = StatusText.render(shop, running: true, updated: Date()).components(separatedBy: "\r\n")
        #expect(lines.contains("Batch 20261205-021627-05c3 is open (more photos may join): 4 of 6 photos done, 2 in progress."), "\(lines)")
        shop.open = nil
        shop.processing = .init(batch: "20261205-021627-05c3", done: 6, total: 6, failed: 1, stage: .outputs, makes: ["story"])
        status.inboxes = [shop]
        #expect(status.summary == "shop: processing 6 of 6 done (1 failed), making the report and story")
        lines = StatusText.render(shop, running: true, updated: Date()).components(separatedBy: "\r\n")
        #expect(lines.contains("Processing batch 20261205-021627-05c3: 6 of 6 photos done (1 failed), making the report and story."), "\(lines)")
        // A status file written before there were stages still reads.
        let old = #"{"batch":"b","done":2,"total":3}"#
        let decoded = try? JSONDecoder().decode(ServiceStatus.Progress.self, from: Data(old.utf8))
        #expect(decoded?.words == "2 of 3 done")
        // And one a newer version wrote, with a stage this one does not know: kept as written.
        let newer = #"{"batch":"b","done":3,"total":3,"stage":"delivering"}"#
        let read = try? JSONDecoder().decode(ServiceStatus.Progress.self, from: Data(newer.utf8))
        #expect(read?.stage == .other("delivering") && read?.words == "3 of 3 done")
        #expect(read.flatMap { try? JSONEncoder().encode($0) }.map { String(decoding: $0, as: UTF8.self).contains(#""stage":"delivering""#) } == true)
    }

    @Test func idleAndStopped() {
        let idle = ServiceStatus.Inbox(name: "new", root: "/srv/new")
        let running = StatusText.render(idle, running: true, updated: updated)
        #expect(running.contains("Idle: no batch is being processed.\r\nPending in drop/: nothing.\r\n"))
        #expect(running.contains("Last batch: none since PhotoFinish started."))
        #expect(StatusText.render(idle, running: false, updated: updated).contains("PhotoFinish is stopped."))
    }

    @Test func sharesAndWhatNeedsAttentionInPlainASCII() {
        var shop = ServiceStatus.Inbox(name: "shop", root: "/srv/shop")
        shop.watching = "inotify + polling every 2 s (nfs)"
        shop.refused = ["caf\\xE9.jpg in drop/ cannot be taken: Permission denied"]
        shop.unfiled = ["20261129-150405-3f2a": ["été.jpg could not be filed (Read-only file system); it waits in .work/20261129-150405-3f2a/src/"]]
        let text = StatusText.render(shop, running: true, updated: updated)
        #expect(text.unicodeScalars.allSatisfy { $0.isASCII })
        let lines = text.components(separatedBy: "\r\n")
        #expect(lines.contains("drop/ is checked by polling every 2 s (nfs): files written there are seen within that time."))
        #expect(lines.contains("Needs attention (2 files):"))
        #expect(lines.contains("- caf\\xE9.jpg in drop/ cannot be taken: Permission denied"))
        #expect(lines.contains("- \\xC3\\xA9t\\xC3\\xA9.jpg could not be filed (Read-only file system); it waits in .work/20261129-150405-3f2a/src/"))
    }

    /// A polled hot folder's STATUS.txt says why it is polled: inotify's watches (the sentence
    /// and the fix `photofinish status` says, from the same budget), a share, or a watch the
    /// kernel refused although the budget had room.
    @Test func aPolledHotFolderSaysWhy() {
        let work = OpenFiles.Work(claimThreads: 4, batchSlots: 4, workers: 2)
        let said = OpenFiles.Budget(limit: 20_000, folders: 10_000, work: work,
                                    inotify: .init(watches: 8192, instances: 128), pollEvery: "2s").status(systemd: true)
        var far = ServiceStatus.Inbox(name: "f09999", root: "/srv/f09999")
        far.polling = true
        far.watching = "polling every 2s (no inotify watch)"
        let lines = StatusText.render(far, running: true, updated: updated, openFiles: said).components(separatedBy: "\r\n")
        let why = try? #require(lines.firstIndex(of: "Why: " + (said.inotify ?? "?") + "."))
        #expect(why.map { Array(lines[($0 + 1)...].prefix(3)) } == ["To fix it:"] + (said.inotifyFix ?? []).map { "  " + $0 })
        #expect(said.inotify?.hasSuffix("5904 hot folders are polled every 2s instead") == true)
        #expect(!StatusText.render(far, running: false, updated: updated, openFiles: said).contains("Why:"))
        // Polled although the budget had room: what is known, and the fix in general words.
        #expect(StatusText.render(far, running: true, updated: updated).contains("Why: inotify gave no watch for drop/"))
        var share = ServiceStatus.Inbox(name: "shop", root: "/srv/shop")
        share.watching = "inotify + polling every 2s (nfs)"
        #expect(StatusText.render(share, running: true, updated: updated, openFiles: said)
            .contains("Why: drop/ is on a share, and inotify sees only this machine's writes there"))
        var watched = ServiceStatus.Inbox(name: "f00001", root: "/srv/f00001")
        watched.watching = "inotify"
        #expect(!StatusText.render(watched, running: true, updated: updated, openFiles: said).contains("Why:"))
        // The words changing (a reload) is a change of each polled folder's STATUS.txt.
        let before = StatusText.Writer.Written(inbox: far, running: true, polling: StatusText.pollingLines(far, said))
        #expect(before != StatusText.Writer.Written(inbox: far, running: true, polling: StatusText.pollingLines(far, nil)))
    }

    @Test func whatIsNeverTakenAndAFailedReloadAreListed() {
        var shop = ServiceStatus.Inbox(name: "shop", root: "/srv/shop")
        shop.neverTaken = (0..<25).map { String(format: "f%02d.part in drop/ is never taken: its name is ignored", $0) }
        let failed = ServiceStatus.ReloadFailure(at: "2026-11-29T15:04:05.000Z",
                                                 errors: ["photofinish.json5:3:14: settle: must be a duration"])
        let text = StatusText.render(shop, running: true, updated: updated, reloadFailed: failed)
        let lines = text.components(separatedBy: "\r\n")
        #expect(lines.contains("The configuration was changed, but the reload at \(HumanTime.words(isoUTC: failed.at)) failed:"))
        #expect(lines.contains("- photofinish.json5:3:14: settle: must be a duration"))
        #expect(lines.contains("PhotoFinish still runs with the configuration it had (photofinish check says more)."))
        #expect(lines.contains("Never taken from drop/ (25 items):"))
        #expect(lines.contains("- f00.part in drop/ is never taken: its name is ignored"))
        #expect(lines.contains("- f19.part in drop/ is never taken: its name is ignored"))
        #expect(!lines.contains("- f20.part in drop/ is never taken: its name is ignored"))
        #expect(lines.contains("- and 5 more (photofinish status lists them all)"))
        // A stopped daemon runs no configuration: no reload line.
        #expect(!StatusText.render(shop, running: false, updated: updated, reloadFailed: failed).contains("reload"))
    }

    @Test func aStatusTextWriteThatFailsIsTriedAgainEverySecondUntilItWorks() throws {
        let root = TemporaryFolder.path("statustext")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        func chattr(_ flag: String) -> Bool {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
            p.arguments = [flag, root]
            p.standardError = FileHandle.nullDevice
            guard (try? p.run()) != nil else { return false }
            p.waitUntilExit()
            return p.terminationStatus == 0
        }
        // An immutable folder refuses the new file as a full disk would (even to root).
        guard getuid() == 0, chattr("+i") else {
            print("skipped: needs root and chattr on a file system with the immutable flag")
            return
        }
        defer { _ = chattr("-i") }
        let status = ServiceStatus(pid: 1, updated: "", state: .running, inboxes: [ServiceStatus.Inbox(name: "shop", root: root)])
        var writer = StatusText.Writer()
        let file = root + "/STATUS.txt"
        writer.update(status, now: .seconds(10), log: .silent)
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(chattr("-i"))  // room again
        writer.update(status, now: .milliseconds(10_500), log: .silent)
        #expect(!FileManager.default.fileExists(atPath: file), "not before the second is up")
        writer.update(status, now: .milliseconds(11_100), log: .silent)
        #expect(FileManager.default.fileExists(atPath: file), "written once it can be, with no change of state needed")
    }
}
