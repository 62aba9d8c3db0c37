import Foundation
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
        #expect(files.fix.first?.hasPrefix("ulimit -n ") == true, "\(files.fix)")
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
        #expect(OpenFiles.shortage(folders: 500, work: work, limit: 256).hasPrefix(
            "500 hot folders and 2 photos in flight may need 616 open files, over the limit of 256: 140 of them are watched, the other 360 are refused"))
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
        #expect(lines.contains("It is tried again at every reload and rescan. Files dropped meanwhile wait in drop/."))
        let status = ServiceStatus(pid: 1, updated: "", state: .running, inboxes: [shop])
        #expect(status.summary == "shop: refused")
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
