import Delivery
import Foundation
import JSON5
import System

/// The daemon's configuration (reference: Config), validated: every duration, size and path
/// checked, defaults filled in.
///
/// Durations are written `"500ms"`, `"2s"`, `"5m"`, `"24h"`, also `"7d"` (a decimal number
/// is allowed, `"1.5s"`; a bare number is not, its unit would be a guess). Sizes are a plain number of bytes (`1048576` or `"1048576"`), or a number
/// with a unit: binary `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024) or decimal `kB`, `MB`,
/// `GB`, `TB` (powers of 1000, as disk makers use them), or `B`.
public struct Config: Sendable, Equatable {
    /// One hot folder.
    public struct Inbox: Sendable, Equatable {
        /// The name used in logs, status and reports (unique).
        public var name: String
        /// The hot folder's absolute path.
        public var root: String
        /// The template's name: `<templatesDir>/<template>.json5`.
        public var template: String
        /// This hot folder's own `onBatch` (instead of the config's).
        public var onBatch: BatchHooks?
        /// How long its finished batches are kept: its own `keep` keys over the config's, key
        /// by key (resolved at load; the config's `keep` when it has none).
        public var keep: Keep = Keep()
        /// Below this much free space on its file system, nothing new is claimed: its own
        /// `minFreeSpace`, else the config's (resolved at load); nil: no minimum.
        public var minFreeSpace: Int?
        /// Where its finished batches are delivered: its own `deliver` list, else the config's
        /// (resolved at load).
        public var deliver: [DestinationSettings] = []
        /// Its `approve`, `notify` and `shareExpires`, each its own or else the config's
        /// (ShareConfig.swift; resolved at load).
        public var sharing = ShareSettings()
        /// Its own `duplicates`, else the config's (resolved at load).
        public var duplicates: Duplicates = .finish

        public init(name: String, root: String, template: String) {
            self.name = name
            self.root = root
            self.template = template
        }
    }

    /// How long something is kept: for ever, or this long after its batch was claimed.
    public enum Lifetime: Sendable, Equatable, CustomStringConvertible {
        case forever
        case duration(Duration)
        /// `keep.originals` only: until every destination of the batch has its files verified
        /// (README "Delivering finished photos").
        case untilDelivered

        /// `"forever"`, `"until-delivered"`, or the duration as the config writes it (`"30d"`, `"12h"`).
        public var description: String {
            switch self {
            case .forever: "forever"
            case .duration(let d): Config.words(d)
            case .untilDelivered: "until-delivered"
            }
        }
    }

    /// What a hot folder does with a photo dropped again, the same bytes as one it finished
    /// (reference: Duplicates).
    public enum Duplicates: String, Sendable, Equatable, CaseIterable {
        /// Finished again, like any photo (the default).
        case finish
        /// Not finished: listed in the report as `duplicate`, with the batch it was finished in.
        case skip
    }

    /// `keep` (reference: Retention and free space): how long finished batches stay in `out/`,
    /// `originals/` and `failed/` before retention removes them whole (default: each kept forever).
    public struct Keep: Sendable, Equatable {
        public var out: Lifetime = .forever
        public var originals: Lifetime = .forever
        public var failed: Lifetime = .forever

        public init(out: Lifetime = .forever, originals: Lifetime = .forever, failed: Lifetime = .forever) {
            self.out = out
            self.originals = originals
            self.failed = failed
        }

        /// True when nothing is ever removed (the default).
        public var isForever: Bool { out == .forever && originals == .forever && failed == .forever }
    }

    /// How much decoded image data may be admitted at once.
    public enum MemoryBudget: Sendable, Equatable {
        /// Half the cgroup's `memory.max` (or of RAM); worked out by the service.
        case auto
        case bytes(Int)
    }

