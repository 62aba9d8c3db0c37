import Foundation
import HotFolders

/// `photofinish init ROOT [--template NAME]`: creates the hot-folder layout (again safely)
/// and prints the config entry to add.
enum InitCommand {
    static func main(_ args: [String]) throws(UsageError) -> Int32 {
        let a = try Arguments(args, valued: ["template"])
        guard a.positional.count == 1 else { throw UsageError("init needs one ROOT folder") }
        let root = WatchCommand.absolute(a.positional[0])
        do throws(SystemError) {
            try HotFolderLayout(root: root).create()
        } catch {
            Terminal.error("\(error)")
            return 2
        }
        let name = inboxName(for: root)
        let template = a.options["template"] ?? name
        print("""
            created \(root)/
              drop/        people and tools drop photos here
              out/         finished batches: out/<batch-id>/ with report.json
              originals/   sources after success
              failed/      sources that could not be finished
              .work/       the daemon's own (mode 0700)
            add it to the config (\(DaemonCommand.defaultConfig)), then `systemctl reload photofinish`:
              inboxes: [ { name: "\(name)", root: "\(root)", template: "\(template)" } ],
            or try it now with: photofinish watch \(root)
            """)
        return 0
    }

    /// A config-safe name from the folder's last component ("My Shop" → "My-Shop").
    static func inboxName(for root: String) -> String {
        let base = URL(fileURLWithPath: root).lastPathComponent
        let cleaned = String(base.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == ".") ? $0 : "-" })
        let trimmed = cleaned.drop { $0 == "." }
        return trimmed.isEmpty ? "inbox" : String(trimmed)
    }
}
