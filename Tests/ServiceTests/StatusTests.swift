import Foundation
import HotFolders
import Service
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
        let status = ServiceStatus(pid: 1, updated: "", state: "running", inboxes: [shop, studio, idle])
        #expect(status.summary == "shop: processing 23 of 80; 2 pending · studio: idle, last batch 20261129-140000-0001 complete (12 of 12) · new: idle")
    }

    @Test func theStatusFileRoundTripsAndLivesInTheRuntimeDirectory() throws {
        #expect(ServiceStatus.defaultPath(environment: ["RUNTIME_DIRECTORY": "/run/photofinish"]) == "/run/photofinish/status.json")
        let dir = NSTemporaryDirectory() + "pf-status-\(UInt32.random(in: 0...UInt32.max))"
        let path = ServiceStatus.defaultPath(environment: ["RUNTIME_DIRECTORY": dir])
        let status = ServiceStatus(pid: 42, updated: "2026-11-29T15:00:00.000Z", state: "running",
                                   inboxes: [.init(name: "shop", root: "/srv/shop")])
        try status.write(to: path)
        #expect(try ServiceStatus.read(from: path) == status)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["status.json"])
    }
}
