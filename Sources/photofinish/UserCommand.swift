import Configuration
import Foundation
import JSON5
import System
import Web

/// `photofinish user add NAME [--inbox A,B | --admin] [--config F] [--password-stdin]`,
/// `user remove NAME`, `user list`: the web console's logins, in the users file the config
/// names (`users`, default /var/lib/photofinish/users.json5). The console reads the file again
/// whenever it changes: no reload needed.
enum UserCommand {
    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        guard let verb = a.positional.first else { throw UsageError("user needs add NAME, remove NAME or list") }
        let configPath = WatchCommand.absolute(a[.config] ?? Commands.defaultConfig)
        let config: Config
        do {
            config = try Config.load(path: configPath)
        } catch {
            for e in error.errors { Terminal.note(e.description) }
            Terminal.error("the config has errors: fix them first (photofinish check --config \(configPath))")
            return 2
        }
        let usersPath = config.users
        var users = Users()
        if Files.existsFollowingLinks(usersPath) {
            do {
                users = try Users.load(path: usersPath)
            } catch {
                for e in error.errors { Terminal.note(e.description) }
                Terminal.error("\(usersPath) has errors: fix them first (it is not changed)")
                return 2
            }
        }
        switch verb {
        case "add":
            guard a.positional.count == 2 else { throw UsageError("user add needs one NAME") }
            return try add(a.positional[1], a, config: config, users: users, path: usersPath)
        case "remove":
            guard a.positional.count == 2 else { throw UsageError("user remove needs one NAME") }
            guard a[.inbox] == nil, !a.has(.admin), !a.has(.passwordStdin) else {
                throw UsageError("user remove takes only NAME and --config")
            }
            let name = a.positional[1]
            guard users[name] != nil else {
                Terminal.error("no user '\(name)' in \(usersPath)" + (Suggest.closest(to: name, in: users.users.map(\.name)).map { " (did you mean '\($0)'?)" } ?? ""))
                return 2
            }
            users.users.removeAll { $0.name == name }
            guard save(users, to: usersPath) else { return 2 }
            print("\(name): removed; their sessions end at their next request")
            return 0
        case "list":
            guard a.positional.count == 1 else { throw UsageError("user list takes no NAME") }
            if users.users.isEmpty {
                print("no users in \(usersPath) (add one: photofinish user add NAME --inbox A | --admin)")
                return 0
            }
            let width = max(4, users.users.map(\.name.count).max() ?? 0) + 2
            print("USER".padding(toLength: width, withPad: " ", startingAt: 0) + "FOLDERS")
            for user in users.users {
                print(user.name.padding(toLength: width, withPad: " ", startingAt: 0) + user.scope)
            }
            return 0
        default:
            throw UsageError("unknown user command '\(verb)' (add NAME, remove NAME or list)")
        }
    }

    private static func add(_ name: String, _ a: Arguments, config: Config, users: Users, path: String) throws(UsageError) -> Int32 {
        guard Users.isValidName(name) else {
            throw UsageError("'\(name)' cannot be a login name: letters, digits, '.', '_', '-' or '@', at most 64")
        }
        let admin = a.has(.admin)
        let inboxes = (a[.inbox] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard admin != !inboxes.isEmpty else {
            throw UsageError(admin ? "--inbox and --admin exclude each other (an admin sees every hot folder)"
                             : "say which hot folders \(name) may use: --inbox A,B (or --admin for all)")
        }
        let known = config.inboxes.map(\.name)
        for inbox in inboxes where !known.contains(inbox) {
            throw UsageError("no inbox '\(inbox)' in the config"
                             + (Suggest.closest(to: inbox, in: known).map { " (did you mean '\($0)'?)" }
                                ?? " (it has: \(known.isEmpty ? "none" : known.joined(separator: ", ")))"))
        }
        let password: String
        if a.has(.passwordStdin) {
            guard let line = readLine(strippingNewline: true) else {
                Terminal.error("--password-stdin: standard input is empty")
                return 2
            }
            password = line.hasSuffix("\r") ? String(line.dropLast()) : line
        } else {
            guard let typed = askPassword(for: name) else { return 2 }
            password = typed
        }
        let hash: String
        do throws(PasswordHash.Refused) {
            hash = try PasswordHash.make(password)
        } catch {
            Terminal.error("\(name): \(error)")
            return 2
        }
        var users = users
        let replaced = users[name] != nil
        users.users.removeAll { $0.name == name }
        users.users.append(Users.User(name: name, hash: hash, inboxes: admin ? [] : inboxes, admin: admin))
        guard save(users, to: path) else { return 2 }
        let user = users[name]!
        print("\(name): \(replaced ? "password and folders replaced" : "added") (\(user.scope)) in \(path)")
        return 0
    }

    private static func save(_ users: Users, to path: String) -> Bool {
        do throws(SystemError) {
            if let warning = try users.write(to: path) { Terminal.note("note: \(warning)") }
            return true
        } catch {
            Terminal.error("\(error)")
            return false
        }
    }

    /// The password, typed twice on the terminal without echo; nil (and said why) otherwise.
    private static func askPassword(for name: String) -> String? {
        let tty = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard tty >= 0 else {
            Terminal.error("no terminal to ask the password on: give it with --password-stdin")
            return nil
        }
        defer { close(tty) }
        func ask(_ prompt: String) -> String? {
            _ = prompt.withCString { write(tty, $0, strlen($0)) }
            var saved = termios()
            let canHide = tcgetattr(tty, &saved) == 0
            if canHide {
                var hidden = saved
                hidden.c_lflag &= ~tcflag_t(ECHO)
                tcsetattr(tty, TCSAFLUSH, &hidden)
            }
            defer {
                if canHide { tcsetattr(tty, TCSAFLUSH, &saved) }
                _ = write(tty, "\n", 1)
            }
            var bytes: [UInt8] = []
            var byte: UInt8 = 0
            while read(tty, &byte, 1) == 1 {
                if byte == 10 || byte == 13 { return String(decoding: bytes, as: UTF8.self) }
                bytes.append(byte)
            }
            return nil
        }
        guard let first = ask("Password for \(name): "), let second = ask("Again: ") else {
            Terminal.error("no password read")
            return nil
        }
        guard first == second else {
            Terminal.error("the two passwords differ: nothing changed")
            return nil
        }
        return first
    }
}
