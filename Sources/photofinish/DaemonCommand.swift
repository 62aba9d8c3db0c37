import Configuration
import Finishing
import Foundation
import HotFolders
import JSON5
import Service
import System
import Web

/// `photofinish daemon [--config FILE]`: the service, in the foreground (systemd `Type=notify`).
enum DaemonCommand {
    static func main(_ a: Arguments) async throws(UsageError) -> Int32 {
        guard a.positional.isEmpty else { throw UsageError("daemon takes no arguments besides --config FILE") }
        let path = WatchCommand.absolute(a[.config] ?? Commands.defaultConfig)
        // First: from here on SIGHUP, SIGTERM and SIGINT are events the service's loop reads
        // (one that comes before it runs is kept).
        guard let signals = DaemonCommand.signalEvents() else { return 1 }
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
        let service = HotFolderService(reload: { () throws(JSON5Errors) in try ServiceSetup.load(configPath: path) },
                                       log: log, status: StatusFiles.target(for: .config(path)), version: VersionCommand.version)
        let console = WebConsole.serve(service, initial: setup, log: log)  // on the sockets passed as "web", if any
        defer { console?.stop() }
        return await service.run(setup, signals: signals)
    }

    /// The service's signals as events, made first thing (`nil`, said, when the kernel gives
    /// no descriptor for them).
    static func signalEvents() -> SignalEvents? {
        do throws(SystemError) {
            return try SignalEvents()
        } catch {
            Terminal.note("photofinish: \(error)")
            return nil
        }
    }
}