    public var templatesDir: String = "/etc/photofinish/templates"
    public var inboxes: [Inbox] = []
    /// A file joins the batch once its size and mtime are unchanged for this long.
    public var settle: Duration = .seconds(2)
    /// The batch closes when nothing new arrived for this long…
    public var quiet: Duration = .seconds(5)
    /// …or when it is this old…
    public var maxWait: Duration = .seconds(120)
    /// …or holds this many files.
    public var maxBatch: Int = 500
    /// A full rescan of `drop/` this often (and of `.work/` for batches a dead daemon left).
    public var rescanInterval: Duration = .seconds(300)
    /// `drop/` on a network or FUSE file system (inotify is blind to other machines' writes
    /// there), or without an inotify watch, is scanned this often.
    public var pollInterval: Duration = .seconds(2)
    /// Temp folders and partial files older than this are swept at start-up.
    public var staleAfter: Duration = .seconds(86_400)
    /// Photos in flight at once; 0 = one per core.
    public var workers: Int = 0
    public var memoryBudget: MemoryBudget = .auto
    /// Larger images are refused as `too-large` from their header.
    public var maxPixels: Int = 150_000_000
    /// Larger files are refused as `too-large`.
    public var maxFileBytes: Int = 512 << 20
    /// One photo taking longer fails as `timeout`.
    public var itemTimeout: Duration = .seconds(120)
    /// What to run or call after each batch of a hot folder without its own `onBatch`.
    public var onBatch: BatchHooks?
    /// Where the metrics go in Prometheus text format (node_exporter's textfile collector).
    public var metricsFile: String?
    /// How long finished batches are kept, for every hot folder without its own `keep` keys.
    public var keep: Keep = Keep()
    /// Below this much free space on a hot folder's file system nothing new is claimed there
    /// (every hot folder without its own `minFreeSpace`); nil: no minimum.
    public var minFreeSpace: Int?
    /// What every hot folder without its own `duplicates` does with a photo dropped again.
    public var duplicates: Duplicates = .finish

    // Delivery's keys (DeliveryConfig.swift).
    /// Where finished batches are delivered, for every hot folder without its own `deliver`.
    public var deliver: [DestinationSettings] = []
    /// The logins destinations name (`credentials: NAME`).
    public var credentials: String = CredentialStore.defaultPath
    /// The mail server `mailto:` destinations send through.
    public var mail: MailSettings?

    // The web console's keys (WebConfig.swift).
    /// The console's logins (relative: to the config's folder).
    public var users: String = WebSettings.defaultUsersFile
    /// The console's HTTPS.
    public var web = WebSettings()

    // Share links, approval and notifications (ShareConfig.swift).
    /// `web.publicURL` without its trailing slash: the base of share links and QR codes; nil:
    /// links are paths alone (`/s/TOKEN/`) and batches get no link of their own.
    public var publicURL: String?
    /// `approve`, `notify`, `shareExpires` for every hot folder without its own.
    public var sharing = ShareSettings()

    // The cluster's keys (ClusterConfig.swift).
    /// `cluster`: this daemon is one host of a cluster coordinated by PostgreSQL; nil: one host.
    public var cluster: ClusterSettings?

    public init() {}

    /// The defaults (reference: Config), with no inboxes.
    public static let defaults = Config()

    /// The path of the template called `name`: `<templatesDir>/<name>.json5`.
    public func templatePath(named name: String) -> String {
        (templatesDir as NSString).appendingPathComponent(name + ".json5")
    }

    /// Reads and validates the config at `path`. A relative `templatesDir` is taken
    /// relative to the config file's folder; each inbox's template file must exist.
    /// - Throws: `JSON5Errors` with every problem found.
    public static func load(path: String) throws(JSON5Errors) -> Config {
        let bytes = try JSON5File.read(path)
        var document = JSON5Document(text: String(decoding: bytes, as: UTF8.self), file: path)
        var config = Config()
        if let root = document.root {
            ConfigRules.read(root, into: &config, &document)
            config.templatesDir = resolved(config.templatesDir, besideConfig: path)
            if document.errors.isEmpty {
                WebConfigRules.checkFiles(&config, configPath: path, &document)
                // Each template looked for once, however many hot folders use it.
                var templates: [String: Bool] = [:]
                for (index, inbox) in config.inboxes.enumerated() {
                    let templatePath = config.templatePath(named: inbox.template)
                    let exists = templates[templatePath] ?? Files.existsFollowingLinks(templatePath)
                    templates[templatePath] = exists
                    if !exists {
                        document.fail([.key("inboxes"), .index(index), .key("template")],
                                      "no template '\(inbox.template)': \(templatePath) does not exist")
                    }
                }
                // A hook's program must be there to run (it is run without a shell).
                var programs: [([KeyPathComponent], String)] = []
                if let program = config.onBatch?.exec?.first { programs.append(([.key("onBatch"), .key("exec"), .index(0)], program)) }
                for (index, inbox) in config.inboxes.enumerated() {
                    if let program = inbox.onBatch?.exec?.first {
                        programs.append(([.key("inboxes"), .index(index), .key("onBatch"), .key("exec"), .index(0)], program))
                    }
                }
                for (path, program) in programs where !Files.isExecutable(program) {
                    document.fail(path, Files.existsFollowingLinks(program)
                                  ? "\(program) is not executable (chmod +x, or name its interpreter first)"
                                  : "\(program) does not exist")
                }
            }
        }
        guard document.errors.isEmpty else { throw JSON5Errors(errors: document.sortedErrors) }
        return config
    }

