import Codecs
import Foundation
import Pixels
import Testing

/// Where hot folders really live (issue 8): a daemon that is not root, a FUSE share that
/// refuses rename flags and hides other machines' writes from inotify, a power cut after a
/// claim, names that are not UTF-8. Each test needs root for its setup (a user to switch to,
/// a mount, a loop device) and skips with the reason where it cannot run.
@Suite(.serialized) struct SharesTests {
    /// Why a test that needs root and these programs cannot run here, or nil.
    static func missing(_ programs: [String]) -> String? {
        if getuid() != 0 { return "needs root (it switches users, mounts or uses a loop device)" }
        for p in programs where !FileManager.default.isExecutableFile(atPath: p) { return "\(p) is not installed" }
        return nil
    }

    @discardableResult
    static func run(_ program: String, _ args: [String], deadline: Duration = .seconds(60)) throws -> Harness.Result {
        try Harness.exec(program, args, deadline: deadline)
    }

    /// The report items of every published batch, with their batch id.
    static func items(_ hot: HotFolderFixture) -> [(batch: String, item: [String: Any])] {
        hot.reports().sorted { $0.key < $1.key }.flatMap { batch, report in
            (report["items"] as? [[String: Any]] ?? []).map { (batch, $0) }
        }
    }

    // MARK: - One unreadable photo under a daemon that is not root

