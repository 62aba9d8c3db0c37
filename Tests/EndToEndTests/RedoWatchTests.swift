import Foundation
import Glibc
import Testing

/// `photofinish redo` on a folder run by `photofinish watch ROOT`, which no config names: the
/// batch is finished again with the template it was finished with (the built-in one, or the
/// template file its report names, as that file is now), and redo says which. Who may run it:
/// a user without the rights is told which are missing; root writes as the folder's owner.
@Suite(.serialized) struct RedoWatchTests {
    /// A hot folder run by `watch` (timing from a config that names no hot folder), with one
    /// finished batch of one photo.
    struct Watched {
        let dir: String
        let root: String
        let batch: String

        init(template: String? = nil, name: String = #function) throws {
            dir = try Harness.tempDir(name)
            root = dir + "/hot"
            try Harness.write("{ settle: \"200ms\", quiet: \"300ms\" }", to: dir + "/timing.json5")
            let watch = try DaemonProcess(["watch", root, "--config", dir + "/timing.json5"] + (template.map { ["--template", $0] } ?? []),
                                          notify: nil, runtime: dir + "/run", logPath: dir + "/watch.log")
            watch.waitUntilReady()
            let root = self.root, dir = self.dir
            try Harness.write(try HotFolderFixture.photo(1, width: 60), to: dir + "/a.jpg")
            #expect(rename(dir + "/a.jpg", root + "/drop/a.jpg") == 0)
            #expect(Poll.until(.seconds(60)) { Self.batches(root).count == 1 }, "\(watch.log)")
            watch.signal(SIGTERM)
            #expect(watch.wait() == 0, "\(watch.log)")
            batch = try #require(Self.batches(root).first)
        }

        /// The finished batches (those with a report), oldest first.
        static func batches(_ root: String) -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: root + "/out")) ?? [])
                .filter { FileManager.default.fileExists(atPath: root + "/out/" + $0 + "/report.json") }.sorted()
        }

        /// The output sizes of the newest batch, and its `redoes`.
        func newest() throws -> (sizes: [[Int]], redoes: String?) {
            // Batch ids made in the same second sort by their random part: the redo is the one
            // that is not the first batch.
            let id = Self.batches(root).last { $0 != batch } ?? batch
            let report = try Harness.report(in: root + "/out/" + id)
            let items = try #require(report["items"] as? [[String: Any]])
            return (items.compactMap { ($0["outputs"] as? [[String: Any]])?.first?["size"] as? [Int] }, report["redoes"] as? String)
        }
    }

    @Test("redo on a watch folder with the built-in template, no config: the built-in template, said")
    func builtIn() throws {
        let hot = try Watched()
        defer { try? FileManager.default.removeItem(atPath: hot.dir) }
        let r = try Harness.run(["redo", hot.root, hot.batch])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("with the built-in template, the one batch \(hot.batch) was finished with ("), "\(r.stderr)")
        #expect(Watched.batches(hot.root).count == 2)
        #expect(try hot.newest().redoes == hot.batch)
    }

    @Test("redo on a watch folder run with --template F, no config: F as it is now, said")
    func templateFile() throws {
        let dir = try Harness.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let template = dir + "/studio.json5"
        try Harness.write("{ version: 1, resize: { longSide: 32 } }", to: template)
        let hot = try Watched(template: template)
        defer { try? FileManager.default.removeItem(atPath: hot.dir) }
        #expect(try hot.newest().sizes == [[32, 24]])
        // Fixed after the batch: redo finishes it with the file as it is now.
        try Harness.write("{ version: 1, resize: { longSide: 20 } }", to: template)
        let r = try Harness.run(["redo", hot.root, hot.batch])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("with the template 'studio' (\(template)), the one batch \(hot.batch) was finished with ("),
                "\(r.stderr)")
        #expect(r.stderr.contains("the file has changed since, and is used as it is now"), "\(r.stderr)")
        #expect(try hot.newest().sizes == [[20, 15]])
        // Gone: redo says so and how to name one.
        try FileManager.default.removeItem(atPath: template)
        let gone = try Harness.run(["redo", hot.root, hot.batch])
        #expect(gone.status == 2)
        #expect(gone.stderr.contains("from \(template), which is gone"), "\(gone.stderr)")
        #expect(gone.stderr.contains("--template F"))
    }

    @Test("redo without the rights says which it needs; run as root it writes as the folder's owner")
    func rights() throws {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            print("skipped: needs root and setpriv to play another user")
            return
        }
        let hot = try Watched()
        defer { try? FileManager.default.removeItem(atPath: hot.dir) }
        // The folder is root's (as watch made it): the user nobody may not write it.
        let refused = try Harness.exec("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                           Harness.binary, "redo", hot.root, hot.batch], deadline: .seconds(120))
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("it may not use .work/, out/, originals/, failed/ (they belong to root:root; .work/ is mode 0700)"),
                "\(refused.stderr)")
        #expect(refused.stderr.contains("Run it as root"))
        #expect(Watched.batches(hot.root).count == 1, "nothing was made")

        // The folder is the service's (here: nobody's), redo is run by root.
        #expect(try Harness.exec("/bin/chown", ["-R", "65534:65534", hot.root], deadline: .seconds(30)).status == 0)
        let r = try Harness.run(["redo", hot.root, hot.batch])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("writing as "), "\(r.stderr)")
        let new = try #require(Watched.batches(hot.root).last { $0 != hot.batch })
        var made: [String] = [hot.root + "/out/" + new, hot.root + "/originals/" + new]
        for folder in made {
            made += ((try? FileManager.default.subpathsOfDirectory(atPath: folder)) ?? []).map { folder + "/" + $0 }
        }
        for path in made {
            var st = stat()
            #expect(lstat(path, &st) == 0)
            #expect(st.st_uid == 65534 && st.st_gid == 65534, "\(path) is \(st.st_uid):\(st.st_gid), not the folder's owner")
        }
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: hot.root + "/.work")) ?? []).filter { !$0.hasPrefix(".") }.isEmpty)
    }
}
