import Configuration
import Finishing
import Foundation
import HotFolders
import System

/// `photofinish explain FILE [--config FILE | ROOT]`: what became of a dropped file (SPEC §8).
/// The hot folders searched: ROOT when given, else the config's (`--config`), else the one
/// FILE's path lies in (`<root>/drop/x.jpg`, `<root>/failed/<id>/x.jpg` …), else the default
/// config's. Exit 0 when something is known, 1 when nothing is.
enum ExplainCommand {
    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        guard let file = a.positional.first, a.positional.count <= 2 else {
            throw UsageError("explain needs FILE, and optionally the hot folder ROOT")
        }
        var config = Config.defaults
        var roots: [String] = []
        if a.positional.count == 2 {
            roots = [a.positional[1]]
        } else if let inferred = root(of: file), a.options["config"] == nil {
            roots = [inferred]
        }
        let configPath = a.options["config"] ?? (roots.isEmpty && FileManager.default.fileExists(atPath: Commands.defaultConfig) ? Commands.defaultConfig : nil)
        if let configPath {
            do {
                config = try Config.load(path: configPath)
            } catch {
                for e in error.errors { Terminal.note(e.description) }
                return 2
            }
            if roots.isEmpty { roots = config.inboxes.map(\.root) }
        }
        guard !roots.isEmpty else {
            throw UsageError("which hot folder? give its ROOT (photofinish explain FILE ROOT) or --config FILE")
        }
        // The name's bytes as given (a Latin-1 name is not UTF-8): from argv itself.
        let path = FilePath(bytes: rawArgument(file))
        guard let name = path.lastComponent else { throw UsageError("explain needs a file name, not \(file)") }
        let sha = (try? Files.status(path))?.isRegular == true ? Explain.sha256(of: path) : nil
        var known = false
        for root in roots {
            let facts = Explain.facts(name: name, sha256: sha, layout: HotFolderLayout(root: root))
            guard facts.isKnown else { continue }
            known = true
            if roots.count > 1 { print("\(root):") }
            for line in Explain.words(facts, settle: config.settle, quiet: config.quiet) { print(line) }
        }
        if !known {
            print("nothing is known about \(name) in \(roots.joined(separator: ", ")): it is not in drop/, in a batch being finished, nor in any report under out/.")
        }
        return known ? 0 : 1
    }

    /// The bytes of the command-line argument Swift shows as `text`: Swift decodes arguments
    /// as UTF-8 and repairs what is not, so a Latin-1 name is taken from `argv` itself.
    static func rawArgument(_ text: String) -> [UInt8] {
        for i in 1..<Int(CommandLine.argc) {
            guard let arg = CommandLine.unsafeArgv[i] else { continue }
            if String(cString: arg) == text {
                return Array(UnsafeBufferPointer(start: arg, count: strlen(arg))).map { UInt8(bitPattern: $0) }
            }
        }
        return Array(text.utf8)
    }

    /// The hot folder a path lies in, when it is `<root>/drop/<name>` or
    /// `<root>/{failed,originals,out}/<batch-id>/<name>` and `<root>/drop` exists.
    static func root(of file: String) -> String? {
        let url = URL(fileURLWithPath: file).standardizedFileURL
        var parts = url.pathComponents
        guard parts.count >= 3 else { return nil }
        parts.removeLast()
        if parts.last == "drop" {
            parts.removeLast()
        } else if parts.count >= 3, ["failed", "originals", "out"].contains(parts[parts.count - 2]) {
            parts.removeLast(2)
        } else {
            return nil
        }
        let root = NSString.path(withComponents: parts)
        return HotFolderLayout(root: root).exists ? root : nil
    }
}