    @Test func anUnreadablePhotoFailsAloneAndTheBatchDoesNotComeBack() throws {
        if let reason = Self.missing(["/usr/bin/setpriv", "/bin/chown"]) { print("skipped: \(reason)"); return }
        let hot = try HotFolderFixture(rescan: "500ms")
        let asNobody = ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
        guard try Self.run(asNobody[0], Array(asNobody.dropFirst()) + [Harness.binary, "help"]).status == 0 else {
            print("skipped: the user nobody cannot run \(Harness.binary) (a folder on its path is closed to others)")
            return
        }
        try Self.run("/bin/chown", ["-R", "nobody:nogroup", hot.dir])
        let photos = try (0..<3).map { try HotFolderFixture.photo($0) }
        let names = ["a.jpg", "b.jpg", "locked.jpg"]
        let staging = hot.root + "/incoming"
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        for (name, photo) in zip(names, photos) {
            try Harness.write(photo, to: staging + "/" + name)
            #expect(chown(staging + "/" + name, 65534, 65534) == 0)
        }
        #expect(chmod(staging + "/locked.jpg", 0) == 0)  // no one but root may read it
        let daemon = try hot.start(wrapper: asNobody)
        daemon.waitUntilReady()
        for name in names { #expect(rename(staging + "/" + name, hot.drop + "/" + name) == 0) }

        #expect(Poll.until(.seconds(90)) { Self.items(hot).count == 3 }, "log:\n\(daemon.log)")
        let first = Self.items(hot)
        for (_, item) in first {
            let source = item["source"] as? String ?? "?"
            if source == "locked.jpg" {
                #expect(item["status"] as? String == "failed")
                let error = item["error"] as? [String: Any]
                #expect(error?["code"] as? String == "io-error")
                #expect((error?["message"] as? String)?.contains("Permission denied") == true, "\(item)")
            } else {
                #expect(item["status"] as? String == "ok", "\(item)")
            }
        }
        let batch = first[0].batch
        #expect(FileManager.default.fileExists(atPath: hot.root + "/failed/\(batch)/locked.jpg"))
        #expect(hot.names(in: hot.root + "/originals/\(batch)") == ["a.jpg", "b.jpg"])

        // The batch does not come back: a later photo is a batch of its own, and nothing
        // else appears (rescans run every 500 ms meanwhile).
        try Harness.write(try HotFolderFixture.photo(7), to: staging + "/later.jpg")
        #expect(chown(staging + "/later.jpg", 65534, 65534) == 0)
        #expect(rename(staging + "/later.jpg", hot.drop + "/later.jpg") == 0)
        #expect(Poll.until(.seconds(90)) { hot.reports().count == 2 && hot.names(in: hot.root + "/.work").isEmpty },
                "log:\n\(daemon.log)")
        let sources = Self.items(hot).map { $0.item["source"] as? String ?? "?" }
        #expect(sources.sorted() == ["a.jpg", "b.jpg", "later.jpg", "locked.jpg"])
        #expect(hot.names(in: hot.drop).isEmpty)
        #expect(!daemon.log.contains("rolled back"), "log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    // MARK: - A FUSE share that refuses rename flags

    /// Builds the test file system (`Tests/Support/pf-testfs.c`) against libfuse3.
    static func buildTestFS(into dir: String) throws -> String? {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Support/pf-testfs.c").path
        let flags = try run("/usr/bin/pkg-config", ["--cflags", "--libs", "fuse3"])
        guard flags.status == 0 else { return nil }
        let binary = dir + "/pf-testfs"
        let cc = try run("/usr/bin/cc", ["-O1", "-o", binary, source]
                         + flags.stdout.split(whereSeparator: \.isWhitespace).map(String.init))
        guard cc.status == 0 else {
            Issue.record("pf-testfs did not build: \(cc.stderr)")
            return nil
        }
        return binary
    }

    /// The test file system mounted: `backing` shown at `mount` (both in `dir`) until `unmount()`;
    /// its stderr in `log`.
    final class TestFSMount {
        let backing: String
        let mount: String
        let logPath: String
        private let process = Process()

        /// Mounts it (nil, with the reason printed, where it cannot run here).
        /// - Parameter environment: the file system's own (`PF_TESTFS_HANG_FSYNC`).
        static func make(in dir: String, environment: [String: String] = [:]) throws -> TestFSMount? {
            if let reason = SharesTests.missing(["/usr/bin/cc", "/usr/bin/pkg-config", "/usr/bin/fusermount3"]) {
                print("skipped: \(reason)")
                return nil
            }
            guard FileManager.default.fileExists(atPath: "/dev/fuse") else { print("skipped: no /dev/fuse"); return nil }
            guard let fs = try SharesTests.buildTestFS(into: dir) else {
                print("skipped: libfuse3 (libfuse3-dev) is not installed")
                return nil
            }
            return try TestFSMount(fs, in: dir, environment: environment)
        }

        private init(_ fs: String, in dir: String, environment: [String: String]) throws {
            backing = dir + "/backing"
            mount = dir + "/mnt"
            logPath = dir + "/pf-testfs.log"
            for d in [backing, mount] { try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true) }
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
            let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
            process.executableURL = URL(fileURLWithPath: fs)
            process.arguments = [backing, mount, "-f"]
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = log
            try process.run()
            // statfs says FUSE (0x65735546) once it is mounted.
            #expect(Poll.until(.seconds(10)) {
                (try? SharesTests.run("/usr/bin/stat", ["-f", "-c", "%t", mount]))?.stdout == "65735546\n"
            }, "not mounted")
        }

        var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

        /// The syncs held with `PF_TESTFS_HANG_FSYNC` return (and every later one at once).
        func releaseSyncs() {
            _ = FileManager.default.createFile(atPath: backing + "/.pf-testfs-release", contents: nil)
        }

        /// Unmounts (lazily when something still holds the mount) and ends the file system.
        func unmount() {
            if (try? SharesTests.run("/usr/bin/fusermount3", ["-u", mount]))?.status != 0 {
                _ = try? SharesTests.run("/usr/bin/fusermount3", ["-u", "-z", mount])
            }
            process.terminate()
            if !Poll.until(.seconds(10), { !self.process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    @Test func aHotFolderOnAFuseShareClaimsByRenameAndLinkAndPollsOtherMachinesWrites() throws {
        let dir = try Harness.tempDir()
        guard let fs = try TestFSMount.make(in: dir) else { return }
        defer { fs.unmount() }
        let backing = fs.backing, mount = fs.mount

        // Polled every 300 ms; the full rescan is an hour away, so only polling sees the
        // backing folder's files.
        // Small batches, so the two daemons below race for many of them.
        let hot = try HotFolderFixture(maxBatch: 3, rescan: "1h", extra: "pollInterval: \"300ms\",", root: mount + "/hot")
        let daemon = try hot.start(log: "first.log")
        daemon.waitUntilReady()
        #expect(daemon.log.contains("drop/ is on fuse"), "log:\n\(daemon.log)")
        #expect(daemon.log.contains("claims by rename + link"), "log:\n\(daemon.log)")
        var dropped: [String: [UInt8]] = [:]
        func drop(_ n: Int, through root: String) throws {
            let name = String(format: "F%03d.jpg", n)
            dropped[name] = try HotFolderFixture.photo(n)
            try hot.drop(dropped[name]!, as: name, through: root)
        }
        func finished() -> Set<String> { Set(Self.items(hot).compactMap { $0.item["source"] as? String }) }

        // 1. Copied through the mount (this machine: inotify sees it).
        for n in 0..<3 { try drop(n, through: hot.root) }
        #expect(Poll.until(.seconds(60)) { finished() == Set(dropped.keys) }, "log:\n\(daemon.log)")

        // 2. Written into the backing folder (another machine's writes: no inotify event).
        for n in 3..<6 { try drop(n, through: backing + "/hot") }
        #expect(Poll.until(.seconds(30)) { finished() == Set(dropped.keys) }, "polling did not find them; log:\n\(daemon.log)")

        // 3. Two daemons on the mount; drops through both views, in waves.
        let second = try hot.start(log: "second.log")
        second.waitUntilReady()
        for wave in 0..<4 {
            for n in (6 + wave * 4)..<(10 + wave * 4) { try drop(n, through: n % 2 == 0 ? hot.root : backing + "/hot") }
            usleep(150_000)
        }
        #expect(Poll.until(.seconds(120)) { finished() == Set(dropped.keys) && hot.names(in: hot.root + "/.work").isEmpty },
                "log 1:\n\(daemon.log)\nlog 2:\n\(second.log)")
        for p in [daemon, second] { p.signal(SIGTERM) }
        for p in [daemon, second] { #expect(p.wait() == 0) }
        // Which daemon claimed what (printed: the race is real when both claimed some).
        let claims = [daemon, second].map { $0.log.components(separatedBy: "claimed batch").count - 1 }
        print("batches claimed on the FUSE share: first daemon \(claims[0]), second daemon \(claims[1])")

        // Each photo exactly once, its original intact; nothing left half-made.
        let sources = Self.items(hot).compactMap { $0.item["source"] as? String }
        #expect(sources.count == dropped.count, "\(sources.sorted())")
        for (batch, item) in Self.items(hot) {
            let name = item["source"] as? String ?? "?"
            #expect(item["status"] as? String == "ok", "\(item)")
            #expect((try? Harness.read(hot.root + "/originals/\(batch)/\(name)")) == dropped[name], "\(name)")
        }
        #expect(hot.names(in: hot.drop).isEmpty)
        #expect(hot.names(in: hot.root + "/.work").isEmpty)
        let status = try String(contentsOfFile: hot.root + "/STATUS.txt", encoding: .utf8)
        #expect(status.contains("drop/ is checked by polling every 0.3 s (fuse.pf-testfs)"), "\(status)")
    }

    // MARK: - A share whose syncs hang

    /// A hot folder on a share whose server stops answering syncs (its batch journals' fsync
    /// never returns) holds up its own batches alone: another hot folder of the same daemon, on
    /// a local disk, still finishes and publishes its batches (each batch's journals have a
    /// lock of their own: docs/architecture.md, Locks).
    @Test func aShareWhoseFsyncHangsHoldsUpItsOwnBatchesAlone() throws {
        let dir = try Harness.tempDir()
        guard let fs = try TestFSMount.make(in: dir, environment: ["PF_TESTFS_HANG_FSYNC": "tasks,journal"]) else { return }
        let hot = try HotFolderFixture(root: fs.mount + "/shop")
        let local = hot.dir + "/studio"
        for sub in ["drop", "out", "originals", "failed", ".work"] {
            try FileManager.default.createDirectory(atPath: local + "/" + sub, withIntermediateDirectories: true)
        }
        try Harness.write("""
            { templatesDir: "templates", settle: "300ms", quiet: "400ms", rescanInterval: "2s", staleAfter: "24h",
              pollInterval: "300ms", workers: 2,
              inboxes: [ { name: "shop", root: "\(hot.root)", template: "small" },
                         { name: "studio", root: "\(local)", template: "small" } ] }
            """, to: hot.config)
        let daemon = try hot.start()
        defer {
            // The syncs answered first: a request the kernel handed to the file system is waited
            // for even by a killed daemon.
            fs.releaseSyncs()
            if daemon.process.isRunning { daemon.signal(SIGKILL) }
            daemon.process.waitUntilExit()
            fs.unmount()
        }
        daemon.waitUntilReady()
        try hot.drop(try HotFolderFixture.photo(1), as: "stuck.jpg")
        #expect(Poll.until(.seconds(60)) { fs.log.contains("pf-testfs: fsync of /shop/.work/") },
                "the shop's journal was never synced; log:\n\(daemon.log)\n\(fs.log)")

        // The studio's items, from its published reports.
        func studio() -> [[String: Any]] {
            hot.names(in: local + "/out").flatMap { batch in
                ((try? Harness.report(in: local + "/out/" + batch))?["items"] as? [[String: Any]]) ?? []
            }
        }
        for n in 0..<3 { try hot.drop(try HotFolderFixture.photo(10 + n), as: "S\(n).jpg", through: local) }
        #expect(Poll.until(.seconds(60)) { studio().count == 3 },
                "the studio's batch waited for the shop's share; log:\n\(daemon.log)\n\(fs.log)")
        #expect(studio().allSatisfy { $0["status"] as? String == "ok" }, "\(studio())")
        #expect(hot.reports().isEmpty, "the shop's batch cannot have finished: its sync hangs")

        // The share answers again: the shop's batch finishes too, and the daemon stops cleanly.
        fs.releaseSyncs()
        #expect(Poll.until(.seconds(60)) { Self.items(hot).count == 1 }, "log:\n\(daemon.log)")
        #expect(Self.items(hot).first?.item["status"] as? String == "ok", "\(Self.items(hot))")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    // MARK: - A power cut after a claim

    @Test func aPowerCutAfterAClaimLosesNoOriginal() throws {
        if let reason = Self.missing(["/usr/sbin/losetup", "/usr/sbin/mkfs.ext4", "/usr/bin/mount", "/usr/bin/umount"]) {
            print("skipped: \(reason)")
            return
        }
        let dir = try Harness.tempDir()
        let image = dir + "/disk.img", mount = dir + "/mnt"
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: image, contents: nil) && truncate(image, 96 << 20) == 0)
        try Self.run("/usr/sbin/mkfs.ext4", ["-q", "-F", image])
        let attach = try Self.run("/usr/sbin/losetup", ["-f", "--show", image])
        guard attach.status == 0 else { print("skipped: no loop device: \(attach.stderr)"); return }
        var devices = [attach.stdout.trimmingCharacters(in: .whitespacesAndNewlines)]
        defer {
            _ = try? Self.run("/usr/bin/umount", [mount])
            for device in devices { _ = try? Self.run("/usr/sbin/losetup", ["-d", device]) }
        }
        guard try Self.run("/usr/bin/mount", [devices[0], mount]).status == 0 else { print("skipped: cannot mount \(devices[0])"); return }

        let hot = try HotFolderFixture(rescan: "1h", root: mount + "/hot")
        // Dropped as Samba or cp would: written, never fsynced, renamed in (Foundation's
        // Data.write fsyncs: plain write(2) here), all six before the daemon starts.
        var dropped: [String: [UInt8]] = [:]
        for n in 0..<6 { dropped[String(format: "P%03d.jpg", n)] = try HotFolderFixture.photo(n, width: 1200) }
        try FileManager.default.createDirectory(atPath: hot.root + "/incoming", withIntermediateDirectories: true)
        for (name, photo) in dropped {
            #expect(Self.write(photo, toPath: Array((hot.root + "/incoming/" + name).utf8)))
            #expect(rename(hot.root + "/incoming/" + name, hot.drop + "/" + name) == 0)
        }
        var daemon = try hot.start(log: "before.log")
        // The cut comes once all six are claimed — listed in the batch's manifest (written whole
        // or not at all), which the claim writes only once their data is fsynced. Not at the
        // first manifest: photos start as they settle, so the open batch may be made with the
        // first few and the rest added a moment later, and a file moved into `src/` but not yet
        // listed is not claimed: its data, never synced by its writer, is what a cut may take
        // (reference.md, "What a power cut can and cannot lose"). The six may be being finished
        // while the batch is open (`tasks`) or by its run (`journal`) by then.
        let work = hot.root + "/.work"
        #expect(Poll.until(.seconds(60), every: .milliseconds(5)) {
            hot.names(in: work).contains { id in
                let listed = (hot.manifest(id)?["items"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
                return Set(listed) == Set(dropped.keys)
            }
        }, "log:\n\(daemon.log)")
        // The cut: the file system stops at once, its journal not flushed
        // (EXT4_IOC_SHUTDOWN = _IOR('X', 125, __u32), flag EXT4_GOING_FLAGS_NOLOGFLUSH = 2).
        let fd = open(mount, O_RDONLY | O_DIRECTORY)
        var flag: UInt32 = 2
        let cut = withUnsafeMutablePointer(to: &flag) { ioctl(fd, 0x8004_587D, $0) }
        close(fd)
        guard cut == 0 else {
            print("skipped: EXT4_IOC_SHUTDOWN refused: \(String(cString: strerror(errno)))")
            daemon.signal(SIGKILL)
            daemon.wait()
            return
        }
        daemon.signal(SIGKILL)
        daemon.wait()
        #expect(try Self.run("/usr/bin/umount", [mount]).status == 0)
        // The "reboot" reads the disk through a loop device of its own. Mounting the first one
        // again would hand back its shut-down file system (every call EIO) whenever another
        // test's mount namespace (ShareLab's, ClusterRig's hosts), made while it was mounted,
        // still holds a copy of the mount: the kernel keeps one file system per block device.
        let reboot = try Self.run("/usr/sbin/losetup", ["-f", "--show", image])
        #expect(reboot.status == 0, "\(reboot.stderr)")
        devices.append(reboot.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(try Self.run("/usr/bin/mount", [devices[1], mount]).status == 0)

        // After the "reboot": the claim is resumed (or rolled back) and every photo finishes.
        daemon = try hot.start(log: "after.log")
        #expect(Poll.until(.seconds(90)) { Self.items(hot).count >= dropped.count && hot.names(in: work).isEmpty },
                "log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
        // No original came back truncated or empty: every photo is where its report says, whole.
        var seen: Set<String> = []
        for (batch, item) in Self.items(hot) {
            let name = item["source"] as? String ?? "?"
            #expect(item["status"] as? String == "ok", "\(item)")
            seen.insert(name)
            #expect((try? Harness.read(hot.root + "/originals/\(batch)/\(name)")) == dropped[name], "\(name) after the cut")
            // Its outputs are there whole (their folder is fsynced once, before publishing).
            for output in item["outputs"] as? [[String: Any]] ?? [] {
                let file = hot.root + "/out/\(batch)/" + (output["file"] as? String ?? "?")
                let size = (try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int
                #expect(size != nil && size == output["bytes"] as? Int, "\(file) after the cut")
            }
        }
        #expect(seen == Set(dropped.keys))
        #expect(hot.allFiles(under: hot.root + "/failed").isEmpty)
    }

    // MARK: - Names that are not UTF-8, names of 255 bytes

    /// Writes `bytes` at a path given as bytes (a name Foundation's `String` cannot hold).
    static func write(_ bytes: [UInt8], toPath path: [UInt8]) -> Bool {
        let fd = (path + [0]).withUnsafeBufferPointer { p in
            p.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT | O_EXCL, 0o644) }
        }
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == bytes.count
    }

    /// The names in a folder as bytes.
    static func rawNames(_ folder: String) -> [[UInt8]] {
        guard let dir = opendir(folder) else { return [] }
        defer { closedir(dir) }
        var out: [[UInt8]] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if name != [0x2E] && name != [0x2E, 0x2E] { out.append(name) }
        }
        return out.sorted { $0.lexicographicallyPrecedes($1) }
    }

    @Test func latin1And255ByteNamesFinishEndToEndAndExplainFindsThem() throws {
        let hot = try HotFolderFixture()
        let daemon = try hot.start()
        daemon.waitUntilReady()
        let latin1 = Array("caf".utf8) + [0xE9] + Array(".jpg".utf8)  // "café.jpg" from a Latin-1 client
        let long = [UInt8](repeating: UInt8(ascii: "a"), count: 251) + Array(".jpg".utf8)  // 255 bytes
        let accents = Array(String(repeating: "é", count: 125).utf8) + Array(".jpg".utf8)  // 254 bytes
        let photos = try (0..<3).map { try HotFolderFixture.photo($0 + 20) }
        let staging = Array((hot.root + "/incoming/").utf8)
        try FileManager.default.createDirectory(atPath: hot.root + "/incoming", withIntermediateDirectories: true)
        for (name, photo) in zip([latin1, long, accents], photos) {
            #expect(Self.write(photo, toPath: staging + name))
            let from = staging + name + [0], to = Array((hot.drop + "/").utf8) + name + [0]
            #expect(from.withUnsafeBufferPointer { f in to.withUnsafeBufferPointer { t in
                f.withMemoryRebound(to: CChar.self) { f in t.withMemoryRebound(to: CChar.self) { t in
                    rename(f.baseAddress!, t.baseAddress!) } } } } == 0)
        }
        #expect(Poll.until(.seconds(90)) { Self.items(hot).count == 3 }, "log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)

        let items = Self.items(hot)
        let batch = items.first?.batch ?? "?"
        let longName = String(decoding: long, as: UTF8.self), accentName = String(decoding: accents, as: UTF8.self)
        #expect(Set(items.compactMap { $0.item["source"] as? String }) == ["caf\\xE9.jpg", longName, accentName])
        for (_, item) in items {
            #expect(item["status"] as? String == "ok", "\(item)")
            for output in item["outputs"] as? [[String: Any]] ?? [] {
                let file = output["file"] as? String ?? "?"
                #expect(file.utf8.count <= 255, "\(file)")
                #expect(FileManager.default.fileExists(atPath: hot.root + "/out/\(batch)/\(file)"), "\(file)")
            }
        }
        // The Latin-1 name's output is named in UTF-8 (café.jpg); the original keeps its bytes.
        let outputs = items.flatMap { ($0.item["outputs"] as? [[String: Any]] ?? []).compactMap { $0["file"] as? String } }
        #expect(outputs.contains("café.jpg"), "\(outputs)")
        #expect(Self.rawNames(hot.root + "/originals/\(batch)") == [long, latin1, accents].sorted { $0.lexicographicallyPrecedes($1) })
        #expect(Self.rawNames(hot.drop).isEmpty)

        // explain finds it by its bytes (as a shell passes them) and by the escaped name.
        let byBytes = try Harness.exec("/bin/sh", ["-c", "exec \"$0\" explain \"$(printf 'caf\\351.jpg')\" \"$1\"",
                                                   Harness.binary, hot.root], deadline: .seconds(60))
        #expect(byBytes.status == 0 && byBytes.stdout.contains("caf\\xE9.jpg was finished"), "\(byBytes.stdout)\(byBytes.stderr)")
        let byText = try Harness.run(["explain", "caf\\xE9.jpg", hot.root])
        #expect(byText.status == 0 && byText.stdout.contains("was finished"), "\(byText.stdout)")
    }
}

