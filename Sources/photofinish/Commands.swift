/// Every command of the command line (reference: The command line): how it is called, what it does,
/// every option. The parser accepts only the options listed here, and `--help` prints them, so the
/// help cannot leave an option out. `docs/photofinish.1.md` (the man page) says the same in prose;
/// a test checks that it names every command and option.
struct Command: Sendable {
    var name: String
    /// The arguments after the name, as in a synopsis.
    var synopsis: String
    /// One line for `photofinish help`.
    var summary: String
    /// Paragraphs for `photofinish help NAME`.
    var details: String
    var options: [Option]
    var main: @Sendable (Arguments) async throws(UsageError) -> Int32
    /// The same work for a command that needs no task: run on the main thread, it starts no
    /// Dispatch worker threads (and so no libdispatch thread priority to set: `check` in the
    /// unit's ExecStartPre= logs nothing of that kind).
    var sync: (@Sendable (Arguments) throws(UsageError) -> Int32)? = nil

    /// `photofinish help NAME`, `NAME --help`.
    var help: String {
        var out = "usage: photofinish \(name)\(synopsis.isEmpty ? "" : " " + synopsis)\n\n\(summary)\n"
        if !details.isEmpty { out += "\n\(details)\n" }
        let listed = options + [Option(.help, nil, "this text")]
        let labels = listed.map { "--\($0.name.rawValue)" + ($0.value.map { " \($0)" } ?? "") }
        let width = labels.map(\.count).max()! + 2
        out += "\noptions:\n"
        for (label, option) in zip(labels, listed) {
            let indent = "\n  " + String(repeating: " ", count: width)
            out += "  " + label.padding(toLength: width, withPad: " ", startingAt: 0)
                + option.help.replacingOccurrences(of: "\n", with: indent) + "\n"
        }
        return out
    }
}

extension Command {
    /// A command whose work is synchronous (`sync`); `main` runs the same.
    init(name: String, synopsis: String, summary: String, details: String, options: [Option],
         sync body: @escaping @Sendable (Arguments) throws(UsageError) -> Int32) {
        self.init(name: name, synopsis: synopsis, summary: summary, details: details, options: options,
                  main: { a throws(UsageError) in try body(a) }, sync: body)
    }
}

enum Commands {
    static let defaultConfig = "/etc/photofinish/photofinish.json5"

