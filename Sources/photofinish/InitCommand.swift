import Configuration
import Foundation
import System
import HotFolders
import Service

/// `photofinish init ROOT [--template NAME] [--config FILE]`: creates the hot-folder layout
/// (again safely) and prints the config entry to add, naming a template that exists, and the
/// commands to use it, each ready to copy and run as printed.
enum InitCommand {
    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        guard a.positional.count == 1 else { throw UsageError("init needs one ROOT folder") }
        let root = WatchCommand.absolute(a.positional[0])
        let configPath = WatchCommand.absolute(a[.config] ?? Commands.defaultConfig)
        var config: Config?
        if a[.config] != nil || Files.existsFollowingLinks(configPath) {
            // Its outline is all init needs (`photofinish check` checks the rest); the whole
            // load only when the outline cannot be read, for its errors.
            config = Config.outline(path: configPath)
            if config == nil {
                do {
                    config = try Config.load(path: configPath)
                } catch {
                    for e in error.errors { Terminal.note(e.description) }
                    // The default config only helps to suggest a template; a named one must be right.
                    guard a[.config] == nil else {
                        Terminal.error("the config has errors: fix them first (photofinish check --config \(shell(configPath)))")
                        return 2
                    }
                }
            }
        }
        let templatesDir = config?.templatesDir ?? Config.defaults.templatesDir
        let available = templates(in: templatesDir)
        let name = uniqueName(inboxName(for: root), config: config)
        let template: String?
        if let asked = a[.template] {
            guard available.contains(asked) else {
                throw UsageError("no template '\(asked)' in \(templatesDir)"
                                 + (available.isEmpty ? " (it has none)" : " (there: \(available.joined(separator: ", ")))"))
            }
            template = asked
        } else {
            template = [name, "shop", "web"].first(where: available.contains) ?? available.first
        }
        do throws(SystemError) {
            try HotFolderLayout(root: root).create()
        } catch {
            Terminal.error("\(error)")
            return 2
        }
        print("""
            created \(root)/
              drop/        people and tools drop photos here (group-writable, setgid: members of its group may drop)
              out/         finished batches: out/<batch-id>/ with report.json
              originals/   sources after success
              failed/      sources that could not be finished
              .work/       the daemon's own (mode 0700)

            """)
        var paths = StandardPaths()  // 10,000 roots under one parent: that parent resolved once
        if let existing = config?.inboxes.first(where: { paths.standardized($0.root) == root }) {
            print("it is already in \(configPath) as '\(existing.name)' (template '\(existing.template)')")
        } else if let template {
            for line in serviceSteps(name: name, root: root, template: template, configPath: configPath) { print(line) }
        } else {
            print("there is no template in \(templatesDir) yet: write one (see 'man photofinish.json5'), then name it in an inbox of \(configPath)")
        }
        print("\nor try it now in the foreground (Ctrl-C stops):")
        print("    photofinish watch \(shell(root))"
              + (template.map { " --template " + shell((templatesDir as NSString).appendingPathComponent($0 + ".json5")) } ?? ""))
        return 0
    }

    /// The steps that have the service watch `root`, numbered, in an order that works as
    /// printed: what the service needs of the folder first (its user must own it; the unit must
    /// let it write there, a drop-in), then the config entry, then the check and the reload —
    /// or the restart, when a drop-in was added (systemd applies a drop-in only then).
    static func serviceSteps(name: String, root: String, template: String, configPath: String) -> [String] {
        let unit = ServiceUnit.installed()
        var account = unit.flatMap { HotFolderCheck.Subject.account($0.user, group: $0.group) }
        account?.unit = unit
        let problems = account.map { HotFolderCheck.problems(name: name, root: root, for: $0) } ?? []
        var lines = ["to have the daemon watch it:"]
        var step = 0
        func add(_ what: String, _ commands: [String]) {
            step += 1
            lines.append("  \(step). \(what)")
            lines += commands.map { "    " + $0 }
        }
        let needsRestart = problems.contains { $0.fix.contains { $0.contains("systemctl restart") } }
        for problem in problems {
            // The restart comes once, last: after the config entry.
            add(problem.why + ":", problem.fix.filter { !$0.contains("systemctl restart") })
        }
        if let account, problems.isEmpty || problems.contains(where: { $0.fix.contains { $0.contains("chown") } }) {
            lines.append("    (members of the group \(account.groupName) may drop files into drop/: sudo adduser NAME \(account.groupName))")
        }
        add("add this entry to inboxes in \(configPath):",
            ["    { name: \"\(json(name))\", root: \"\(json(root))\", template: \"\(json(template))\" },"])
        add("check the config as the service will meet it, then apply it:",
            ["photofinish check --config \(shell(configPath))",
             needsRestart ? "sudo systemctl restart photofinish     (a restart: systemd applies a drop-in only then)"
                          : "sudo systemctl reload photofinish"])
        return lines
    }

    /// A config-safe name from the folder's last component ("My Shop" → "My-Shop").
    static func inboxName(for root: String) -> String {
        let base = URL(fileURLWithPath: root).lastPathComponent
        let cleaned = String(base.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == ".") ? $0 : "-" })
        let trimmed = cleaned.drop { $0 == "." }
        return trimmed.isEmpty ? "inbox" : String(trimmed)
    }

    /// `name`, or `name-2`, `name-3`… when the config already has an inbox of that name.
    private static func uniqueName(_ name: String, config: Config?) -> String {
        let taken = Set(config?.inboxes.map(\.name) ?? [])
        var candidate = name
        var n = 2
        while taken.contains(candidate) {
            candidate = "\(name)-\(n)"
            n += 1
        }
        return candidate
    }

    /// The template names in `folder` (`<name>.json5`), sorted.
    private static func templates(in folder: String) -> [String] {
        let names = Files.textNames(in: folder)
        return names.filter { $0.hasSuffix(".json5") && !$0.hasPrefix(".") }.map { String($0.dropLast(6)) }.sorted()
    }

    /// `text` as one word for a POSIX shell: as it is when it is plain, else in single quotes.
    static func shell(_ text: String) -> String { HotFolderCheck.shell(text) }

    /// `text` inside a JSON5 double-quoted string.
    private static func json(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
