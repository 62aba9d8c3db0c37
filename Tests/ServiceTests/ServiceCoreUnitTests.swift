import Foundation
import Batches
import HotFolders
@testable import Service
import System
import Testing

/// The service core's pure parts: folder problems in words, the deadlines heap, the open-file
/// budget, STATUS.txt for a folder's state.
struct FolderProblemTests {
    let layout = HotFolderLayout(root: "/srv/photofinish/shop")

    @Test func eachCauseHasItsFix() {
        let owner = FolderProblem.owner
        let perm = FolderProblem.refusal(SystemError("change the permissions of", layout.work, errno: EPERM), layout: layout, systemd: true)
        #expect(perm.why == "cannot change the permissions of /srv/photofinish/shop/.work: Operation not permitted")
        #expect(perm.fix == ["chown -R \(owner) /srv/photofinish/shop", "systemctl reload photofinish"])
        let outside = FolderProblem.refusal(SystemError("make the folder", layout.root, errno: EROFS), layout: layout, systemd: true)
        #expect(outside.why.contains("outside the service's ReadWritePaths="))
        #expect(outside.fix.first == "systemctl edit photofinish, and add: [Service] ReadWritePaths=/srv/photofinish/shop")
        #expect(outside.fix.last?.contains("restart") == true, "a drop-in needs a restart")
        let missing = FolderProblem.refusal(SystemError("make the folder", "/nonexistent-pf/shop", errno: ENOENT),
                                            layout: HotFolderLayout(root: "/nonexistent-pf/shop"), systemd: false)
        #expect(missing.why == "/nonexistent-pf/shop does not exist")
        #expect(missing.fix.first == "photofinish init /nonexistent-pf/shop")
        let files = FolderProblem.refusal(SystemError("open", layout.drop, errno: EMFILE), layout: layout, systemd: false)
        #expect(files.fix.first?.contains("ulimit -n ") == true, "\(files.fix)")
        let filesUnderSystemd = FolderProblem.refusal(SystemError("open", layout.drop, errno: EMFILE), layout: layout, systemd: true)
        #expect(filesUnderSystemd.fix.first?.hasPrefix("systemctl edit photofinish, and add: [Service] LimitNOFILE=") == true)
        #expect(filesUnderSystemd.fix.last?.hasPrefix("systemctl restart photofinish") == true, "a reload cannot raise the limit")
    }
}

struct OpenFilesTests {
    @Test func theFoldersGetWhatTheWorkInFlightLeaves() {
        let work = OpenFiles.Work(claimThreads: 4, batchSlots: 4, workers: 2)
        #expect(work.fixed == 64 + 24 + 16 + 8)
        #expect(work.need(folders: 30) == 146)
        #expect(work.room(limit: 256) == 140)
        #expect(work.room(limit: 64) == 0)
        #expect(work.room(limit: 20_000) == 19_884, "10,000 hot folders fit in the 20,000 of a container's limit")
        #expect(work.lockRoom(limit: 256, folders: 140) == 4)
    }

