import FuzzTargets
import Foundation
import System

// Built with `--sanitize=fuzzer,address -Xswiftc -DFUZZING` (scripts/fuzz), libFuzzer owns
// `main` and calls the two entry points below; the target is named by PF_FUZZ_TARGET.
// Built plainly (swift build), this is the replay tool: `photofinish-fuzz TARGET PATH…` runs
// files through a target (a crash file found, a corpus), `photofinish-fuzz seed DIR` writes
// the seed corpus.

/// The target libFuzzer drives, from PF_FUZZ_TARGET (read once).
let fuzzedTarget: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["PF_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        FileHandle.standardError.write(Data("PF_FUZZ_TARGET must be one of \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")), got '\(name)'\n".utf8))
        exit(2)
    }
    return target
}()

/// libFuzzer's set-up hook: checks the target name before the first input.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<Int32>?,
                             _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> Int32 {
    _ = fuzzedTarget
    return 0
}

/// libFuzzer's entry point: one input through the chosen target.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    fuzzedTarget.run(bytes)
    return 0
}

#if !FUZZING
@main
enum ReplayTool {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let targets = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
        if arguments.first == "seed", arguments.count == 2 {
            do {
                let written = try FuzzSeeds.write(to: arguments[1])
                print("\(written) seed files in \(arguments[1])/<target>/")
            } catch {
                fail("seed: \(error)")
            }
            return
        }
        guard arguments.count >= 2, let target = FuzzTarget(rawValue: arguments[0]) else {
            fail("usage: photofinish-fuzz \(targets) FILE|DIR…   (replays inputs through a target)\n"
                 + "       photofinish-fuzz seed DIR          (writes the seed corpus)")
        }
        var count = 0
        for path in arguments.dropFirst() {
            for file in files(at: FilePath(path)) {
                guard let bytes = try? Files.contents(of: file) else { fail("cannot read \(file)") }
                target.run(bytes)
                count += 1
            }
        }
        print("\(target.rawValue): \(count) inputs, no crash")
    }

    /// The file itself, or the regular files in a folder (not descended), sorted.
    static func files(at path: FilePath) -> [FilePath] {
        guard let status = try? Files.statusFollowingLinks(path) else { fail("no such file: \(path)") }
        guard status.isDirectory else { return [path] }
        let names = (try? Files.names(in: path)) ?? []
        return names.sorted().map { path.appending($0) }.filter {
            guard let status = try? Files.statusFollowingLinks($0) else { return false }
            return !status.isDirectory
        }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        exit(2)
    }
}
#endif
