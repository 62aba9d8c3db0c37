import Foundation
import System

/// What an installed socket unit says (`photofinish-web.socket`): where it listens and whether
/// it is enabled — for `photofinish check` to say that the console would speak plain HTTP
/// beyond this machine before anyone logs in over it.
///
/// Read as `ServiceUnit` reads the service: from `systemctl show` when systemd runs, else from
/// the unit files (its drop-ins merged, `$SYSTEMD_UNIT_PATH` honoured), enabled when a
/// `*.wants/` folder beside them links it.
public struct SocketUnit: Sendable, Equatable {
    public static let web = "photofinish-web.socket"

    /// Each `ListenStream=` as written (`8732`, `127.0.0.1:8732`, `[::]:8732`).
    public var listen: [String] = []
    /// Enabled (started at boot, or with the service), or running now.
    public var enabled = false

    public init(listen: [String] = [], enabled: Bool = false) {
        self.listen = listen
        self.enabled = enabled
    }

    /// The unit `name` as installed, nil when there is none.
    public static func installed(_ name: String = web, environment: [String: String] = ProcessInfo.processInfo.environment) -> SocketUnit? {
        if environment["SYSTEMD_UNIT_PATH"] == nil, Files.existsFollowingLinks("/run/systemd/system"), let shown = fromSystemctl(name) {
            return shown
        }
        return fromFiles(name, folders: ServiceUnit.unitFolders(environment))
    }

    /// The listening addresses that reach beyond this machine (a bare port, `0.0.0.0`, `[::]`,
    /// an interface's address).
    public var beyondLoopback: [String] {
        listen.filter { address in
            let host: String
            if address.hasPrefix("["), let end = address.firstIndex(of: "]") {
                host = String(address[address.index(after: address.startIndex)..<end])
            } else if let colon = address.lastIndex(of: ":") {
                host = String(address[..<colon])
            } else {
                return !address.hasPrefix("/") && !address.hasPrefix("@")  // a port alone: every address (a path: a Unix socket)
            }
            return !(host.hasPrefix("127.") || host == "::1" || host == "localhost")
        }
    }

    static func fromSystemctl(_ name: String) -> SocketUnit? {
        guard let systemctl = ["/usr/bin/systemctl", "/bin/systemctl"].first(where: { Files.isExecutable($0) }) else { return nil }
        let result = ChildProcess.run([systemctl, "show", name, "-p", "LoadState", "-p", "Listen", "-p", "UnitFileState", "-p", "ActiveState"],
                                      environment: ["PATH": "/usr/bin:/bin", "LANG": "C"], timeout: .seconds(10))
        guard case .exited(0) = result.ending else { return nil }
        var unit = SocketUnit()
        var loaded = false
        for line in result.output.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            let key = line[..<eq], value = String(line[line.index(after: eq)...])
            switch key {
            case "LoadState": loaded = value == "loaded"
            // "[::]:8732 (Stream)", one a line.
            case "Listen": if value.hasSuffix("(Stream)") { unit.listen.append(String(value.dropLast(" (Stream)".count))) }
            case "UnitFileState": if value.hasPrefix("enabled") { unit.enabled = true }
            case "ActiveState": if value == "active" { unit.enabled = true }
            default: break
            }
        }
        return loaded ? unit : nil
    }

    static func fromFiles(_ name: String, folders: [String]) -> SocketUnit? {
        guard let main = folders.map({ $0 + "/" + name }).first(where: { Files.existsFollowingLinks($0) }),
              let text = try? Files.text(of: main) else { return nil }
        var texts = [text]
        var dropIns: [String: String] = [:]
        for folder in folders.reversed() {
            for file in Files.textNames(in: folder + "/" + name + ".d") where file.hasSuffix(".conf") {
                dropIns[file] = folder + "/" + name + ".d/" + file
            }
        }
        for file in dropIns.keys.sorted() { if let more = try? Files.text(of: dropIns[file]!) { texts.append(more) } }
        var unit = SocketUnit()
        for text in texts {
            var section = ""
            for raw in text.split(separator: "\n") {
                let line = raw.trimmingCharacters(in: .whitespaces)
                if line.hasPrefix("[") { section = line; continue }
                guard section == "[Socket]", line.hasPrefix("ListenStream=") else { continue }
                let value = String(line.dropFirst("ListenStream=".count)).trimmingCharacters(in: .whitespaces)
                if value.isEmpty { unit.listen = [] } else { unit.listen.append(value) }
            }
        }
        // Enabled: linked from a .wants folder (sockets.target.wants, photofinish.service.wants).
        for folder in folders {
            for wants in Files.textNames(in: folder) where wants.hasSuffix(".wants") {
                if Files.existsFollowingLinks(folder + "/" + wants + "/" + name) { unit.enabled = true }
            }
        }
        return unit
    }
}
