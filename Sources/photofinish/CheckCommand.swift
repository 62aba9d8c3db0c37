import Service

/// `photofinish check [--config FILE] [TEMPLATE…]`: validates, naming file, line and key.
/// A TEMPLATE with a `/` or ending in `.json5` is a path; otherwise a name in `templatesDir`.
enum CheckCommand {
    static func main(_ args: [String]) throws(UsageError) -> Int32 {
        let a = try Arguments(args, valued: ["config"])
        let config = a.options["config"] ?? (a.positional.isEmpty ? "/etc/photofinish/photofinish.json5" : nil)
        let errors = ConfigurationCheck.check(configPath: config, templates: a.positional)
        if errors.isEmpty {
            print("configuration OK")
            return 0
        }
        for e in errors { print(e.description) }
        return 2
    }
}
