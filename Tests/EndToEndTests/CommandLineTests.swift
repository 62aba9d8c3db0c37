import Foundation
import Testing

/// The command line a person expects: version, help for every command, messages that say what
/// to do, commands printed ready to run, one status per process.
struct CommandLineTests {
    /// The repository, from this file's place in it.
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// The command names listed by `photofinish help`.
    static func commandNames() throws -> [String] {
        let overview = try Harness.run(["help"])
        #expect(overview.status == 0)
        let lines = overview.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex(of: "commands:"))
        return lines[(start + 1)...].prefix { !$0.isEmpty }.compactMap { line in
            line.hasPrefix("  ") && !line.hasPrefix("   ") ? line.split(separator: " ").first.map(String.init) : nil
        }
    }

    /// The `--name` of each option a command's help lists under "options:".
    static func options(inHelp help: String) -> [String] {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: "options:") else { return [] }
        return lines[(start + 1)...].compactMap { line in
            line.hasPrefix("  --") ? line.dropFirst(2).split(separator: " ").first.map(String.init) : nil
        }
    }

    @Test func versionIsPrinted() throws {
        for args in [["--version"], ["version"]] {
            let r = try Harness.run(args)
            #expect(r.status == 0)
            #expect(r.stdout.wholeMatch(of: /photofinish \d+\.\d+\.\d+\n/) != nil, "\(r.stdout)")
        }
    }

    @Test func everyCommandHasHelpListingEveryOption() throws {
        let names = try Self.commandNames()
        #expect(Set(["run", "check", "report", "watch", "init", "daemon", "status", "proof", "explain", "demo",
                     "help", "version"]).isSubset(of: Set(names)), "\(names)")
        let manual = try String(contentsOfFile: Self.repository + "/docs/photofinish.1.md", encoding: .utf8)
        for name in names {
            let asked = try Harness.run([name, "--help"])
            let viaHelp = try Harness.run(["help", name])
            #expect(asked.status == 0 && viaHelp.status == 0, "\(name)")
            #expect(asked.stdout == viaHelp.stdout, "\(name): --help and help COMMAND differ")
            #expect(asked.stdout.hasPrefix("usage: photofinish \(name)"), "\(asked.stdout)")
            let listed = Self.options(inHelp: asked.stdout)
            #expect(listed.contains("--help"), "\(name)")
            // Every option in the usage line is explained, and the parser knows each one.
            let usage = asked.stdout.prefix { $0 != "\n" }
            for word in usage.split(separator: " ") where word.hasPrefix("--") || word.hasPrefix("[--") {
                let option = String(word.drop { $0 == "[" }.prefix { $0 != "]" })
                #expect(listed.contains(option), "\(name): \(option) is in the usage but not explained")
            }
            for option in listed where option != "--help" {
                // Accepted: the parser goes on to the next word, which it refuses.
                let r = try Harness.run([name, option, "x", "--no-such-option"])
                #expect(r.status == 2 && r.stderr.contains("unknown option --no-such-option"), "\(name) \(option): \(r.stderr)")
            }
            // The man page's source names the command and each of its options.
            let section = try #require(manual.range(of: "\n## \(name)\n").map { String(manual[$0.upperBound...]) },
                                       "\(name) in the man page")
            let text = section.components(separatedBy: "\n#").first ?? ""
            for option in listed where option != "--help" {
                #expect(text.contains(option), "the man page's \(name) section does not mention \(option)")
            }
        }
        let unknown = try Harness.run(["help", "frobnicate"])
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown command 'frobnicate'"))
        let typo = try Harness.run(["stauts"])
        #expect(typo.status == 2 && typo.stderr.contains("did you mean 'status'?"))
        let option = try Harness.run(["run", "--otu", "x"])
        #expect(option.status == 2 && option.stderr.contains("unknown option --otu") && option.stderr.contains("help run"))
    }

    @Test func checkSaysWhatToNameAndTellsConfigsFromTemplates() throws {
        let dir = try Harness.tempDir()
        try FileManager.default.createDirectory(atPath: dir + "/templates", withIntermediateDirectories: true)
        try Harness.write("{ version: 1, resize: { longSide: 64 } }", to: dir + "/templates/web.json5")
        try Harness.write("{ templatesDir: \"templates\", inboxes: [ { name: \"a\", root: \"/srv/a\", template: \"web\" } ] }",
                          to: dir + "/pf.json5")
        if FileManager.default.fileExists(atPath: "/etc/photofinish/photofinish.json5") {
            print("skipped: 'check' without arguments checks /etc/photofinish/photofinish.json5, which exists here")
        } else {
            let bare = try Harness.run(["check"])
            #expect(bare.status == 2)
            #expect(bare.stderr.contains("photofinish check --config FILE") && bare.stderr.contains("check shop.json5"),
                    "\(bare.stderr)")
        }
        let configAsTemplate = try Harness.run(["check", dir + "/pf.json5"])
        #expect(configAsTemplate.status == 2)
        #expect(configAsTemplate.stdout == "\(dir)/pf.json5: this is a config (it has 'inboxes'), not a template: check it with photofinish check --config \(dir)/pf.json5\n")
        let templateAsConfig = try Harness.run(["check", "--config", dir + "/templates/web.json5"])
        #expect(templateAsConfig.status == 2)
        #expect(templateAsConfig.stdout.contains("this is a template") && templateAsConfig.stdout.split(separator: "\n").count == 1,
                "\(templateAsConfig.stdout)")
        let both = try Harness.run(["check", "--config", dir + "/pf.json5", "web"])
        #expect(both.status == 0 && both.stdout == "configuration OK\n")
    }

    /// `init` prints an entry with a template that exists and commands that work as printed.
    @Test func initPrintsAnEntryAndCommandsThatWork() throws {
        let dir = try Harness.tempDir()
        try FileManager.default.createDirectory(atPath: dir + "/etc/templates", withIntermediateDirectories: true)
        try Harness.write("{ version: 1, resize: { longSide: 32 } }", to: dir + "/etc/templates/web.json5")
        let config = dir + "/etc/photofinish.json5"
        try Harness.write("{ templatesDir: \"templates\", inboxes: [] }", to: config)
        let root = dir + "/Studio Nord"
        let missing = try Harness.run(["init", root, "--config", config, "--template", "shop"])
        #expect(missing.status == 2 && missing.stderr.contains("no template 'shop'") && missing.stderr.contains("(there: web)"))
        #expect(!FileManager.default.fileExists(atPath: root))

        let made = try Harness.run(["init", root, "--config", config])
        #expect(made.status == 0, "\(made.stderr)")
        let lines = made.stdout.split(separator: "\n").map(String.init)
        // The suggested template is one that exists.
        let entry = try #require(lines.first { $0.contains("{ name:") }).trimmingCharacters(in: .whitespaces)
        #expect(entry == "{ name: \"Studio-Nord\", root: \"\(root)\", template: \"web\" },")
        // With the entry added, the printed check command passes as printed.
        try Harness.write("{ templatesDir: \"templates\", inboxes: [ \(entry) ] }", to: config)
        let check = try #require(lines.first { $0.hasPrefix("    photofinish check") })
        let checked = try Harness.run(Array(try Self.shellWords(check).dropFirst()))
        #expect(checked.status == 0 && checked.stdout == "configuration OK\n", "\(check): \(checked.stdout)")
        // The printed watch command watches that folder with that template.
        let watchLine = try #require(lines.first { $0.hasPrefix("    photofinish watch") })
        let words = try Self.shellWords(watchLine)
        #expect(words == ["photofinish", "watch", root, "--template", dir + "/etc/templates/web.json5"])
        let watch = try DaemonProcess(Array(words.dropFirst()), notify: nil, runtime: dir + "/run", logPath: dir + "/watch.log")
        watch.waitUntilReady()
        #expect(watch.log.contains("with the template 'web'"), "\(watch.log)")
        watch.signal(SIGINT)
        #expect(watch.wait() == 0)
    }

    /// Two `watch` processes write separate status files; `status ROOT` answers for each.
    @Test func twoWatchesHaveSeparateStatus() throws {
        let dir = try Harness.tempDir()
        let runtime = dir + "/run"
        let roots = [dir + "/one", dir + "/two"]
        let watches = try roots.enumerated().map { i, root in
            try DaemonProcess(["watch", root], notify: nil, runtime: runtime, logPath: dir + "/watch-\(i).log")
        }
        for watch in watches { watch.waitUntilReady() }
        let env = ["RUNTIME_DIRECTORY": runtime]
        #expect(Poll.until(.seconds(20)) {
            ((try? FileManager.default.contentsOfDirectory(atPath: runtime)) ?? []).filter { $0.hasSuffix(".json") }.count == 2
        })
        for (root, watch) in zip(roots, watches) {
            let r = try Harness.run(["status", root], extraEnvironment: env)
            #expect(r.status == 0, "\(r.stdout)")
            #expect(r.stdout.contains("photofinish watch \(root): running (pid \(watch.pid)"), "\(r.stdout)")
            let other = roots.first { $0 != root }!
            #expect(!r.stdout.contains(other + "\n") && !r.stdout.contains(other + ":"), "\(r.stdout)")
        }
        let all = try Harness.run(["status"], extraEnvironment: env)
        #expect(all.status == 0 && roots.allSatisfy { all.stdout.contains("photofinish watch \($0): running") }, "\(all.stdout)")
        let nobody = try Harness.run(["status", dir + "/three"], extraEnvironment: env)
        #expect(nobody.status == 1 && nobody.stdout.contains("nothing watches \(dir)/three"))

        watches[0].signal(SIGINT)
        #expect(watches[0].wait() == 0)
        let stopped = try Harness.run(["status", roots[0]], extraEnvironment: env)
        #expect(stopped.status == 1 && stopped.stdout.contains("not running"), "\(stopped.stdout)")
        #expect(try Harness.run(["status", roots[1]], extraEnvironment: env).status == 0)
        watches[1].signal(SIGINT)
        #expect(watches[1].wait() == 0)
    }

    /// Splits a line the way a POSIX shell does for plain words and single quotes.
    static func shellWords(_ line: String) throws -> [String] {
        var words: [String] = [], current = "", inWord = false, quoted = false
        for c in line {
            if quoted {
                if c == "'" { quoted = false } else { current.append(c) }
            } else if c == "'" {
                quoted = true
                inWord = true
            } else if c == " " {
                if inWord { words.append(current) }
                current = ""
                inWord = false
            } else if c == "\\" || c == "\"" || c == "$" || c == "`" {
                throw POSIXError(.EINVAL)  // not printed by photofinish; a test would need a real shell
            } else {
                current.append(c)
                inWord = true
            }
        }
        if inWord { words.append(current) }
        return words
    }
}
