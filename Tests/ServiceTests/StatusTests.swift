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
        #expect(lines[1].hasPrefix("Updated 2026-") && lines[1].hasSuffix(" UTC"))
        #expect(lines.contains("Processing batch 20261129-150405-3f2a: 23 of 80 photos done."))
        #expect(lines.contains("1 more batch waiting its turn."))
        #expect(lines.contains("Pending in drop/: 3 files (1 still arriving, 2 ready for the next batch)."))
        #expect(lines.contains("Last batch: 20261129-140000-0001, finished 2026-11-29 14:00:09 UTC: 10 of 12 photos finished, 2 failed (see failed/20261129-140000-0001/)."))
    }

    @Test func idleAndStopped() {
        let idle = ServiceStatus.Inbox(name: "new", root: "/srv/new")
        let running = StatusText.render(idle, running: true, updated: updated)
        #expect(running.contains("Idle: no batch is being processed.\r\nPending in drop/: nothing.\r\n"))
        #expect(running.contains("Last batch: none since PhotoFinish started."))
        #expect(StatusText.render(idle, running: false, updated: updated).contains("PhotoFinish is stopped."))
    }
}