    /// What `photofinish init` needs of the config at `path` — its templates folder and its hot
    /// folders' names, roots and templates — read without checking the rest: the full `load` of
    /// 10,000 hot folders (every key's rules, the lines of every key) was most of `init`'s time.
    /// `nil` when it cannot be read so (a syntax error, a missing key): `load` then says why.
    public static func outline(path: String) -> Config? {
        struct Outline: Decodable {
            struct Entry: Decodable {
                var name: String
                var root: String
                var template: String
            }
            var templatesDir: String?
            var inboxes: [Entry]?
        }
        guard var bytes = try? JSON5File.read(path) else { return nil }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }  // a byte order mark
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        guard let outline = try? decoder.decode(Outline.self, from: Data(bytes)) else { return nil }
        var config = Config()
        if let dir = outline.templatesDir { config.templatesDir = resolved(dir, besideConfig: path) }
        config.inboxes = (outline.inboxes ?? []).map { Inbox(name: $0.name, root: $0.root, template: $0.template) }
        return config
    }

    /// `path` as written in the config at `configPath`: a relative one is taken relative to the
    /// config file's folder.
    static func resolved(_ path: String, besideConfig configPath: String) -> String {
        guard !path.hasPrefix("/") else { return path }
        let folder = (configPath as NSString).deletingLastPathComponent
        return ((folder.isEmpty ? "." : folder) as NSString).appendingPathComponent(path)
    }

    /// Validates config text already in memory; no file system checks, paths as written.
    /// - Throws: `JSON5Errors` with every problem found.
    public static func parse(text: String, file: String) throws(JSON5Errors) -> Config {
        var document = JSON5Document(text: text, file: file)
        var config = Config()
        if let root = document.root { ConfigRules.read(root, into: &config, &document) }
        guard document.errors.isEmpty else { throw JSON5Errors(errors: document.sortedErrors) }
        return config
    }

    /// Parses a duration: `"500ms"`, `"2s"`, `"5m"`, `"24h"`, `"7d"`, decimals allowed (`"1.5s"`),
    /// at most a year.
    /// `nil` for anything else, including a bare number (its unit would be a guess).
    public static func parseDuration(_ text: String) -> Duration? {
        parseDuration(text, atMost: 365 * 86_400)
    }

    /// Parses a duration of at most `limit` seconds (a `keep` may be years).
    static func parseDuration(_ text: String, atMost limit: Double) -> Duration? {
        let units: [(String, Double)] = [("ms", 1e-3), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        for (unit, seconds) in units where text.hasSuffix(unit) {
            let number = text.dropLast(unit.count)
            // "5ms" also ends in "s": only accept when the rest is a plain decimal number.
            guard let value = plainDecimal(number), value.isFinite else { continue }
            let total = value * seconds
            guard total <= limit else { return nil }
            return .milliseconds(Int64((total * 1000).rounded()))
        }
        return nil
    }

    /// A duration as the config writes it, in the largest unit that keeps it whole: `"30d"`,
    /// `"36h"`, `"90m"`, `"45s"`, `"500ms"`.
    public static func words(_ d: Duration) -> String {
        let ms = d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
        for (unit, size) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1000)] where ms % size == 0 && ms >= size {
            return "\(ms / size)\(unit)"
        }
        return "\(ms)ms"
    }

    /// Parses a size in bytes: `"512KiB"`, `"1GiB"`, `"20MB"`, `"4096"`, `"100B"` (see `Quantities.bytes`).
    public static func parseSize(_ text: String) -> Int? { Quantities.bytes(text) }

    private static func plainDecimal(_ text: Substring) -> Double? { Quantities.plainDecimal(text) }
}

