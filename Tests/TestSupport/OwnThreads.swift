import Foundation
import Testing

/// A task executor on threads of its own, for async tests whose tasks must go on while the
/// suite's synchronous tests (a daemon waited on for minutes) hold every thread of the
/// cooperative pool — as many as the machine has cores, two on CI: there an async test's
/// awaits waited for minutes (60 tasks of TaskFeedTests took 342 s and missed their deadline;
/// alone they take 1.4 s).
public final class OwnThreads: TaskExecutor, @unchecked Sendable {
    /// The tests' one set of threads.
    public static let shared = OwnThreads(threads: 8)

    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var jobs: [UnownedJob] = []

    private init(threads: Int) {
        for n in 0..<threads {
            Thread { [self] in
                // Named for gdb and perf (Foundation's `Thread.name` does not reach the kernel here).
                try? "tests-own-\(n)".write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
                run()
            }.start()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs each test of a suite (or one test) with `OwnThreads` as its tasks' executor: its
/// child tasks and the continuations it resumes run there, not on the cooperative pool.
public struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(OwnThreads.shared) { try await function() }
    }
}

extension Trait where Self == OwnThreadsTrait {
    /// `OwnThreadsTrait`: the tests' tasks on threads of their own.
    public static var ownThreads: Self { OwnThreadsTrait() }
}
