import Configuration
import Finishing
import Foundation
import JSON5

/// What `photofinish check` validates: a config, the template of each of its inboxes, and
/// any templates named on the command line.
public enum ConfigurationCheck {
    /// Every problem found; empty means the integrator prints "configuration OK".
    /// - Parameters:
    ///   - configPath: the config to check (with its inboxes' templates), or `nil` for none.
    ///   - templates: templates to check as well: a path (contains '/' or ends in
    ///     `.json5`), or a name looked up in the config's `templatesDir` (default
    ///     `/etc/photofinish/templates` when no config is given).
    public static func check(configPath: String?, templates: [String]) -> [JSON5Error] {
        var errors: [JSON5Error] = []
        var config = Config.defaults
        var paths: [String] = []
        if let configPath {
            do throws(JSON5Errors) {
                config = try Config.load(path: configPath)
                paths += config.inboxes.map { config.templatePath(named: $0.template) }
            } catch {
                errors += error.errors
            }
        }
        for template in templates {
            paths.append(template.contains("/") || template.hasSuffix(".json5")
                         ? template : config.templatePath(named: template))
        }
        var seen: Set<String> = []
        let unique = paths.filter { seen.insert(($0 as NSString).standardizingPath).inserted }
        return errors + TemplateLoader.check(paths: unique)
    }
}
