import Configuration
import Foundation
import Service
import System
import Web

/// `photofinish check [--config FILE] [--strict] [TEMPLATE…]`: validates, naming file, line
/// and key; then says what the service will meet that the files do not show: each hot folder
/// it cannot use (checked as the service user), with the commands that fix it, each font
/// that is not installed, with the one drawn instead, and each metadata text that is not
/// written as given (a code the codes file lacks, a place the policy strips). Those are
/// warnings: the daemon runs the
/// other folders (exit 0; 1 with `--strict`). A TEMPLATE with a `/` or ending in `.json5` is a
/// path; otherwise a name in `templatesDir`. Without arguments: the default config when it exists.
enum CheckCommand {
    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        var config = a[.config]
        if config == nil, a.positional.isEmpty {
            guard Files.existsFollowingLinks(Commands.defaultConfig) else {
                throw UsageError("""
                    what should be checked? Name templates (photofinish check shop.json5, or a name in \
                    /etc/photofinish/templates) or a config (photofinish check --config FILE); the default \
                    config \(Commands.defaultConfig) does not exist
                    """)
            }
            config = Commands.defaultConfig
        }
        let found = ConfigurationCheck.run(configPath: config, templates: a.positional)
        guard found.errors.isEmpty else {
            for e in found.errors { print(e.description) }
            return 2
        }
        for problem in found.folders { print(problem.description) }
        if let openFiles = found.openFiles, openFiles.refused > 0 {
            print("open files (\(found.openFilesOf ?? "the limit in force")): \(openFiles.refusedSummary); to fix it:")
            for fix in openFiles.fix { print("  \(fix)") }
        }
        if let openFiles = found.openFiles, let polled = openFiles.inotify {
            print("inotify: \(polled); to fix it:")
            for fix in openFiles.inotifyFix ?? [] { print("  \(fix)") }
        }
        for font in found.fonts { print(font.description) }
        for finding in found.metadata { print(finding.description) }
        let web = config.map(webWarnings) ?? []
        for warning in web { print(warning) }
        guard found.warnings + web.count > 0 else {
            print("configuration OK")
            return 0
        }
        var but: [String] = []
        let folders = Set(found.folders.map(\.inbox)).count
        if folders > 0 {
            but.append("\(folders) hot folder\(folders == 1 ? "" : "s") cannot be used as things are (checked as \(found.checkedFor ?? "this user")): "
                       + "the daemon refuses \(folders == 1 ? "it" : "them") and tries again at every reload and rescan")
        }
        if let openFiles = found.openFiles, openFiles.refused > 0 {
            but.append("the open-file limit leaves \(openFiles.refused) hot folder\(openFiles.refused == 1 ? "" : "s") unwatched (LimitNOFILE=\(openFiles.wanted) fits them all)")
        }
        if let openFiles = found.openFiles, let polled = openFiles.polled, polled > 0, let wanted = openFiles.watchesWanted {
            but.append("inotify's watches leave \(polled) hot folder\(polled == 1 ? "" : "s") polled (fs.inotify.max_user_watches=\(wanted) fits them all)")
        }
        if !found.fonts.isEmpty {
            but.append("\(found.fonts.count) font\(found.fonts.count == 1 ? " is" : "s are") not installed")
        }
        if !found.metadata.isEmpty {
            but.append("\(found.metadata.count) metadata text\(found.metadata.count == 1 ? " is" : "s are") not written as given")
        }
        if !web.isEmpty { but.append("the web console speaks plain HTTP beyond this machine") }
        print("configuration OK, but " + but.joined(separator: "; "))
        return a.has(.strict) ? 1 : 0
    }

    /// What the installed web socket would serve for this config, when the service runs it:
    /// plain HTTP on an address beyond this machine, with no TLS in the config (the daemon
    /// says it in the journal too, and the console at the foot of its pages for administrators).
    static func webWarnings(configPath: String) -> [String] {
        guard let unit = ServiceUnit.installed(),
              ServiceUnit.resolved(unit.config) == ServiceUnit.resolved(WatchCommand.absolute(configPath)),
              let socket = SocketUnit.installed(), socket.enabled, !socket.beyondLoopback.isEmpty,
              let config = try? Config.load(path: configPath), config.web.tlsCertificate == nil else { return [] }
        return socket.beyondLoopback.map { address in
            let shown = address.allSatisfy(\.isNumber) ? "[::]:" + address : address
            return "web console: " + WebConsole.plainWarning("http://\(shown)/")
        }
    }
}
