import Foundation
import Testing

/// One shared hot folder on a real share, and two hosts that each mount the share and run a
/// daemon on it (issue 16). The hot folder is made on the server side (`server`); both hosts
/// mount the share at the same path (`mountPoint`, each in its own namespace), so one config
/// serves both daemons. Reports are read on the server side.
final class ShareRig {
    enum Kind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case sshfs
        case smbnetfs
        /// `rclone mount` of the Samba share, default cache mode (`--vfs-cache-mode off`).
        case rclone
        /// `rclone mount --vfs-cache-mode writes`.
        case rcloneWrites = "rclone-writes"

        var testDescription: String { rawValue }

        /// Why the share tests do not all hold on this client yet (recorded as known issues), or nil.
        var notYetProven: String? {
            switch self {
            case .sshfs, .smbnetfs, .rclone: nil
            case .rcloneWrites: "rclone mount --vfs-cache-mode writes (1.60): a file renamed or removed while its upload is queued stays on the server under its old name or comes back (docs/reference.md, Hot folders on shares)"
            }
        }

        /// Run without `PF_SHARE_CLIENTS`: sshfs, the share users have most (its eight tests
        /// take about 160 s, side by side: one holds a batch open for 85 s). The others cost as much again each.
        var runsByDefault: Bool { self == .sshfs }

