import Batches
import Codecs
import Configuration
import Dispatch
import Finishing
import Foundation
import Service
import System

/// `photofinish run --template F [--out DIR] [--workers N] [--config FILE] FILE|DIR…`:
/// one batch now. Inputs are never moved or changed.
enum RunCommand {
    static func main(_ a: Arguments) async throws(UsageError) -> Int32 {
        guard let templatePath = a[.template] else { throw UsageError("run needs --template FILE") }
        guard !a.positional.isEmpty else { throw UsageError("run needs at least one FILE or DIR") }
        let template: Template
        var limits = BatchLimits()
        do {
            template = try TemplateLoader.load(path: templatePath)
            if let configPath = a[.config] { limits = BatchLimits(config: try Config.load(path: configPath)) }
        } catch {
            for e in error.errors { Terminal.note(e.description) }
            return 2
        }
        if let w = a[.workers] {
            guard let n = Int(w), n >= 0 else { throw UsageError("--workers takes a whole number (0 = one per core)") }
            limits.workers = n
        }
        let paths = try inputs(a.positionalPaths, order: template.order)
        return await execute(template: template, paths: paths, outRoot: a[.out] ?? "out", limits: limits)
    }

    /// FILE arguments keep their order; a DIR stands for its files in the template's order (hidden
    /// files and the ignored names of reference, File names, left out, folders not descended into).
    /// Names are bytes, listed and opened through `System`: a Latin-1 or invalid UTF-8 name is a
    /// file like any other. Symlinks are followed (a link to a photo is that photo).
    static func inputs(_ args: [FilePath], order: Template.Order) throws(UsageError) -> [FilePath] {
        var paths: [FilePath] = []
        for arg in args {
            guard let status = followed(arg) else { throw UsageError("\(arg): no such file or folder") }
            guard status.isDirectory else {
                paths.append(arg)
                continue
            }
            let folder: Directory, names: [FileName]
            do throws(SystemError) {
                // A trailing slash lets the last component be a symlink to a folder.
                folder = try Directory(arg.bytes.last == UInt8(ascii: "/") ? arg : FilePath(bytes: arg.bytes + [UInt8(ascii: "/")]))
                names = try folder.names()
            } catch {
                throw UsageError("\(arg): cannot list the folder: \(error.reason)")
            }
            let files = names.filter { name in
                !IgnoreRules.ignores(name.readable) && (try? folder.open(name, .pathOnly).status())?.isRegular == true
            }
            paths += BatchOrder.sorted(files.map { arg.appending($0) }, by: order)
        }
        guard !paths.isEmpty else {
            throw UsageError("no photos found in \(args.map(\.description).joined(separator: ", "))")
        }
        return paths
    }

    /// What `path` is, a final symlink followed (nil when nothing is there).
    static func followed(_ path: FilePath) -> FileStatus? {
        try? FileDescriptor.open(path, .pathOnly).status()
    }

    /// Runs one batch into `<outRoot>/<batch-id>/`, writes the report last, prints where it
    /// is, and returns the exit code: `exitCode` of the report (by default 0 when all finished,
    /// 1 when some failed or the batch was stopped), 1 when the report cannot be written.
    static func execute(template: Template, paths: [some FilePathRepresentable], outRoot: String, limits: BatchLimits,
                        exitCode: (Report) -> Int32 = { $0.status == .complete ? 0 : 1 }) async -> Int32 {
        let batch = BatchID.make()
        let folder = outRoot + "/" + batch
        do throws(SystemError) {
            try Files.makeDirectories(folder, permissions: 0o755)
        } catch {
            Terminal.error("cannot create \(folder): \(error.reason)")
            return 2
        }
        let stop = StopRequest()
        let signals = StopSignals.requesting(stop)
        defer { withExtendedLifetime(signals) {} }
        let progress = ProgressLine()
        // The report names each source by the path given (escaped where it is not UTF-8); outputs
        // are named from the file name as the daemon names them (`Source.readableName`).
        let sources = paths.map { BatchRunner.Source(path: $0.filePath, original: $0.filePath.description) }
        let runner = BatchRunner(template: template, limits: limits)
        let report = await runner.run(batch: batch, sources: sources, folder: folder, stop: stop) { done, total in
            progress.update(done: done, total: total)
        }
        progress.finish()
        do {
            try ReportWriter.write(report, toFolder: folder)
        } catch {
            Terminal.error(error.description)
            return 1
        }
        summarize(report, folder: folder)
        return exitCode(report)
    }

    /// Prints what a batch came to: counts, failed photos, ignored files, batch outputs,
    /// warnings, where the report is.
    static func summarize(_ report: Report, folder: String) {
        let c = report.counts
        print("\(report.status.rawValue): \(c.ok) of \(c.items) photos finished"
              + (c.failed > 0 ? ", \(c.failed) failed" : "") + " → \(folder)/")
        for item in report.items where item.status == .failed {
            print("  \(item.source): \(item.error.map { "\($0.code): \($0.message)" } ?? "failed")")
        }
        // A photo finished from damaged data (`damaged: "warn"`) is said here too: it is not one
        // to deliver unseen.
        for item in report.items where item.status == .ok {
            for warning in item.warnings ?? [] where warning.hasPrefix(Damage.warningPrefix) { print("  \(item.source): \(warning)") }
        }
        for ignored in report.ignored ?? [] { print("  ignored: \(ignored.source) (\(ignored.reason))") }
        for output in report.outputs { print("  \(output.file)") }
        for warning in report.warnings ?? [] { print("  \(warning)") }
        print("report: \(folder)/report.json, \(folder)/report.html (photofinish report \(folder))")
    }
}

extension StopSignals {
    /// SIGINT and SIGTERM become `stop`'s request (Service's `StopSignals`); nil, said once,
    /// when no descriptor is left for them (the batch runs, Ctrl-C then ends it at once).
    static func requesting(_ stop: StopRequest) -> StopSignals? {
        do {
            return try StopSignals {
                stop.request()
                Terminal.note("\nstopping: finishing the photos in flight, then writing the report (Ctrl-C again to quit now)")
            }
        } catch {
            Terminal.note("note: \(error): Ctrl-C ends the batch at once, without its report")
            return nil
        }
    }
}
