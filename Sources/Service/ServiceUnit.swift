import Foundation
import System

/// What the installed systemd unit says about the service: the user it runs as, the config
/// it runs, and where it may write — so `photofinish check`, run by hand, can say that a hot
/// folder lies where the service cannot write, before the daemon finds out.
///
/// Read from `systemctl show` when systemd runs (drop-ins merged by systemd itself), else from
/// the unit files: `photofinish.service` and its `photofinish.service.d/*.conf` drop-ins in
/// `/etc/systemd/system`, `/run/systemd/system`, `/lib/systemd/system`, `/usr/lib/systemd/system`
/// (or the folders `$SYSTEMD_UNIT_PATH` names, as systemd itself would).
public struct ServiceUnit: Sendable, Equatable {
    public static let name = "photofinish.service"

    /// `User=`.
    public var user = "photofinish"
    /// `Group=` (nil: the user's own group).
    public var group: String?
    /// The `--config` of its `ExecStart=` (absolute).
    public var config = "/etc/photofinish/photofinish.json5"
    /// `ReadWritePaths=`, in order, without systemd's `-`/`+` prefixes.
    public var readWritePaths: [String] = []
    /// `BindPaths=`: where each is seen inside the service (a `SOURCE:DEST` entry's DEST), a
    /// folder the service may write, whatever `ProtectHome=` or `ProtectSystem=` hide around
    /// it — what `photofinish init` prints for a hot folder under /home. Inside the service
    /// the folders above it are systemd's (it makes them, mode 0755), not the real ones.
    public var bindPaths: [String] = []
    /// `StateDirectory=`, `CacheDirectory=`, `RuntimeDirectory=`, `LogsDirectory=` as paths
    /// (`/var/lib/photofinish`…): writable too.
    public var ownDirectories: [String] = []
    /// `ProtectSystem=` (`strict`: everything else is read-only).
    public var protectSystem = "no"
    /// `ProtectHome=` (`yes`: /home, /root and /run/user are not there at all).
    public var protectHome = "no"
    /// `PrivateTmp=`: /tmp and /var/tmp are the service's own.
    public var privateTmp = false
    /// Where this was read: `systemctl show photofinish.service`, or the files.
    public var source = ""

    public init() {}

    /// The unit as installed on this machine, or nil when there is none.
    public static func installed(environment: [String: String] = ProcessInfo.processInfo.environment) -> ServiceUnit? {
        if environment["SYSTEMD_UNIT_PATH"] == nil, Files.existsFollowingLinks("/run/systemd/system"),
           let shown = fromSystemctl() {
            return shown
        }
        return fromFiles(folders: unitFolders(environment))
    }

    /// The folders units are read from, most important first.
    static func unitFolders(_ environment: [String: String]) -> [String] {
        if let path = environment["SYSTEMD_UNIT_PATH"] {
            return path.split(separator: ":").map(String.init).filter { !$0.isEmpty }
        }
        return ["/etc/systemd/system", "/run/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system"]
    }

    /// The unit from its files, as systemd would merge them: the first `photofinish.service`
    /// found, then every drop-in by file name (one in a more important folder hides one of the
    /// same name in a less important folder).
    static func fromFiles(folders: [String]) -> ServiceUnit? {
        guard let main = folders.map({ $0 + "/" + name }).first(where: { Files.existsFollowingLinks($0) }),
              let text = try? Files.text(of: main) else { return nil }
        var dropIns: [String: String] = [:]
        for folder in folders.reversed() {
            let dir = folder + "/" + name + ".d"
            for file in Files.textNames(in: dir) where file.hasSuffix(".conf") {
                dropIns[file] = dir + "/" + file
            }
        }
        var texts = [text]
        var read = [main]
        for file in dropIns.keys.sorted() {
            guard let path = dropIns[file], let more = try? Files.text(of: path) else { continue }
            texts.append(more)
            read.append(path)
        }
        var unit = parse(texts)
        unit.source = read.joined(separator: ", ")
        return unit
    }

