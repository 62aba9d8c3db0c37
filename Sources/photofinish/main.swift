// photofinish: the command line (SPEC §5). Each command lives in its own file; this one
// only dispatches and turns errors into exit codes (0 ok, 1 some items failed, 2 usage or
// configuration error).
internal import CShims
import Foundation

let usage = """
    usage: photofinish COMMAND [OPTIONS]

    commands:
      run --template F [--out DIR] [--workers N] [--config FILE] FILE|DIR…
                                    finish these photos now, as one batch
      check [--config FILE] [TEMPLATE…]
                                    validate a config and templates
      report PATH                   print a batch's report (a batch folder or its report.json)
      watch ROOT [--template F] [--config FILE]
                                    run one hot folder now (built-in template unless --template)
      init ROOT [--template NAME]   create a hot folder's layout (drop/, out/, originals/, failed/)
      daemon [--config FILE]        the service (foreground; systemd Type=notify)
      status [--config FILE]        what the running daemon is doing, per hot folder
      proof --template F [--out DIR]
                                    the template on six sample shapes, as one contact sheet
      explain FILE [--config FILE | ROOT]
                                    what became of a dropped file
      demo [DIR]                    make sample photos in DIR (default ./demo) and finish them
      demo --drop ROOT              drop the sample photos into a hot folder
      help                          this text

    Exit codes: 0 ok, 1 some photos failed, 2 usage or configuration error.
    """

// Pixel buffers and file copies are megabytes each and freed photo by photo: give every block
// of 1 MiB or more its own mapping, so a finished photo's memory goes back to the system
// instead of lingering in malloc's heap (bench/RESULTS.md: peak RSS −24 % with two 48 MP
// photos in flight, for ~5 % more wall time on 12 MP photos).
pf_malloc_map_from(1 << 20)

let arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.first ?? "help"
let rest = Array(arguments.dropFirst())

let code: Int32
do {
    switch command {
    case "run": code = try await RunCommand.main(rest)
    case "check": code = try CheckCommand.main(rest)
    case "report": code = try ReportCommand.main(rest)
    case "demo": code = try await DemoCommand.main(rest)
    case "daemon": code = try await DaemonCommand.main(rest)
    case "watch": code = try await WatchCommand.main(rest)
    case "init": code = try InitCommand.main(rest)
    case "status": code = try StatusCommand.main(rest)
    case "proof": code = try ProofCommand.main(rest)
    case "explain": code = try ExplainCommand.main(rest)
    case "help", "--help", "-h":
        print(usage)
        code = 0
    default:
        throw UsageError("unknown command '\(command)'")
    }
} catch let error as UsageError {
    Terminal.error(error.message)
    Terminal.note("run 'photofinish help' for the commands")
    code = 2
}
exit(code)
