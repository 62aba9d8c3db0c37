import HotFolders
import System
import Testing

/// `photofinish explain` in words, from plain facts.
struct ExplainTests {
    func words(_ f: Explain.Facts) -> [String] { Explain.words(f, settle: .seconds(2), quiet: .milliseconds(5500)) }

    @Test func aFileInDropIsSettlingThenWaitingForItsBatch() {
        var f = Explain.Facts(name: "IMG_1.jpg", root: "/srv/shop")
        f.drop = .waiting(bytes: 2048, age: 0.4)
        #expect(words(f) == ["IMG_1.jpg is in drop/ (2.0 KiB), settling: it changed 0.4 s ago and joins the pending batch once it has held still for 2 s."])
        f.drop = .waiting(bytes: 2048, age: 600)
        #expect(words(f)[0].hasPrefix("IMG_1.jpg is in drop/ (2.0 KiB), waiting for its batch: a batch closes 5.5 s after the last arrival."))
        #expect(f.isKnown)
        #expect(!Explain.Facts(name: "x.jpg", root: "/srv/shop").isKnown)
    }

    @Test func filesThatAreNeverTakenSayWhy() {
        var f = Explain.Facts(name: "a.jpg", root: "/r")
        f.drop = .hardLinked(links: 2)
        #expect(words(f)[0].contains("has 2 hard links: it is never taken"))
        f.drop = .notRegular(kind: "a symbolic link")
        #expect(words(f)[0].contains("is a symbolic link, not a regular file"))
        f.drop = .ignoredName
        #expect(words(f)[0].contains("its name is ignored"))
    }

    @Test func claimedFinishedAndFailedNewestFirst() {
        var f = Explain.Facts(name: "a.jpg", root: "/r")
        f.claimed = [.init(batch: "20261129-120000-0003", position: 2, count: 5, done: true, manifest: true)]
        f.finished = [
            .init(batch: "20261129-110000-0002", finished: "2026-11-29 11:00:09 UTC", status: "failed", outputs: [],
                  original: "failed/20261129-110000-0002/a.jpg", error: "corrupt-image: JPEG data ends early", source: "a.jpg"),
            .init(batch: "20261129-100000-0001", finished: "2026-11-29 10:00:09 UTC", status: "ok",
                  outputs: ["out/20261129-100000-0001/a.jpg", "out/20261129-100000-0001/a-1x1.jpg"],
                  original: "originals/20261129-100000-0001/a.jpg", error: nil, source: "b.jpg", byContent: true),
        ]
        #expect(words(f) == [
            "a.jpg is finished in batch 20261129-120000-0003 (photo 2 of 5); the batch is still being finished in .work/20261129-120000-0003/ and appears in out/20261129-120000-0003/ when done.",
            "a.jpg failed at 2026-11-29 11:00:09 UTC in batch 20261129-110000-0002: corrupt-image: JPEG data ends early; the file is in failed/20261129-110000-0002/a.jpg.",
            "The same photo, dropped as b.jpg, was finished at 2026-11-29 10:00:09 UTC in batch 20261129-100000-0001 into out/20261129-100000-0001/a.jpg, out/20261129-100000-0001/a-1x1.jpg; the original is in originals/20261129-100000-0001/a.jpg.",
        ])
    }

    @Test func aPathIsMatchedByWhereItLies() {
        let root = "/srv/shop"
        #expect(Explain.place(of: "/srv/shop/drop/x.jpg", in: root) == .drop)
        #expect(Explain.place(of: "/srv/shop/drop/wedding/x.jpg", in: root) == .insideDropFolder("wedding"))
        #expect(Explain.place(of: "/srv/shop/drop/wedding/day 2/x.jpg", in: root + "/") == .insideDropFolder("wedding/day 2"))
        #expect(Explain.place(of: "/srv/shop/failed/20261129-120000-abcd/x.jpg", in: root) == .filed(kind: "failed", batch: "20261129-120000-abcd"))
        #expect(Explain.place(of: "/srv/shop/originals/20261129-120000-abcd/x.jpg", in: root) == .filed(kind: "originals", batch: "20261129-120000-abcd"))
        #expect(Explain.place(of: "/srv/shop/out/20261129-120000-abcd/x-1x1.jpg", in: root) == .output(batch: "20261129-120000-abcd"))
        #expect(Explain.place(of: "/srv/shop/out/latest/x.jpg", in: root) == nil)
        #expect(Explain.place(of: "/srv/shopping/drop/x.jpg", in: root) == nil)
        #expect(Explain.place(of: "/home/me/x.jpg", in: root) == nil)
        #expect(Explain.place(of: "/srv/shop/x.jpg", in: root) == nil)
    }

    @Test func aFileInAFolderInDropIsNeverTakenAndAnOutputNamesItsPhoto() {
        var f = Explain.Facts(name: "Portrait_6.jpg", root: "/r")
        f.insideDropFolder = "wedding"
        #expect(f.isKnown)
        #expect(words(f) == ["Portrait_6.jpg is in drop/wedding/, a folder inside drop/: it is never taken (folders in drop/ are not descended into). Move it into drop/ itself to have it finished."])
        var o = Explain.Facts(name: "a-1x1.jpg", root: "/r")
        o.outputOf = [.init(batch: "20261129-100000-0001", finished: "2026-11-29 10:00:09 UTC", status: "ok", outputs: [],
                            original: "originals/20261129-100000-0001/a.jpg", error: nil, source: "a.jpg")]
        #expect(words(o) == ["a-1x1.jpg is an output of a.jpg, finished at 2026-11-29 10:00:09 UTC in batch 20261129-100000-0001; the original is in originals/20261129-100000-0001/a.jpg."])
    }
}