    /// `systemctl show`'s view of the unit, or nil when it cannot say (no such unit, no bus).
    static func fromSystemctl() -> ServiceUnit? {
        let keys = ["LoadState", "User", "Group", "ExecStart", "ReadWritePaths", "BindPaths", "StateDirectory", "CacheDirectory",
                    "RuntimeDirectory", "LogsDirectory", "ProtectSystem", "ProtectHome", "PrivateTmp"]
        let places: [String] = ["/usr/bin/systemctl", "/bin/systemctl"]
        guard let systemctl = places.first(where: { Files.isExecutable($0) }) else { return nil }
        let result = ChildProcess.run([systemctl, "show", name] + keys.flatMap { ["-p", $0] },
                                      environment: ["PATH": "/usr/bin:/bin", "LANG": "C"], timeout: .seconds(10))
        guard case .exited(0) = result.ending else { return nil }
        var values: [String: String] = [:]
        for line in result.output.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            values[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        guard values["LoadState"] == "loaded" else { return nil }
        var unit = ServiceUnit()
        if let user = values["User"], !user.isEmpty { unit.user = user }
        if let group = values["Group"], !group.isEmpty { unit.group = group }
        if let exec = values["ExecStart"], let range = exec.range(of: "argv[]=") {
            let argv = exec[range.upperBound...].prefix { $0 != ";" }.split(separator: " ").map(String.init)
            if let config = configArgument(argv) { unit.config = config }
        }
        unit.readWritePaths = (values["ReadWritePaths"] ?? "").split(separator: " ").map { strip(String($0)) }
        unit.bindPaths = bindDestinations(values["BindPaths"] ?? "")
        unit.ownDirectories = ownDirectories([("StateDirectory", values["StateDirectory"]), ("CacheDirectory", values["CacheDirectory"]),
                                              ("RuntimeDirectory", values["RuntimeDirectory"]), ("LogsDirectory", values["LogsDirectory"])])
        unit.protectSystem = values["ProtectSystem"] ?? "no"
        unit.protectHome = values["ProtectHome"] ?? "no"
        unit.privateTmp = values["PrivateTmp"] == "yes"
        unit.source = "systemctl show \(name)"
        return unit
    }

    /// The settings of a unit file and its drop-ins, in order (later ones win; an empty
    /// list assignment resets the list, as in systemd).
    static func parse(_ texts: [String]) -> ServiceUnit {
        var unit = ServiceUnit()
        var directories: [(String, String?)] = []
        for text in texts {
            var section = ""
            var logical = ""
            for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
                var line = raw.trimmingCharacters(in: .whitespaces)
                // A line ending in a backslash continues on the next one.
                if line.hasSuffix("\\") {
                    logical += line.dropLast() + " "
                    continue
                }
                line = logical + line
                logical = ""
                if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
                if line.hasPrefix("[") { section = line; continue }
                guard section == "[Service]", let eq = line.firstIndex(of: "=") else { continue }
                let key = line[..<eq].trimmingCharacters(in: .whitespaces)
                let value = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
                switch key {
                case "User": unit.user = value
                case "Group": unit.group = value.isEmpty ? nil : value
                case "ExecStart":
                    if let config = configArgument(value.split(separator: " ").map(String.init)) { unit.config = config }
                case "ReadWritePaths":
                    if value.isEmpty { unit.readWritePaths = [] } else { unit.readWritePaths += value.split(separator: " ").map { strip(String($0)) } }
                case "BindPaths":
                    if value.isEmpty { unit.bindPaths = [] } else { unit.bindPaths += bindDestinations(value) }
                case "StateDirectory", "CacheDirectory", "RuntimeDirectory", "LogsDirectory":
                    directories.append((key, value.isEmpty ? nil : value))
                case "ProtectSystem": unit.protectSystem = value
                case "ProtectHome": unit.protectHome = value
                case "PrivateTmp": unit.privateTmp = ["yes", "true", "1", "on"].contains(value)
                default: break
                }
            }
        }
        unit.ownDirectories = ownDirectories(directories)
        return unit
    }

