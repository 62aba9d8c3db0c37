internal import CShims
import Foundation

/// One run of an `onBatch.exec` program: started without a shell in a process group of its
/// own, its stdout and stderr collected (the first 64 KiB), stopped when it runs too long.
///
/// The calling thread waits on two events with `poll`: output on the pipe, and the end of the
/// process (a pidfd). Nothing is polled on a timer.
struct HookProcess {
    /// How it ended.
    enum Ending: Equatable {
        /// `exit(code)`.
        case exited(Int32)
        /// Killed by a signal (after the timeout: by us).
        case signalled(Int32)
        /// It could not be started (the message says why).
        case notStarted(String)
    }

    struct Result {
        var ending: Ending
        /// Whether it was stopped because it ran longer than the timeout.
        var timedOut: Bool
        /// Its stdout and stderr, interleaved as written (at most `outputLimit` bytes).
        var output: String
        var seconds: Double
    }

    /// Output kept for the journal.
    static let outputLimit = 64 << 10
    /// After SIGTERM, how long the program has to end before SIGKILL.
    static let grace = Duration.seconds(5)

    /// Runs `arguments[0]` with the rest as its arguments and waits for it (at most `timeout`
    /// plus the grace period).
    /// - Parameter environment: the whole environment of the program.
    static func run(_ arguments: [String], environment: [String: String], timeout: Duration) -> Result {
        let start = ContinuousClock.now
        func elapsed() -> Double { Double((ContinuousClock.now - start) / .milliseconds(1)) / 1000 }
        var pipeFDs: [Int32] = [-1, -1]
        guard pf_pipe_cloexec(&pipeFDs) == 0 else {
            return Result(ending: .notStarted("pipe: \(String(cString: strerror(errno)))"), timedOut: false, output: "", seconds: 0)
        }
        let (readEnd, writeEnd) = (pipeFDs[0], pipeFDs[1])
        defer { close(readEnd) }
        let spawned = spawn(arguments, environment: environment, output: writeEnd)
        close(writeEnd)
        let pid: pid_t
        switch spawned {
        case .success(let started): pid = started
        case .failure(let message): return Result(ending: .notStarted(message), timedOut: false, output: "", seconds: elapsed())
        }
        let pidfd = pf_pidfd_open(pid)
        defer { if pidfd >= 0 { close(pidfd) } }

        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var pipeOpen = true
        var ended = false
        var timedOut = false
        var killAt = start + timeout
        var status: Int32 = 0
        // Until the process ended and (its children having closed it too, or not) the pipe is drained.
        while !ended {
            let now = ContinuousClock.now
            if now >= killAt {
                // Past the time limit: SIGTERM to its whole group, SIGKILL after the grace period.
                kill(-pid, timedOut ? SIGKILL : SIGTERM)
                killAt = timedOut ? now + .seconds(3600) : now + grace
                timedOut = true
            }
            let wait = killAt - now
            let milliseconds = Int32(clamping: max(1, wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000))
            var fds = [pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)]
            if pipeOpen { fds.append(pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)) }
            // Without a pidfd (an old kernel) the pipe's end stands for the process's end.
            if pidfd < 0 { fds.removeFirst() }
            if fds.isEmpty {
                status = waitFor(pid)
                break
            }
            let n = poll(&fds, nfds_t(fds.count), milliseconds)
            if n < 0 && errno != EINTR { break }
            for fd in fds where fd.revents != 0 {
                if fd.fd == readEnd {
                    let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                    if count > 0 {
                        output += buffer[0..<min(count, max(0, outputLimit - output.count))]
                    } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                        pipeOpen = false
                    }
                } else if fd.fd == pidfd {
                    status = waitFor(pid)
                    ended = true
                }
            }
        }
        if pidfd < 0 && !ended { status = waitFor(pid) }
        // What is left in the pipe (not waiting for children that keep it open).
        setNonBlocking(readEnd)
        while pipeOpen, output.count < outputLimit {
            let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            output += buffer[0..<min(count, outputLimit - output.count)]
        }
        let ending: Ending = (status & 0x7f) == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
        return Result(ending: ending, timedOut: timedOut, output: String(decoding: output, as: UTF8.self), seconds: elapsed())
    }

    private enum Spawned {
        case success(pid_t)
        case failure(String)
    }

    /// `posix_spawn` with stdin from /dev/null, stdout and stderr into `output`, a process
    /// group of its own (so a timeout stops its children too) and default signal handling
    /// (the service ignores SIGHUP, SIGTERM and SIGINT; an ignored signal would be inherited).
    private static func spawn(_ arguments: [String], environment: [String: String], output: Int32) -> Spawned {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, output, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for sig in [SIGHUP, SIGTERM, SIGINT, SIGPIPE, SIGCHLD] { sigaddset(&defaults, sig) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard code == 0 else { return .failure("\(arguments[0]): \(String(cString: strerror(code)))") }
        return .success(pid)
    }

    /// `waitpid`, again after EINTR; the raw status.
    private static func waitFor(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }

    private static func setNonBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }
}