    static let all: [Command] = [
        Command(
            name: "run", synopsis: "--template F [--out DIR] [--workers N] [--config FILE] FILE|DIR…",
            summary: "Finish these photos now, as one batch.",
            details: """
                FILE arguments keep their order; a DIR stands for its files in the template's order
                (natural sort by default: IMG_2 before IMG_10). Any file name works, UTF-8 or not.
                Files of one folder sharing a stem are one photo (RAW+JPEG, HEIC+JPEG: the best
                rendered file is finished); files of different folders are never paired. A damaged
                photo fails, or with the template's damaged: "warn" is finished and said.
                Outputs go to <out>/<batch-id>/ with
                report.json and report.html. The inputs are never moved or changed. Ctrl-C stops
                cleanly: the photos in flight finish and the report says "interrupted".
                Exit 0: every photo finished; 1: some failed or the batch was stopped; 2: usage or
                template error.
                """,
            options: [
                Option(.template, "F", "the template file (required)"),
                Option(.out, "DIR", "where the batch folder goes (default: ./out)"),
                Option(.workers, "N", "photos in flight at once (0 = one per core, the default)"),
                Option(.config, "FILE", "take maxPixels, maxFileBytes, itemTimeout and workers from this config"),
            ],
            main: { a throws(UsageError) in try await RunCommand.main(a) }),
        Command(
            name: "check", synopsis: "[--config FILE] [--strict] [TEMPLATE…]",
            summary: "Validate a config (and its templates) or templates.",
            details: """
                Prints "configuration OK", or every error as FILE:LINE: KEY: MESSAGE (exit 2).
                Then what the service will meet: each hot folder it cannot use — a root that does
                not exist, that its user may not write, or outside the unit's ReadWritePaths —
                with the commands that fix it, checked as the service user (the unit's User= for
                the config the unit runs), each font that is not installed, with the font drawn
                instead, and each metadata text not written as given (a =CODE= its codes file
                lacks, a city or country the metadata policy strips). These are warnings (exit 0,
                or 1 with --strict): the daemon runs the other hot folders and tries a refused
                one again at every reload.
                A TEMPLATE containing '/' or ending in .json5 is a file; otherwise it is a name in
                the config's templatesDir (\(defaultConfig) names /etc/photofinish/templates).
                Without arguments, checks \(defaultConfig) when it exists.
                """,
            options: [
                Option(.config, "FILE", "the config to check, with the template of each of its hot folders"),
                Option(.strict, nil, "exit 1 when there are warnings (a hot folder that cannot be used, a\nmissing font, a metadata text not written as given)"),
            ],
            sync: { a throws(UsageError) in try CheckCommand.main(a) }),
        Command(
            name: "report", synopsis: "PATH",
            summary: "Print a batch's report for a person.",
            details: "PATH is a batch folder or its report.json. Times are local, with their offset from UTC.",
            options: [],
            sync: { a throws(UsageError) in try ReportCommand.main(a) }),
        Command(
            name: "watch", synopsis: "ROOT [--template F] [--config FILE]",
            summary: "Run one hot folder in the foreground until Ctrl-C.",
            details: """
                Creates the layout under ROOT if missing (drop/, out/, originals/, failed/, .work/),
                then finishes every batch dropped into ROOT/drop/. Uses the built-in template (long
                side 2048 px, JPEG q88, location stripped) unless --template names one.
                """,
            options: [
                Option(.template, "F", "the template file (default: the built-in template)"),
                Option(.config, "FILE", "take timing and limits from this config (its hot folders are not used)"),
            ],
            main: { a throws(UsageError) in try await WatchCommand.main(a) }),
        Command(
            name: "init", synopsis: "ROOT [--template NAME] [--config FILE]",
            summary: "Create a hot folder's layout and print how to use it.",
            details: """
                Creates ROOT/drop/, out/, originals/, failed/ and .work/ (mode 0700); safe to run
                again. Prints the config entry to add (with a template that exists in the config's
                templatesDir) and the commands to check, reload or try it, ready to copy.
                """,
            options: [
                Option(.template, "NAME", "the template the entry names (default: one that exists, by preference\nthe folder's own name)"),
                Option(.config, "FILE", "the config the entry is meant for (default: \(defaultConfig))"),
            ],
            sync: { a throws(UsageError) in try InitCommand.main(a) }),
        Command(
            name: "daemon", synopsis: "[--config FILE]",
            summary: "The service, in the foreground (systemd Type=notify).",
            details: """
                Watches every hot folder of the config. SIGHUP reloads the config and templates
                (keeping the old ones on error); SIGTERM finishes the photos in flight and stops.
                """,
            options: [
                Option(.config, "FILE", "the config (default: \(defaultConfig))"),
            ],
            main: { a throws(UsageError) in try await DaemonCommand.main(a) }),
        Command(
            name: "user", synopsis: "add NAME [--inbox A,B | --admin] [--password-stdin] | remove NAME | list [--config FILE]",
            summary: "The web console's logins: add, remove, list.",
            details: """
                Writes the users file the config names (users, default /var/lib/photofinish/users.json5;
                mode 0640, group photofinish) with yescrypt hashes (libcrypt). add asks for the
                password twice on the terminal (or reads one line of standard input with
                --password-stdin) and replaces the password and folders of a user that exists. A
                user sees and uploads into the hot folders named with --inbox; --admin sees all.
                The console reads the file again when it changes: no reload needed.
                """,
            options: [
                Option(.inbox, "A,B", "add: the hot folders (inbox names) this user may see and upload into"),
                Option(.admin, nil, "add: this user sees every hot folder"),
                Option(.passwordStdin, nil, "add: read the password from one line of standard input"),
                Option(.config, "FILE", "the config naming the users file and the hot folders (default:\n\(defaultConfig))"),
            ],
            main: { a throws(UsageError) in try UserCommand.main(a) }),
        Command(
            name: "share", synopsis: "ROOT BATCH-ID [--expires 7d] [--password-stdin] | list [ROOT] | revoke [ROOT] TOKEN [--config FILE]",
            summary: "A finished batch's link for a client: make one, list them, revoke one.",
            details: """
                Prints the link to batch BATCH-ID of the hot folder ROOT: a gallery a client opens
                without a login (GET /s/TOKEN/ on the console's socket), with the photos to view and
                download one by one or as a ZIP, and to approve when the folder's approve is
                "client". The link starts with the config's web.publicURL; on a terminal its QR
                code is drawn below it. It ends after --expires (default: the folder's shareExpires,
                30 days) and asks for the password read from one line of standard input with
                --password-stdin (yescrypt-hashed, at least 8 characters).
                list shows each link of ROOT (or of every hot folder of the config): its batch,
                when it ends, how often and when it was last opened, and the link. revoke ends a
                link at once (TOKEN, or the whole link; the hot folder is found by its key).
                Run as root it writes as the owner of ROOT/.work/. Exit 0: done; 2: usage or
                configuration error, or no such batch or link.
                """,
            options: [
                Option(.expires, "DURATION", "how long the link works: 30m, 12h, 7d … at most a year\n(default: the hot folder's shareExpires, 30d)"),
                Option(.passwordStdin, nil, "ask the client for the password read from one line of standard input"),
                Option(.config, "FILE", "the config giving web.publicURL and the hot folders (default:\n\(defaultConfig))"),
            ],
            main: { a throws(UsageError) in try ShareCommand.main(a) }),
        Command(
            name: "status", synopsis: "[ROOT] [--all] [--config FILE] [--json]",
            summary: "What the running daemons and watches are doing.",
            details: """
                A summary first: the hot folders counted by state, and those that need attention
                (refused, low on space, share unavailable: why and the fix, said once for folders
                refused alike). Then per hot folder: the batch in progress ("processing 23 of
                80"), batches waiting, files pending, the last batch's result — every folder with
                --all, a ROOT, or up to \(StatusCommand.listedUpTo) of them; beyond that the busy ones and
                those that need attention. A daemon that is a host of a cluster says
                whether the cluster's database answers, and lists every host of the cluster with its
                workers and the tasks it holds. Each daemon and watch process writes its own status
                file; without arguments every one found is shown. Exit 0 when what was asked about
                is running, 1 when it is not.
                """,
            options: [
                Option(.config, "FILE", "only the daemon that runs this config, and only its hot folders"),
                Option(.json, nil, "print the running processes' statuses as JSON"),
                Option(.all, nil, "list every hot folder after the summary"),
            ],
            sync: { a throws(UsageError) in try StatusCommand.main(a) }),
        Command(
            name: "redo", synopsis: "ROOT BATCH-ID [--template F] [--config FILE]",
            summary: "Run a finished batch of a hot folder again, with its current template.",
            details: """
                Takes the files batch BATCH-ID filed in ROOT/originals/BATCH-ID/ and
                ROOT/failed/BATCH-ID/ and finishes them again as a new batch: out/<new-id>/ with
                a report that names the batch it redoes. The first batch's outputs and originals
                stay as they are (the new batch's originals are hard links to them). The template
                is --template, else the one the config gives ROOT, else (a folder run by watch,
                which no config names) the one the batch was finished with: the built-in template
                or the file its report names, as it is now. Safe beside a running daemon; run as
                root it writes as the owner of ROOT/.work/.
                Exit 0: every photo finished; 1: some failed; 2: usage or configuration error.
                """,
            options: [
                Option(.template, "F", "finish with this template file"),
                Option(.config, "FILE", "the config naming ROOT's template, and the limits (default:\n\(defaultConfig))"),
            ],
            main: { a throws(UsageError) in try await RedoCommand.main(a) }),
        Command(
            name: "deliver", synopsis: "ROOT BATCH-ID [--to NAME] [--config FILE]",
            summary: "Deliver a finished batch again, now, to its hot folder's destinations.",
            details: """
                Sends out/BATCH-ID/ to the destinations the config gives ROOT (deliver: [ … ]), or to
                the one --to names, and waits for each: a delivery that failed resumes where it
                stopped, one delivered is sent again under the same names (nothing is doubled). Each
                file is verified on the server; the receipts go into the batch's report.json and
                report.html. A delivery waiting for the batch's approval is not sent. Safe beside a
                running daemon (a delivery it is sending is refused, not sent twice); run as root it
                writes as the owner of ROOT/.work/. The logins come from the credentials file.
                Exit 0: every destination delivered and verified; 1: one failed (the reason is
                printed); 2: usage or configuration error.
                """,
            options: [
                Option(.to, "NAME", "only this destination"),
                Option(.config, "FILE", "the config naming ROOT's destinations (default:\n\(defaultConfig))"),
            ],
            sync: { a throws(UsageError) in try DeliverCommand.main(a) }),
        Command(
            name: "proof", synopsis: "--template F [--out DIR] [--config FILE]",
            summary: "The template on six sample photos, as one contact sheet.",
            details: """
                Writes <out>/proof-<template>.png: a landscape, a portrait stored sideways, a 48 MP
                photo, a screenshot, a square and a panorama, every output 360 px high and labelled.
                """,
            options: [
                Option(.template, "F", "the template file (required)"),
                Option(.out, "DIR", "where the sheet goes (default: the current folder)"),
                Option(.config, "FILE", "take maxPixels from this config"),
            ],
            main: { a throws(UsageError) in try ProofCommand.main(a) }),
        Command(
            name: "explain", synopsis: "FILE [ROOT] [--config FILE]",
            summary: "What became of a dropped file.",
            details: """
                Settling or waiting in drop/ (or never taken, and why), claimed in a batch, finished
                into these outputs, or failed and why. The hot folder: ROOT when given, else the one
                FILE's path lies in, else the config's. Exit 1 when nothing is known.
                """,
            options: [
                Option(.config, "FILE", "search this config's hot folders (default: \(defaultConfig))"),
            ],
            sync: { a throws(UsageError) in try ExplainCommand.main(a) }),
        Command(
            name: "demo", synopsis: "[DIR] [--template F] | --drop ROOT",
            summary: "Make sample photos and finish them, to see PhotoFinish work.",
            details: """
                Writes six sample photos into DIR/photos (default DIR: ./demo), with a RAW, an XMP
                sidecar and a text file as a card holds them, and finishes them as one batch into
                DIR/out, with a stitched story and a colour card. One of them, broken.jpg, fails on
                purpose: exit 0 when exactly that one failed, 1 when anything else went wrong. With
                --drop, only drops the samples into a hot folder's drop/.
                """,
            options: [
                Option(.template, "F", "the template file (default: the built-in template, plus a story\nand a colour card)"),
                Option(.drop, "ROOT", "only drop the sample photos into ROOT/drop/"),
            ],
            main: { a throws(UsageError) in try await DemoCommand.main(a) }),
        Command(
            name: "cluster", synopsis: "status [--config FILE] [--database CONNINFO] [--json]",
            summary: "Show the cluster's hosts, the tasks they hold and the batches under way.",
            details: """
                For daemons configured with cluster: { database, host }: the database reached, its
                schema version, every host (up, stopped, or lost: not heard of for a lease, its
                tasks then run elsewhere) with its workers, its folders and each task it holds with
                the time left on its lease, and every batch not yet published with its photos done,
                being finished and waiting. Reads only (the daemons make and migrate the schema).
                Exit 0; 1 when the config has no cluster or the database does not answer.
                """,
            options: [
                Option(.config, "FILE", "take cluster.database from this config (default: \(defaultConfig))"),
                Option(.database, "CONNINFO", "a libpq connection string instead of the config's"),
                Option(.json, nil, "print it as JSON"),
            ],
            sync: { a throws(UsageError) in try ClusterCommand.main(a) }),
        Command(
            name: "help", synopsis: "[COMMAND]",
            summary: "The commands, or one command's usage and options.",
            details: "",
            options: [],
            sync: { a throws(UsageError) in try HelpCommand.main(a) }),
        Command(
            name: "version", synopsis: "",
            summary: "Print the version (also: photofinish --version).",
            details: "",
            options: [],
            sync: { a throws(UsageError) in try VersionCommand.main(a) }),
    ]