        /// The programs it needs.
        var programs: [String] {
            switch self {
            case .sshfs: ["/usr/sbin/sshd", "/usr/bin/ssh-keygen", "/usr/bin/sshfs"]
            case .smbnetfs: ["/usr/sbin/smbd", "/usr/bin/smbpasswd", "/usr/bin/smbnetfs"]
            case .rclone, .rcloneWrites: ["/usr/sbin/smbd", "/usr/bin/smbpasswd", "/usr/bin/rclone"]
            }
        }
    }

    let kind: Kind
    let dir: String
    /// The exported folder on the server (a tmpfs of its own).
    let export: String
    /// The share's folder as each host sees it (each through its own mount).
    let mountPoint: String
    /// The hot folder as the server sees it (reports, originals: what the test checks).
    let hot: HotFolderFixture
    /// The hot folder as the hosts see it.
    var root: String { mountPoint + "/hot" }
    let config: String
    let hosts: [LabHost]
    private(set) var mounts: [FuseMount] = []
    private var ssh: SSHServer?
    private var samba: SambaServer?
    private var exportMounted = false

    /// Why `kind` cannot be tested here, or nil. Only sshfs runs by default; `PF_SHARE_CLIENTS`
    /// names the clients to run (`all`, or a list: `smbnetfs,rclone`), each costing minutes of
    /// CI on a machine of two cores.
    static func missing(_ kind: Kind) -> String? {
        let chosen = ProcessInfo.processInfo.environment["PF_SHARE_CLIENTS"].map { $0.split(separator: ",").map(String.init) }
        if let chosen, !chosen.contains("all"), !chosen.contains(kind.rawValue) {
            return "\(kind.rawValue): PF_SHARE_CLIENTS=\(chosen.joined(separator: ",")) leaves it out"
        }
        if chosen == nil && !kind.runsByDefault {
            return "\(kind.rawValue): not in the default set; PF_SHARE_CLIENTS=all (or =\(kind.rawValue)) runs it"
                + (kind.notYetProven.map { " (\($0))" } ?? "")
        }
        return ShareLab.missing(kind.programs)
    }

    /// - Parameters:
    ///   - exportSize: the server's disk (a tmpfs).
    ///   - extra: more config keys.
    init(_ kind: Kind, name: String = #function, settle: String = "300ms", quiet: String = "400ms",
         maxBatch: Int = 500, maxWait: String = "20s", poll: String = "1s", workers: Int = 2, exportSize: String = "64m",
         extra: String = "", hosts count: Int = 2) throws {
        self.kind = kind
        let dir = try Harness.tempDir(name + kind.rawValue)
        self.dir = dir
        let export = dir + "/export"
        self.export = export
        guard try ShareLab.mountTmpfs(export, size: exportSize) else { throw POSIXError(.EPERM) }
        exportMounted = true
        let hot = try HotFolderFixture(name: name, root: export + "/hot")
        self.hot = hot
        try FileManager.default.createDirectory(atPath: export + "/hot/incoming", withIntermediateDirectories: true)
        try ShareLab.giveToNobody(export + "/hot")
        let hosts = try (0..<count).map { try LabHost(name: "pf-host-\(["a", "b", "c"][$0])", log: dir + "/host-\($0).log") }
        self.hosts = hosts
        var mounts: [FuseMount] = []
        switch kind {
        case .sshfs:
            let server = try SSHServer(dir: dir)
            ssh = server
            let mountPoint = dir + "/mnt"
            self.mountPoint = mountPoint
            for (n, host) in hosts.enumerated() {
                mounts.append(try server.sshfs(export, at: mountPoint, on: host, log: dir + "/sshfs-\(n).log"))
            }
        case .smbnetfs, .rclone, .rcloneWrites:
            let server = try SambaServer(dir: dir, share: export)
            samba = server
            self.mountPoint = kind == .smbnetfs ? dir + "/smbnet/127.0.0.1:\(server.port)/photos" : dir + "/mnt"
            for (n, host) in hosts.enumerated() {
                mounts.append(try server.mount(kind, on: host, dir: dir, n: n))
            }
        }
        self.mounts = mounts
        config = dir + "/share.json5"
        try Harness.write("""
            { templatesDir: "\(hot.dir)/templates", inboxes: [ { name: "shop", root: "\(self.mountPoint)/hot", template: "small" } ],
              settle: "\(settle)", quiet: "\(quiet)", maxWait: "\(maxWait)", maxBatch: \(maxBatch), pollInterval: "\(poll)",
              rescanInterval: "1h", staleAfter: "24h", workers: \(workers), \(extra) }
            """, to: config)
    }

    /// The hot folder's root as host `n` sees it.
    func rootOn(_ n: Int) -> String { hosts[n].view(root) }

    /// Starts a daemon on host `n` (with the rig's config, or `config`).
    func start(on n: Int, log: String? = nil, config: String? = nil) throws -> DaemonProcess {
        try DaemonProcess(["daemon", "--config", config ?? self.config], notify: nil, runtime: dir + "/run-\(n)",
                          logPath: dir + "/" + (log ?? "daemon-\(n).log"), wrapper: hosts[n].wrapper)
    }

    /// Writes `bytes` beside the drop folder, then renames it in: whole at once. `via`: nil for
    /// the server side, else the host whose mount it is written through.
    func drop(_ bytes: [UInt8], as name: String, via host: Int?) throws {
        try hot.drop(bytes, as: name, through: host.map { rootOn($0) } ?? hot.root)
    }

    /// `count` photos named PREFIX00.jpg, PREFIX01.jpg, … dropped from the server side.
    /// - Returns: each name and its bytes.
    func dropPhotos(_ prefix: String, count: Int) throws -> [String: [UInt8]] {
        var dropped: [String: [UInt8]] = [:]
        for n in 0..<count {
            let name = String(format: "\(prefix)%02d.jpg", n)
            dropped[name] = try HotFolderFixture.photo(n, width: 1400)
            try drop(dropped[name]!, as: name, via: nil)
        }
        return dropped
    }

    /// The batches in `.work/` under way (their journal begun), as the server sees them.
    var batchesUnderWay: [String] {
        let work = hot.root + "/.work"
        return hot.names(in: work).filter { FileManager.default.fileExists(atPath: "\(work)/\($0)/journal") }
    }

    /// Names in `drop/`, as the server sees them.
    var waiting: [String] { hot.names(in: hot.drop) }

    /// The finished photos: source name → the batches whose reports name it.
    func finished() -> [String: [String]] {
        var out: [String: [String]] = [:]
        for (batch, item) in SharesTests.items(hot) { out[item["source"] as? String ?? "?", default: []].append(batch) }
        return out
    }

    /// What the test's logs say, for a failed expectation.
    func logs(_ daemons: [DaemonProcess]) -> String {
        daemons.enumerated().map { "--- daemon \($0.offset) (\(hosts[min($0.offset, hosts.count - 1)].name)):\n\($0.element.log)" }
            .joined(separator: "\n")
    }

    /// Each photo in `dropped` finished exactly once, ok, its original filed byte for byte;
    /// nothing left in `drop/`, `.work/` or half-made in `out/`.
    /// - Parameter killedTwice: photos two kills may have landed on while they were being
    ///   finished (`killedTwiceWhileFinishing`); each of them is `ok` or fails by SPEC §7's rule
    ///   ("stopped the finisher twice"), reported once, its original whole in `failed/<batch>/`.
    ///   Every other photo is `ok`, its original whole in `originals/<batch>/`.
    func expectEachOnce(_ dropped: [String: [UInt8]], _ daemons: [DaemonProcess], killedTwice: Set<String> = [],
                        sourceLocation: SourceLocation = #_sourceLocation) {
        let items = SharesTests.items(hot)
        let sources = items.compactMap { $0.item["source"] as? String }
        #expect(sources.count == dropped.count && Set(sources) == Set(dropped.keys),
                "finished \(sources.count) of \(dropped.count): twice \(sources.filter { s in sources.filter { $0 == s }.count > 1 }.sorted()), missing \(Set(dropped.keys).subtracting(sources).sorted())\n\(logs(daemons))",
                sourceLocation: sourceLocation)
        var failed: Set<String> = []
        for (batch, item) in items {
            let name = item["source"] as? String ?? "?"
            if killedTwice.contains(name), item["status"] as? String == "failed" {
                let error = item["error"] as? [String: Any]
                #expect((error?["message"] as? String)?.hasPrefix("stopped the finisher twice") == true, "\(item)",
                        sourceLocation: sourceLocation)
                #expect((try? Harness.read(hot.root + "/failed/\(batch)/\(name)")) == dropped[name], "\(name)",
                        sourceLocation: sourceLocation)
                failed.insert("\(batch)/\(name)")
                continue
            }
            #expect(item["status"] as? String == "ok", "\(item)", sourceLocation: sourceLocation)
            #expect((try? Harness.read(hot.root + "/originals/\(batch)/\(name)")) == dropped[name], "\(name)",
                    sourceLocation: sourceLocation)
        }
        #expect(waiting.isEmpty, "left in drop/: \(waiting)", sourceLocation: sourceLocation)
        let left = hot.names(in: hot.root + "/.work").filter { !sweptLater($0) }
        #expect(left.isEmpty, "left in .work/: \(hot.allFiles(under: hot.root + "/.work"))", sourceLocation: sourceLocation)
        #expect(Set(hot.allFiles(under: hot.root + "/failed")) == failed, sourceLocation: sourceLocation)
    }

    /// The photos a daemon of `killed` (each of them stopped by SIGKILL) finished again alone
    /// because the daemon before it was killed while finishing them: where its own kill came
    /// before that second try ended, two kills landed on the photo while it was being finished.
    static func killedTwiceWhileFinishing(_ killed: [DaemonProcess]) -> Set<String> {
        let marker = " was being finished when the daemon stopped: it is done again, alone"
        var names: Set<String> = []
        for line in killed.flatMap({ $0.log.split(separator: "\n") }) where line.hasSuffix(marker) {
            // "… BATCH: NAME: photo N was being finished …"
            guard let photo = line.range(of: ": photo ", options: .backwards) else { continue }
            let head = line[..<photo.lowerBound]
            guard let colon = head.range(of: ": ", options: .backwards) else { continue }
            names.insert(String(head[colon.upperBound...]))
        }
        return names
    }

    /// True for what a kill leaves in `.work/` that holds no photo, which the next recovery
    /// sweeps once it is a minute old: a claim killed while it made its batch folder leaves
    /// `.new-<id>/` with only its lock (no photo is moved before the folder is renamed into
    /// place), one killed in its start-up probe leaves `.pf-probe-*` files, one killed while it
    /// wrote STATUS.txt leaves its `.pf-tmp-STATUS.txt-*` (staged in `.work/`).
    func sweptLater(_ name: String) -> Bool {
        name.hasPrefix(".pf-probe-") || name.hasPrefix(".pf-tmp-STATUS.txt-")
            || (name.hasPrefix(".new-") && hot.names(in: hot.root + "/.work/" + name).allSatisfy { $0 == "lock" })
    }

    deinit {
        for mount in mounts { mount.unmount() }
        mounts = []
        ssh?.stop()
        samba?.stop()
        if exportMounted { _ = try? Harness.exec("/usr/bin/umount", ["-l", export], deadline: .seconds(20)) }
    }
}

