import Configuration
import Finishing
import Foundation
import Service

/// `photofinish status [--config FILE]`: per hot folder what is pending and processing, and
/// the last batch's result, from the running daemon's status file.
enum StatusCommand {
    static func main(_ args: [String]) throws(UsageError) -> Int32 {
        let a = try Arguments(args, valued: ["config", "status-file"])
        let path = a.options["status-file"] ?? ServiceStatus.defaultPath()
        var names: [String]?
        if let configPath = a.options["config"] {
            do {
                names = try Config.load(path: configPath).inboxes.map(\.name)
            } catch {
                for e in error.errors { Terminal.note(e.description) }
                return 2
            }
        }
        guard let status = try? ServiceStatus.read(from: path) else {
            print("photofinish is not running (no status at \(path))")
            return 1
        }
        let alive = kill(status.pid, 0) == 0 || errno == EPERM
        if status.state != "running" || !alive {
            print("photofinish is not running (last status \(status.updated), pid \(status.pid))")
        } else {
            print("photofinish is running (pid \(status.pid), status of \(status.updated))")
        }
        for inbox in status.inboxes where names?.contains(inbox.name) ?? true {
            print(lines(inbox))
        }
        for name in names ?? [] where !status.inboxes.contains(where: { $0.name == name }) {
            print("\(name): not watched by the running daemon (reload it: systemctl reload photofinish)")
        }
        return status.state == "running" && alive ? 0 : 1
    }

    static func lines(_ inbox: ServiceStatus.Inbox) -> String {
        var out = "\(inbox.name)  \(inbox.root)\n"
        if let p = inbox.processing {
            out += "  processing \(p.done) of \(p.total) (batch \(p.batch))\n"
        }
        if inbox.queued > 0 { out += "  \(inbox.queued) claimed batch\(inbox.queued == 1 ? "" : "es") waiting\n" }
        out += "  \(inbox.pending) pending, \(inbox.settling) still arriving in drop/\n"
        if inbox.polling { out += "  watching by polling (no inotify watch available)\n" }
        if let l = inbox.last {
            out += "  last batch \(l.batch): \(l.status), \(l.ok) of \(l.items) finished"
                + (l.failed > 0 ? ", \(l.failed) failed" : "") + " at \(l.finished)\n"
        } else {
            out += "  no batch finished since the daemon started\n"
        }
        return String(out.dropLast())
    }
}
