import Configuration
import Finishing
import Foundation
import System
import HotFolders
import JSON5
import Service
import Web

/// `photofinish watch ROOT [--template F] [--config FILE]`: one hot folder in the foreground,
/// with the built-in default template unless `--template` names one; the config (optional)
/// only gives timing and limits. Ctrl-C stops.
enum WatchCommand {
    static func main(_ a: Arguments) async throws(UsageError) -> Int32 {
        guard a.positional.count == 1 else { throw UsageError("watch needs one ROOT folder") }
        let root = absolute(a.positional[0])
        // First: from here on SIGHUP, SIGTERM and SIGINT are events the service's loop reads
        // (one that comes before it runs is kept).
        guard let signals = DaemonCommand.signalEvents() else { return 1 }
        let log = ServiceLog.make()
        let configPath = a[.config], templatePath = a[.template]
        let load = { @Sendable () throws(JSON5Errors) -> ServiceSetup in
            var config = Config.defaults
            if let path = configPath { config = try Config.load(path: path) }
            var snapshot = TemplateSnapshot.builtIn
            var order = Template.builtInDefault.order
            if let path = templatePath {
                let (s, t) = try TemplateSnapshot.load(path: path)
                snapshot = s
                order = t.order
            }
            let name = InitCommand.inboxName(for: root)
            return ServiceSetup(config: config, inboxes: [.init(name: name, layout: HotFolderLayout(root: root),
                                                                 template: snapshot, order: order, hooks: config.onBatch,
                                                                 keep: Retention.Keep(config.keep),
                                                                 minFreeSpace: config.minFreeSpace)])
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
        let service = HotFolderService(reload: load, log: log, status: StatusFiles.target(for: .root(root)),
                                       version: VersionCommand.version)
        let console = WebConsole.serve(service, initial: setup, log: log)  // on the sockets passed as "web", if any
        defer { console?.stop() }
        return await service.run(setup, signals: signals)
    }

    static func absolute(_ path: String) -> String {
        WatchPaths.absolute(path)
    }
}
