import Foundation
import Service

/// `photofinish check [--config FILE] [TEMPLATE…]`: validates, naming file, line and key.
/// A TEMPLATE with a `/` or ending in `.json5` is a path; otherwise a name in `templatesDir`.
/// Without arguments: the default config when it exists.
enum CheckCommand {
    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        var config = a.options["config"]
        if config == nil, a.positional.isEmpty {
            guard FileManager.default.fileExists(atPath: Commands.defaultConfig) else {
                throw UsageError("""
                    what should be checked? Name templates (photofinish check shop.json5, or a name in \
                    /etc/photofinish/templates) or a config (photofinish check --config FILE); the default \
                    config \(Commands.defaultConfig) does not exist
                    """)
            }
            config = Commands.defaultConfig
        }
        let errors = ConfigurationCheck.check(configPath: config, templates: a.positional)
        if errors.isEmpty {
            print("configuration OK")
            return 0
        }
        for e in errors { print(e.description) }
        return 2
    }
}
