import Foundation
import Testing

/// Plays systemd for a daemon under test: a datagram socket at a private `NOTIFY_SOCKET`,
/// read all the time by its own thread (a notify socket holds only ~10 datagrams; a test that
/// stopped reading would block the daemon's `sd_notify`).
final class NotifyListener: @unchecked Sendable {
    let path: String
    private let fd: Int32
    private let messages: Locked<[String]>
    private let stamped: Locked<[(at: ContinuousClock.Instant, line: String)]>
    private let thread: Thread

    /// - Parameter at: the socket's path (default: a fresh one in the temporary folder).
    init(at fixed: String? = nil) throws {
        let path = fixed ?? NSTemporaryDirectory() + "pf-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in Array(path.utf8).prefix(raw.count - 1).enumerated() { raw[i] = b }
        }
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard ok == 0 else {
            Glibc.close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        // A receive timeout so the reader thread notices `close()`.
        var tv = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let messages = Locked<[String]>([])
        let stamped = Locked<[(at: ContinuousClock.Instant, line: String)]>([])
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !Thread.current.isCancelled {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n > 0 {
                    let text = String(decoding: buffer[0..<n], as: UTF8.self)
                    let at = ContinuousClock.now
                    messages.update { $0 += [text] }
                    stamped.update { $0 += text.split(separator: "\n").map { (at, String($0)) } }
                }
            }
        }
        self.path = path
        self.fd = fd
        self.messages = messages
        self.stamped = stamped
        self.thread = thread
        thread.start()
    }

    /// Every datagram received so far, in order.
    var received: [String] { messages.value }

    /// Every `KEY=VALUE` line received so far, in order.
    var lines: [String] { received.flatMap { $0.split(separator: "\n").map(String.init) } }

    /// Every line with the moment it was received.
    var timedLines: [(at: ContinuousClock.Instant, line: String)] { stamped.value }

    func close() {
        thread.cancel()
        unlink(path)
    }

    deinit { Glibc.close(fd) }
}

/// A daemon (or `watch`) process under test, logging into a file.
final class DaemonProcess {
    let process = Process()
    let logPath: String

    /// - Parameter wrapper: a command that runs the binary (`setpriv --reuid=…`), or none.
    init(_ args: [String], notify: NotifyListener?, runtime: String, logPath: String,
         environment: [String: String] = [:], wrapper: [String] = []) throws {
        self.logPath = logPath
        if let program = wrapper.first {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = Array(wrapper.dropFirst()) + [Harness.binary] + args
        } else {
            process.executableURL = URL(fileURLWithPath: Harness.binary)
            process.arguments = args
        }
        var env = ProcessInfo.processInfo.environment
        env["NOTIFY_SOCKET"] = notify?.path
        env["RUNTIME_DIRECTORY"] = runtime
        env["JOURNAL_STREAM"] = nil
        // The hot folder's proof renders the six sample photos at 1/16 of their real sizes: a
        // debug build would spend a minute on 130 MP of samples beside every test.
        env["PHOTOFINISH_PROOF_SHRINK"] = "16"
        env.merge(environment) { $1 }
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        // JOURNAL_STREAM=log: play systemd, which names the stderr it connected to the journal.
        if env["JOURNAL_STREAM"] == "log" {
            var st = stat()
            fstat(log.fileDescriptor, &st)
            env["JOURNAL_STREAM"] = "\(st.st_dev):\(st.st_ino)"
        }
        process.environment = env
        log.seekToEndOfFile()
        process.standardOutput = log
        process.standardError = log
        try process.run()
    }