/// Files the daemon cannot move, a full disk, the open-file limit, the proofs' priority.
@Suite(.serialized) struct TroubleTests {
    static func chattr(_ flag: String, _ path: String) -> Bool {
        (try? Harness.exec("/usr/bin/chattr", [flag, path], deadline: .seconds(10)))?.status == 0
    }

    @Test func aFileThatCannotBeTakenStaysInDropSaysWhyAndIsTakenOnceItCanBe() throws {
        if let reason = SharesTests.missing(["/usr/bin/chattr"]) { print("skipped: \(reason)"); return }
        let hot = try HotFolderFixture(rescan: "1s")
        try hot.drop(try HotFolderFixture.photo(1), as: "stuck.jpg")
        guard Self.chattr("+i", hot.drop + "/stuck.jpg") else {
            print("skipped: the temporary folder's file system has no immutable flag")
            return
        }
        defer { _ = Self.chattr("-i", hot.drop + "/stuck.jpg") }
        let daemon = try hot.start()
        daemon.waitUntilReady()
        try hot.drop(try HotFolderFixture.photo(2), as: "fine.jpg")
        let status = hot.root + "/STATUS.txt"
        func text() -> String { (try? String(contentsOfFile: status, encoding: .utf8)) ?? "" }
        #expect(Poll.until(.seconds(60)) { SharesTests.items(hot).count == 1 && text().contains("Needs attention") },
                "log:\n\(daemon.log)\n\(text())")
        #expect(SharesTests.items(hot).first?.item["source"] as? String == "fine.jpg")
        #expect(text().contains("- stuck.jpg in drop/ cannot be taken: Operation not permitted"), "\(text())")
        #expect(daemon.log.components(separatedBy: "stuck.jpg cannot be taken from drop/").count == 2, "said once:\n\(daemon.log)")
        // Once it can be moved, the next full scan (rescanInterval) takes it.
        #expect(Self.chattr("-i", hot.drop + "/stuck.jpg"))
        #expect(Poll.until(.seconds(60)) { SharesTests.items(hot).count == 2 && !text().contains("Needs attention") },
                "log:\n\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    /// Random pixels: a PNG that does not compress (its size is known in advance).
    static func noise(_ side: Int) throws -> [UInt8] {
        var image = Canvas(width: side, height: side, channels: 3, fill: [0, 0, 0])
        var rng = SystemRandomNumberGenerator()
        image.withUnsafeMutableRows { rows in
            for y in 0..<side {
                let row = rows[y]
                for x in 0..<(side * 3) { row[x] = UInt8.random(in: 0...255, using: &rng) }
            }
        }
        return try encodeImage(image.finished(), options: EncodeOptions(format: .jpeg, quality: 95))
    }

