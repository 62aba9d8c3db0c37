import Batches
import Configuration
import Foundation
import HotFolders
import JSON5
import QR
import Service
import Sharing
import System
import Web

/// `photofinish share ROOT BATCH-ID [--expires 7d] [--password-stdin]`, `share list [ROOT]`,
/// `share revoke [ROOT] TOKEN` (reference: Share links, QR codes): a finished batch's link for
/// a client, in the hot folder's own store (`.work/shares/`), so the daemon serving the console
/// opens it at once. Links start with the config's `web.publicURL`.
///
/// Run as root, it writes as the owner of `ROOT/.work/` (as `redo` does), so the service can
/// still count openings and revoke.
enum ShareCommand {
    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        switch a.positional.first {
        case "list":
            return try list(a)
        case "revoke":
            return try revoke(a)
        default:
            return try make(a)
        }
    }

    // MARK: share ROOT BATCH-ID

    private static func make(_ a: Arguments) throws(UsageError) -> Int32 {
        guard a.positional.count == 2 else {
            throw UsageError("share needs ROOT and BATCH-ID (or: share list, share revoke TOKEN)")
        }
        let root = WatchCommand.absolute(a.positional[0]), batch = a.positional[1]
        let layout = HotFolderLayout(root: root)
        guard layout.exists else { throw UsageError("\(root) is not a hot folder (it has no drop/)") }
        guard BatchID.isValid(batch) else {
            throw UsageError("'\(batch)' is not a batch id (YYYYMMDD-HHMMSS-xxxx, as in \(root)/out/)")
        }
        guard Files.isDirectory(layout.out + "/" + batch) else {
            Terminal.error("no finished batch \(batch) in \(root)/out/ (a batch can be shared once it is finished)")
            return 2
        }
        guard let context = Context(a, roots: [root]) else { return 2 }
        var expires = context.folders.first?.sharing.shareExpires ?? ShareSettings().shareExpires
        if let text = a[.expires] {
            guard let duration = Config.parseDuration(text), duration > .zero else {
                throw UsageError("--expires must be a duration like 7d, 12h or 30m (at most a year), got '\(text)'")
            }
            expires = duration
        }
        var password: String?
        if a.has(.passwordStdin) {
            guard let line = readLine(strippingNewline: true) else {
                Terminal.error("--password-stdin: standard input is empty")
                return 2
            }
            do throws(PasswordHash.Refused) {
                password = try PasswordHash.make(line.hasSuffix("\r") ? String(line.dropLast()) : line)
            } catch {
                Terminal.error("--password-stdin: \(error)")
                return 2
            }
        }
        guard becomeOwner(of: layout) else { return 2 }
        let now = Date()
        let end = now + Double(expires.components.seconds)
        let made: (share: Share, token: String)
        do throws(ShareError) {
            made = try ShareStore(root: root).make(batch: batch, expires: end, password: password, by: maker, now: now)
        } catch {
            Terminal.error(error.message)
            return 2
        }
        let link = ShareGate.link(publicURL: context.publicURL, token: made.token)
        showInReport(batch: batch, root: root, publicURL: context.publicURL)
        print(link)
        if context.publicURL == nil {
            Terminal.note("note: the config sets no web.publicURL, so this is the link's path alone: put the console's address before it")
        }
        Terminal.note("batch \(batch), until \(HumanTime.words(made.share.expires))\(password == nil ? "" : ", with a password")"
                      + "; revoke it with: photofinish share revoke \(made.token)")
        if isatty(STDOUT_FILENO) == 1, let code = try? QRCode(link) { print(terminalText(code), terminator: "") }
        return 0
    }

    // MARK: share list [ROOT]

    private static func list(_ a: Arguments) throws(UsageError) -> Int32 {
        guard a.positional.count <= 2 else { throw UsageError("share list takes at most ROOT") }
        let roots = a.positional.count == 2 ? [WatchCommand.absolute(a.positional[1])] : nil
        guard let context = Context(a, roots: roots) else { return 2 }
        guard !context.folders.isEmpty else {
            Terminal.error("no hot folders to list: name one (photofinish share list ROOT) or a config that has some (--config FILE)")
            return 2
        }
        let now = Date()
        var rows: [[String]] = []
        var problems = false
        for folder in context.folders {
            let store = ShareStore(root: folder.root)
            do throws(ShareError) {
                guard let key = try store.key() else { continue }
                for share in try store.all() {
                    guard let token = share.token?.text(key: key) else { continue }
                    let openings = try store.openings(of: share.name)
                    let opened = openings.filter { $0.what == .opened }
                    let state: String = if let revoked = share.revoked {
                        "revoked \(HumanTime.words(revoked.at)) by \(revoked.by)"
                    } else if share.expires <= now {
                        "ended \(HumanTime.words(share.expires))"
                    } else {
                        "until \(HumanTime.words(share.expires))"
                    }
                    let seen = opened.last.map { "\(opened.count)× (last \(HumanTime.words($0.at)) from \($0.address))" } ?? "never"
                    rows.append([folder.name, share.batch, state + (share.password == nil ? "" : ", password"), seen,
                                 ShareGate.link(publicURL: context.publicURL, token: token)])
                }
            } catch {
                Terminal.error("\(folder.name): \(error.message)")
                problems = true
            }
        }
        if rows.isEmpty {
            print("no share links (make one: photofinish share ROOT BATCH-ID)")
            return problems ? 2 : 0
        }
        let header = ["FOLDER", "BATCH", "STATE", "OPENED", "LINK"]
        let widths = (0..<4).map { column in ([header] + rows).map { $0[column].count }.max()! + 2 }
        for row in [header] + rows {
            print((0..<4).map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined() + row[4])
        }
        return problems ? 2 : 0
    }

    // MARK: share revoke [ROOT] TOKEN

    private static func revoke(_ a: Arguments) throws(UsageError) -> Int32 {
        guard (2...3).contains(a.positional.count) else { throw UsageError("share revoke needs TOKEN (or the whole link)") }
        let given = a.positional.last!
        // The token alone, or the link it is in (…/s/TOKEN/).
        let token = given.split(separator: "/").last { $0.utf8.count == ShareToken.length } ?? Substring(given)
        let roots = a.positional.count == 3 ? [WatchCommand.absolute(a.positional[1])] : nil
        guard let context = Context(a, roots: roots) else { return 2 }
        for folder in context.folders {
            let store = ShareStore(root: folder.root)
            do throws(ShareError) {
                guard case .signed(_, let found) = try store.find(token) else { continue }
                guard let share = found else {
                    Terminal.error("that link of \(folder.name) is gone already (its batch was removed)")
                    return 2
                }
                guard becomeOwner(of: HotFolderLayout(root: folder.root)) else { return 2 }
                if let earlier = share.revoked {
                    print("the link to batch \(share.batch) of \(folder.name) was revoked already, \(HumanTime.words(earlier.at)) by \(earlier.by)")
                    return 0
                }
                try store.revoke(named: share.name, by: maker)
                showInReport(batch: share.batch, root: folder.root, publicURL: context.publicURL)
                print("revoked the link to batch \(share.batch) of \(folder.name): it answers \"withdrawn\" from now on")
                return 0
            } catch {
                Terminal.error("\(folder.name): \(error.message)")
                return 2
            }
        }
        if context.folders.isEmpty {
            Terminal.error("no hot folders to look in: name the link's (photofinish share revoke ROOT TOKEN) or a config that has it (--config FILE)")
        } else {
            Terminal.error("no hot folder \(roots == nil ? "of the config " : "")made this link (check it was copied whole)")
        }
        return 2
    }

    // MARK: Helpers

    /// The batch's report shows its newest working link (a report that cannot be rewritten is
    /// said, the link works all the same).
    private static func showInReport(batch: String, root: String, publicURL: String?) {
        do {
            try BatchLink.refresh(batch: batch, root: root, publicURL: publicURL)
        } catch {
            Terminal.note("note: the batch's report.html does not show the change: \(error)")
        }
    }

    /// Who makes or revokes a link from the command line, for the record.
    static var maker: String {
        let user = ProcessInfo.processInfo.environment["SUDO_USER"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ProcessInfo.processInfo.userName
        return "\(user) (photofinish share)"
    }

    /// The config's hot folders (or the ones named) and the public URL.
    struct Context {
        var folders: [Config.Inbox]
        var publicURL: String?

        /// Reads `--config` (or the default config, when it exists); nil (said why) when it has
        /// errors.
        /// - Parameter roots: the hot folders named on the command line (each with its config
        ///   entry's settings when the config has one); nil: every hot folder of the config.
        init?(_ a: Arguments, roots: [String]?) {
            let given = a[.config].map(WatchCommand.absolute)
            let path = given ?? (Files.exists(Commands.defaultConfig) ? Commands.defaultConfig : nil)
            var config: Config?
            if let path {
                do throws(JSON5Errors) {
                    config = try Config.load(path: path)
                } catch {
                    for e in error.errors { Terminal.note(e.description) }
                    Terminal.error("the config has errors: fix them first (photofinish check --config \(path))")
                    return nil
                }
            }
            publicURL = config?.publicURL
            let entries = config?.inboxes ?? []
            folders = roots.map { roots in
                roots.map { root in
                    entries.first { WatchCommand.absolute($0.root) == root }
                        ?? Config.Inbox(name: InitCommand.inboxName(for: root), root: root, template: "")
                }
            } ?? entries
        }
    }

    /// Run as root, becomes the owner of `.work/` (the service's user), so the share's files are
    /// the service's; false (said why) when that is refused.
    private static func becomeOwner(of layout: HotFolderLayout) -> Bool {
        guard ProcessIdentity.isRoot, let owner = try? ProcessIdentity.owner(of: layout.work), owner.uid != 0 else { return true }
        do throws(SystemError) {
            try ProcessIdentity.become(owner)
            return true
        } catch {
            Terminal.error("share: cannot become \(owner), the owner of \(layout.work)/: \(error)")
            return false
        }
    }

    /// The code drawn on a terminal, two rows of modules to a line (half blocks), black on white
    /// whatever the terminal's colours, with its quiet zone.
    static func terminalText(_ code: QRCode) -> String {
        let side = code.sizeWithQuietZone, zone = QRCode.quietZone
        var out = ""
        for row in stride(from: 0, to: side, by: 2) {
            out += "\u{1B}[30;107m"
            for column in 0..<side {
                let top = code.isDark(column - zone, row - zone), bottom = row + 1 < side && code.isDark(column - zone, row + 1 - zone)
                out += top ? (bottom ? "█" : "▀") : (bottom ? "▄" : " ")
            }
            out += "\u{1B}[0m\n"
        }
        return out
    }
}