/// Samba's smbd on a spare 127.0.0.1 port with one share, its state in the test's folder,
/// logged into as `nobody` with a password of the test's own passdb (a guest session cannot
/// create anything in a folder its Unix user owns: Samba gives it an anonymous token, which the
/// folder's owner entry does not match); mounted through smbnetfs (libsmbclient) or `rclone
/// mount` (its SMB backend).
final class SambaServer {
    let port = ShareLab.sparePort()
    let dir: String
    static let user = "nobody", password = "pf-\(UInt32.random(in: 0...UInt32.max))"
    private var process: Process?

    init(dir base: String, share: String) throws {
        dir = base + "/samba"
        for sub in ["state", "private", "lock", "cache", "pid", "log", "state/ncalrpc"] {
            try FileManager.default.createDirectory(atPath: dir + "/" + sub, withIntermediateDirectories: true)
        }
        // Every path Samba writes is in the test's folder (printcap too: never /dev/null, which
        // a program renaming a file over it would replace for the whole machine).
        try Harness.write("", to: dir + "/printcap")
        try Harness.write("""
            [global]
              server role = standalone server
              smb ports = \(port)
              interfaces = 127.0.0.1
              bind interfaces only = yes
              disable netbios = yes
              server min protocol = SMB2
              lock directory = \(dir)/lock
              state directory = \(dir)/state
              cache directory = \(dir)/cache
              pid directory = \(dir)/pid
              private dir = \(dir)/private
              ncalrpc dir = \(dir)/state/ncalrpc
              log file = \(dir)/log/smbd.log
              passdb backend = tdbsam:\(dir)/private/passdb.tdb
              load printers = no
              printing = bsd
              printcap name = \(dir)/printcap
              disable spoolss = yes
            [photos]
              path = \(share)
              read only = no
              valid users = \(Self.user)
            """, to: dir + "/smb.conf")
        let added = try Harness.exec("/bin/sh", ["-c", "printf '%s\\n%s\\n' \"$1\" \"$1\" | /usr/bin/smbpasswd -c \"$2\" -a -s \"$3\"",
                                                 "sh", Self.password, dir + "/smb.conf", Self.user], deadline: .seconds(30))
        guard added.status == 0 else {
            Issue.record("smbpasswd did not add \(Self.user): \(added.stderr)")
            throw POSIXError(.EPERM)
        }
        // In the foreground (a daemon it forked would hold Foundation's pipes and sockets open).
        process = try ShareLab.spawn("/usr/sbin/smbd", ["--foreground", "--no-process-group", "--debug-stdout",
                                                         "--configfile=\(dir)/smb.conf"], log: dir + "/smbd.out")
        if !Poll.until(.seconds(30), { ShareLab.listening(self.port) }) {
            Issue.record("smbd did not listen: \((try? String(contentsOfFile: dir + "/smbd.out", encoding: .utf8)) ?? "")")
            throw POSIXError(.ECONNREFUSED)
        }
    }

