import Foundation
import Service
import System

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
        for font in found.fonts { print(font.description) }
        for finding in found.metadata { print(finding.description) }
        guard found.warnings > 0 else {
            print("configuration OK")
            return 0
        }
        var but: [String] = []
        let folders = Set(found.folders.map(\.inbox)).count
        if folders > 0 {
            but.append("\(folders) hot folder\(folders == 1 ? "" : "s") cannot be used as things are (checked as \(found.checkedFor ?? "this user")): "
                       + "the daemon refuses \(folders == 1 ? "it" : "them") and tries again at every reload and rescan")
        }
        if !found.fonts.isEmpty {
            but.append("\(found.fonts.count) font\(found.fonts.count == 1 ? " is" : "s are") not installed")
        }
        if !found.metadata.isEmpty {
            but.append("\(found.metadata.count) metadata text\(found.metadata.count == 1 ? " is" : "s are") not written as given")
        }
        print("configuration OK, but " + but.joined(separator: "; "))
        return a.has(.strict) ? 1 : 0
    }
}
