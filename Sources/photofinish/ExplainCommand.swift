import Configuration
import Finishing
import Foundation
import HotFolders
import System

/// `photofinish explain FILE [--config FILE | ROOT]`: what became of a dropped file (reference:
/// `photofinish explain`). The hot folders searched: ROOT when given, else the config's
/// (`--config`), else the one FILE's path lies in (`<root>/drop/x.jpg`,
/// `<root>/drop/wedding/x.jpg`, `<root>/failed/<id>/x.jpg` …), else the default config's. A FILE
/// inside a hot folder is matched by its path (`Explain.Place`): a file in a folder inside drop/
/// was never taken and is no earlier batch's file of the same name; `failed/<id>/x.jpg` is batch
/// `<id>`'s; an output names the photo it was made from. Exit 0 when something is known, 1 when
/// nothing is.
enum ExplainCommand {
    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        guard let file = a.positional.first, a.positional.count <= 2 else {
            throw UsageError("explain needs FILE, and optionally the hot folder ROOT")
        }
        var config = Config.defaults
        var roots: [String] = []
        if a.positional.count == 2 {
            roots = [a.positional[1]]
        } else if let inferred = root(of: file), a[.config] == nil {
            roots = [inferred]
        }
        let configPath = a[.config] ?? (roots.isEmpty && Files.existsFollowingLinks(Commands.defaultConfig) ? Commands.defaultConfig : nil)
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
        // The name's bytes as given (a Latin-1 name is not UTF-8).
        let path = a.positionalPaths[0]
        guard let name = path.lastComponent else { throw UsageError("explain needs a file name, not \(file)") }
        let sha = (try? Files.status(path))?.isRegular == true ? Explain.sha256(of: path) : nil
        var known = false
        let absolute = WatchCommand.absolute(file)
        for root in roots {
            // A bare name is matched by name (and content) anywhere; a path by where it lies.
            let place = file.contains("/") ? Explain.place(of: absolute, in: WatchCommand.absolute(root)) ?? .anywhere : .anywhere
            let facts = Explain.facts(name: name, sha256: sha, layout: HotFolderLayout(root: root), place: place)
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

    /// The hot folder a path lies in: the nearest folder above it that is a hot folder's root
    /// (it holds `drop/`) with the path in its `drop/` (at any depth) or in
    /// `{failed,originals,out}/<batch-id>/`.
    static func root(of file: String) -> String? {
        var parts = URL(fileURLWithPath: file).standardizedFileURL.pathComponents
        guard parts.count >= 3 else { return nil }
        parts.removeLast()
        while parts.count >= 2 {
            parts.removeLast()
            let root = NSString.path(withComponents: parts)
            if HotFolderLayout(root: root).exists, Explain.place(of: WatchCommand.absolute(file), in: root) != nil { return root }
        }
        return nil
    }
}
