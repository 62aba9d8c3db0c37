/// One option of a command: `--name VALUE` (when `value` is set) or a flag `--name`.
struct Option: Sendable {
    var name: String
    /// How the value is shown in help (`F`, `DIR`, `N`); `nil` for a flag.
    var value: String?
    /// What it does, for `--help` and `help COMMAND`.
    var help: String

    init(_ name: String, _ value: String?, _ help: String) {
        self.name = name
        self.value = value
        self.help = help
    }
}

/// A command line split into options and positional arguments. Options are `--name VALUE`,
/// `--name=VALUE`, or flags; `--` ends options.
struct Arguments {
    var options: [String: String] = [:]
    var flags: Set<String> = []
    var positional: [String] = []

    /// - Parameters:
    ///   - args: the words after the command name.
    ///   - known: the command's options (the only ones accepted).
    /// - Throws: `UsageError` for an unknown option or a missing value.
    init(_ args: [String], options known: [Option]) throws(UsageError) {
        var i = 0
        var onlyPositional = false
        while i < args.count {
            let a = args[i]
            i += 1
            if onlyPositional || !a.hasPrefix("--") || a == "-" {
                positional.append(a)
                continue
            }
            if a == "--" { onlyPositional = true; continue }
            var name = String(a.dropFirst(2)), value: String?
            if let eq = name.firstIndex(of: "=") {
                value = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard let option = known.first(where: { $0.name == name }) else {
                let names = known.map { "--\($0.name)" }
                throw UsageError("unknown option --\(name)"
                                 + (names.isEmpty ? " (this command takes none)" : " (options: \(names.joined(separator: ", ")))"))
            }
            if option.value == nil {
                guard value == nil else { throw UsageError("--\(name) takes no value") }
                flags.insert(name)
            } else {
                if value == nil {
                    guard i < args.count else { throw UsageError("--\(name) needs a value (\(option.value!))") }
                    value = args[i]
                    i += 1
                }
                options[name] = value
            }
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
