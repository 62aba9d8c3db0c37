import Codecs
import Foundation
import Pixels
import Testing

/// Runs the real `photofinish` binary on real folders.
enum Harness {
    /// The binary built beside this test bundle.
    static var binary: String {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [here, here.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("photofinish").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        // swift test from the package root
        return FileManager.default.currentDirectoryPath + "/.build/debug/photofinish"
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// This machine's host name (what a report item's `host` is outside a cluster).
    static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count)
        return String(cString: buffer)
    }

    /// Runs the binary to completion (with a deadline: a hung run fails the test).
    @discardableResult
    static func run(_ args: [String], deadline: Duration = .seconds(300),
                    extraEnvironment: [String: String] = [:]) throws -> Result {
        try exec(binary, args, deadline: deadline, extraEnvironment: extraEnvironment)
    }

    /// Runs any program to completion, with a deadline: a hung child fails the test.
    @discardableResult
    static func exec(_ program: String, _ args: [String], deadline: Duration,
                     extraEnvironment: [String: String] = [:]) throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: program)
        p.arguments = args
        // A status written or read in a runtime folder of the test run's own, unless the test
        // names one: never /run/photofinish, where an installed service (or another worktree's
        // tests) keeps its own.
        var environment = ProcessInfo.processInfo.environment
        environment["RUNTIME_DIRECTORY"] = runtime
        p.environment = environment.merging(extraEnvironment) { $1 }
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // Drain both pipes while the process runs so a chatty child never blocks.
        let outData = Locked(Data()), errData = Locked(Data())
        let group = DispatchGroup()
        for (pipe, sink) in [(out, outData), (err, errData)] {
            group.enter()
            DispatchQueue.global().async {
                let d = pipe.fileHandleForReading.readDataToEndOfFile()
                sink.set(d)
                group.leave()
            }
        }
        let end = ContinuousClock.now + deadline
        while p.isRunning && ContinuousClock.now < end { usleep(20_000) }
        if p.isRunning {
            p.terminate()
            Issue.record("\(program) \(args) did not finish within \(deadline)")
        }
        p.waitUntilExit()
        group.wait()
        return Result(status: p.terminationStatus, stdout: String(decoding: outData.value, as: UTF8.self),
                      stderr: String(decoding: errData.value, as: UTF8.self))
    }

    /// The runtime folder of the commands a test runs without one of its own.
    static let runtime: String = (try? TemporaryFolder.make("runtime")) ?? NSTemporaryDirectory()

    /// A fresh temporary folder.
    static func tempDir(_ name: String = #function) throws -> String {
        let clean = name.filter { $0.isLetter || $0.isNumber }
        return try TemporaryFolder.make("e2e-\(clean)")
    }

    static func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    static func read(_ path: String) throws -> [UInt8] {
        try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// The only batch folder under `out`.
    static func batchFolder(in out: String) throws -> String {
        let names = try FileManager.default.contentsOfDirectory(atPath: out).filter { !$0.hasPrefix(".") }
        #expect(names.count == 1, "expected one batch folder, found \(names)")
        return out + "/" + (names.first ?? "")
    }

    /// The report as plain JSON objects (so the test checks the file, not our own decoder).
    static func report(in folder: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: folder + "/report.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// Decodes a whole image (upright as stored: outputs carry orientation 1).
    static func decode(_ path: String) throws -> (Image, SourceInfo) {
        try decodeWhole(try read(path))
    }

    /// A test picture, upright: grey-blue, with a red block in the top-left corner and a
    /// green block in the top-right corner (so both rotation and mirroring show).
    static func marked(width: Int, height: Int) -> Image {
        var image = Canvas(width: width, height: height, channels: 3, fill: [90, 110, 140])
        let block = max(2, min(width, height) / 5)
        image.withUnsafeMutableRows { rows in
            for y in 0..<block {
                let row = rows[y]
                for x in 0..<block {
                    row[x * 3] = 220; row[x * 3 + 1] = 30; row[x * 3 + 2] = 30
                    let r = (width - 1 - x) * 3
                    row[r] = 30; row[r + 1] = 200; row[r + 2] = 40
                }
            }
        }
        return image.finished()
    }

    /// The orientation whose transform undoes `o`.
    static func inverse(_ o: Int) -> Int { o == 6 ? 8 : o == 8 ? 6 : o }

    /// A JPEG that shows `upright` once its EXIF `orientation` is applied.
    static func jpeg(upright: Image, orientation: Int = 1, exif: ExifBuilder = ExifBuilder(),
                     icc: [UInt8]? = nil, quality: Int = 92) throws -> [UInt8] {
        var e = exif
        e.orientation = orientation
        let stored = Orientation.apply(upright, exif: inverse(orientation))
        return try encodeImage(stored, options: EncodeOptions(format: .jpeg, quality: quality, icc: icc, exif: e.bytes()))
    }

    static func isRed(_ p: [UInt8]) -> Bool { p[0] > 170 && p[1] < 90 && p[2] < 90 }
    static func isGreen(_ p: [UInt8]) -> Bool { p[1] > 150 && p[0] < 90 && p[2] < 100 }
}

