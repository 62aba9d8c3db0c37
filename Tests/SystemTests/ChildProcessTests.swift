import Foundation
import Testing
import System

/// A program run as `onBatch.exec` runs it: output collected, exit status kept, a program that runs too long
/// stopped with its children.
struct ChildProcessTests {
    @Test func outputAndExitStatusAreKept() {
        let result = ChildProcess.run(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], environment: ["PATH": "/usr/bin:/bin"],
                                      timeout: .seconds(60))
        #expect(result.ending == .exited(3))
        #expect(!result.timedOut)
        #expect(result.output == "out\nerr\n")
    }

    @Test func aProgramThatRunsTooLongIsStoppedWithItsChildren() throws {
        let marker = TemporaryFolder.path("hook-child")
        defer { unlink(marker) }
        // The child writes its pid, then both sleep far past the time limit.
        let result = ChildProcess.run(["/bin/sh", "-c", "sleep 300 & echo $! > \(marker); wait"], environment: ["PATH": "/usr/bin:/bin"],
                                      timeout: .milliseconds(300))
        #expect(result.timedOut)
        #expect(result.ending == .signalled(SIGTERM))
        let child = try #require(Int32(try String(contentsOfFile: marker, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        // The whole process group was signalled: the child is gone (or a zombie of init's).
        var stopped = false
        for _ in 0..<100 where !stopped {
            let state = (try? String(contentsOfFile: "/proc/\(child)/stat", encoding: .utf8))?.split(separator: " ").dropFirst(2).first
            stopped = state == nil || state == "Z"
            if !stopped { usleep(20_000) }
        }
        #expect(stopped, "the child \(child) of a stopped hook still runs")
    }

    @Test func aMissingProgramIsNotStarted() {
        let result = ChildProcess.run(["/nonexistent/program"], environment: [:], timeout: .seconds(5))
        guard case .notStarted(let reason) = result.ending else {
            Issue.record("expected notStarted, got \(result.ending)")
            return
        }
        #expect(reason.contains("/nonexistent/program") && reason.contains("No such file"))
    }
}
