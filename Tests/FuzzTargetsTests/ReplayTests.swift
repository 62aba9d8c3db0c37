import Foundation
import Testing
@testable import FuzzTargets

/// Every checked-in seed and every crash file a fuzzing run found (`Fuzz/regressions/<target>/`,
/// kept once fixed) goes through its target again: a regression traps here, in the normal
/// test suite, without libFuzzer.
@Suite struct ReplayTests {
    static let fuzzFolder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz").path

    static func files(_ kind: String, _ target: FuzzTarget) -> [String] {
        let folder = fuzzFolder + "/" + kind + "/" + target.rawValue
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { !$0.hasPrefix(".") && !$0.hasSuffix(".md") }.sorted().map { folder + "/" + $0 }
    }

    @Test("every seed and every crash file found runs through its target", arguments: FuzzTarget.allCases)
    func replay(target: FuzzTarget) throws {
        let seeds = Self.files("seeds", target)
        #expect(!seeds.isEmpty, "no seeds for \(target) in \(Self.fuzzFolder)/seeds")
        for file in seeds + Self.files("regressions", target) {
            let bytes = try #require(FileManager.default.contents(atPath: file), "cannot read \(file)")
            target.run([UInt8](bytes))
        }
    }

    @Test("the seeds made in code match the checked-in ones")
    func seedsAreCheckedIn() throws {
        for (target, files) in try FuzzSeeds.all() {
            let names = Set(Self.files("seeds", target).map { ($0 as NSString).lastPathComponent })
            for (name, _) in files {
                #expect(names.contains(name), "Fuzz/seeds/\(target.rawValue)/\(name) is missing: run scripts/fuzz-seeds")
            }
        }
    }
}