    static func named(_ name: String) -> Command? { all.first { $0.name == name } }

    /// `photofinish help`: every command in one screen.
    static var overview: String {
        var out = "usage: photofinish COMMAND [OPTIONS]\n\ncommands:\n"
        for c in all {
            let line = "  \(c.name) \(c.synopsis)"
            if line.count <= 32 {
                out += line.padding(toLength: 34, withPad: " ", startingAt: 0) + c.summary + "\n"
            } else {
                out += line + "\n" + String(repeating: " ", count: 34) + c.summary + "\n"
            }
        }
        out += """

            'photofinish help COMMAND' or 'photofinish COMMAND --help' shows a command's options;
            'man photofinish' and 'man photofinish.json5' the whole reference.
            Exit codes: 0 ok, 1 some photos failed, 2 usage or configuration error.
            """
        return out
    }
}

/// `photofinish help [COMMAND]`.
enum HelpCommand {
    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        guard let name = a.positional.first else {
            print(Commands.overview)
            return 0
        }
        guard a.positional.count == 1 else { throw UsageError("help takes one COMMAND") }
        guard let command = Commands.named(name) else { throw UsageError("unknown command '\(name)'") }
        print(command.help, terminator: "")
        return 0
    }
}

/// `photofinish version`, `photofinish --version`.
enum VersionCommand {
    /// The release, as the Debian package is versioned (`scripts/package` reads it here).
    static let version = "0.9.0"

    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        guard a.positional.isEmpty else { throw UsageError("version takes no arguments") }
        print("photofinish \(version)")
        return 0
    }
}
