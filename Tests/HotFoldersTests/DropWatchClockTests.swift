import Batches
import Foundation
import HotFolders
import Synchronization
import System
import Testing

/// A look is dated when its answer came (`DropWatch`'s clock), not when its turn began: on a
/// slow share a turn's looks take seconds, and a file looked at late in one turn and early in
/// the next must not count as having held still for the time between the turns' starts.
struct DropWatchClockTests {
    @Test func aLookIsDatedWhenItsAnswerCame() throws {
        let layout = HotFolderLayout(root: TemporaryFolder.path("dropclock"))
        try layout.create()
        try Data("photo".utf8).write(to: URL(fileURLWithPath: layout.drop + "/a.jpg"))
        // The caller's clock: what the looks of a turn read after their answers.
        let clock = Mutex(Duration.zero)
        let watch = DropWatch(inbox: "shop", layout: layout, rules: BatchRules(settle: .seconds(1), quiet: .seconds(60)),
                              pollInterval: .seconds(1), clock: { clock.withLock { $0 } }, log: Logger { _, _, _ in })
        watch.attach(nil, now: .zero)
        // The first turn begins at 0 s, and its look at a.jpg answers at 5 s (a slow share).
        clock.withLock { $0 = .seconds(5) }
        #expect(watch.turn(now: .zero, canClaim: true, inotify: nil) == nil)
        // 5.5 s: by the turn's start a.jpg held still 5.5 s, by its look only 0.5 s: not settled.
        clock.withLock { $0 = .milliseconds(5500) }
        #expect(watch.turn(now: .milliseconds(5500), canClaim: true, inotify: nil) == nil)
        #expect(watch.counts.settling == 1)
        // 6 s: a second after the look that saw it: settled and handed to the claim.
        clock.withLock { $0 = .seconds(6) }
        #expect(watch.turn(now: .seconds(6), canClaim: true, inotify: nil)?.names == ["a.jpg"])
    }
}
