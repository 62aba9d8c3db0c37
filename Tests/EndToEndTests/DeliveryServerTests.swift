import Foundation
import Pixels
import Testing
import TestSupport

/// Finished batches delivered to real servers started here on loopback (README "Delivering
/// finished photos"): each protocol's test starts its server once and runs the whole story on
/// one daemon — a batch delivered and verified (and a second destination with a wrong login
/// failing with the reason, the batch itself complete), the server stopped in the middle of a
/// delivery and started again (delivered once, nothing doubled), the daemon killed (-9) in the
/// middle of one (resumed, each file once), the server's disk full (a small tmpfs: failed with
/// the reason the protocol gives, then delivered once there is room again, each file once and
/// nothing left under a temporary name). A folder destination tells its full disk too.
@Suite(.serialized) struct DeliveryServerTests {
    @Test(.timeLimit(.minutes(6))) func sftp() throws {
        if let why = DeliveryServers.missing(["/usr/sbin/sshd", "/usr/bin/ssh-keygen"]) { print("skipped: \(why)"); return }
        let dir = try Harness.tempDir()
        let disk = try ServerDisk(dir + "/export")
        let ssh = try SSHServer(dir: dir)
        defer { ssh.stop() }
        let knownHosts = dir + "/known_hosts"
        try Harness.write(ssh.knownHostsLine, to: knownHosts)
        _ = try Harness.exec("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", dir + "/stranger-key"], deadline: .seconds(30))
        let url = "sftp://root@127.0.0.1:\(ssh.port)\(disk.path)/in/"
        let story = try DeliveryStory(
            name: "sftp", to: url, wrongTo: url,
            credentials: "client: { user: \"root\", privateKey: \"\(ssh.identity)\" }, wrong: { user: \"root\", privateKey: \"\(dir)/stranger-key\" }",
            options: "knownHosts: \"\(knownHosts)\"")
        // Stopped as soon as a delivery is under way: stopAll looks for sshd's sessions among
        // every process of the machine first, which can take seconds on a loaded one, and a
        // delivery writes the next file while it reads the one before back.
        try story.run(received: { batch in DeliveryStory.read(folder: disk.path + "/in/" + batch) },
                      leftovers: { DeliveryServers.files(under: disk.path).filter { $0.contains(".pf-") } },
                      stop: { ssh.stopAll() }, start: { try ssh.start() }, disk: disk, stages: DeliveryStory.Stages.all.union(.byHand),
                      midway: { story.phase($0) == "sending" })
    }

    @Test(.timeLimit(.minutes(6))) func webdav() throws {
        if let why = DeliveryServers.missing(["/usr/sbin/apache2", "/usr/bin/htpasswd"]) { print("skipped: \(why)"); return }
        let dir = try Harness.tempDir()
        let disk = try ServerDisk(dir + "/export")
        let server = try WebDAVServer(dir: dir, root: disk.path)
        defer { server.stop() }
        let story = try DeliveryStory(
            name: "webdav", to: "webdav://127.0.0.1:\(server.port)/dav/in/", wrongTo: "webdav://127.0.0.1:\(server.port)/dav/in/",
            credentials: "client: { user: \"\(WebDAVServer.user)\", password: \"\(WebDAVServer.password)\" }, wrong: { user: \"\(WebDAVServer.user)\", password: \"nope\" }")
        // mod_dav_fs writes a PUT to a temporary file of its own first (`.davfs.tmp…`): Apache
        // killed in the middle of one leaves it; it is the server's, not a file sent twice.
        try story.run(received: { batch in DeliveryStory.read(folder: disk.path + "/in/" + batch).filter { !$0.key.hasPrefix(".davfs.tmp") } },
                      leftovers: { DeliveryServers.files(under: disk.path).filter { $0.contains(".pf-") } },
                      stop: { server.stop() }, start: { try server.start() }, disk: disk)
    }

    @Test(.timeLimit(.minutes(6))) func ftpAndFTPS() throws {
        if let why = DeliveryServers.missing(["/usr/sbin/vsftpd", "/usr/bin/openssl"]) { print("skipped: \(why)"); return }
        let dir = try Harness.tempDir()
        // Two destinations write their batches there: 8 MiB holds them.
        let disk = try ServerDisk(dir + "/export", size: "8m")
        let server = try FTPServer(dir: dir, root: disk.path)
        defer { server.stop() }
        // The destination that works speaks FTPS (TLS verified against the server's certificate)
        // with the user's login; the one with a wrong password, plain FTP; `plain` sends with the
        // user's login over plain FTP into a folder of its own.
        try FileManager.default.createDirectory(atPath: disk.path + "/plain", withIntermediateDirectories: true)
        chown(disk.path + "/plain", 33, 33)
        var story = try DeliveryStory(
            name: "ftp", to: "ftps://127.0.0.1:\(server.port)/in/", wrongTo: "ftp://127.0.0.1:\(server.port)/in/",
            credentials: "client: { user: \"\(FTPServer.user)\", password: \"\(FTPServer.password)\" }, wrong: { user: \"\(FTPServer.user)\", password: \"nope\" }",
            options: "caFile: \"\(server.certificate)\"",
            more: "{ name: \"plain\", to: \"ftp://127.0.0.1:\(server.port)/plain/\", credentials: \"client\", retry: { first: \"300ms\", atMost: \"1s\" } },")
        let told = story
        story.also = { point, batch in
            let status = point == "full" ? "failed" : "delivered"
            #expect(Poll.until(.seconds(60)) { told.receipt(batch, "plain")?["status"] as? String == status })
            if point == "full" {
                let error = told.receipt(batch, "plain")?["error"] as? String ?? ""
                #expect(error.contains("disk full"), "\(error)")
                print("ftp (plain): full disk: \(error)")
            } else {
                told.expectSame(batch, DeliveryStory.read(folder: disk.path + "/plain/" + batch), destination: "plain")
            }
        }
        try story.run(received: { batch in DeliveryStory.read(folder: disk.path + "/in/" + batch) },
                      leftovers: { DeliveryServers.files(under: disk.path).filter { $0.contains(".pf-") } },
                      stop: { server.stop() }, start: { try server.start() }, disk: disk)
    }
}

