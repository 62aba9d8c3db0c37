import Foundation
import Testing

/// What an administrator meets in the first hour, with the real binary on real folders:
/// `check` run as the service user names each hot folder it cannot use and the fix, and a
/// font that is not installed; `init` makes a drop/ the group may write and prints its steps
/// in an order that works; `explain` matches a file by its path; `status` lists what runs.
@Suite(.serialized) struct AdministratorTests {
    static let asNobody = ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]

    /// Why the tests that run as another user cannot run here, or nil.
    static func cannotRunAsNobody() throws -> String? {
        guard geteuid() == 0 else { return "not root: cannot run the binary as another user" }
        guard FileManager.default.isExecutableFile(atPath: asNobody[0]) else { return "setpriv is missing (util-linux)" }
        guard try Harness.exec(asNobody[0], Array(asNobody.dropFirst()) + [Harness.binary, "help"], deadline: .seconds(60)).status == 0 else {
            return "the user nobody cannot run \(Harness.binary) (a folder on its path is closed to others)"
        }
        return nil
    }

    static func asNobody(_ args: [String], environment: [String: String] = [:]) throws -> Harness.Result {
        try Harness.exec(asNobody[0], Array(asNobody.dropFirst()) + [Harness.binary] + args, deadline: .seconds(120),
                         extraEnvironment: environment)
    }

    static func sh(_ command: String) throws {
        let r = try Harness.exec("/bin/sh", ["-c", command], deadline: .seconds(60))
        #expect(r.status == 0, "\(command): \(r.stdout) \(r.stderr)")
    }

    /// A folder with a template and a config naming `inboxes` (name, root), readable by all.
    static func setup(_ inboxes: [(String, String)], template: String = HotFolderFixture.template,
                      name: String = #function) throws -> (dir: String, config: String) {
        let dir = try Harness.tempDir(name)
        #expect(chmod(dir, 0o755) == 0)
        try FileManager.default.createDirectory(atPath: dir + "/templates", withIntermediateDirectories: true)
        try Harness.write(template, to: dir + "/templates/small.json5")
        let entries = inboxes.map { "{ name: \"\($0.0)\", root: \"\($0.1)\", template: \"small\" }" }.joined(separator: ", ")
        try Harness.write("{ templatesDir: \"templates\", inboxes: [ \(entries) ] }", to: dir + "/pf.json5")
        return (dir, dir + "/pf.json5")
    }

    /// A unit of our own (found through `SYSTEMD_UNIT_PATH`, as systemd would): it runs `config`
    /// as nobody and may write only under `allowed`.
    static func unit(in dir: String, config: String, allowed: String) throws -> [String: String] {
        try FileManager.default.createDirectory(atPath: dir + "/units", withIntermediateDirectories: true)
        try Harness.write("""
            [Unit]
            Description=PhotoFinish, as a test installs it
            [Service]
            ExecStart=/usr/bin/photofinish daemon --config \(config)
            User=nobody
            Group=nogroup
            ProtectSystem=strict
            ReadWritePaths=\(allowed)
            """, to: dir + "/units/photofinish.service")
        return ["SYSTEMD_UNIT_PATH": dir + "/units"]
    }

    // MARK: - check

    @Test func checkAsTheServiceUserNamesEachFolderAndItsFix() throws {
        if let reason = try Self.cannotRunAsNobody() { print("skipped: \(reason)"); return }
        let base = try Harness.tempDir()
        #expect(chmod(base, 0o755) == 0)
        let allowed = base + "/allowed", outside = base + "/elsewhere/shop"
        let roots = ["fine": allowed + "/fine", "missing": allowed + "/missing", "theirs": allowed + "/theirs", "outside": outside]
        let (dir, config) = try Self.setup(roots.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        for name in ["fine", "theirs", "outside"] { #expect(try Harness.run(["init", roots[name]!]).status == 0) }
        try Self.sh("chown -R nobody:nogroup '\(roots["fine"]!)' '\(outside)'")
        let env = try Self.unit(in: dir, config: config, allowed: allowed)

        // As the service user, and as root by hand: the same folders, each with its fix.
        for result in [try Self.asNobody(["check", "--config", config], environment: env),
                       try Harness.run(["check", "--config", config], extraEnvironment: env)] {
            let out = result.stdout
            #expect(result.status == 0, "\(out)\(result.stderr)")
            #expect(out.contains("""
                missing: \(roots["missing"]!) does not exist, and the user nobody cannot create it (\(allowed) is not writable by nobody)
                  fix: sudo photofinish init \(roots["missing"]!)
                       sudo chown -R nobody:nogroup \(roots["missing"]!)
                """), "\(out)")
            #expect(out.contains("""
                theirs: the user nobody cannot write \(roots["theirs"]!) (and 5 more of its folders): it belongs to root:root, mode 0755
                  fix: sudo chown -R nobody:nogroup \(roots["theirs"]!)
                """), "\(out)")
            #expect(out.contains("""
                outside: \(outside) lies outside the unit's ReadWritePaths (\(allowed)): the service may not write there
                  fix: sudo systemctl edit photofinish     and add:
                           [Service]
                           ReadWritePaths=\(outside)
                       sudo systemctl restart photofinish   (a drop-in applies at a restart, not a reload)
                """), "\(out)")
            #expect(!out.contains("fine:"), "\(out)")
            #expect(out.hasSuffix("configuration OK, but 3 hot folders cannot be used as things are (checked as the service user nobody): the daemon refuses them and tries again at every reload and rescan\n"), "\(out)")
        }
        #expect(try Self.asNobody(["check", "--config", config, "--strict"], environment: env).status == 1)

        // The fixes, as printed: the drop-in (systemd merges it), the chown, init and chown.
        try FileManager.default.createDirectory(atPath: dir + "/units/photofinish.service.d", withIntermediateDirectories: true)
        try Harness.write("[Service]\nReadWritePaths=\(outside)\n", to: dir + "/units/photofinish.service.d/override.conf")
        try Self.sh("chown -R nobody:nogroup '\(roots["theirs"]!)'")
        #expect(try Harness.run(["init", roots["missing"]!]).status == 0)
        try Self.sh("chown -R nobody:nogroup '\(roots["missing"]!)'")
        let fixed = try Self.asNobody(["check", "--config", config, "--strict"], environment: env)
        #expect(fixed.status == 0 && fixed.stdout == "configuration OK\n", "\(fixed.stdout)")
    }

    /// Inside the unit (ExecStartPre, ExecReload: systemd sets INVOCATION_ID), a folder outside
    /// ReadWritePaths is read-only: the sandbox is played with a read-only bind mount.
    @Test func insideTheUnitAFolderOutsideReadWritePathsIsNamedWithTheDropIn() throws {
        if let reason = try Self.cannotRunAsNobody() { print("skipped: \(reason)"); return }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { print("skipped: unshare is missing (util-linux)"); return }
        let base = try Harness.tempDir()
        #expect(chmod(base, 0o755) == 0)
        let root = base + "/shop"
        let (dir, config) = try Self.setup([("shop", root)])
        #expect(try Harness.run(["init", root]).status == 0)
        try Self.sh("chown -R nobody:nogroup '\(root)'")
        // The unit as installed (its user: nobody) lets the service write there, but the sandbox
        // this test plays does not: what check meets inside the unit is what it says.
        let env = try Self.unit(in: dir, config: config, allowed: root)
        let script = "mount --bind \"$1\" \"$1\" && mount -o remount,bind,ro \"$1\" && shift && exec \"$@\""
        let r = try Harness.exec("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", root]
                                 + Self.asNobody + [Harness.binary, "check", "--config", config],
                                 deadline: .seconds(120), extraEnvironment: env.merging(["INVOCATION_ID": "0123456789abcdef"]) { $1 })
        if r.stderr.contains("mount:") || r.stderr.contains("unshare:") {
            print("skipped: cannot make a private read-only mount here: \(r.stderr)")
            return
        }
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("""
            shop: \(root) is read-only for the service: it lies outside the unit's ReadWritePaths
              fix: sudo systemctl edit photofinish     and add:
                       [Service]
                       ReadWritePaths=\(root)
            """), "\(r.stdout)")
        #expect(r.stdout.contains("(checked as the service user nobody)"), "\(r.stdout)")
    }

    /// The web socket the installed unit would serve on every address, with no TLS in the
    /// config: `check` says so, with what to do; not once it listens on loopback, nor with HTTPS.
    @Test func checkWarnsOfAConsoleInPlainHTTPBeyondThisMachine() throws {
        let base = try Harness.tempDir()
        #expect(chmod(base, 0o777) == 0)
        let (dir, config) = try Self.setup([("shop", base + "/shop")])
        let environment = try Self.unit(in: dir, config: config, allowed: base)
        try Harness.write("[Socket]\nListenStream=8732\nFileDescriptorName=web\nService=photofinish.service\n",
                          to: dir + "/units/photofinish-web.socket")
        // Not enabled: nothing to say.
        var r = try Harness.run(["check", "--config", config], extraEnvironment: environment)
        #expect(r.stdout.hasSuffix("configuration OK\n"), "\(r.stdout)\(r.stderr)")
        try FileManager.default.createDirectory(atPath: dir + "/units/sockets.target.wants", withIntermediateDirectories: true)
        #expect(symlink(dir + "/units/photofinish-web.socket", dir + "/units/sockets.target.wants/photofinish-web.socket") == 0)
        r = try Harness.run(["check", "--config", config], extraEnvironment: environment)
        #expect(r.status == 0)
        #expect(r.stdout.contains("web console: the console at http://[::]:8732/ speaks plain HTTP beyond this machine"), "\(r.stdout)")
        #expect(r.stdout.contains("configuration OK, but the web console speaks plain HTTP beyond this machine"), "\(r.stdout)")
        // On loopback (a drop-in, as systemctl edit writes it): fine.
        try FileManager.default.createDirectory(atPath: dir + "/units/photofinish-web.socket.d", withIntermediateDirectories: true)
        try Harness.write("[Socket]\nListenStream=\nListenStream=127.0.0.1:8732\n", to: dir + "/units/photofinish-web.socket.d/override.conf")
        r = try Harness.run(["check", "--config", config], extraEnvironment: environment)
        #expect(r.stdout.hasSuffix("configuration OK\n"), "\(r.stdout)")
        // Every address again, but HTTPS.
        try FileManager.default.removeItem(atPath: dir + "/units/photofinish-web.socket.d")
        try Harness.write("cert", to: dir + "/console.pem")
        try Harness.write("key", to: dir + "/console.key")
        let text = try String(contentsOfFile: config, encoding: .utf8)
        try Harness.write(text.replacingOccurrences(of: "templatesDir:", with: "web: { tlsCertificate: \"\(dir)/console.pem\", tlsKey: \"\(dir)/console.key\" }, templatesDir:"),
                          to: config)
        r = try Harness.run(["check", "--config", config], extraEnvironment: environment)
        #expect(r.stdout.hasSuffix("configuration OK\n"), "\(r.stdout)\(r.stderr)")
    }

    @Test func checkNamesAFontThatIsNotInstalledAndTheOneDrawnInstead() throws {
        let (dir, config) = try Self.setup([("shop", "/srv/photofinish-test-unused")], template: """
            { version: 1,
              resize: { longSide: 32 },
              text: {
                text: "© Studio",
                font: "Nonexistent Grotesk Pro:bold",
              },
            }
            """)
        let r = try Harness.run(["check", "--config", config])
        #expect(r.status == 0, "\(r.stdout)")
        let line = try #require(r.stdout.split(separator: "\n").first { $0.contains("text.font") }.map(String.init), "\(r.stdout)")
        #expect(line.hasPrefix(dir + "/templates/small.json5:5: text.font: font \"Nonexistent Grotesk Pro\" is not installed; fontconfig chose "), "\(line)")
        #expect(line.hasSuffix(" instead (install it, or name a font that `fc-list : family` lists)"), "\(line)")
        #expect(r.stdout.contains("1 font is not installed"), "\(r.stdout)")
        #expect(try Harness.run(["check", "--config", config, "--strict"]).status == 1)
        // A template named alone is checked for its fonts too.
        #expect(try Harness.run(["check", dir + "/templates/small.json5"]).stdout.contains("Nonexistent Grotesk Pro"))
    }

    // MARK: - init

    @Test func initMakesAGroupWritableDropAndPrintsItsStepsInAnOrderThatWorks() throws {
        if let reason = try Self.cannotRunAsNobody() { print("skipped: \(reason)"); return }
        let base = try Harness.tempDir()
        #expect(chmod(base, 0o755) == 0)
        let (dir, config) = try Self.setup([])
        let env = try Self.unit(in: dir, config: config, allowed: base + "/allowed")
        let root = base + "/elsewhere/studio"
        let r = try Harness.run(["init", root, "--config", config], extraEnvironment: env)
        #expect(r.status == 0, "\(r.stderr)")
        var st = stat()
        #expect(stat(root + "/drop", &st) == 0 && st.st_mode & 0o7777 == 0o2775, "drop/ is \(String(st.st_mode & 0o7777, radix: 8))")
        #expect(stat(root + "/.work", &st) == 0 && st.st_mode & 0o7777 == 0o700)

        // What the service needs first, then the entry, then check, then a restart (a drop-in).
        let lines = r.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        func index(_ text: String) -> Int { lines.firstIndex { $0.contains(text) } ?? -1 }
        let chown = index("sudo chown -R nobody:nogroup \(root)"), dropIn = index("ReadWritePaths=\(root)")
        let entry = index("{ name: \"studio\""), check = index("photofinish check --config"), restart = index("sudo systemctl restart photofinish")
        #expect(chown >= 0 && dropIn >= 0 && entry >= 0 && check >= 0 && restart >= 0, "\(r.stdout)")
        #expect(max(chown, dropIn) < entry && entry < check && check < restart, "\(r.stdout)")
        #expect(index("systemctl reload") == -1, "a drop-in needs a restart: \(r.stdout)")

        // As printed: the chown, then a member of the folder's group drops a file, which keeps the group.
        try Self.sh("chown -R nobody:nogroup '\(root)'")
        let member = try Harness.exec("/usr/bin/setpriv", ["--reuid=4242", "--regid=4242", "--groups=nogroup", "--",
                                                           "/bin/sh", "-c", "echo photo > '\(root)/drop/IMG_1.jpg'"],
                                      deadline: .seconds(30))
        #expect(member.status == 0, "\(member.stderr)")
        #expect(stat(root + "/drop/IMG_1.jpg", &st) == 0 && st.st_uid == 4242 && st.st_gid == 65534)

        // Inside the allowed folder, no drop-in: the steps end with a reload.
        let inside = try Harness.run(["init", base + "/allowed/shop", "--config", config], extraEnvironment: env)
        #expect(inside.stdout.contains("sudo systemctl reload photofinish") && !inside.stdout.contains("ReadWritePaths="),
                "\(inside.stdout)")
    }

    // MARK: - explain

    @Test func explainMatchesAFileByItsPath() throws {
        let hot = try HotFolderFixture()
        let earlier = try HotFolderFixture.photo(6), other = try HotFolderFixture.photo(7)
        try Harness.write(earlier, to: hot.dir + "/Portrait_6.jpg")
        for _ in 0..<2 {
            let run = try Harness.run(["run", "--template", hot.dir + "/templates/small.json5", "--out", hot.root + "/out",
                                       hot.dir + "/Portrait_6.jpg"])
            #expect(run.status == 0, "\(run.stderr)")
        }
        let batches = hot.names(in: hot.root + "/out").sorted()
        #expect(batches.count == 2)
        // run leaves the originals where they were; file them as a daemon would.
        for id in batches {
            try FileManager.default.createDirectory(atPath: hot.root + "/originals/" + id, withIntermediateDirectories: true)
            try Harness.write(earlier, to: hot.root + "/originals/\(id)/Portrait_6.jpg")
        }

        // Another photo of the same name, inside a folder dropped into drop/: never taken, and
        // no earlier batch's Portrait_6.jpg.
        try FileManager.default.createDirectory(atPath: hot.drop + "/wedding", withIntermediateDirectories: true)
        try Harness.write(other, to: hot.drop + "/wedding/Portrait_6.jpg")
        let inFolder = try Harness.run(["explain", hot.drop + "/wedding/Portrait_6.jpg"])
        #expect(inFolder.status == 0)
        #expect(inFolder.stdout == "Portrait_6.jpg is in drop/wedding/, a folder inside drop/: it is never taken (folders in drop/ are not descended into). Move it into drop/ itself to have it finished.\n",
                "\(inFolder.stdout)")
        // The same bytes in the folder: the content was finished before, and that is said.
        try Harness.write(earlier, to: hot.drop + "/wedding/Portrait_6.jpg")
        let same = try Harness.run(["explain", hot.drop + "/wedding/Portrait_6.jpg"])
        #expect(same.stdout.contains("The same photo, dropped as Portrait_6.jpg, was finished"), "\(same.stdout)")

        // A filed original is that batch's; an output names the photo it was made from.
        let filed = try Harness.run(["explain", hot.root + "/originals/\(batches[0])/Portrait_6.jpg"])
        #expect(filed.stdout.contains("in batch \(batches[0])") && !filed.stdout.contains(batches[1]), "\(filed.stdout)")
        let output = try Harness.run(["explain", hot.root + "/out/\(batches[1])/Portrait_6.jpg"])
        #expect(output.stdout.hasPrefix("Portrait_6.jpg is an output of Portrait_6.jpg, finished at ")
                && output.stdout.contains("in batch \(batches[1])") && !output.stdout.contains(batches[0]), "\(output.stdout)")
        // By name, every batch of that name is listed (newest first).
        let byName = try Harness.run(["explain", "Portrait_6.jpg", hot.root])
        #expect(byName.stdout.contains(batches[0]) && byName.stdout.contains(batches[1]), "\(byName.stdout)")
    }

    // MARK: - status

    @Test func statusListsLiveProcessesAndAGoneFolderOnce() throws {
        let dir = try Harness.tempDir()
        let runtime = dir + "/run"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        // Nine processes that ran once, for folders long gone, and two for one that is still there.
        let kept = dir + "/kept"
        try FileManager.default.createDirectory(atPath: kept + "/drop", withIntermediateDirectories: true)
        func stopped(_ file: String, root: String, pid: Int32, updated: String, last: String = "") throws {
            try Harness.write("""
                { "pid": \(pid), "updated": "\(updated)", "state": "stopped", "command": "watch \(root)",
                  "inboxes": [ { "name": "\((root as NSString).lastPathComponent)", "root": "\(root)", "settling": 0,
                                 "pending": 0, "queued": 0, "polling": false \(last) } ] }
                """, to: runtime + "/" + file)
        }
        for i in 0..<9 { try stopped("watch-gone\(i)-0000000\(i).json", root: dir + "/gone\(i)", pid: 999_990 + Int32(i), updated: "2026-11-0\(i + 1)T10:00:00.000Z") }
        try stopped("watch-kept-old.json", root: kept, pid: 999_980, updated: "2026-11-01T10:00:00.000Z")
        try stopped("watch-kept-new.json", root: kept, pid: 999_981, updated: "2026-11-20T10:00:00.000Z", last: """
            , "last": { "batch": "20261120-095900-abcd", "status": "complete", "items": 3, "ok": 3, "failed": 0,
                        "finished": "2026-11-20T09:59:30.000Z" }
            """)
        let live = dir + "/live"
        // Only this test's status files: not those of other processes of this user (XDG_RUNTIME_DIR).
        let env = ["RUNTIME_DIRECTORY": runtime, "XDG_RUNTIME_DIR": dir + "/xdg"]
        let watch = try DaemonProcess(["watch", live], notify: nil, runtime: runtime, logPath: dir + "/watch.log",
                                      environment: env)
        watch.waitUntilReady()
        #expect(Poll.until(.seconds(20)) {
            (try? Harness.run(["status"], extraEnvironment: env).stdout.contains("photofinish watch \(live): running")) == true
        })
        let status = try Harness.run(["status"], extraEnvironment: env)
        #expect(status.status == 0)
        let out = status.stdout
        #expect(out.contains("photofinish watch \(live): running (pid \(watch.pid)"), "\(out)")
        #expect(!out.contains("gone"), "\(out)")
        #expect(out.components(separatedBy: "kept  \(kept)").count == 2, "the kept folder once: \(out)")
        #expect(out.contains("kept  \(kept)\n  not watched: photofinish watch \(kept) is not running (its last status "), "\(out)")
        #expect(out.contains("pid 999981)\n  last batch 20261120-095900-abcd: complete, 3 of 3 finished at "), "\(out)")
        watch.signal(SIGINT)
        #expect(watch.wait() == 0)
        // Nothing runs: the folders still there, once each, and exit 1.
        let none = try Harness.run(["status"], extraEnvironment: env)
        #expect(none.status == 1 && none.stdout.contains("live  \(live)\n  not watched:") && !none.stdout.contains("gone"), "\(none.status): \(none.stdout)")
    }
}
