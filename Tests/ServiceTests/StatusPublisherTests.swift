import Dispatch
import Foundation
@testable import Service
import Synchronization
import Testing

/// The one writer of the status: what `ready()` asks for is written even when it comes while
/// a publish is under way.
struct StatusPublisherTests {
    /// At a start the first publish (the status file, every folder `starting`) can still be
    /// writing when the last folder is taken up and `ready()` is called: the STATUS.txt files
    /// it asks for must follow. (They did not: the publish in flight cleared the request at its
    /// end, and an idle folder's STATUS.txt kept saying "stopped" after a restart —
    /// SeeingTests.daemonWritesStatusTextAndTheProofOfItsTemplate failed once so.) The publish
    /// is held in the metrics text, which it asks for after deciding what to write.
    @Test func readyDuringAPublishStillWritesTheStatusTexts() throws {
        let dir = try TemporaryFolder.make("publisher")
        defer { try? FileManager.default.removeItem(atPath: dir) }  // best effort: a temp folder
        let root = dir + "/shop"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let target = StatusFiles.Target(path: dir + "/status.json", command: "daemon --config x", config: nil)
        let board = StatusBoard(target: target)
        let held = DispatchSemaphore(value: 0), go = DispatchSemaphore(value: 0)
        let calls = Atomic<Int>(0)
        let publisher = StatusPublisher(board: board, metrics: Metrics(), statusPath: target.path, log: .silent) {
            if calls.add(1, ordering: .relaxed).newValue == 1 {
                held.signal()
                go.wait()
            }
            return "# metrics\n"
        }
        publisher.metricsFile.withLock { $0 = dir + "/metrics.prom" }
        board.setOnChange { publisher.poke() }
        board.set([("shop", root)])
        publisher.start()
        #expect(held.wait(timeout: .now() + 30) == .success, "the first publish asks for the metrics text")
        publisher.ready()
        go.signal()
        let status = root + "/STATUS.txt"
        #expect(Poll.until(.seconds(10)) { FileManager.default.fileExists(atPath: status) },
                "ready() during a publish: STATUS.txt written by the next one")
        publisher.stop(final: board.snapshot(state: .stopped))
        #expect(((try? String(contentsOfFile: status, encoding: .utf8)) ?? "").contains("PhotoFinish is stopped."))
    }
}