extension DeliveryServerTests {
    @Test(.timeLimit(.minutes(6))) func s3() throws {
        if let why = DeliveryServers.missing(["/usr/bin/curl"]) { print("skipped: \(why)"); return }
        guard let program = S3Server.program() else {
            print("skipped: no S3 server: scripts/s3-server could not install moto (PyPI unreachable?)")
            return
        }
        let dir = try Harness.tempDir()
        // Two buckets (two destinations) keep their objects there: 8 MiB holds them.
        let disk = try ServerDisk(dir + "/export", size: "8m")
        let server = try S3Server(dir: dir, program: program, disk: disk.path + "/in", quietBucket: "etag-only")
        defer { server.stop() }
        try server.makeBucket("photos")
        try server.makeBucket("etag-only")
        let (key, secret) = try server.login()
        // moto keeps a bucket per region: the default region (us-east-1), where the test's own
        // requests look. Its objects are lost when it stops (its files are temporary ones), so
        // the server is not stopped: the delivery, a wrong secret refused, the daemon killed in
        // the middle of a delivery and its disk full are what it can tell. A third destination,
        // `etag`, sends to the bucket whose answers hold no SHA-256: verified by the ETag.
        let login = "credentials: \"client\", retry: { first: \"300ms\", atMost: \"1s\" }"
        var story = try DeliveryStory(
            name: "s3", to: "s3://photos/jobs/?endpoint=\(server.endpoint)", wrongTo: "s3://photos/other/?endpoint=\(server.endpoint)",
            credentials: "client: { accessKey: \"\(key)\", secretKey: \"\(secret)\" }, wrong: { accessKey: \"\(key)\", secretKey: \"nope\" }",
            more: "{ name: \"etag\", to: \"s3://etag-only/jobs/?endpoint=\(server.endpoint)\", \(login) },")
        // moto answers a PUT its disk cannot hold 500 "Internal Server Error", nothing more.
        story.fullDiskSays = ["answered 500"]
        let told = story
        story.also = { point, batch in
            guard point != "full" else { return }
            #expect(Poll.until(.seconds(60)) { told.receipt(batch, "etag")?["status"] as? String == "delivered" })
            let receipt = told.receipt(batch, "etag")
            #expect(receipt?["verified"] as? String == "etag", "\(receipt ?? [:])")
            var keys: [String: [UInt8]] = [:]
            for key in server.keys("etag-only") where key.hasPrefix("jobs/\(batch)/") {
                keys[String(key.dropFirst("jobs/\(batch)/".count))] = server.object("etag-only", key)
            }
            told.expectSame(batch, keys, destination: "etag", verification: "etag")
        }
        try story.run(received: { batch in
            var out: [String: [UInt8]] = [:]
            for key in server.keys("photos") where key.hasPrefix("jobs/\(batch)/") {
                out[String(key.dropFirst("jobs/\(batch)/".count))] = server.object("photos", key)
            }
            return out
        }, leftovers: { server.keys("photos").filter { $0.contains(".pf-") } }, stop: {}, start: {}, disk: disk, stages: [.kill, .fullDisk])
    }

