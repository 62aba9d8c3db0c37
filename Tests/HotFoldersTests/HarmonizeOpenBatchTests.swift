import Batches
import Codecs
import Finishing
import Foundation
import HotFolders
import Pixels
import System
import Testing

/// `harmonize` in a hot folder whose photos start as they settle (docs/reference.md,
/// `harmonize`): a photo finished while its batch is open is corrected toward the light known
/// then, and done again at the close only when the fixed reference moves its correction visibly.
@Suite(.serialized) struct HarmonizeOpenBatchTests {
    static let scene = SampleSet.street(width: 240, height: 180)
    /// The batch locks of this test, as one service holds them.
    let locks = BatchLocks()
    /// The template file, as a batch keeps it in its manifest.
    static let template: TemplateSnapshot = {
        let path = NSTemporaryDirectory() + "pf-harmonize-\(UInt32.random(in: 0...UInt32.max)).json5"
        FileManager.default.createFile(atPath: path, contents: Data("{ version: 1, harmonize: { strength: 1 }, output: { quality: 95 } }".utf8))
        return try! TemplateSnapshot.load(path: path).0  // a template the test writes: it validates
    }()

    func hotFolder() throws -> HotFolderLayout {
        let layout = HotFolderLayout(root: NSTemporaryDirectory() + "pf-harmonize-\(UInt32.random(in: 0...UInt32.max))")
        try layout.create()
        return layout
    }

    /// Drops the scene shot under each light, by name.
    func drop(_ shots: [(String, Double)], into layout: HotFolderLayout) throws {
        for (name, kelvin) in shots {
            let image = SampleSet.shot(Self.scene, kelvin: kelvin)
            try Data(try encodeImage(image, options: EncodeOptions(format: .jpeg, quality: 95)))
                .write(to: URL(fileURLWithPath: layout.drop + "/" + name))
        }
    }

    var limits: BatchLimits {
        var limits = BatchLimits()
        limits.workers = 2
        return limits
    }

    func finish(_ batch: ClaimedBatch) async throws -> Report {
        guard case .finished(let report, _, _) = try await BatchWork.finish(batch, limits: limits, stop: StopRequest(), log: .silent) else {
            throw SystemError("finish", batch.folder, errno: EIO)
        }
        return report
    }

    @Test func aPhotoFinishedEarlyIsTakenWhenTheReferenceLeavesItAsItWas() async throws {
        let layout = try hotFolder()
        try drop([("a.jpg", 5600), ("b.jpg", 5400)], into: layout)
        let opened = try #require(try Claim.claim(["a.jpg", "b.jpg"], layout: layout, inbox: "shop", template: Self.template,
                                                  order: .name, locks: locks, open: true).batch)
        let runner = BatchRunner(template: try Self.template.template(), limits: limits, inbox: "shop")
        let a = try await OpenBatchTests.finishEarly(opened, "a.jpg", photo: 1, runner: runner)
        let b = try await OpenBatchTests.finishEarly(opened, "b.jpg", photo: 2, runner: runner)
        #expect(a.item.outputs?.first?.applied.harmonize?.correction.isNone == true, "alone, a photo is its set's light")
        try drop([("c.jpg", 3200)], into: layout)
        let grown = try #require(try Claim.add(["c.jpg"], to: opened).0.batch)
        let report = try await finish(grown)
        #expect(report.items.map(\.source) == ["a.jpg", "b.jpg", "c.jpg"])
        // a and b: the fixed reference (the median of the three) is theirs: taken as finished.
        #expect(report.items[0].ms == a.item.ms && report.items[1].ms == b.item.ms, "not finished again")
        #expect(report.items.prefix(2).allSatisfy { $0.outputs?.first?.applied.harmonize?.again == nil })
        // c, finished at the close: warmed toward them, from its own look.
        let c = try #require(report.items[2].outputs?.first?.applied.harmonize)
        #expect(c.gains[2] > 1.2 && c.gains[0] < 0.9, "\(c.gains)")
        #expect(report.harmonize?.reference == "median")
    }

    @Test func aPhotoFinishedEarlyIsDoneAgainWhenTheReferenceMovesItVisibly() async throws {
        let layout = try hotFolder()
        try drop([("c.jpg", 3200)], into: layout)
        let opened = try #require(try Claim.claim(["c.jpg"], layout: layout, inbox: "shop", template: Self.template,
                                                  order: .name, locks: locks, open: true).batch)
        let runner = BatchRunner(template: try Self.template.template(), limits: limits, inbox: "shop")
        let c = try await OpenBatchTests.finishEarly(opened, "c.jpg", photo: 1, runner: runner)
        #expect(c.item.outputs?.first?.applied.harmonize?.correction.isNone == true)
        try drop([("a.jpg", 5600), ("b.jpg", 5400)], into: layout)
        let grown = try #require(try Claim.add(["a.jpg", "b.jpg"], to: opened).0.batch)
        let report = try await finish(grown)
        let done = try #require(report.items.first { $0.source == "c.jpg" }?.outputs?.first?.applied.harmonize)
        #expect(done.again?.contains("finished while the batch was open") == true, "\(String(describing: done.again))")
        #expect(done.gains[2] > 1.2, "warmed toward the two: \(done.gains)")
        // The output in out/ is the second one: its pixels are corrected.
        let file = try #require(report.items.first { $0.source == "c.jpg" }?.outputs?.first?.file)
        let finished = try decodeRGB(file: layout.out + "/" + report.batch + "/" + file)
        let shot = SampleSet.shot(Self.scene, kelvin: 3200).withUnsafeRows { LightEstimate.measure($0) }
        let light = finished.withUnsafeRows { LightEstimate.measure($0) }
        #expect(light.white[2] / light.white[0] > 1.5 * shot.white[2] / shot.white[0], "bluer: \(light.white), shot \(shot.white)")
    }
}