    /// One computation, one message: every folder beyond the limit is told the same numbers and
    /// the same fix, and the fix fits them all.
    @Test func theBudgetSaysOneNumberAndTheFixThatFitsAll() {
        let work = OpenFiles.Work(claimThreads: 4, batchSlots: 4, workers: 2)
        let budget = OpenFiles.Budget(limit: 256, folders: 2000, work: work)
        #expect(budget.need == 2116 && budget.watched == 140 && budget.refused == 1860 && !budget.fits)
        #expect(budget.wanted == 3072, "2,116 and a quarter to spare, rounded up to a multiple of 1,024")
        #expect(budget.why == "the open-file limit (256) leaves room for 140 of 2000 hot folders (one descriptor each, 116 for the service and 2 photos in flight)")
        #expect(budget.fix(systemd: true) == ["systemctl edit photofinish, and add: [Service] LimitNOFILE=3072",
                                              "systemctl restart photofinish (a reload cannot raise the limit of a running process)"])
        #expect(budget.fix(systemd: false).first?.contains("ulimit -n 3072") == true)
        #expect(budget.shortage(systemd: true) == budget.why + ": 1860 hot folders are not watched; to fix it: "
                + "systemctl edit photofinish, and add: [Service] LimitNOFILE=3072; then systemctl restart photofinish (a reload cannot raise the limit of a running process)")
        // The fix applied: all of them fit, and a run with it asks for nothing more.
        let fixed = OpenFiles.Budget(limit: budget.wanted, folders: 2000, work: work)
        #expect(fixed.fits && fixed.watched == 2000 && fixed.shortage(systemd: true) == nil && fixed.wanted == budget.wanted)
        // What the status file, `status`, `check` and the metrics say: the same numbers and words.
        let said = budget.status(systemd: true)
        #expect(said == ServiceStatus.OpenFiles(limit: 256, hotFolders: 2000, watched: 140, refused: 1860, wanted: 3072,
                                                why: budget.why, fix: budget.fix(systemd: true)))
        #expect(budget.problem(systemd: true) == FolderProblem(why: said.why, fix: said.fix))
        // At 10,000 folders behind the old default of 1,024: one number for all 9,0xx refused.
        let big = OpenFiles.Budget(limit: 1024, folders: 10_000, work: .init(claimThreads: 4, batchSlots: 6, workers: 4))
        #expect(big.watched == 1024 - 64 - 24 - 24 - 16 - 6 && big.refused == 10_000 - big.watched)
        #expect(big.wanted == 13_312 && OpenFiles.Budget(limit: big.wanted, folders: 10_000, work: big.work).fits)
        #expect(OpenFiles.Budget(limit: 64, folders: 3, work: work).watched == 0)
        #expect(OpenFiles.Budget(limit: 4096, folders: 0, work: work).wanted == 1024, "never below the old default")
        #expect(PrometheusText.escape("f0140") == "f0140" && PrometheusText.escape("a\"b\\c\nd") == "a\\\"b\\\\c\\nd")
        #expect(OpenFiles.doubled(256) == 4096 && OpenFiles.doubled(3072) == 6144 && OpenFiles.doubled(nil) == 4096)
    }

    /// inotify's limits in the same budget and the same message: how many of the folders the
    /// open-file limit lets in get their two watches, the sysctl that fits them all, and what
    /// is done with the others (polled).
    @Test func inotifyWatchesAreInTheSameBudget() {
        let work = OpenFiles.Work(claimThreads: 4, batchSlots: 4, workers: 2)
        let budget = OpenFiles.Budget(limit: 20_000, folders: 10_000, work: work,
                                      inotify: .init(watches: 8192, instances: 128), pollEvery: "2s")
        #expect(budget.fits && budget.watched == 10_000)
        #expect(budget.inotifyRoom == 4096 && budget.polled == 5904 && budget.watchesWanted == 25_600)
        #expect(budget.inotifyWhy == "fs.inotify.max_user_watches (8192) leaves room for 4096 of 10000 hot folders "
                + "(two inotify watches each, fewer when other programs of this user watch files too)")
        #expect(budget.inotifyFix(systemd: true) == [
            "sysctl -w fs.inotify.max_user_watches=25600, and put fs.inotify.max_user_watches=25600 in /etc/sysctl.d/90-photofinish.conf (kept after a reboot)",
            "systemctl restart photofinish (a folder polled now is watched from its next start)"])
        #expect(budget.shortage(systemd: true) == budget.inotifyWhy + ": 5904 hot folders are polled every 2s instead; to fix it: "
                + budget.inotifyFix(systemd: true).joined(separator: "; then "))
        let said = budget.status(systemd: true)
        #expect(said.refused == 0 && said.polled == 5904 && said.watchesLimit == 8192 && said.watchesWanted == 25_600)
        #expect(said.summary.hasSuffix("5904 hot folders are polled every 2s instead"))
        // Both short: the folders refused for want of descriptors need no watches.
        let both = OpenFiles.Budget(limit: 256, folders: 2000, work: work, inotify: .init(watches: 200, instances: 128), pollEvery: "2s")
        #expect(both.watched == 140 && both.inotifyRoom == 100 && both.polled == 40 && both.watchesWanted == 8192)
        #expect(both.shortage(systemd: false)?.contains("1860 hot folders are not watched") == true
                && both.shortage(systemd: false)?.contains("40 hot folders are polled every 2s instead") == true)
        // Room for all: nothing said; the fix applied fits them all.
        let fixed = OpenFiles.Budget(limit: 20_000, folders: 10_000, work: work,
                                     inotify: .init(watches: budget.watchesWanted, instances: 128), pollEvery: "2s")
        #expect(fixed.polled == 0 && fixed.shortage(systemd: true) == nil && fixed.status(systemd: true).polled == 0)
        // No inotify instance at all (max_user_instances taken by this user's other programs):
        // every folder is polled, and the fix is that sysctl.
        let none = OpenFiles.Budget(limit: 20_000, folders: 30, work: work, inotify: .init(watches: 8192, instances: 128),
                                    pollEvery: "2s", hasInstance: false)
        #expect(none.polled == 30 && none.inotifyRoom == 0)
        #expect(none.inotifyWhy == "no inotify instance could be made (fs.inotify.max_user_instances, 128, are all taken by this user's programs)")
        #expect(none.inotifyFix(systemd: false).first == "sysctl -w fs.inotify.max_user_instances=256, and put fs.inotify.max_user_instances=256 in /etc/sysctl.d/90-photofinish.conf (kept after a reboot)")
    }
}

struct DeadlinesTests {
    @Test func theEarliestComesFirstAndASecondSettingReplacesTheFirst() {
        var d = Deadlines<String>()
        #expect(d.next() == nil)
        d.set("a", at: .seconds(5))
        d.set("b", at: .seconds(2))
        d.set("c", at: .seconds(9))
        d.set("a", at: .seconds(1))
        d.set("c", at: nil)
        #expect(d.next() == .seconds(1))
        #expect(d.due(at: .seconds(1)) == ["a"])
        #expect(d.due(at: .seconds(4)) == ["b"])
        #expect(d.due(at: .seconds(100)).isEmpty, "a's old deadline and c are gone")
        #expect(d.next() == nil)
        // Many settings of one key leave one live deadline.
        for i in 0..<10_000 { d.set("x", at: .milliseconds(i)) }
        #expect(d.next() == .milliseconds(9999))
        #expect(d.due(at: .seconds(100)) == ["x"])
    }
}