    @Test func aPhotoThatRunsOutOfDiskLeavesNoOutputsAndTheOthersFinish() throws {
        if let reason = SharesTests.missing(["/usr/bin/mount", "/usr/bin/umount"]) { print("skipped: \(reason)"); return }
        let dir = try Harness.tempDir()
        let out = dir + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        guard try SharesTests.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", out]).status == 0 else {
            print("skipped: cannot mount a tmpfs")
            return
        }
        defer { _ = try? SharesTests.run("/usr/bin/umount", [out]) }
        // b.jpg's PNG crops: 1:1 (1.08 MB) and 4:5 (0.86 MB) fit in 2 MiB, 3:2 (0.72 MB) does not.
        try Harness.write("""
            { version: 1, crops: ["1:1", "4:5", "3:2"], output: { format: "png" } }
            """, to: dir + "/png.json5")
        try Harness.write(try HotFolderFixture.photo(1), to: dir + "/in/a.jpg")
        try Harness.write(try Self.noise(600), to: dir + "/in/b.jpg")
        let r = try Harness.run(["run", "--template", dir + "/png.json5", "--out", out, "--workers", "1",
                                 dir + "/in/a.jpg", dir + "/in/b.jpg"])
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        let batch = try Harness.batchFolder(in: out)
        let items = try #require(try Harness.report(in: batch)["items"] as? [[String: Any]])
        #expect(items.map { $0["status"] as? String } == ["ok", "failed"])
        let error = items[1]["error"] as? [String: Any]
        #expect(error?["code"] as? String == "io-error")
        #expect((error?["message"] as? String)?.contains("No space left on device") == true, "\(items[1])")
        // Nothing of b.jpg is left: its two outputs written before the disk filled are removed.
        let files = try FileManager.default.contentsOfDirectory(atPath: batch)
        #expect(!files.contains { $0.hasPrefix("b") || $0.hasPrefix(".pf-tmp-") }, "\(files)")
        #expect(files.contains("a-1x1.png") && files.contains("a-3x2.png"), "\(files)")
    }

    /// A batch that comes while a proof renders drops the render to nice 19 (for the rest of
    /// that proof), and the batch is finished while the proof waits. The samples at their real
    /// sizes (no PHOTOFINISH_PROOF_SHRINK): a debug build renders for a minute, long enough to
    /// drop a photo while it does.
    @Test func aBatchDropsARenderingProofToNice19() throws {
        let hot = try HotFolderFixture()
        let daemon = try hot.start(environment: ["PHOTOFINISH_PROOF_SHRINK": "1"])
        var renderNice: Int?
        #expect(Poll.until(.seconds(60), every: .milliseconds(5)) {
            renderNice = Self.nice(ofThread: "pf-proof-render", in: daemon.pid)
            return renderNice != nil
        }, "log:\n\(daemon.log)")
        #expect(renderNice == 0, "idle: the render at normal priority")
        try hot.drop(try HotFolderFixture.photo(1), as: "one.jpg")
        #expect(Poll.until(.seconds(60), every: .milliseconds(5)) {
            Self.nice(ofThread: "pf-proof-render", in: daemon.pid) == 19 || daemon.log.contains("written: ")
        }, "log:\n\(daemon.log)")
        if daemon.log.contains("written: ") {
            print("skipped: the proof was written before the batch came (a fast machine)")
        } else {
            #expect(Self.nice(ofThread: "pf-proof-render", in: daemon.pid) == 19)
            #expect(Poll.until(.seconds(60)) { !hot.reports().isEmpty }, "the batch is finished meanwhile; log:\n\(daemon.log)")
        }
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    /// The nice value of the thread named `name` (15 characters at most) of process `pid`.
    static func nice(ofThread name: String, in pid: Int32) -> Int? {
        let tasks = "/proc/\(pid)/task"
        for tid in (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? [] {
            let comm = (try? String(contentsOfFile: "\(tasks)/\(tid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            guard comm == name, let stat = try? String(contentsOfFile: "\(tasks)/\(tid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            // After "pid (comm) ": state is field 3, nice is field 19.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 16 ? Int(fields[16]) : nil
        }
        return nil
    }

    @Test func theDaemonRaisesItsOpenFileLimitWarnsWhenItsFoldersMayNeedMoreAndRendersAnIdleProofAtNormalPriority() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit") else {
            print("skipped: /usr/bin/prlimit (util-linux) is not installed")
            return
        }
        let hot = try HotFolderFixture()
        let raised = try hot.start(log: "raised.log", wrapper: ["/usr/bin/prlimit", "--nofile=100:4096", "--"])
        // The proof is rendered at start on a thread of its own, at normal priority while no
        // batch is to be finished (the keeper's own thread, which makes the hard links, runs at
        // the daemon's priority too): look for it until the proof is written.
        var renderNice: Int?
        _ = Poll.until(.seconds(60), every: .milliseconds(5)) {
            renderNice = renderNice ?? Self.nice(ofThread: "pf-proof-render", in: raised.pid)
            return renderNice != nil || raised.log.contains("written: ")
        }
        raised.waitUntilReady()
        #expect(raised.log.contains("open files: soft limit raised from 100 to 4096"), "log:\n\(raised.log)")
        #expect(!raised.log.contains("leaves room for"))
        #expect(renderNice == 0, "the proof's render thread, seen while it rendered:\n\(raised.log)")
        #expect(Self.nice(ofThread: "pf-proofs", in: raised.pid) == 0, "the proof keeper's thread")
        raised.signal(SIGTERM)
        #expect(raised.wait() == 0)

        // 30 hot folders need more than 64 descriptors: said at start, once, with the limit that
        // fits them all and how to apply it (OpenFiles.Budget: reference, "Many hot folders").
        var inboxes: [String] = []
        for n in 0..<30 { inboxes.append("{ name: \"f\(n)\", root: \"\(hot.dir)/many/f\(n)\", template: \"small\" }") }
        try Harness.write("{ templatesDir: \"templates\", inboxes: [\(inboxes.joined(separator: ", "))], workers: 2 }",
                          to: hot.dir + "/many.json5")
        let tight = try DaemonProcess(["daemon", "--config", hot.dir + "/many.json5"], notify: nil, runtime: hot.runtime,
                                      logPath: hot.dir + "/tight.log", wrapper: ["/usr/bin/prlimit", "--nofile=64:64", "--"])
        #expect(Poll.until(.seconds(60)) { tight.log.contains("leaves room for") || !tight.process.isRunning }, "log:\n\(tight.log)")
        #expect(tight.log.contains("the open-file limit (64) leaves room for 0 of 30 hot folders") && tight.log.contains("a limit of 1024 open files"),
                "log:\n\(tight.log)")
        tight.signal(SIGTERM)
        tight.wait()
    }
}
