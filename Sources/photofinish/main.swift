// photofinish: the command line (reference: The command line). Each command lives in its own file;
// this one only dispatches and turns errors into exit codes (0 ok, 1 some items failed, 2 usage or
// configuration error).
internal import CShims
import Foundation
import JSON5

// Pixel buffers and file copies are megabytes each and freed photo by photo: give every block
// of 1 MiB or more its own mapping, so a finished photo's memory goes back to the system
// instead of lingering in malloc's heap (bench/RESULTS.md: peak RSS −24 % with two 48 MP
// photos in flight, for ~5 % more wall time on 12 MP photos).
pf_malloc_map_from(1 << 20)

// Two libraries' lines that say nothing a person can act on, written to the journal at every
// start (reference: The service and its unit):
// - libdispatch's "Failed to set thread priority for worker thread: … errno=13": its event
//   thread asks for nice -4, which an unprivileged process may not take where systemd could
//   not apply LimitNICE= (a container without CAP_SYS_RESOURCE); the thread runs at 0 then,
//   and says so through syslog at every start. LIBDISPATCH_LOG=NO leaves its log out.
// - libSvtAv1Enc's "Failed to set thread priority" (run as root, where SCHED_FIFO is refused),
//   should libheif pick it for AVIF: SVT_LOG=1 keeps its errors, not its warnings.
// A value the environment already gives is kept (setenv's 0): `LIBDISPATCH_LOG=stderr` still
// shows libdispatch's lines to whoever asks for them.
setenv("LIBDISPATCH_LOG", "NO", 0)
setenv("SVT_LOG", "1", 0)

// The words as the shell passed them: a file name on the command line may be any bytes.
let words = Arguments.commandLine
let name = words.first.map { String(decoding: $0, as: UTF8.self) } ?? "help"
let rest = Array(words.dropFirst())

let code: Int32
do throws(UsageError) {
    switch name {
    case "--version", "-V":
        code = try VersionCommand.main(try Arguments(bytes: rest, options: []))
    case "--help", "-h":
        code = try HelpCommand.main(try Arguments(bytes: rest, options: []))
    default:
        guard let command = Commands.named(name) else {
            throw UsageError("unknown command '\(name)'"
                             + (Suggest.closest(to: name, in: Commands.all.map(\.name)).map { " (did you mean '\($0)'?)" } ?? ""))
        }
        if Arguments.asksForHelp(rest.map { String(decoding: $0, as: UTF8.self) }) {
            print(command.help, terminator: "")
            code = 0
        } else {
            let parsed = try Arguments(bytes: rest, options: command.options)
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