struct FolderStateTextTests {
    let updated = Date(timeIntervalSince1970: 1_796_000_000)

    @Test func aRefusedFolderSaysWhyAndTheFix() {
        var shop = ServiceStatus.Inbox(name: "shop", root: "/srv/shop")
        shop.state = .init(kind: .refused, why: "cannot change the permissions of /srv/shop/.work: Operation not permitted",
                           fix: ["chown -R photofinish:photofinish /srv/shop", "systemctl reload photofinish"])
        let lines = StatusText.render(shop, running: true, updated: updated).components(separatedBy: "\r\n")
        #expect(lines.contains("PhotoFinish cannot use this hot folder: cannot change the permissions of /srv/shop/.work: Operation not permitted."))
        #expect(lines.contains("To fix it:"))
        #expect(lines.contains("  chown -R photofinish:photofinish /srv/shop"))
        #expect(lines.contains("Not watched: nothing is taken from drop/ until this hot folder can be used."), "drop/ not looked at")
        #expect(!lines.contains { $0.hasPrefix("Idle") || $0.hasPrefix("Pending in drop/") }, "a refused folder's counts say nothing")
        let status = ServiceStatus(pid: 1, updated: "", state: .running, inboxes: [shop])
        #expect(status.summary == "shop: refused")
        // A photo waits in its drop/: said, and why it is not taken.
        shop.waiting = 1
        #expect(StatusText.render(shop, running: true, updated: updated)
            .contains("\r\nWaiting in drop/: 1 file, not taken until this hot folder can be used (see above).\r\n"))
        shop.waiting = 0
        #expect(StatusText.render(shop, running: true, updated: updated).contains("\r\nWaiting in drop/: nothing."))
    }

    @Test func aLowSpaceFolderSaysItsPendingFilesWait() {
        var shop = ServiceStatus.Inbox(name: "shop", root: "/srv/shop")
        shop.state = .init(kind: .lowSpace, why: "112 MB free, below minFreeSpace (1 GB)", fix: ["free space on /srv"])
        shop.pending = 2
        let text = StatusText.render(shop, running: true, updated: updated)
        #expect(text.contains("\r\nNothing new is taken from drop/: 112 MB free, below minFreeSpace (1 GB).\r\n"))
        #expect(text.contains("\r\nPending in drop/: 2 files (2 ready for the next batch), not taken until there is room (see above).\r\n"))
    }

    /// The time printed is the time of writing to the nearest second, not cut down to it.
    @Test func updatedIsTheTimeOfWritingToTheNearestSecond() {
        let shop = ServiceStatus.Inbox(name: "shop", root: "/srv/shop")
        let late = Date(timeIntervalSince1970: 1_796_000_000.9)
        #expect(StatusText.render(shop, running: true, updated: late).contains("\r\nUpdated \(HumanTime.words(Date(timeIntervalSince1970: 1_796_000_001)))\r\n"))
        let early = Date(timeIntervalSince1970: 1_796_000_000.2)
        #expect(StatusText.render(shop, running: true, updated: early).contains("\r\nUpdated \(HumanTime.words(Date(timeIntervalSince1970: 1_796_000_000)))\r\n"))
    }

    @Test func photosParkedInWorkArePending() {
        var shop = ServiceStatus.Inbox(name: "shop", root: "/srv/shop")
        shop.parked = 6
        #expect(StatusText.render(shop, running: false, updated: updated)
            .contains("Claimed and waiting in .work/: 6 photos, finished when PhotoFinish starts again."))
        #expect(StatusText.render(shop, running: true, updated: updated).contains("Claimed and waiting in .work/: 6 photos, finished in turn."))
        #expect(ServiceStatus(pid: 1, updated: "", state: .running, inboxes: [shop]).summary == "shop: 6 pending")
    }

    /// A STATUS.txt that cannot be written is tried again after 1, 2, 4 … seconds, not every second.
    @Test func failedWritesBackOff() throws {
        let root = "/nonexistent-pf-\(UInt32.random(in: 0...UInt32.max))/shop"
        let status = ServiceStatus(pid: 1, updated: "", state: .running, inboxes: [ServiceStatus.Inbox(name: "shop", root: root)])
        var writer = StatusText.Writer()
        #expect(writer.update(status, now: .seconds(10), log: .silent) == .seconds(11))
        #expect(writer.update(status, only: [], now: .seconds(11), log: .silent) == .seconds(13))
        #expect(writer.update(status, only: [], now: .seconds(12), log: .silent) == .seconds(13), "held until its retry")
        #expect(writer.update(status, only: [], now: .seconds(13), log: .silent) == .seconds(17))
    }
}