    /// Where each `BindPaths=` entry is seen inside the service: `SOURCE[:DEST[:OPTIONS]]`,
    /// space-separated (as written in a unit, and as `systemctl show` says them).
    static func bindDestinations(_ value: String) -> [String] {
        value.split(separator: " ").compactMap { entry in
            let parts = strip(String(entry)).split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard let source = parts.first, source.hasPrefix("/") else { return nil }
            return parts.count > 1 && parts[1].hasPrefix("/") ? parts[1] : source
        }
    }

    /// The `BindPaths=` folder `path` lies in, if any.
    public func bind(holding path: String) -> String? {
        bindPaths.first { Self.isInside(path, $0) }
    }

    /// `--config FILE` (or `--config=FILE`) in a command line.
    static func configArgument(_ argv: [String]) -> String? {
        for (i, word) in argv.enumerated() {
            if word == "--config", i + 1 < argv.count { return argv[i + 1] }
            if word.hasPrefix("--config=") { return String(word.dropFirst(9)) }
        }
        return nil
    }

    /// `-/srv/x` or `+/srv/x` (systemd's prefixes) → `/srv/x`.
    static func strip(_ path: String) -> String {
        String(path.drop { $0 == "-" || $0 == "+" })
    }

    private static func ownDirectories(_ settings: [(String, String?)]) -> [String] {
        let bases = ["StateDirectory": "/var/lib", "CacheDirectory": "/var/cache", "RuntimeDirectory": "/run", "LogsDirectory": "/var/log"]
        var out: [String] = []
        for (key, value) in settings {
            guard let value, let base = bases[key] else { continue }
            out += value.split(separator: " ").map { base + "/" + String($0).split(separator: ":").first.map(String.init)! }
        }
        return out
    }

    /// True when the service may write at `path` (an absolute path with symlinks resolved):
    /// the system is not read-only for it, or the path lies in one of its writable folders.
    public func mayWrite(_ path: String) -> Bool {
        guard protectSystem == "strict" || protectSystem == "full" || protectSystem == "yes" || protectSystem == "true" else {
            return true
        }
        if protectSystem != "strict" {
            // "yes"/"full": only /usr, /boot, /efi (and /etc with "full") are read-only.
            let readOnly = ["/usr", "/boot", "/efi"] + (protectSystem == "full" ? ["/etc"] : [])
            return !readOnly.contains { Self.isInside(path, $0) } || writable.contains { Self.isInside(path, $0) }
        }
        return writable.contains { Self.isInside(path, $0) }
    }

    /// Where the service may write: `ReadWritePaths=`, `BindPaths=` and its own directories.
    public var writable: [String] {
        (readWritePaths + ownDirectories).map { Self.resolved($0) } + bindPaths
    }

    /// True when `path` is `folder` or lies inside it.
    static func isInside(_ path: String, _ folder: String) -> Bool {
        folder == "/" || path == folder || path.hasPrefix(folder.hasSuffix("/") ? folder : folder + "/")
    }

    /// `path` with its symlinks resolved as far as it exists (the rest as written).
    public static func resolved(_ path: String) -> String {
        var existing = (path as NSString).standardizingPath
        var rest: [String] = []
        while !existing.isEmpty, existing != "/", !Files.existsFollowingLinks(existing) {
            rest.insert((existing as NSString).lastPathComponent, at: 0)
            existing = (existing as NSString).deletingLastPathComponent
        }
        guard let real = realpath(existing, nil) else { return path }
        defer { free(real) }
        var out = String(cString: real)
        for part in rest { out = (out as NSString).appendingPathComponent(part) }
        return out
    }
}