    /// A test that stopped early (a failed expectation, a thrown error) never leaves its
    /// daemon running behind it.
    deinit {
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
        }
    }

    var pid: Int32 { process.processIdentifier }

    /// Waits until the daemon logged that it is ready (recovered and watching).
    @discardableResult
    func waitUntilReady(deadline: Duration = .seconds(30)) -> Bool {
        let ok = Poll.until(deadline) { self.log.contains("ready: watching") || !self.process.isRunning }
        if !ok { Issue.record("the daemon did not get ready within \(deadline); log:\n\(log)") }
        return ok
    }

    func signal(_ sig: Int32) { kill(pid, sig) }

    /// Waits for the process to end (SIGKILL after the deadline, and the test fails).
    @discardableResult
    func wait(deadline: Duration = .seconds(60)) -> Int32 {
        let ok = Poll.until(deadline) { !self.process.isRunning }
        if !ok {
            Issue.record("the daemon did not exit within \(deadline); log:\n\(log)")
            kill(pid, SIGKILL)
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}


/// A hot folder for a test: root, config with short durations, a small template.
struct HotFolderFixture {
    let dir: String
    let root: String
    let config: String
    let runtime: String

    static let template = """
        { version: 1, resize: { longSide: 32 }, output: { format: "jpeg", quality: 80 } }
        """

    /// - Parameter root: the hot folder (default: `<dir>/hot`).
    init(name: String = #function, settle: String = "300ms", quiet: String = "400ms", maxBatch: Int = 500,
         maxWait: String = "20s", rescan: String = "2s", extra: String = "", template: String = Self.template,
         root: String? = nil) throws {
        dir = try Harness.tempDir(name)
        self.root = root ?? dir + "/hot"
        let root = self.root
        runtime = dir + "/run"
        config = dir + "/photofinish.json5"
        try FileManager.default.createDirectory(atPath: dir + "/templates", withIntermediateDirectories: true)
        try Harness.write(template, to: dir + "/templates/small.json5")
        try Harness.write("""
            { templatesDir: "templates", inboxes: [ { name: "shop", root: "\(root)", template: "small" } ],
              settle: "\(settle)", quiet: "\(quiet)", maxWait: "\(maxWait)", maxBatch: \(maxBatch),
              rescanInterval: "\(rescan)", staleAfter: "24h", workers: 2, \(extra) }
            """, to: config)
        for sub in ["drop", "out", "originals", "failed", ".work"] {
            try FileManager.default.createDirectory(atPath: root + "/" + sub, withIntermediateDirectories: true)
        }
    }

    var drop: String { root + "/drop" }

    func start(notify: NotifyListener? = nil, log: String = "daemon.log",
               environment: [String: String] = [:], wrapper: [String] = []) throws -> DaemonProcess {
        try DaemonProcess(["daemon", "--config", config], notify: notify, runtime: runtime, logPath: dir + "/" + log,
                          environment: environment, wrapper: wrapper)
    }

    /// A small JPEG whose bytes differ by `seed`.
    static func photo(_ seed: Int, width: Int = 40) throws -> [UInt8] {
        try Harness.jpeg(upright: Harness.marked(width: width + seed % 23, height: width * 3 / 4 + seed % 17),
                         quality: 70 + seed % 25)
    }

    /// Writes a file elsewhere, then renames it into `drop/`: it arrives whole. `through`: the
    /// folder holding `drop/` as the writer sees it (another machine's view of a share).
    func drop(_ bytes: [UInt8], as name: String, through root: String? = nil) throws {
        let root = root ?? self.root
        // The staging folder is on the same file system as drop/ (a rename cannot cross).
        let staging = root + "/incoming"
        if !FileManager.default.fileExists(atPath: staging) {
            try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        }
        try Harness.write(bytes, to: staging + "/" + name)
        guard rename(staging + "/" + name, root + "/drop/" + name) == 0 else { throw POSIXError(.EIO) }
    }

    /// Every published batch folder's report, by batch id.
    func reports() -> [String: [String: Any]] {
        var out: [String: [String: Any]] = [:]
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root + "/out")) ?? []
        for name in names {
            if let data = FileManager.default.contents(atPath: root + "/out/" + name + "/report.json"),
               let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any] {
                out[name] = json
            }
        }
        return out
    }

    /// The manifest of batch `id` in `.work/` as plain JSON (nil while there is none: it is
    /// written whole or not at all).
    func manifest(_ id: String) -> [String: Any]? {
        FileManager.default.contents(atPath: root + "/.work/" + id + "/manifest.json")
            .flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
    }

    /// The sources named in all reports (with repeats, if any).
    func reportedSources() -> [String] {
        reports().values.flatMap { ($0["items"] as? [[String: Any]] ?? []).compactMap { $0["source"] as? String } }
    }

    func names(in folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    /// Every file under `folder`, as paths relative to it.
    func allFiles(under folder: String) -> [String] { Self.files(under: folder) }

    /// Every regular file under `folder`, as paths relative to it, sorted.
    static func files(under folder: String) -> [String] {
        let e = FileManager.default.enumerator(atPath: folder)
        var out: [String] = []
        while let p = e?.nextObject() as? String {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: folder + "/" + p, isDirectory: &isDir), !isDir.boolValue { out.append(p) }
        }
        return out.sorted()
    }
}
