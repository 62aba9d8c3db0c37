import Finishing
import Foundation
import HotFolders
import Service

/// `photofinish daemon [--config FILE]`: the service, in the foreground (systemd `Type=notify`).
enum DaemonCommand {
    static let defaultConfig = "/etc/photofinish/photofinish.json5"

    static func main(_ args: [String]) async throws(UsageError) -> Int32 {
        let a = try Arguments(args, valued: ["config"])
        guard a.positional.isEmpty else { throw UsageError("daemon takes no arguments besides --config FILE") }
        let path = a.options["config"] ?? defaultConfig
        let signals = SignalEvents()  // first: from here on SIGHUP and SIGTERM are events
        let log = ServiceLog.make()
        let setup: ServiceSetup
        do {
            setup = try ServiceSetup.load(configPath: path)
        } catch {
            for e in error.errors { log.error(e.description) }
            log.error("the configuration has errors: not starting (check it with: photofinish check --config \(path))")
            return 2
        }
        if setup.inboxes.isEmpty { log.warning("\(path) names no inboxes: nothing to watch until a reload adds some") }
        let service = HotFolderService(reload: { () throws(TemplateErrors) in try ServiceSetup.load(configPath: path) },
                                       log: log, statusPath: ServiceStatus.defaultPath())
        return await service.run(setup, signals: signals)
    }
}

/// `photofinish watch ROOT [--template F] [--config FILE]`: one hot folder in the foreground,
/// with the built-in default template unless `--template` names one; the config (optional)
/// only gives timing and limits. Ctrl-C stops.
enum WatchCommand {
    static func main(_ args: [String]) async throws(UsageError) -> Int32 {
        let a = try Arguments(args, valued: ["template", "config"])
        guard a.positional.count == 1 else { throw UsageError("watch needs one ROOT folder") }
        let root = absolute(a.positional[0])
        let signals = SignalEvents()
        let log = ServiceLog.make()
        let options = a.options
        let load = { @Sendable () throws(TemplateErrors) -> ServiceSetup in
            var config = Config.defaults
            if let path = options["config"] { config = try Config.load(path: path) }
            var snapshot = TemplateSnapshot.builtIn
            var order = Template.builtInDefault.order
            if let path = options["template"] {
                let (s, t) = try TemplateSnapshot.load(path: path)
                snapshot = s
                order = t.order
            }
            let name = InitCommand.inboxName(for: root)
            return ServiceSetup(config: config, inboxes: [.init(name: name, layout: HotFolderLayout(root: root),
                                                                 template: snapshot, order: order)])
        }
        let setup: ServiceSetup
        do {
            setup = try load()
        } catch {
            for e in error.errors { log.error(e.description) }
            return 2
        }
        do throws(SystemError) {
            try HotFolderLayout(root: root).create()
        } catch {
            log.error("\(error)")
            return 2
        }
        Terminal.note("""
            watching \(root) with the template '\(setup.inboxes[0].template.name)'
              drop photos into:   \(root)/drop/
              finished batches:   \(root)/out/<batch-id>/   (report.json last)
              originals kept in:  \(root)/originals/<batch-id>/
            a batch closes \(setup.config.quiet) after the last photo arrives; Ctrl-C stops
            """)
        let service = HotFolderService(reload: load, log: log, statusPath: ServiceStatus.defaultPath())
        return await service.run(setup, signals: signals)
    }

    static func absolute(_ path: String) -> String {
        let p = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return (p as NSString).standardizingPath
    }
}

/// `photofinish init ROOT [--template NAME]`: creates the hot-folder layout (again safely)
/// and prints the config entry to add.
enum InitCommand {
    static func main(_ args: [String]) throws(UsageError) -> Int32 {
        let a = try Arguments(args, valued: ["template"])
        guard a.positional.count == 1 else { throw UsageError("init needs one ROOT folder") }
        let root = WatchCommand.absolute(a.positional[0])
        do throws(SystemError) {
            try HotFolderLayout(root: root).create()
        } catch {
            Terminal.error("\(error)")
            return 2
        }
        let name = inboxName(for: root)
        let template = a.options["template"] ?? name
        print("""
            created \(root)/
              drop/        people and tools drop photos here
              out/         finished batches: out/<batch-id>/ with report.json
              originals/   sources after success
              failed/      sources that could not be finished
              .work/       the daemon's own (mode 0700)
            add it to the config (\(DaemonCommand.defaultConfig)), then `systemctl reload photofinish`:
              inboxes: [ { name: "\(name)", root: "\(root)", template: "\(template)" } ],
            or try it now with: photofinish watch \(root)
            """)
        return 0
    }

    /// A config-safe name from the folder's last component ("My Shop" → "My-Shop").
    static func inboxName(for root: String) -> String {
        let base = URL(fileURLWithPath: root).lastPathComponent
        let cleaned = String(base.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == ".") ? $0 : "-" })
        let trimmed = cleaned.drop { $0 == "." }
        return trimmed.isEmpty ? "inbox" : String(trimmed)
    }
}
