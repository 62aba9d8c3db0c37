// photofinish: the command line (SPEC §5). Each command lives in its own file; this one
// only dispatches and turns errors into exit codes (0 ok, 1 some items failed, 2 usage or
// configuration error).
internal import CShims
import Foundation
import JSON5

// Pixel buffers and file copies are megabytes each and freed photo by photo: give every block
// of 1 MiB or more its own mapping, so a finished photo's memory goes back to the system
// instead of lingering in malloc's heap (bench/RESULTS.md: peak RSS −24 % with two 48 MP
// photos in flight, for ~5 % more wall time on 12 MP photos).
pf_malloc_map_from(1 << 20)

let arguments = Array(CommandLine.arguments.dropFirst())
let name = arguments.first ?? "help"
let rest = Array(arguments.dropFirst())

let code: Int32
do throws(UsageError) {
    switch name {
    case "--version", "-V":
        code = try VersionCommand.main(try Arguments(rest, options: []))
    case "--help", "-h":
        code = try HelpCommand.main(try Arguments(rest, options: []))
    default:
        guard let command = Commands.named(name) else {
            throw UsageError("unknown command '\(name)'"
                             + (Suggest.closest(to: name, in: Commands.all.map(\.name)).map { " (did you mean '\($0)'?)" } ?? ""))
        }
        if Arguments.asksForHelp(rest) {
            print(command.help, terminator: "")
            code = 0
        } else {
            let parsed = try Arguments(rest, options: command.options)
            if let sync = command.sync { code = try sync(parsed) } else { code = try await command.main(parsed) }
        }
    }
} catch {
    Terminal.error(error.message)
    Terminal.note(Commands.named(name) == nil ? "run 'photofinish help' for the commands"
                  : "run 'photofinish help \(name)' for its usage and options")
    code = 2
}
exit(code)
