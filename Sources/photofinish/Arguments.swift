import Foundation
import System

/// One option of a command: `--name VALUE` (when `value` is set) or a flag `--name`.
struct Option: Sendable {
    var name: Name
    /// How the value is shown in help (`F`, `DIR`, `N`); `nil` for a flag.
    var value: String?
    /// What it does, for `--help` and `help COMMAND`.
    var help: String

    init(_ name: Name, _ value: String?, _ help: String) {
        self.name = name
        self.value = value
        self.help = help
    }

    /// Every option any command takes, by the name typed after `--`: a command's code asks for
    /// one by its case (`a[.config]`, `a.has(.strict)`), never by a string that could be mistyped.
    enum Name: String, Sendable, CaseIterable {
        case admin, all, config, database, drop, expires, help, inbox, json, out, strict, template, to, workers
        case passwordStdin = "password-stdin"
    }
}

/// A command line split into options and positional arguments. Options are `--name VALUE`,
/// `--name=VALUE`, or flags; `--` ends options.
///
/// The words come as the bytes the shell passed (`CommandLine.unsafeArgv`): a file name is any
/// bytes (a Latin-1 `caf\xE9.jpg` from an old Samba client, an invalid UTF-8 name), and a
/// positional argument keeps its bytes in `positionalPaths` so such a file can be named.
/// The text forms are for everything else (option values, batch ids), UTF-8 repaired.
struct Arguments {
    var options: [Option.Name: String] = [:]
    var flags: Set<Option.Name> = []
    var positional: [String] = []
    /// The positional arguments as the bytes given: the files and folders they name.
    var positionalPaths: [FilePath] = []

    /// - Parameters:
    ///   - args: the words after the command name, as text.
    ///   - known: the command's options (the only ones accepted).
    /// - Throws: `UsageError` for an unknown option or a missing value.
    init(_ args: [String], options known: [Option]) throws(UsageError) {
        try self.init(bytes: args.map { Array($0.utf8) }, options: known)
    }

    /// - Parameters:
    ///   - args: the words after the command name, as the bytes the shell passed.
    ///   - known: the command's options (the only ones accepted).
    /// - Throws: `UsageError` for an unknown option or a missing value.
    init(bytes raw: [[UInt8]], options known: [Option]) throws(UsageError) {
        let args = raw.map { String(decoding: $0, as: UTF8.self) }
        var i = 0
        var onlyPositional = false
        while i < args.count {
            let a = args[i]
            i += 1
            if onlyPositional || !a.hasPrefix("--") || a == "-" {
                positional.append(a)
                positionalPaths.append(FilePath(bytes: raw[i - 1]))
                continue
            }
            if a == "--" { onlyPositional = true; continue }
            var name = String(a.dropFirst(2)), value: String?
            if let eq = name.firstIndex(of: "=") {
                value = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard let option = known.first(where: { $0.name.rawValue == name }) else {
                let names = known.map { "--\($0.name.rawValue)" }
                throw UsageError("unknown option --\(name)"
                                 + (names.isEmpty ? " (this command takes none)" : " (options: \(names.joined(separator: ", ")))"))
            }
            if option.value == nil {
                guard value == nil else { throw UsageError("--\(name) takes no value") }
                flags.insert(option.name)
            } else {
                if value == nil {
                    guard i < args.count else { throw UsageError("--\(name) needs a value (\(option.value!))") }
                    value = args[i]
                    i += 1
                }
                options[option.name] = value
            }
        }
    }

    /// The value given for `option`, if it was given.
    subscript(_ option: Option.Name) -> String? { options[option] }

    /// Whether the flag `option` was given.
    func has(_ option: Option.Name) -> Bool { flags.contains(option) }

    /// The words after the program's name, as the bytes the shell passed.
    static var commandLine: [[UInt8]] {
        (1..<Int(CommandLine.argc)).map { index in
            guard let word = CommandLine.unsafeArgv[index] else { return [] }
            return Array(UnsafeBufferPointer(start: UnsafeRawPointer(word).assumingMemoryBound(to: UInt8.self),
                                             count: strlen(word)))
        }
    }

    /// Whether `--help` or `-h` comes before any `--`.
    static func asksForHelp(_ args: [String]) -> Bool {
        for a in args {
            if a == "--" { return false }
            if a == "--help" || a == "-h" { return true }
        }
        return false
    }
}

/// A mistake on the command line: exit 2 with the message and a hint.
struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}
