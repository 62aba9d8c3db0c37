/// A command line split into options and positional arguments. Options are `--name VALUE`,
/// `--name=VALUE`, or flags; `--` ends options.
struct Arguments {
    var options: [String: String] = [:]
    var flags: Set<String> = []
    var positional: [String] = []

    /// - Parameters:
    ///   - args: the words after the command name.
    ///   - valued: options that take a value.
    ///   - flagNames: options that take none.
    /// - Throws: `UsageError` for an unknown option or a missing value.
    init(_ args: [String], valued: Set<String>, flags flagNames: Set<String> = []) throws(UsageError) {
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
            if flagNames.contains(name) {
                guard value == nil else { throw UsageError("--\(name) takes no value") }
                flags.insert(name)
            } else if valued.contains(name) {
                if value == nil {
                    guard i < args.count else { throw UsageError("--\(name) needs a value") }
                    value = args[i]
                    i += 1
                }
                options[name] = value
            } else {
                throw UsageError("unknown option --\(name)")
            }
        }
    }
}

/// A mistake on the command line: exit 2 with the message and a hint.
struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}