/// The rules of the config (reference: Config), key by key.
enum ConfigRules {
    static let rootKeys = ["templatesDir", "inboxes", "settle", "quiet", "maxWait", "maxBatch",
                           "rescanInterval", "pollInterval", "staleAfter", "workers", "memoryBudget", "maxPixels",
                           "maxFileBytes", "itemTimeout", "onBatch", "metricsFile", "keep", "minFreeSpace", "duplicates"]
                           + WebConfigRules.rootKeys
                           + DeliveryConfigRules.rootKeys
                           + ClusterConfigRules.rootKeys
                           + ShareConfigRules.keys
    static let inboxKeys = ["name", "root", "template", "onBatch", "keep", "minFreeSpace", "deliver", "duplicates"] + ShareConfigRules.keys
    static let keepKeys = ["out", "originals", "failed"]
    /// The longest `keep`: a hundred years (a longer one is a typo for `"forever"`).
    static let longestKeep = 100 * 365.0 * 86_400

    static func read(_ root: [String: JSON5Value], into config: inout Config, _ doc: inout JSON5Document) {
        // A template given where the config belongs: one error that says so, not one per key.
        if root["version"] != nil, root["inboxes"] == nil {
            doc.fail([], "this is a template (it has 'version' and no 'inboxes'), not a config: check it with photofinish check \(doc.file)")
            return
        }
        _ = doc.object(.object(root), at: [], allowed: rootKeys)
        if let value = root["templatesDir"], let dir = doc.string(value, at: [.key("templatesDir")]) {
            config.templatesDir = dir
        }
        var globalKeep = PartialKeep()
        if let value = root["keep"] { globalKeep = keep(value, at: [.key("keep")], doc: &doc) }
        config.keep = globalKeep.over(Config.Keep())
        if let value = root["minFreeSpace"] { config.minFreeSpace = size(value, at: [.key("minFreeSpace")], doc: &doc) }
        if let value = root["duplicates"], let d = duplicates(value, at: [.key("duplicates")], doc: &doc) { config.duplicates = d }
        DeliveryConfigRules.read(root, into: &config, &doc)
        DeliveryConfigRules.check(config.deliver, at: [.key("deliver")], mail: config.mail, doc: &doc)
        config.sharing = ShareConfigRules.read(root, at: [], over: ShareSettings(), doc: &doc)
        if let value = root["inboxes"] { config.inboxes = inboxes(value, defaults: config, doc: &doc) }
        duration(root, "settle", &config.settle, doc: &doc)
        duration(root, "quiet", &config.quiet, doc: &doc)
        duration(root, "maxWait", &config.maxWait, doc: &doc)
        duration(root, "rescanInterval", &config.rescanInterval, doc: &doc)
        duration(root, "pollInterval", &config.pollInterval, doc: &doc)
        duration(root, "staleAfter", &config.staleAfter, doc: &doc)
        duration(root, "itemTimeout", &config.itemTimeout, doc: &doc)
        if let value = root["maxBatch"], let n = doc.integer(value, at: [.key("maxBatch")], in: 1...1_000_000) {
            config.maxBatch = n
        }
        if let value = root["workers"], let n = doc.integer(value, at: [.key("workers")], in: 0...1024) {
            config.workers = n
        }
        if let value = root["maxPixels"], let n = doc.integer(value, at: [.key("maxPixels")], in: 1...Int(1 << 40)) {
            config.maxPixels = n
        }
        if let value = root["maxFileBytes"], let n = size(value, at: [.key("maxFileBytes")], doc: &doc) {
            config.maxFileBytes = n
        }
        if let value = root["memoryBudget"] {
            if case .string("auto") = value {
                config.memoryBudget = .auto
            } else if let n = size(value, at: [.key("memoryBudget")], alsoAllowed: "\"auto\"", doc: &doc) {
                config.memoryBudget = .bytes(n)
            }
        }
        if let value = root["onBatch"] { config.onBatch = BatchHooksRules.read(value, at: [.key("onBatch")], doc: &doc) }
        if let value = root["metricsFile"], let path = doc.string(value, at: [.key("metricsFile")]) {
            if !path.hasPrefix("/") || !path.hasSuffix(".prom") {
                doc.fail([.key("metricsFile")], "must be an absolute path ending in .prom (node_exporter's textfile collector reads *.prom), got \"\(path)\"")
            } else {
                config.metricsFile = path
            }
        }
        WebConfigRules.read(root, into: &config, &doc)
        ClusterConfigRules.read(root, into: &config, &doc)
        if config.quiet > config.maxWait {
            doc.fail([.key("quiet")], "is longer than maxWait (\(config.maxWait)): a batch would never wait for quiet")
        }
    }

    private static func duration(_ root: [String: JSON5Value], _ key: String, _ target: inout Duration,
                                 doc: inout JSON5Document) {
        guard let value = root[key] else { return }
        _ = duration(value, at: [.key(key)], into: &target, doc: &doc)
    }

