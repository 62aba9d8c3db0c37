import Foundation
import Testing

/// Real shares on loopback for the share tests (issue 16): real servers (OpenSSH's `sshd`,
/// Samba's `smbd`) started by the test on spare 127.0.0.1 ports, with folders it made, and real
/// FUSE clients (`sshfs`, `smbnetfs`, `rclone mount`) mounting them on "hosts": each host is a
/// mount and UTS namespace of its own (`unshare -m -u`, its own host name), held open by a
/// sleeping process and entered with `nsenter`, so two daemons on one machine are two machines
/// to each other (each its own host name, its own mount of the share; `flock` does not reach
/// from one mount to the other, as between machines). The export lives on a small tmpfs, so a
/// test can fill the server's disk.
enum ShareLab {
    /// Why these tests cannot run here, or nil.
    static func missing(_ programs: [String]) -> String? {
        if getuid() != 0 { return "needs root (mount namespaces, FUSE mounts, a server on loopback)" }
        guard FileManager.default.fileExists(atPath: "/dev/fuse") else { return "no /dev/fuse" }
        // sshd and sftp-server need a working /dev/null (a process that renamed a file over it
        // leaves a plain file there: sshd then fails with "daemon() failed: No such device").
        var null = stat()
        guard stat("/dev/null", &null) == 0, (null.st_mode & S_IFMT) == S_IFCHR else { return "/dev/null is not a device on this machine" }
        for p in ["/usr/bin/unshare", "/usr/bin/nsenter", "/usr/bin/fusermount3", "/usr/bin/mount", "/usr/bin/umount"] + programs
        where !FileManager.default.isExecutableFile(atPath: p) {
            return "\(p) is not installed (scripts/bootstrap installs it)"
        }
        return nil
    }

    /// A TCP port on 127.0.0.1 nobody listens on now.
    static func sparePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
                bind(fd, p, len) == 0 ? getsockname(fd, p, &len) : -1
            }
        }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// True once something accepts connections on 127.0.0.1:`port`.
    static func listening(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    /// Starts `program` in the background, its output into `log`.
    static func spawn(_ program: String, _ args: [String], log: String, environment: [String: String] = [:]) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: program)
        p.arguments = args
        p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        p.standardOutput = handle
        p.standardError = handle
        p.standardInput = FileHandle.nullDevice
        try p.run()
        return p
    }

    /// Ends a process this test started and waits for it.
    static func end(_ p: Process, _ signal: Int32 = SIGTERM) {
        if p.isRunning {
            kill(p.processIdentifier, signal)
            if !Poll.until(.seconds(10), { !p.isRunning }) { kill(p.processIdentifier, SIGKILL) }
        }
        p.waitUntilExit()
    }

    /// The processes below `pid` (its children, theirs…), read from /proc.
    static func descendants(of pid: Int32) -> [Int32] {
        var parents: [Int32: [Int32]] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let child = Int32(name), let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, let parent = Int32(fields[1]) { parents[parent, default: []].append(child) }
        }
        var out: [Int32] = []
        var next = [pid]
        while let p = next.popLast() {
            let children = parents[p] ?? []
            out += children
            next += children
        }
        return out
    }

    /// Stops the daemon whose pid is in `pidFile` (SIGTERM, then SIGKILL), if it still runs.
    static func stop(pidFile: String) {
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
              let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 1 else { return }
        kill(pid, SIGTERM)
        if !Poll.until(.seconds(10), { kill(pid, 0) != 0 }) { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(atPath: pidFile)
    }

    /// A small file system of its own for the server's export (so its disk can be filled).
    /// It belongs to `nobody`, the user both servers act as.
    static func mountTmpfs(_ path: String, size: String) throws -> Bool {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return try Harness.exec("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0755,uid=65534,gid=65534", "tmpfs", path],
                                deadline: .seconds(20)).status == 0
    }

    /// Gives `path` and everything under it to `nobody` (what the servers act as).
    static func giveToNobody(_ path: String) throws {
        try Harness.exec("/bin/chown", ["-R", "65534:65534", path], deadline: .seconds(20))
    }
}

/// A machine of its own on this one: a mount and UTS namespace held by a sleeping process.
final class LabHost {
    let name: String
    private let holder: Process
    var pid: Int32 { holder.processIdentifier }

    init(name: String, log: String) throws {
        self.name = name
        holder = try ShareLab.spawn("/usr/bin/unshare", ["--mount", "--uts", "--propagation", "private", "--",
                                                          "/bin/sh", "-c", "hostname \(name) && exec sleep 100000"], log: log)
        // Ready once its host name is set: the holder then runs `sleep`.
        let ok = Poll.until(.seconds(10)) {
            (try? String(contentsOfFile: "/proc/\(self.pid)/comm", encoding: .utf8))?.hasPrefix("sleep") == true
        }
        if !ok { Issue.record("host \(name) did not start") }
    }

    /// Runs a command on this host (in its namespaces).
    var wrapper: [String] { ["/usr/bin/nsenter", "-t", "\(pid)", "-m", "-u", "--"] }

    /// `path` as this host sees it (through its own mounts), reachable from the test.
    func view(_ path: String) -> String { "/proc/\(pid)/root" + path }

    @discardableResult
    func run(_ program: String, _ args: [String], deadline: Duration = .seconds(30)) throws -> Harness.Result {
        try Harness.exec(wrapper[0], Array(wrapper.dropFirst()) + [program] + args, deadline: deadline)
    }

    func spawn(_ program: String, _ args: [String], log: String, environment: [String: String] = [:]) throws -> Process {
        try ShareLab.spawn(wrapper[0], Array(wrapper.dropFirst()) + [program] + args, log: log, environment: environment)
    }