    /// A folder destination (a mounted disk): no server; its disk full.
    @Test(.timeLimit(.minutes(3))) func folder() throws {
        if let why = DeliveryServers.missing([]) { print("skipped: \(why)"); return }
        let dir = try Harness.tempDir()
        let disk = try ServerDisk(dir + "/export")
        var story = try DeliveryStory(name: "folder", to: "file://\(disk.path)/in/", wrongTo: nil, credentials: nil)
        story.fullDiskSays = ["is full"]
        try story.run(received: { batch in DeliveryStory.read(folder: disk.path + "/in/" + batch) },
                      leftovers: { DeliveryServers.files(under: disk.path).filter { $0.contains(".pf-") } },
                      stop: {}, start: {}, disk: disk, stages: [.fullDisk])
    }

    @Test(.timeLimit(.minutes(6))) func mail() throws {
        if let why = DeliveryServers.missing(["/usr/bin/python3", "/usr/bin/openssl"]) { print("skipped: \(why)"); return }
        guard (try? Harness.exec("/usr/bin/python3", ["-c", "import aiosmtpd"], deadline: .seconds(30)))?.status == 0 else {
            print("skipped: python3-aiosmtpd is not installed (scripts/bootstrap installs it)")
            return
        }
        let dir = try Harness.tempDir()
        let disk = try ServerDisk(dir + "/export")
        let server = try SMTPServer(dir: dir, maildir: disk.path + "/in/mail")
        defer { server.stop() }
        // A mail is one message: stopped in the middle of it, the server keeps nothing and it is
        // sent again whole. A daemon killed after the server took it but before its journal said
        // so sends it again (SMTP is at least once): not told here.
        var story = try DeliveryStory(
            name: "mail", to: "mailto:client@example.org", wrongTo: "mailto:other@example.org",
            credentials: "client: { user: \"\(SMTPServer.user)\", password: \"\(SMTPServer.password)\" }, wrong: { user: \"\(SMTPServer.user)\", password: \"nope\" }",
            extra: "mail: { server: \"smtp://127.0.0.1:\(server.port)\", from: \"Studio <photos@example.org>\", caFile: \"\(server.certificate)\" },")
        story.verification = "accepted"
        // aiosmtpd answers a message its disk cannot hold "500 Error: (OSError) [Errno 28] No
        // space left on device"; libcurl passes on the code, not the words.
        story.fullDiskSays = ["answered 500"]
        let told = story
        try story.run(received: { batch in
            let messages = server.attachments(batch: batch)
            #expect(messages.count <= 1, "batch \(batch) was mailed \(messages.count) times")
            return messages.first ?? [:]
        }, leftovers: { [] }, stop: { server.stop() }, start: { try server.start() }, disk: disk, stages: [.outage, .fullDisk],
           midway: { batch in told.phase(batch) == "sending" })
    }
}

/// A small file system of the server's own (a tmpfs of 4 MiB unless told, `nobody`'s), to fill.
final class ServerDisk {
    let path: String

    init(_ path: String, size: String = "4m") throws {
        self.path = path
        guard try ShareLab.mountTmpfs(path, size: size) else { throw POSIXError(.EPERM) }
        try FileManager.default.createDirectory(atPath: path + "/in", withIntermediateDirectories: true)
        try ShareLab.giveToNobody(path + "/in")
    }

    /// Fills it but for a few KiB.
    func fill() throws {
        _ = try Harness.exec("/bin/dd", ["if=/dev/zero", "of=\(path)/filler", "bs=4k"], deadline: .seconds(30))
    }

    func free() { try? FileManager.default.removeItem(atPath: path + "/filler") }

    deinit { _ = try? Harness.exec("/usr/bin/umount", ["-l", path], deadline: .seconds(20)) }
}