    /// Reads a duration into `target`; false (and an error recorded) when it is not one.
    static func duration(_ value: JSON5Value, at path: [KeyPathComponent], into target: inout Duration,
                         doc: inout JSON5Document) -> Bool {
        guard case .string(let text) = value, let duration = Config.parseDuration(text), duration > .zero else {
            doc.fail(path, "must be a duration like \"500ms\", \"2s\", \"5m\" or \"24h\" (more than 0, at most a year), got \(value.shown)")
            return false
        }
        target = duration
        return true
    }

    /// The `keep` keys given, each a lifetime; the ones not given stay nil.
    struct PartialKeep: Sendable, Equatable {
        var out: Config.Lifetime?
        var originals: Config.Lifetime?
        var failed: Config.Lifetime?

        /// These keys over `base`'s.
        func over(_ base: Config.Keep) -> Config.Keep {
            Config.Keep(out: out ?? base.out, originals: originals ?? base.originals, failed: failed ?? base.failed)
        }
    }

    /// Reads `duplicates`: `"finish"` or `"skip"`.
    static func duplicates(_ value: JSON5Value, at path: [KeyPathComponent], doc: inout JSON5Document) -> Config.Duplicates? {
        guard case .string(let text) = value, let d = Config.Duplicates(rawValue: text) else {
            doc.fail(path, "must be \"finish\" (a photo dropped again is finished again) or \"skip\" (listed as duplicate, not finished), got \(value.shown)")
            return nil
        }
        return d
    }

    /// Reads `keep: { out, originals, failed }`: each `"forever"` or a duration (`originals`
    /// also `"until-delivered"`).
    static func keep(_ value: JSON5Value, at path: [KeyPathComponent], doc: inout JSON5Document) -> PartialKeep {
        var keep = PartialKeep()
        guard let members = doc.object(value, at: path, allowed: keepKeys) else { return keep }
        func lifetime(_ key: String) -> Config.Lifetime? {
            guard let value = members[key] else { return nil }
            if case .string("forever") = value { return .forever }
            if key == "originals", case .string("until-delivered") = value { return .untilDelivered }
            guard case .string(let text) = value, let d = Config.parseDuration(text, atMost: longestKeep), d > .zero else {
                let also = key == "originals" ? ", or \"until-delivered\" (until every destination of the batch has it)" : ""
                doc.fail(path + [.key(key)], "must be \"forever\" or a duration like \"30d\", \"12h\" (how long \(key)/<batch-id>/ folders are kept after their batch was claimed)\(also), got \(value.shown)")
                return nil
            }
            return .duration(d)
        }
        keep.out = lifetime("out")
        keep.originals = lifetime("originals")
        keep.failed = lifetime("failed")
        return keep
    }

    static func size(_ value: JSON5Value, at path: [KeyPathComponent], alsoAllowed: String? = nil,
                             doc: inout JSON5Document) -> Int? {
        var bytes: Int?
        switch value {
        case .number(let n) where n == n.rounded() && n >= 0 && n <= Double(1 << 62): bytes = Int(n)
        case .string(let text): bytes = Config.parseSize(text)
        default: bytes = nil
        }
        guard let bytes, bytes > 0 else {
            let also = alsoAllowed.map { ", or \($0)" } ?? ""
            doc.fail(path, "must be a size like \"512KiB\", \"1GiB\", \"20MB\" or a number of bytes (more than 0)\(also), got \(value.shown)")
            return nil
        }
        return bytes
    }