    deinit { ShareLab.end(holder, SIGKILL) }
}

/// A FUSE client mounted on a host, in the foreground (its process is the mount: killing it
/// cuts the share, as a client crash or a lost connection does).
final class FuseMount {
    let host: LabHost
    let point: String
    private let command: (program: String, args: [String], environment: [String: String])
    private let log: String
    private(set) var client: Process?

    init(host: LabHost, at point: String, log: String, environment: [String: String] = [:],
         _ program: String, _ args: [String]) throws {
        self.host = host
        self.point = point
        self.log = log
        command = (program, args, environment)
        try FileManager.default.createDirectory(atPath: point, withIntermediateDirectories: true)
        try mount()
    }

    /// The share is there: its mount point is a FUSE file system (statfs says 0x65735546).
    var isMounted: Bool {
        // `timeout -s KILL`: a FUSE request of a client that hangs is ended only by SIGKILL.
        (try? Harness.exec("/usr/bin/timeout", ["-s", "KILL", "5", "/usr/bin/stat", "-f", "-c", "%t", host.view(point)],
                           deadline: .seconds(10)))?.stdout == "65735546\n"
    }

    func mount() throws {
        client = try host.spawn(command.program, command.args, log: log, environment: command.environment)
        if !Poll.until(.seconds(20), { self.isMounted || self.client?.isRunning == false }) || !isMounted {
            Issue.record("\(command.program) did not mount \(point) on \(host.name): \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
            throw POSIXError(.ENOTCONN)
        }
    }

    /// Kills the client (SIGKILL): the mount point answers "Transport endpoint is not connected".
    func cut() {
        if let client { ShareLab.end(client, SIGKILL) }
    }

    /// Lets go of the mount point (lazily: the daemon may still hold descriptors in it).
    func unmount() {
        _ = try? host.run("/usr/bin/fusermount3", ["-u", "-z", point])
        if let client { ShareLab.end(client) }
        client = nil
    }

    deinit { unmount() }
}

/// OpenSSH's sshd on a spare 127.0.0.1 port, logging in root with a key made for the test; its
/// SFTP server, the share sshfs mounts, runs as `nobody` (as a share's user is not root: a file
/// only root may read cannot be read through it). sshd runs as a daemon of its own (it closes
/// every descriptor it inherits, which Foundation's `Process` takes for an exit and then waits
/// on for good) and is stopped by the pid it writes.
final class SSHServer {
    let port = ShareLab.sparePort()
    let identity: String
    private let dir: String
    private let pidFile: String

    init(dir: String) throws {
        self.dir = dir
        identity = dir + "/user-key"
        pidFile = dir + "/sshd.pid"
        for key in [dir + "/host-key", identity] {
            let r = try Harness.exec("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key], deadline: .seconds(30))
            guard r.status == 0 else { throw POSIXError(.EIO) }
        }
        try FileManager.default.copyItem(atPath: identity + ".pub", toPath: dir + "/authorized_keys")
        try Harness.write("""
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(dir)/host-key
            AuthorizedKeysFile \(dir)/authorized_keys
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            PermitRootLogin prohibit-password
            StrictModes no
            UsePAM no
            PidFile \(pidFile)
            Subsystem sftp /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups /usr/lib/openssh/sftp-server
            LogLevel ERROR
            """, to: dir + "/sshd_config")
        // sshd's privilege separation folder (Debian makes it at boot).
        try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        try start()
    }

    /// Starts sshd (again, after `stop`: the same keys, the same port).
    func start() throws {
        let started = try Harness.exec("/usr/sbin/sshd", ["-f", dir + "/sshd_config", "-E", dir + "/sshd.log"], deadline: .seconds(30))
        if started.status != 0 || !Poll.until(.seconds(20), { ShareLab.listening(self.port) }) {
            Issue.record("sshd did not listen: \(started.stderr)\((try? String(contentsOfFile: dir + "/sshd.log", encoding: .utf8)) ?? "")")
            throw POSIXError(.ECONNREFUSED)
        }
    }

    /// The server's host key as a known_hosts line (`[127.0.0.1]:PORT ssh-ed25519 AAAA…`).
    var knownHostsLine: String {
        let key = ((try? String(contentsOfFile: dir + "/host-key.pub", encoding: .utf8)) ?? "").split(separator: " ").prefix(2).joined(separator: " ")
        return "[127.0.0.1]:\(port) \(key)\n"
    }

    /// `sshfs` of `remote` (a folder on this server) at `point`, in the foreground.
    /// `dcache_dir_timeout=1`: sshfs lists a folder from its cache for 20 s by default, so
    /// another machine's files would wait that long (docs/reference.md, Hot folders on shares).
    func sshfs(_ remote: String, at point: String, on host: LabHost, log: String) throws -> FuseMount {
        try FuseMount(host: host, at: point, log: log, "/usr/bin/sshfs", [
            "-f", "root@127.0.0.1:" + remote, point, "-p", "\(port)",
            "-o", "IdentityFile=\(identity),StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,BatchMode=yes",
            "-o", "dcache_dir_timeout=1,ServerAliveInterval=2,ServerAliveCountMax=2",
        ])
    }

    func stop() { ShareLab.stop(pidFile: pidFile) }

    /// Stops sshd and every connection it serves (its children: a stopped listener alone
    /// leaves the sessions open), as a server going down does.
    func stopAll() {
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
              let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 1 else { return }
        let children = ShareLab.descendants(of: pid)
        stop()
        for child in children { kill(child, SIGKILL) }
    }

    deinit { stop() }
}