/// One daemon, one hot folder with two destinations on one server — `client` (a good login)
/// and `wrong` (a wrong one) — and the story every protocol's test tells.
struct DeliveryStory {
    let fixture: HotFolderFixture
    let name: String

    /// A template whose outputs (of `noisyPhoto`) are some 150 KB each: a delivery throttled to
    /// 200 kB/s takes a few seconds, and the test can act in its middle.
    static let template = """
        { version: 1, resize: { longSide: 480 }, output: { format: "jpeg", quality: 97 } }
        """

    /// The parts of the story a server can tell (all by default).
    struct Stages: OptionSet {
        let rawValue: Int
        static let outage = Stages(rawValue: 1), kill = Stages(rawValue: 2), fullDisk = Stages(rawValue: 4)
        /// `photofinish deliver` by hand: sent again under the same names.
        static let byHand = Stages(rawValue: 8)
        static let all: Stages = [.outage, .kill, .fullDisk]
    }

    let hasWrong: Bool
    /// What the receipt says of the check (`accepted` for a mail).
    var verification = "sha256"
    /// What the receipt's error says when the server's disk is full (one of these words).
    var fullDiskSays = ["disk is full", "disk full"]
    /// More checks of a batch (the `more` destinations'), at a point of the story: `delivered`
    /// (the first batch, delivered to `client`), `full` (the fourth, failed for want of room),
    /// `freed` (the fourth, delivered once there is room).
    var also: (_ point: String, _ batch: String) throws -> Void = { _, _ in }

    /// - Parameters:
    ///   - wrongTo: where the destination with the wrong login sends; nil: none (a server that
    ///     checks no login).
    ///   - credentials: the credentials file's entries; nil: none (a folder).
    ///   - extra: more config keys.
    ///   - more: more destinations (entries of `deliver`).
    init(name: String, to: String, wrongTo: String?, credentials: String?, options: String = "", extra: String = "", more: String = "") throws {
        self.name = name
        hasWrong = wrongTo != nil
        let dir = try Harness.tempDir("story" + name)
        var login = ""
        if let credentials {
            let credentialsFile = dir + "/credentials.json5"
            try Harness.write("{ \(credentials) }", to: credentialsFile)
            chmod(credentialsFile, 0o600)
            login = "credentials: \"\(credentialsFile)\","
        }
        let wrong = wrongTo.map { "{ name: \"wrong\", to: \"\($0)\", credentials: \"wrong\", \(options.isEmpty ? "" : options + ", ")retry: { first: \"1h\" } }," } ?? ""
        fixture = try HotFolderFixture(name: "delivery" + name, extra: """
            \(login) \(extra)
            deliver: [
              { name: "client", to: "\(to)", \(credentials == nil ? "" : "credentials: \"client\", ")\(options.isEmpty ? "" : options + ", ")bandwidth: 200000,
                retry: { first: "300ms", atMost: "1s" }, stallTimeout: "5s" },
              \(wrong)
              \(more)
            ]
            """, template: Self.template)
    }

