import Foundation
import Testing
@testable import Service

/// The `onBatch.exec` runner: output collected, exit status kept, a program that runs too long
/// stopped with its children.
struct HookProcessTests {
    @Test func outputAndExitStatusAreKept() {
        let result = HookProcess.run(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], environment: ["PATH": "/usr/bin:/bin"],
                                     timeout: .seconds(60))
        #expect(result.ending == .exited(3))
        #expect(!result.timedOut)
        #expect(result.output == "out\nerr\n")
    }

    @Test func aProgramThatRunsTooLongIsStoppedWithItsChildren() throws {
        let marker = NSTemporaryDirectory() + "pf-hook-child-\(UInt32.random(in: 0...UInt32.max))"
        defer { unlink(marker) }
        // The child writes its pid, then both sleep far past the time limit.
        let result = HookProcess.run(["/bin/sh", "-c", "sleep 300 & echo $! > \(marker); wait"], environment: ["PATH": "/usr/bin:/bin"],
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
        let result = HookProcess.run(["/nonexistent/program"], environment: [:], timeout: .seconds(5))
        guard case .notStarted(let reason) = result.ending else {
            Issue.record("expected notStarted, got \(result.ending)")
            return
        }
        #expect(reason.contains("/nonexistent/program") && reason.contains("No such file"))
    }
}

/// The metrics endpoint's request line and the Prometheus text's escaping.
struct MetricsTextTests {
    @Test func requestsAreRead() {
        #expect(MetricsRequest.parse("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n") == .metrics(withBody: true))
        #expect(MetricsRequest.parse("HEAD /metrics?x=1 HTTP/1.0\n\n") == .metrics(withBody: false))
        #expect(MetricsRequest.parse("GET / HTTP/1.1\r\n\r\n") == .notFound)
        #expect(MetricsRequest.parse("POST /metrics HTTP/1.1\r\n\r\n") == .methodNotAllowed)
        #expect(MetricsRequest.parse("hello\r\n\r\n") == .bad)
    }

    @Test func labelValuesAreEscapedAndNumbersPlain() {
        var text = PrometheusText()
        text.family("x_total", .counter, "X.")
        text.sample("x_total", ["inbox": "a\"b\\c\nd"], 3)
        text.sample("x_total", ["inbox": "e"], 0.25)
        #expect(text.text == "# HELP x_total X.\n# TYPE x_total counter\nx_total{inbox=\"a\\\"b\\\\c\\nd\"} 3\nx_total{inbox=\"e\"} 0.25\n")
    }
}
