import Foundation
import Synchronization

/// A PostgreSQL server of the tests' own: Debian's `postgresql` binaries (scripts/bootstrap
/// installs them), `initdb` once per test process into a temporary folder (each server copies
/// that cluster: 0.1 s instead of 3 s), started with `pg_ctl` listening on a Unix socket in its
/// folder only (no TCP port: nothing else on the machine can reach it or collide with it), as a
/// user that is not root when the tests run as root (PostgreSQL refuses root): `postgres`, which
/// the package makes, else `nobody`. Trust authentication on that socket, user `photofinish`.
///
/// Stopped by the test that made it (`destroy()`), at the test process's exit for the shared
/// one, and — should the test process die first (a crash, a kill) — by a watchdog started with
/// it that waits for the test process to end.
///
/// A library of its own, so the cluster's tests and the daemons' end-to-end tests start the
/// same servers; it knows nothing of Swift Testing: callers skip or fail as `Unavailable` says.
public final class PostgresServer: @unchecked Sendable {
    /// Where the binaries are, or why the tests cannot have a server here.
    static let binaries: Result<String, Unavailable> = {
        let roots = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in roots.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            let bin = "/usr/lib/postgresql/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: bin + "/initdb") { return .success(bin) }
        }
        return .failure(Unavailable("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; scripts/bootstrap installs postgresql)"))
    }()

    /// Why there can be no server here: PostgreSQL is not installed (the one reason to skip).
    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String
        init(_ why: String) { description = why }
    }

    /// A command of the harness failed: the test fails (PostgreSQL is there and should work).
    public struct CommandFailed: Error, CustomStringConvertible {
        public var description: String
    }

    /// The user the server runs as (nil: as ourselves, not root).
    static let runAs: String? = {
        guard getuid() == 0 else { return nil }
        return getpwnam("postgres") != nil ? "postgres" : "nobody"
    }()

    /// One server for the tests that do not stop it, started at first use, stopped at the test
    /// process's exit.
    public static func shared() throws -> PostgresServer {
        try sharedServer.get()
    }

    private static let sharedServer: Result<PostgresServer, any Error> = {
        do {
            let server = try PostgresServer()
            atexit {
                if case .success(let server) = PostgresServer.sharedServer { server.destroy() }
            }
            return .success(server)
        } catch {
            return .failure(error)
        }
    }()

    /// Its data, log and socket are in here.
    public let folder: String
    private let bin: String
    private let state = Mutex((running: false, destroyed: false))

    public var data: String { folder + "/data" }

    /// A server of the caller's own (one it may stop and start): `destroy()` it.
    /// - Throws: `Unavailable` when PostgreSQL is not installed; `CommandFailed` otherwise.
    public init() throws {
        let bin = try Self.binaries.get()
        self.bin = bin
        // Short: a Unix socket's path must fit in 107 bytes.
        folder = try Self.makeFolder("/tmp/pfpg-")
        try Self.run(["cp", "-a", try Self.template(bin) + "/data", data], asServer: false)
        if let user = Self.runAs { try Self.run(["chown", "-R", user + ":", folder], asServer: false) }
        try start()
        watch()
    }

    deinit { destroy() }

    /// A connection string for `database` on this server.
    public func conninfo(_ database: String = "postgres") -> String {
        "host=\(folder) dbname=\(database) user=photofinish"
    }

    /// A fresh, empty database of its own for one test.
    public func makeDatabase(_ test: String = #function) throws -> String {
        let name = "t_" + test.filter { $0.isLetter || $0.isNumber }.lowercased().prefix(40) + "_"
            + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        try psql("CREATE DATABASE \(name)")
        return conninfo(name)
    }

    /// Runs SQL as the superuser through `psql` (the harness does not use the code under test).
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") throws -> String {
        try Self.run([bin + "/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", conninfo(database), "-c", sql],
                     asServer: false)
    }

    public func start() throws {
        try Self.run([bin + "/pg_ctl", "-D", data, "-l", folder + "/log", "-w", "-t", "60", "-o",
                      "-k \(folder) -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=16MB -c max_connections=60",
                      "start"], asServer: true)
        state.withLock { $0.running = true }
    }

    /// Whether it runs now (started and not stopped since).
    public var isRunning: Bool { state.withLock { $0.running } }

    /// Starts it unless it runs (a test that stopped it may have ended early).
    public func ensureRunning() throws {
        if !isRunning { try start() }
    }

    /// Stops it (`-m fast`: connections are closed at once, as a restart or a crash of the
    /// database would close them).
    public func stop() throws {
        try Self.run([bin + "/pg_ctl", "-D", data, "-m", "fast", "-w", "-t", "60", "stop"], asServer: true)
        state.withLock { $0.running = false }
    }

    /// Stops it and removes its folder (safe to call twice).
    public func destroy() {
        let (running, destroyed) = state.withLock { s in
            defer { s.destroyed = true; s.running = false }
            return (s.running, s.destroyed)
        }
        guard !destroyed else { return }
        // A signal, not pg_ctl: this also runs at the test process's exit (atexit).
        if running, let text = try? String(contentsOfFile: data + "/postmaster.pid", encoding: .utf8),
           let pid = text.split(separator: "\n").first.flatMap({ Int32($0) }) {
            kill(pid, SIGINT)  // fast shutdown
            for _ in 0..<600 where kill(pid, 0) == 0 { usleep(50_000) }
        }
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// The watchdog: once this test process has ended, fast shutdown of the server and its
    /// folder removed, whatever ended the process.
    private func watch() {
        // No /dev/null: on this shared machine something replaces it now and then. It first
        // closes every descriptor it inherited: it outlives this process, and a pipe's write
        // end another test had open at this moment (its child's output, read to the end) would
        // otherwise never close — that test waited forever (a whole-suite hang, seen with
        // Fixtures.sha256Hex). bash: dash cannot close a descriptor above 9.
        let script = "for fd in /proc/$$/fd/*; do n=${fd##*/}; [ \"$n\" -gt 2 ] && eval \"exec $n>&-\"; done 2>&-;"
            + " while kill -0 \(getpid()); do sleep 1; done; pid=$(head -1 \(data)/postmaster.pid);"
            + " [ -n \"$pid\" ] && kill -INT \"$pid\"; for i in 1 2 3 4 5 6 7 8 9 10; do"
            + " [ -e \(data)/postmaster.pid ] || break; sleep 1; done; rm -rf \(folder)"
        let words: [String] = ["/usr/bin/setsid", "bash", "-c", script]
        let argv = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd: Int32 in 0...2 { posix_spawn_file_actions_addclose(&actions, fd) }
        var pid: pid_t = 0
        // Never reaped: it ends only after this process does.
        _ = posix_spawn(&pid, "/usr/bin/setsid", &actions, nil, argv, environ)
    }

    // MARK: - The template cluster

    private static let templateFolder = Mutex<String?>(nil)

    /// `initdb` once per test process (the servers copy its folder), removed at exit.
    private static func template(_ bin: String) throws -> String {
        try templateFolder.withLock { folder throws -> String in
            if let folder { return folder }
            let made = try makeFolder("/tmp/pfpg-template-")
            if let user = runAs { try run(["chown", user + ":", made], asServer: false) }
            try run([bin + "/initdb", "-D", made + "/data", "-U", "photofinish", "--auth=trust", "-E", "UTF8",
                     "--no-locale", "--no-sync", "--no-instructions"], asServer: true)
            folder = made
            atexit {
                if let made = PostgresServer.templateFolder.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: made) }
            }
            return made
        }
    }

    private static func makeFolder(_ prefix: String) throws -> String {
        let path = prefix + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        return path
    }

    /// Runs a command to its end (as the server's user when `asServer` and we are root), its
    /// output in files (a server it starts may keep pipes open): posix_spawn and waitpid, no
    /// Foundation `Process` (whose reaping depends on a signal source and run loops).
    @discardableResult
    static func run(_ args: [String], asServer: Bool) throws -> String {
        // In /tmp: the server's user may not enter the folder the tests run in.
        var args = ["/usr/bin/env", "-C", "/tmp"] + args
        if asServer, let user = runAs {
            args = ["/usr/bin/setpriv", "--reuid=\(user)", "--regid=\(user)", "--init-groups", "--"] + args
        }
        let base = "/tmp/pfpg-run-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { unlink(base + ".out"); unlink(base + ".err") }
        close(open(base + ".out", O_WRONLY | O_CREAT | O_TRUNC, 0o666))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // Its input an empty file, not /dev/null (something on this machine replaces that now and then).
        posix_spawn_file_actions_addopen(&actions, 0, base + ".out", O_RDONLY | O_CREAT, 0o666)
        posix_spawn_file_actions_addopen(&actions, 1, base + ".out", O_WRONLY | O_CREAT | O_TRUNC, 0o666)
        posix_spawn_file_actions_addopen(&actions, 2, base + ".err", O_WRONLY | O_CREAT | O_TRUNC, 0o666)
        let argv = args.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let program = args[0].hasPrefix("/") ? args[0] : "/usr/bin/" + args[0]
        let spawned = posix_spawn(&pid, program, &actions, nil, argv, environ)
        guard spawned == 0 else {
            throw CommandFailed(description: "cannot run \(program): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let output = (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? ""
        guard status == 0 else {
            let errors = (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? ""
            throw CommandFailed(description: "\(args.joined(separator: " ")) failed (status \(status)): \(errors)")
        }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
