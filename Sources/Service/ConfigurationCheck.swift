import Configuration
import Finishing
import Foundation
import JSON5
import System
import Typesetting

/// What `photofinish check` validates: a config, the template of each of its inboxes, and
/// any templates named on the command line — and, beyond what the files say, what the
/// service will meet: hot folders it cannot use (`HotFolderCheck`) and fonts that are not
/// installed.
public enum ConfigurationCheck {
    /// Every problem found; empty means the integrator prints "configuration OK".
    /// - Parameters:
    ///   - configPath: the config to check (with its inboxes' templates), or `nil` for none.
    ///   - templates: templates to check as well: a path (contains '/' or ends in
    ///     `.json5`), or a name looked up in the config's `templatesDir` (default
    ///     `/etc/photofinish/templates` when no config is given).
    public static func check(configPath: String?, templates: [String]) -> [JSON5Error] {
        run(configPath: configPath, templates: templates, folders: false).errors
    }

    /// What a check found.
    public struct Findings: Sendable {
        /// Errors in the files (file:line: key: message): the config cannot be used.
        public var errors: [JSON5Error] = []
        /// Hot folders the service cannot use as things are, each with its fix.
        public var folders: [HotFolderCheck.Problem] = []
        /// Fonts a template names that are not installed (file:line: key: what is used instead).
        public var fonts: [JSON5Error] = []
        /// What a template's `metadata` will not write as written (file:line: key: why):
        /// `MetadataFinding`s.
        public var metadata: [JSON5Error] = []
        /// Who the hot folders were checked for, in words ("the service user photofinish").
        public var checkedFor: String?
        /// What the open-file limit allows the hot folders (`OpenFiles.Budget`, the daemon's
        /// words), and whose limit that is ("the limit of the running daemon, pid 812").
        public var openFiles: ServiceStatus.OpenFiles?
        public var openFilesOf: String?

        /// Anything short of an error.
        public var warnings: Int { folders.count + fonts.count + metadata.count + (openFiles.map { ($0.refused > 0 ? 1 : 0) + (($0.polled ?? 0) > 0 ? 1 : 0) } ?? 0) }
    }

    /// Checks the files, then (when they are valid) what the service will meet.
    /// - Parameters:
    ///   - folders: also check every inbox's hot folder (as the service user) and the fonts.
    ///   - environment: where `INVOCATION_ID` says whether this runs inside the unit, and
    ///     `SYSTEMD_UNIT_PATH` where its files are.
    public static func run(configPath: String?, templates: [String], folders: Bool = true,
                           environment: [String: String] = ProcessInfo.processInfo.environment) -> Findings {
        var findings = Findings()
        var config = Config.defaults
        var paths: [String] = []
        var loaded = false
        if let configPath {
            do throws(JSON5Errors) {
                config = try Config.load(path: configPath)
                paths += config.inboxes.map { config.templatePath(named: $0.template) }
                loaded = true
            } catch {
                findings.errors += error.errors
            }
        }
        for template in templates {
            paths.append(template.contains("/") || template.hasSuffix(".json5")
                         ? template : config.templatePath(named: template))
        }
        var seen: Set<String> = []
        let unique = paths.filter { seen.insert(($0 as NSString).standardizingPath).inserted }
        findings.errors += TemplateLoader.check(paths: unique)
        guard folders, findings.errors.isEmpty else { return findings }
        findings.fonts = fontWarnings(paths: unique)
        findings.metadata = metadataWarnings(paths: unique)
        if loaded, let configPath {
            let who = HotFolderCheck.Subject.forConfig(WatchPaths.absolute(configPath), environment: environment)
            findings.checkedFor = who.words
            findings.folders = config.inboxes.flatMap { HotFolderCheck.problems(name: $0.name, root: $0.root, for: who) }
            (findings.openFiles, findings.openFilesOf) = openFiles(config, path: WatchPaths.absolute(configPath), environment: environment)
        }
        return findings
    }

    /// For each template, the text fonts it names that fontconfig does not have, with the font
    /// that is drawn instead (`shop.json5:14: text.font: …`).
    static func fontWarnings(paths: [String]) -> [JSON5Error] {
        var out: [JSON5Error] = []
        var verdicts: [String: String?] = [:]
        for path in paths {
            guard let template = try? TemplateLoader.load(path: path),
                  let text = try? Files.text(of: path) else { continue }
            let locator = JSON5Locator(text: text)
            for (index, recipe) in template.recipes.enumerated() {
                // Tiled text is set in the text mark's font (or the default one).
                guard recipe.recipe.text != nil || recipe.recipe.tile != nil else { continue }
                let font = recipe.recipe.text?.font ?? Template.TextMark(text: "").font
                let base: [KeyPathComponent] = recipe.variant == nil ? [] : [.key("variants"), .index(index - 1)]
                let key = base + [.key("text"), .key("font")]
                // A variant that does not name its own font inherits the template's: said once.
                if recipe.variant != nil, locator.line(of: key) == nil { continue }
                let verdict: String?
                if let known = verdicts[font] {
                    verdict = known
                } else {
                    do throws(TypesetError) {
                        let setter = try Typesetter(pattern: font)
                        verdict = setter.substitution.map { "\($0) (install it, or name a font that `fc-list : family` lists)" }
                    } catch {
                        verdict = "\(error.description): photos with a text mark fail as io-error"
                    }
                    verdicts[font] = verdict
                }
                guard let verdict else { continue }
                let line = locator.line(of: key) ?? locator.line(of: base + [.key("text")]) ?? locator.line(of: base + [.key("tile")])
                out.append(JSON5Error(file: path, line: line, keyPath: key.rendered, message: verdict))
            }
        }
        return out
    }
}

extension ConfigurationCheck {
    /// What the open-file limit allows `config`'s hot folders: as the daemon running it said
    /// (its status file), else with this process's hard limit (what a daemon started from here
    /// would raise its limit to). The same computation and words as the daemon's.
    static func openFiles(_ config: Config, path: String, environment: [String: String]) -> (ServiceStatus.OpenFiles?, String?) {
        let count = config.inboxes.count
        if let running = StatusFiles.all().map(\.status).first(where: { $0.isRunning && $0.config == path && $0.openFiles?.hotFolders == count }),
           let said = running.openFiles {
            return (said, "the limit of the running daemon, pid \(running.pid)")
        }
        guard let hard = try? ProcessResources.openFiles().hard else { return (nil, nil) }
        let systemd = environment["INVOCATION_ID"] != nil || Files.existsFollowingLinks("/run/systemd/system")
        return (OpenFiles.budget(for: config, limit: hard, systemd: systemd), "this shell's hard limit, which a daemon started from it gets")
    }

    /// Each template's `MetadataFinding`s, at their lines (`shop.json5:31: metadata.city: …`).
    static func metadataWarnings(paths: [String]) -> [JSON5Error] {
        paths.flatMap { path -> [JSON5Error] in
            guard let template = try? TemplateLoader.load(path: path), let text = try? Files.text(of: path) else { return [] }
            let locator = JSON5Locator(text: text)
            return template.metadataFindings.map {
                JSON5Error(file: path, line: locator.line(of: $0.path), keyPath: $0.path.rendered, message: $0.message)
            }
        }
    }
}

/// Absolute paths as the command line gives them: made absolute from the current folder,
/// then standardized (`..` and symlinks resolved).
public enum WatchPaths {
    public static func absolute(_ path: String) -> String {
        (Files.absolute(path) as NSString).standardizingPath
    }
}