    /// Runs the story.
    /// - Parameters:
    ///   - received: a batch's files as the server has them (name → bytes).
    ///   - leftovers: temporary files left on the server.
    ///   - stages: what else than a delivery to tell.
    ///   - midway: true once a batch's delivery is under way (default: a file of it verified).
    func run(received: (String) -> [String: [UInt8]], leftovers: () -> [String], stop: () -> Void, start: () throws -> Void,
             disk: ServerDisk?, stages: Stages = .all, midway: ((String) -> Bool)? = nil) throws {
        let midway = midway ?? { verifiedFiles($0) >= 1 }
        var daemon = try fixture.start()
        defer { daemon.signal(SIGTERM); _ = daemon.wait() }
        #expect(daemon.waitUntilReady(), "\(daemon.log)")
        let clock = ContinuousClock()

        // 1. Delivered and verified; the wrong login fails with its reason; the batch is complete.
        var began = clock.now
        let first = try drop(1)
        #expect(waitFor(first, "client", "delivered", daemon), "\(daemon.log)")
        let report = try Harness.report(in: fixture.root + "/out/" + first)
        #expect(report["status"] as? String == "complete")
        if hasWrong {
            #expect(waitFor(first, "wrong", "failed", daemon), "\(daemon.log)")
            let wrong = receipt(first, "wrong")
            #expect((wrong?["error"] as? String)?.contains("refused") == true || (wrong?["error"] as? String)?.contains("401") == true,
                    "\(wrong ?? [:])")
            #expect(wrong?["next"] == nil, "a refused login is not tried again by itself")
        }
        expectSame(first, received(first))
        try also("delivered", first)
        // Delivered once each destination verified it; held while one (the wrong login) has not.
        let delivered = "batch delivered: every destination verified it (client)"
        if hasWrong {
            #expect(!daemon.log.contains("batch delivered"), "\(daemon.log)")
        } else {
            #expect(Poll.until(.seconds(30)) { daemon.log.contains(delivered) }, "\(daemon.log)")
        }
        print("\(name): delivered and verified in \(clock.now - began)")
        if stages.contains(.byHand) {
            let again = try Harness.run(["deliver", fixture.root, first, "--to", "client", "--config", fixture.config])
            #expect(again.status == 0 && again.stdout.hasPrefix("client (") && again.stdout.contains("): delivered"),
                    "\(again.stdout)\(again.stderr)")
            #expect(receipt(first, "client")?["attempts"] as? Int == 2)
            expectSame(first, received(first))
            let wrong = try Harness.run(["deliver", fixture.root, first, "--to", "wrong", "--config", fixture.config])
            #expect(wrong.status == 1 && wrong.stdout.contains("): failed") && wrong.stdout.contains("refused the login"),
                    "\(wrong.stdout)\(wrong.stderr)")
            let explained = try Harness.run(["explain", "R1-0.jpg", fixture.root, "--config", fixture.config])
            #expect(explained.stdout.contains("Its batch's delivery to client (") && explained.stdout.contains("delivered"),
                    "\(explained.stdout)")
            let unknown = try Harness.run(["deliver", fixture.root, first, "--to", "nobody", "--config", fixture.config])
            #expect(unknown.status == 2 && unknown.stderr.contains("has no destination 'nobody'"), "\(unknown.stderr)")
        }

        // 2. The server stopped in the middle of a delivery, then started: delivered once.
        var batches = [first]
        if stages.contains(.outage) {
        began = clock.now
        let second = try drop(2)
        batches.append(second)
        #expect(Poll.until(.seconds(60)) { midway(second) }, "\(daemon.log)")
        stop()
        #expect(waitFor(second, "client", "failed", daemon), "\(daemon.log)")
        try start()
        #expect(waitFor(second, "client", "delivered", daemon), "\(daemon.log)")
        expectSame(second, received(second))
        #expect(leftovers().isEmpty, "\(leftovers())")
        print("\(name): server stopped and started mid-delivery, delivered in \(clock.now - began)")
        } else {
            print("\(name): the server stopped mid-delivery: not told (see the test)")
        }

        // 3. The daemon killed (-9) in the middle of a delivery: resumed at its start, each file once.
        if stages.contains(.kill) {
        began = clock.now
        let third = try drop(3)
        batches.append(third)
        #expect(Poll.until(.seconds(60)) { midway(third) }, "\(daemon.log)")
        #expect(receipt(third, "client")?["status"] as? String != "delivered", "the kill came after the delivery: nothing tested")
        daemon.signal(SIGKILL)
        _ = daemon.wait()
        daemon = try fixture.start(log: "daemon-2.log")
        #expect(waitFor(third, "client", "delivered", daemon), "\(daemon.log)")
        if !hasWrong {
            // Held again at the start from its journal, delivered once resumed.
            #expect(Poll.until(.seconds(30)) { daemon.log.contains(delivered) }, "\(daemon.log)")
        }
        expectSame(third, received(third))
        #expect(leftovers().isEmpty, "\(leftovers())")
        print("\(name): daemon killed mid-delivery, resumed and delivered in \(clock.now - began)")
        } else {
            print("\(name): the daemon killed mid-delivery: not told (see the test)")
        }

        // 4. The server's disk full: failed with the reason, delivered once there is room.
        if let disk, stages.contains(.fullDisk) {
        began = clock.now
        try disk.fill()
        let fourth = try drop(4)
        batches.append(fourth)
        #expect(waitFor(fourth, "client", "failed", daemon), "\(daemon.log)")
        let full = receipt(fourth, "client")
        let error = full?["error"] as? String ?? ""
        #expect(fullDiskSays.contains { error.contains($0) }, "\(full ?? [:])")
        #expect(full?["next"] != nil, "a full disk is tried again: \(full ?? [:])")
        print("\(name): full disk: \(error)")
        try also("full", fourth)
        disk.free()
        #expect(waitFor(fourth, "client", "delivered", daemon), "\(daemon.log)")
        expectSame(fourth, received(fourth))
        #expect(leftovers().isEmpty, "\(leftovers())")
        try also("freed", fourth)
        print("\(name): full disk freed, delivered in \(clock.now - began)")
        } else {
            print("\(name): a full disk: not told (see the test)")
        }
        for batch in batches {
            #expect(try Harness.report(in: fixture.root + "/out/" + batch)["status"] as? String == "complete")
        }
    }

    /// Drops three photos (differing by `round`) and returns the id of the batch they make.
    func drop(_ round: Int) throws -> String {
        let before = Set(fixture.reports().keys)
        for n in 0..<3 { try fixture.drop(try Self.noisyPhoto(round * 10 + n), as: "R\(round)-\(n).jpg") }
        var id: String?
        _ = Poll.until(.seconds(60)) {
            id = Set(fixture.reports().keys).subtracting(before).first
            return id != nil
        }
        return try #require(id, "batch \(round) was not finished")
    }

    /// A 640×480 JPEG of noise: its 480 px output is some 150 KB (a throttled delivery of three
    /// takes seconds).
    static func noisyPhoto(_ seed: Int) throws -> [UInt8] {
        var canvas = Canvas(width: 640, height: 480, channels: 3, fill: [0, 0, 0])
        var state = UInt64(seed + 1) &* 0x9E37_79B9_7F4A_7C15
        canvas.withUnsafeMutableRows { rows in
            for y in 0..<480 {
                for x in 0..<(640 * 3) {
                    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    rows[y][x] = UInt8(truncatingIfNeeded: state >> 56)
                }
            }
        }
        return try Harness.jpeg(upright: canvas.finished(), quality: 95)
    }

    func receipt(_ batch: String, _ destination: String) -> [String: Any]? {
        (fixture.reports()[batch]?["deliveries"] as? [[String: Any]])?.first { $0["name"] as? String == destination }
    }

    func waitFor(_ batch: String, _ destination: String, _ status: String, _ daemon: DaemonProcess) -> Bool {
        Poll.until(.seconds(90), every: .milliseconds(100)) { receipt(batch, destination)?["status"] as? String == status }
    }

    /// The phase of `batch`'s delivery to `client` (its journal).
    func phase(_ batch: String) -> String? {
        guard let data = FileManager.default.contents(atPath: fixture.root + "/.work/deliveries/\(batch)/client.json"),
              let journal = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return journal["phase"] as? String
    }

    /// How many files of `batch`'s delivery to `client` are verified (its journal).
    func verifiedFiles(_ batch: String) -> Int {
        guard let data = FileManager.default.contents(atPath: fixture.root + "/.work/deliveries/\(batch)/client.json"),
              let journal = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return 0 }
        return (journal["files"] as? [[String: Any]] ?? []).filter { $0["stage"] as? String == "verified" }.count
    }

    /// What the server has is what the batch made: the same names, the same bytes, nothing more.
    func expectSame(_ batch: String, _ received: [String: [UInt8]], destination: String = "client", verification: String? = nil) {
        let folder = fixture.root + "/out/" + batch
        let outputs = outputs(batch)
        #expect(Set(received.keys) == Set(outputs), "\(received.keys.sorted()) vs \(outputs.sorted())")
        for file in outputs {
            #expect(received[file] == (try? Harness.read(folder + "/" + file)), "\(file) differs on the server")
        }
        let r = receipt(batch, destination)
        #expect(r?["verified"] as? String == verification ?? self.verification && r?["files"] as? Int == outputs.count, "\(r ?? [:])")
    }

    /// The output files `batch`'s report names.
    func outputs(_ batch: String) -> [String] {
        ((try? Harness.report(in: fixture.root + "/out/" + batch))?["items"] as? [[String: Any]] ?? [])
            .flatMap { ($0["outputs"] as? [[String: Any]] ?? []).compactMap { $0["file"] as? String } }
    }

    /// The files of a folder on the server's disk (name → bytes).
    static func read(folder: String) -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in DeliveryServers.files(under: folder) { out[name] = try? Harness.read(folder + "/" + name) }
        return out
    }
}
