import Foundation
import Testing

/// The Debian package `scripts/package` builds (CI builds it before the tests): what it holds,
/// what lintian says, and that its binary runs on a machine without the Swift toolchain.
struct PackageTests {
    /// The newest `dist/photofinish_*.deb`, or nil (then each test says it skipped, and why).
    static let package: String? = {
        let dist = CommandLineTests.repository + "/dist"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: dist)) ?? [])
            .filter { $0.hasPrefix("photofinish_") && $0.hasSuffix(".deb") }
        let newest = names.max { a, b in
            let ma = (try? FileManager.default.attributesOfItem(atPath: dist + "/" + a)[.modificationDate] as? Date) ?? .distantPast
            let mb = (try? FileManager.default.attributesOfItem(atPath: dist + "/" + b)[.modificationDate] as? Date) ?? .distantPast
            return ma < mb
        }
        return newest.map { dist + "/" + $0 }
    }()

    static func skip(_ what: String) -> Bool {
        guard package == nil else { return false }
        print("skipped: no dist/photofinish_*.deb (scripts/package builds it; scripts/test does): \(what) not tested")
        return true
    }

    @Test func itHoldsWhatIsPromised() throws {
        guard !Self.skip("the package's contents"), let deb = Self.package else { return }
        let listing = try Harness.exec("/usr/bin/dpkg-deb", ["-c", deb], deadline: .seconds(60))
        #expect(listing.status == 0)
        let paths = Set(listing.stdout.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) })
        for path in [
            "./usr/bin/photofinish",
            "./lib/systemd/system/photofinish.service",
            "./lib/systemd/system/photofinish-metrics.socket",
            "./lib/systemd/system/photofinish-web.socket",
            "./etc/photofinish/photofinish.json5",
            "./etc/photofinish/templates/shop.json5",
            "./etc/photofinish/templates/web.json5",
            "./etc/photofinish/templates/logos/studio.png",
            "./usr/share/man/man1/photofinish.1.gz",
            "./usr/share/man/man5/photofinish.json5.5.gz",
            "./usr/share/bash-completion/completions/photofinish",
            "./usr/share/doc/photofinish/copyright",
            "./usr/share/doc/photofinish/changelog.gz",
            "./usr/share/doc/photofinish/README.md",
            "./usr/share/doc/photofinish/reference.md",
            "./usr/share/doc/photofinish/examples/webhook-network.conf",
            "./usr/share/doc/photofinish/examples/delivery-network.conf",
        ] {
            #expect(paths.contains(path), "\(path) is not in the package")
        }
        let fields = try Harness.exec("/usr/bin/dpkg-deb", ["-f", deb, "Package", "Version", "Architecture", "Depends"], deadline: .seconds(60))
        let version = try Harness.run(["--version"]).stdout.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(fields.stdout.contains("Package: photofinish\n"))
        #expect(fields.stdout.contains("Version: \(version ?? "?")\n"), "\(fields.stdout)")
        // The libraries the binary links, as Debian names them (worked out by dpkg-shlibdeps).
        for library in ["libc6", "libjpeg62-turbo", "libpng16-16", "libheif1", "liblcms2-2", "libexif12", "libcurl4",
                        "libsystemd0", "libfreetype6", "libharfbuzz0b", "libfontconfig1", "libmicrohttpd12", "libarchive13",
                        "libcrypt1", "adduser", "fonts-dejavu-core"] {
            #expect(fields.stdout.contains(library), "Depends lacks \(library): \(fields.stdout)")
        }
        #expect(!fields.stdout.lowercased().contains("swift"), "the Swift runtime is linked in, not a dependency")
        // Config, templates and logo are conffiles (an admin's edits survive upgrades).
        let control = try Harness.tempDir()
        #expect(try Harness.exec("/usr/bin/dpkg-deb", ["-e", deb, control], deadline: .seconds(60)).status == 0)
        let conffiles = try String(contentsOfFile: control + "/conffiles", encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(conffiles.contains("/etc/photofinish/photofinish.json5"))
        #expect(conffiles.contains("/etc/photofinish/templates/shop.json5"))
        #expect(conffiles.contains("/etc/photofinish/templates/logos/studio.png"))
        for script in ["postinst", "prerm", "postrm"] {
            #expect(FileManager.default.isExecutableFile(atPath: control + "/" + script), "\(script)")
        }
        let postrm = try String(contentsOfFile: control + "/postrm", encoding: .utf8)
        #expect(!postrm.contains("rm -rf /srv"), "photos are never removed")
    }

    @Test func lintianReportsNoErrors() throws {
        guard !Self.skip("lintian"), let deb = Self.package else { return }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/lintian") else {
            print("skipped: lintian is missing (scripts/bootstrap --package installs it)")
            return
        }
        let r = try Harness.exec("/usr/bin/lintian", ["--fail-on", "error", deb], deadline: .seconds(600))
        #expect(r.status == 0, "lintian:\n\(r.stdout)\(r.stderr)")
        #expect(!r.stdout.contains("E: "), "lintian:\n\(r.stdout)")
    }

    /// The package's binary, with the toolchain's folder hidden under an empty tmpfs (in a
    /// mount namespace of its own), prints its version and finishes a photo.
    @Test func itsBinaryRunsWithoutTheToolchain() throws {
        guard !Self.skip("a run without the toolchain"), let deb = Self.package else { return }
        let swift = try Harness.exec("/bin/sh", ["-c", "command -v swift"], deadline: .seconds(10)).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let toolchain = URL(fileURLWithPath: swift).resolvingSymlinksInPath()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        guard !swift.isEmpty, toolchain != "/", !toolchain.hasPrefix("/usr") else {
            print("skipped: the Swift toolchain is not in a folder of its own here (\(swift)): it cannot be hidden")
            return
        }
        let dir = try Harness.tempDir()
        #expect(try Harness.exec("/usr/bin/dpkg-deb", ["-x", deb, dir + "/root"], deadline: .seconds(120)).status == 0)
        let binary = dir + "/root/usr/bin/photofinish"
        let ldd = try Harness.exec("/usr/bin/ldd", [binary], deadline: .seconds(30))
        #expect(!ldd.stdout.contains("swift"), "linked to the toolchain:\n\(ldd.stdout)")
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        try Harness.write(try Harness.jpeg(upright: Harness.marked(width: 640, height: 480)), to: dir + "/in/photo.jpg")
        try Harness.write("{ version: 1, resize: { longSide: 320 } }", to: dir + "/t.json5")
        let script = """
            set -e
            mount -t tmpfs -o size=1m none \(toolchain)
            test -z "$(ls -A \(toolchain))"
            \(binary) --version
            \(binary) run --template \(dir)/t.json5 --out \(dir)/out \(dir)/in/photo.jpg
            """
        let r = try Harness.exec("/usr/bin/unshare", ["-m", "/bin/sh", "-c", script], deadline: .seconds(300))
        if r.status != 0 && (r.stderr.contains("Operation not permitted") || r.stderr.contains("permission denied")) {
            print("skipped: unshare -m needs root here (\(r.stderr.trimmingCharacters(in: .whitespacesAndNewlines)))")
            return
        }
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.hasPrefix("photofinish "), "\(r.stdout)")
        let batch = try Harness.batchFolder(in: dir + "/out")
        #expect(try Harness.report(in: batch)["status"] as? String == "complete")
        let (image, _) = try Harness.decode(batch + "/photo.jpg")
        #expect(image.width == 320 && image.height == 240)
    }

    @Test func bashCompletionOffersCommandsAndOptions() throws {
        let script = CommandLineTests.repository + "/packaging/bash-completion/photofinish"
        let bin = URL(fileURLWithPath: Harness.binary).deletingLastPathComponent().path
        func complete(_ words: [String]) throws -> [String] {
            let quoted = words.map { "'\($0)'" }.joined(separator: " ")
            let r = try Harness.exec("/bin/bash", ["-c", """
                PATH=\(bin):$PATH; source \(script)
                COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); _photofinish; printf '%s\\n' "${COMPREPLY[@]}"
                """], deadline: .seconds(30))
            #expect(r.status == 0, "\(r.stderr)")
            return r.stdout.split(separator: "\n").map(String.init)
        }
        #expect(try complete(["photofinish", "st"]) == ["status"])
        #expect(try complete(["photofinish", "run", "--"]) == ["--template", "--out", "--workers", "--config", "--help"])
        #expect(try complete(["photofinish", "help", "ex"]) == ["explain"])
    }
}