    /// - Parameter defaults: the config's own `keep`, `minFreeSpace` and `deliver`, under each inbox's.
    private static func inboxes(_ value: JSON5Value, defaults: Config, doc: inout JSON5Document) -> [Config.Inbox] {
        let path: [KeyPathComponent] = [.key("inboxes")]
        guard case .array(let entries) = value else {
            doc.fail(path, "must be a list of { name, root, template }, got \(value.shown)")
            return []
        }
        var inboxes: [Config.Inbox] = []
        var names: [String: Int] = [:]
        var roots: [String: Int] = [:]
        var parents = StandardPaths()
        for (index, entry) in entries.enumerated() {
            let entryPath = path + [.index(index)]
            guard let members = doc.object(entry, at: entryPath, allowed: inboxKeys) else { continue }
            var fields: [String: String] = [:]
            for key in ["name", "root", "template"] {
                guard let value = members[key] else {
                    doc.fail(entryPath, "missing key '\(key)' (each inbox needs name, root and template)")
                    continue
                }
                fields[key] = doc.string(value, at: entryPath + [.key(key)])
            }
            guard let name = fields["name"], let root = fields["root"], let template = fields["template"] else { continue }
            var ok = true
            if !isSafeName(name) {
                doc.fail(entryPath + [.key("name")], "must be letters, digits, '.', '_' or '-' (not starting with '.'), got \"\(name)\"")
                ok = false
            } else if let first = names[name] {
                doc.fail(entryPath + [.key("name")], "\"\(name)\" is already the name of inboxes[\(first)]: names must be unique")
                ok = false
            }
            let normalized = parents.standardized(root)
            if !root.hasPrefix("/") {
                doc.fail(entryPath + [.key("root")], "must be an absolute path (starting with '/'), got \"\(root)\"")
                ok = false
            } else if let first = roots[normalized] {
                doc.fail(entryPath + [.key("root")], "\"\(root)\" is already the root of inboxes[\(first)]: one inbox per folder")
                ok = false
            }
            if !isSafeName(template) {
                doc.fail(entryPath + [.key("template")], "must be a template name (the file stem in templatesDir, no '/'), got \"\(template)\"")
                ok = false
            }
            names[name] = names[name] ?? index
            roots[normalized] = roots[normalized] ?? index
            var hooks: BatchHooks?
            if let value = members["onBatch"] {
                hooks = BatchHooksRules.read(value, at: entryPath + [.key("onBatch")], doc: &doc)
                ok = ok && hooks != nil
            }
            var ownKeep = PartialKeep()
            if let value = members["keep"] { ownKeep = keep(value, at: entryPath + [.key("keep")], doc: &doc) }
            var minFreeSpace: Int?
            if let value = members["minFreeSpace"] {
                minFreeSpace = size(value, at: entryPath + [.key("minFreeSpace")], doc: &doc)
            }
            var deliver = defaults.deliver
            if let value = members["deliver"] {
                deliver = DeliveryConfigRules.destinations(value, at: entryPath + [.key("deliver")], doc: &doc)
                DeliveryConfigRules.check(deliver, at: entryPath + [.key("deliver")], mail: defaults.mail, doc: &doc)
            }
            var duplicates = defaults.duplicates
            if let value = members["duplicates"] {
                duplicates = Self.duplicates(value, at: entryPath + [.key("duplicates")], doc: &doc) ?? duplicates
            }
            let keep = ownKeep.over(defaults.keep)
            if keep.originals == .untilDelivered && deliver.isEmpty {
                doc.fail(entryPath + [.key(ownKeep.originals == nil ? "name" : "keep")],
                         "keep.originals is \"until-delivered\" but inbox \"\(name)\" has no destination (deliver): its originals would be kept for ever; give it a deliver list, or its own keep: { originals: \"forever\" }")
                ok = false
            }
            if ok {
                var inbox = Config.Inbox(name: name, root: root, template: template)
                inbox.deliver = deliver
                inbox.onBatch = hooks
                inbox.duplicates = duplicates
                // Its own keys over the config's, key by key.
                inbox.keep = keep
                inbox.minFreeSpace = minFreeSpace ?? defaults.minFreeSpace
                inbox.sharing = ShareConfigRules.read(members, at: entryPath, over: defaults.sharing, doc: &doc)
                inboxes.append(inbox)
            }
        }
        return inboxes
    }

    /// Names used in file names and logs: no path tricks, no hidden files, no spaces.
    static func isSafeName(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix(".") && name.utf8.count <= 128
            && name.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                    || $0 == "." || $0 == "_" || $0 == "-"
            }
    }
}

/// `NSString.standardizingPath` (symlinks resolved, `.` and `..` taken out) of many paths in
/// few folders: each folder is resolved once (10,000 hot folders under one parent: Foundation's
/// walk of the path, a third of the config's load, made once), the last name looked at alone
/// (a symlink, `.` or `..` there: the whole path as before).
public struct StandardPaths {
    private var folders: [String: String] = [:]

    public init() {}

    public mutating func standardized(_ path: String) -> String {
        let full = { (path as NSString).standardizingPath }
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return full() }
        let parent = String(path[..<slash]), name = path[path.index(after: slash)...]
        guard !name.isEmpty, name != ".", name != "..", (try? Files.status(path))??.kind != .symbolicLink else { return full() }
        let folder = folders[parent] ?? (parent as NSString).standardizingPath
        folders[parent] = folder
        return folder == "/" ? "/" + name : folder + "/" + name
    }
}
