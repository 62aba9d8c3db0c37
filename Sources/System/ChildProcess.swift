internal import CShims
import Glibc

/// One run of a program: started without a shell in a process group of its own, its stdout
/// and stderr collected (the first `outputLimit` bytes), stopped when it runs too long.
///
/// The calling thread waits on two events with `poll`: output on the pipe, and the end of the
/// process (a pidfd). Nothing is polled on a timer. The pipe's ends and the pidfd are
/// `FileDescriptor`s (one owner each); every call goes through `Syscall` (EINTR retried).
public enum ChildProcess {
    /// How it ended.
    public enum Ending: Sendable, Equatable {
        /// `exit(code)`.
        case exited(Int32)
        /// Killed by a signal (after the timeout: by us).
        case signalled(Int32)
        /// It could not be started (the message says why).
        case notStarted(String)
    }

    public struct Result: Sendable {
        public var ending: Ending
        /// Whether it was stopped because it ran longer than the timeout.
        public var timedOut: Bool
        /// Its stdout and stderr, interleaved as written (at most `outputLimit` bytes).
        public var output: String
        public var seconds: Double
    }

    /// Output kept.
    public static let outputLimit = 64 << 10
    /// After SIGTERM, how long the program has to end before SIGKILL.
    public static let grace = Duration.seconds(5)

    /// Runs `arguments[0]` (a path: no `PATH` search) with the rest as its arguments and waits
    /// for it (at most `timeout` plus the grace period).
    /// - Parameter environment: the whole environment of the program.
    public static func run(_ arguments: [String], environment: [String: String], timeout: Duration) -> Result {
        let start = ContinuousClock.now
        func elapsed() -> Double { Double((ContinuousClock.now - start) / .milliseconds(1)) / 1000 }
        func notStarted(_ why: String) -> Result { Result(ending: .notStarted(why), timedOut: false, output: "", seconds: elapsed()) }
        guard let program = arguments.first else { return notStarted("no program named") }
        let output: FileDescriptor, input: FileDescriptor
        do throws(SystemError) {
            (output, input) = try FileDescriptor.pipe()
        } catch {
            return notStarted(error.description)
        }
        let spawned = spawn(arguments, environment: environment, output: input.raw)
        input.close()
        let pid: pid_t
        switch spawned {
        case .success(let started): pid = started
        case .failure(let code): return notStarted("\(program): \(String(cString: strerror(code.code)))")
        }
        // Without a pidfd (ENOSYS before Linux 5.3) the pipe's end stands for the process's end.
        let pidfd: FileDescriptor? = switch Syscall.run({ pf_pidfd_open(pid) }) {
        case .success(let raw): FileDescriptor(owning: raw, path: FilePath("pidfd of \(pid)"))
        case .failure: nil
        }

        var collected: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        func readSome() -> Bool {
            let n = buffer.withUnsafeMutableBytes { b in Syscall.run { Glibc.read(output.raw, b.baseAddress, b.count) } }
            guard case .success(let count) = n, count > 0 else { return false }
            collected += buffer[0..<min(count, max(0, outputLimit - collected.count))]
            return true
        }
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
            var fds: [pollfd] = []
            if let pidfd { fds.append(pollfd(fd: pidfd.raw, events: Int16(POLLIN), revents: 0)) }
            if pipeOpen { fds.append(pollfd(fd: output.raw, events: Int16(POLLIN), revents: 0)) }
            if fds.isEmpty { break }
            guard case .success = Syscall.run({ poll(&fds, nfds_t(fds.count), milliseconds) }) else { break }
            for fd in fds where fd.revents != 0 {
                if fd.fd == output.raw {
                    pipeOpen = readSome()
                } else {
                    status = waitFor(pid)
                    ended = true
                }
            }
        }
        if !ended { status = waitFor(pid) }
        // What is left in the pipe (not waiting for children that keep it open).
        _ = fcntl(output.raw, F_SETFL, fcntl(output.raw, F_GETFL) | O_NONBLOCK)
        while pipeOpen, collected.count < outputLimit, readSome() {}
        let ending: Ending = (status & 0x7f) == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
        return Result(ending: ending, timedOut: timedOut, output: String(decoding: collected, as: UTF8.self), seconds: elapsed())
    }

    /// `posix_spawn` with stdin from /dev/null, stdout and stderr into `output`, a process
    /// group of its own (so a timeout stops its children too) and default signal handling
    /// (a service ignores SIGHUP, SIGTERM and SIGINT; an ignored signal would be inherited).
    /// - Returns: the pid, or the error number.
    private static func spawn(_ arguments: [String], environment: [String: String], output: Int32) -> Swift.Result<pid_t, Errno> {
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
        return code == 0 ? .success(pid) : .failure(Errno(code: code))
    }

    /// `waitpid` (EINTR retried); the raw status.
    private static func waitFor(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        _ = Syscall.run { waitpid(pid, &status, 0) }
        return status
    }
}