    /// Mounts the share on `host`: smbnetfs at `<dir>/smbnet` (it shows every server under its
    /// mount point: the share is `<dir>/smbnet/127.0.0.1:<port>/photos`), rclone at `<dir>/mnt`.
    func mount(_ kind: ShareRig.Kind, on host: LabHost, dir base: String, n: Int) throws -> FuseMount {
        switch kind {
        case .smbnetfs:
            // One configuration for both hosts (each mounts it in its own namespace).
            let home = base + "/smbnetfs-home"
            if !FileManager.default.fileExists(atPath: home + "/.smb/smbnetfs.conf") {
                try FileManager.default.createDirectory(atPath: home + "/.smb", withIntermediateDirectories: true)
                try Harness.write("[global]\n  client min protocol = SMB2\n  disable netbios = yes\n", to: home + "/.smb/smb.conf")
                try Harness.write("smb_query_browsers \"false\"\nauth \"\(Self.user)\" \"\(Self.password)\"\n", to: home + "/.smb/smbnetfs.conf")
                chmod(home + "/.smb/smbnetfs.conf", 0o600)
                chmod(home + "/.smb/smb.conf", 0o600)
            }
            return try FuseMount(host: host, at: base + "/smbnet", log: base + "/smbnetfs-\(n).log", environment: ["HOME": home],
                                 "/usr/bin/smbnetfs", [base + "/smbnet", "-f", "-o", "config=\(home)/.smb/smbnetfs.conf"])
        case .rclone, .rcloneWrites:
            // --dir-cache-time: rclone lists a folder from its cache for 5 minutes by default, so
            // another machine's files would wait that long (docs/reference.md, Hot folders on shares).
            // Its own (empty) config file: rclone rewrites the file it is given by renaming over it
            // (given /dev/null, it replaces the device with a file).
            let config = base + "/rclone-\(n).conf"
            _ = FileManager.default.createFile(atPath: config, contents: nil)
            let obscured = try Harness.exec("/usr/bin/rclone", ["obscure", Self.password], deadline: .seconds(30))
                .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            var args = ["mount", ":smb,host=127.0.0.1,port=\(port),user=\(Self.user),pass=\(obscured):photos", base + "/mnt", "--config", config,
                        "--dir-cache-time", "1s", "--cache-dir", base + "/rclone-cache-\(n)"]
            if kind == .rcloneWrites { args += ["--vfs-cache-mode", "writes", "--vfs-write-back", "0s"] }
            // PF_SHARE_DEBUG=1: rclone logs each VFS and FUSE call (its log is in the test's folder).
            if ProcessInfo.processInfo.environment["PF_SHARE_DEBUG"] != nil { args += ["-vv"] }
            return try FuseMount(host: host, at: base + "/mnt", log: base + "/rclone-\(n).log", "/usr/bin/rclone", args)
        case .sshfs:
            preconditionFailure("sshfs is not a Samba client")
        }
    }

    func stop() {
        if let process { ShareLab.end(process) }
        process = nil
    }

    deinit { stop() }
}
