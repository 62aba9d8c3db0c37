import Configuration
import Foundation
import System
import HotFolders

/// `photofinish init ROOT [--template NAME] [--config FILE]`: creates the hot-folder layout
/// (again safely) and prints the config entry to add, naming a template that exists, and the
/// commands to use it, each ready to copy and run as printed.
enum InitCommand {
    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        guard a.positional.count == 1 else { throw UsageError("init needs one ROOT folder") }
        let root = WatchCommand.absolute(a.positional[0])
        let configPath = WatchCommand.absolute(a.options["config"] ?? Commands.defaultConfig)
        var config: Config?
        if a.options["config"] != nil || FileManager.default.fileExists(atPath: configPath) {
            do {
                config = try Config.load(path: configPath)
            } catch {
                for e in error.errors { Terminal.note(e.description) }
                // The default config only helps to suggest a template; a named one must be right.
                guard a.options["config"] == nil else {
                    Terminal.error("the config has errors: fix them first (photofinish check --config \(shell(configPath)))")
                    return 2
                }
            }
        }
        let templatesDir = config?.templatesDir ?? Config.defaults.templatesDir
        let available = templates(in: templatesDir)
        let name = uniqueName(inboxName(for: root), config: config)
        let template: String?
        if let asked = a.options["template"] {
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
              drop/        people and tools drop photos here
              out/         finished batches: out/<batch-id>/ with report.json
              originals/   sources after success
              failed/      sources that could not be finished
              .work/       the daemon's own (mode 0700)

            """)
        if let existing = config?.inboxes.first(where: { WatchCommand.absolute($0.root) == root }) {
            print("it is already in \(configPath) as '\(existing.name)' (template '\(existing.template)')")
        } else if let template {
            print("""
                to have the daemon watch it, add this entry to inboxes in \(configPath):
                    { name: "\(json(name))", root: "\(json(root))", template: "\(json(template))" },
                then check the config and reload the daemon:
                    photofinish check --config \(shell(configPath))
                    sudo systemctl reload photofinish
                """)
            for line in serviceNotes(root: root) { print(line) }
        } else {
            print("there is no template in \(templatesDir) yet: write one (see 'man photofinish.json5'), then name it in an inbox of \(configPath)")
        }
        print("\nor try it now in the foreground (Ctrl-C stops):")
        print("    photofinish watch \(shell(root))"
              + (template.map { " --template " + shell((templatesDir as NSString).appendingPathComponent($0 + ".json5")) } ?? ""))
        return 0
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
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasSuffix(".json5") && !$0.hasPrefix(".") }.map { String($0.dropLast(6)) }.sorted()
    }

    /// What the installed service needs before it can use `root`: its user must own it, and
    /// the unit must allow writing there.
    private static func serviceNotes(root: String) -> [String] {
        guard let user = getpwnam("photofinish") else { return [] }
        var notes: [String] = []
        var st = stat()
        if stat(root, &st) == 0, st.st_uid != user.pointee.pw_uid {
            notes += ["the service runs as the user photofinish, who must own the folder:",
                      "    sudo chown -R photofinish:photofinish \(shell(root))"]
        }
        if !(root + "/").hasPrefix("/srv/photofinish/") {
            notes += ["the service may write only under /srv/photofinish; allow this folder too:",
                      "    sudo systemctl edit photofinish     (add: [Service] ReadWritePaths=\(root))"]
        }
        return notes
    }

    /// `text` as one word for a POSIX shell: as it is when it is plain, else in single quotes.
    static func shell(_ text: String) -> String {
        let plain = !text.isEmpty && text.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "/._-+=:,@%".unicodeScalars.contains($0)
        }
        return plain ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// `text` inside a JSON5 double-quoted string.
    private static func json(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
