@testable import Batches
import Codecs
@testable import Finishing
import Foundation
import Pixels
import System
import Testing

/// `harmonize` on whole batches run in-process (docs/reference.md, `harmonize`): one street scene
/// with a colour chart shot under 3,000–7,500 K and ±1.5 EV comes together, a set that already
/// matches is left alone, and nothing clips that did not. Spreads are measured on the chart's
/// neutral patches of the files written, not on what the recipe believes.
@Suite struct HarmonizeTests {
    static let scene = SampleSet.street(width: 480, height: 360)

    /// Nine shots, even steps of mired (3,000 … 7,500 K) and of EV (−1.5 … +1.5), shuffled.
    static let lights: [(kelvin: Double, ev: Double)] = [
        (3000, 0), (3300, -1.5), (3700, 0.75), (4100, -0.4), (4600, 1.5), (5200, -0.75), (5900, 0.4), (6600, -1.1), (7500, 1.1),
    ]

    static func template(_ harmonize: String) throws -> Template {
        try TemplateLoader.parse(text: "{ version: 1, harmonize: \(harmonize), output: { quality: 95, metadata: \"strip-all\" } }",
                                 file: "harmonize.json5", name: "harmonize", directory: "/tmp")
    }

    /// The shots written as JPEG files; the batch folder and the sources, in order.
    static func files(_ shots: [Image], names: [String]? = nil) throws -> (String, [BatchRunner.Source]) {
        let dir = TemporaryFolder.path("harmonize")
        try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: true)
        var sources: [BatchRunner.Source] = []
        for (i, shot) in shots.enumerated() {
            let name = names?[i] ?? "shot-\(i + 1).jpg"
            try Data(try encodeImage(shot, options: EncodeOptions(format: .jpeg, quality: 95)))
                .write(to: URL(fileURLWithPath: dir + "/" + name))
            sources.append(BatchRunner.Source(path: dir + "/" + name))
        }
        return (dir + "/out", sources)
    }

    static func run(_ template: Template, _ sources: [BatchRunner.Source], into folder: String) async -> Report {
        var limits = BatchLimits()
        limits.workers = 2
        return await BatchRunner(template: template, limits: limits)
            .run(batch: "20261205-060000-0001", sources: sources, folder: folder)
    }

    /// Each item's first output, decoded.
    static func outputs(_ report: Report, in folder: String) throws -> [Image] {
        try report.items.map { item in
            let output = try #require(item.outputs?.first, "\(item.source): \(item.error?.message ?? "no output")")
            return try decodeRGB(file: folder + "/" + output.file)
        }
    }

    /// A patch's mean linear R, G, B (its edge left out: JPEG rings there).
    static func mean(_ image: Image, _ patch: PixelRect) -> (r: Double, g: Double, b: Double, top: UInt8, bottom: UInt8) {
        var s = (0.0, 0.0, 0.0), n = 0.0, top: UInt8 = 0, bottom: UInt8 = 255
        for y in (patch.y + 2)..<(patch.y + patch.height - 2) {
            for x in (patch.x + 2)..<(patch.x + patch.width - 2) {
                let p = image.pixel(x, y)
                s.0 += SRGBCurve.linear[Int(p[0])]; s.1 += SRGBCurve.linear[Int(p[1])]; s.2 += SRGBCurve.linear[Int(p[2])]
                n += 1
                top = max(top, p.max()!)
                bottom = min(bottom, p.min()!)
            }
        }
        return (s.0 / n, s.1 / n, s.2 / n, top, bottom)
    }

    /// The set's spread on the neutral patches no shot clips or crushes (in any of `sets`): the
    /// white points' RMS ΔE (a* b* of each patch brought to 18 % grey, averaged over the patches)
    /// around their mean, and the levels' standard deviation (EV).
    static func spread(_ shots: [Image], judged sets: [[Image]]) -> (white: Double, exposure: Double) {
        let usable = scene.neutralPatches.filter { patch in
            sets.joined().allSatisfy { let m = mean($0, patch); return m.top < 250 && m.bottom > 6 }
        }
        precondition(usable.count >= 2, "at least two neutral patches to measure")
        var ab: [(Double, Double)] = [], levels: [Double] = []
        for shot in shots {
            var a = 0.0, b = 0.0, level = 0.0
            for patch in usable {
                let m = mean(shot, patch), y = Luminance.of(m.r, m.g, m.b)
                let lab = Lab(linear: m.r * 0.18 / y, m.g * 0.18 / y, m.b * 0.18 / y)
                a += lab.a; b += lab.b; level += log2(y)
            }
            let k = Double(usable.count)
            ab.append((a / k, b / k)); levels.append(level / k)
        }
        let n = Double(shots.count)
        let ma = ab.reduce(0) { $0 + $1.0 } / n, mb = ab.reduce(0) { $0 + $1.1 } / n, ml = levels.reduce(0, +) / n
        return ((ab.reduce(0) { $0 + ($1.0 - ma) * ($1.0 - ma) + ($1.1 - mb) * ($1.1 - mb) } / n).squareRoot(),
                (levels.reduce(0) { $0 + ($1 - ml) * ($1 - ml) } / n).squareRoot())
    }

    /// The share of an image's pixels with a channel at 255.
    static func clipped(_ image: Image) -> Double {
        var count = 0
        for y in 0..<image.height { for x in 0..<image.width where image.pixel(x, y).contains(255) { count += 1 } }
        return Double(count) / Double(image.width * image.height)
    }

    @Test func aSetUnderMixedLightComesTogether() async throws {
        let shots = Self.lights.map { SampleSet.shot(Self.scene, kelvin: $0.kelvin, ev: $0.ev) }
        let (folder, sources) = try Self.files(shots)
        let report = await Self.run(try Self.template("{ strength: 1 }"), sources, into: folder)
        let finished = try Self.outputs(report, in: folder)
        let before = Self.spread(shots, judged: [shots, finished]), after = Self.spread(finished, judged: [shots, finished])
        print("harmonize, 9 shots 3,000–7,500 K ±1.5 EV, strength 1: white spread ΔE \(before.white) → \(after.white), "
              + "exposure spread \(before.exposure) → \(after.exposure) EV; report: \(String(describing: report.harmonize))")
        #expect(after.white <= 0.3 * before.white, "white spread ΔE \(before.white) → \(after.white)")
        #expect(after.exposure <= 0.3 * before.exposure, "exposure spread \(before.exposure) → \(after.exposure) EV")
        // Clipped as the files say (the shots went through JPEG once on the way in, the outputs
        // once more on the way out).
        for (i, (source, done)) in zip(sources, finished).enumerated() {
            let more = Self.clipped(done) - Self.clipped(try decodeRGB(file: source.path.description))
            #expect(more <= 0.005, "shot \(i + 1): \(more * 100) % more of it clipped")
        }
        // The report says what was done and measured.
        let summary = try #require(report.harmonize)
        #expect(summary.reference == "median")
        #expect(summary.spread.after.white < 0.5 * summary.spread.before.white)
        #expect(report.items.allSatisfy { $0.outputs?.first?.applied.harmonize?.after != nil })
    }

    @Test func aSetThatAlreadyMatchesIsLeftAlone() async throws {
        // A series of one scene under one light, framed a little differently each time (by up to
        // a twentieth of the frame, the whole chart in each): the content shifts, the light does not.
        let windows = [(0, 18), (24, 18), (12, 13), (0, 8), (24, 8)].map { PixelRect(x: $0.0, y: $0.1, width: 456, height: 342) }
        let shots = windows.map { SampleSet.shot(Self.scene, kelvin: 5500, ev: 0, window: $0) }
        let (folder, sources) = try Self.files(shots)
        let report = await Self.run(try Self.template("true"), sources, into: folder)
        let finished = try Self.outputs(report, in: folder)
        for (i, (shot, done, window)) in zip(zip(shots, finished), windows).map({ ($0.0, $0.1, $1) }).enumerated() {
            for patch in Self.scene.neutralPatches {
                let moved = PixelRect(x: patch.x - window.x, y: patch.y - window.y, width: patch.width, height: patch.height)
                let a = Self.mean(shot, moved), b = Self.mean(done, moved)
                let delta = Lab(linear: a.r, a.g, a.b).deltaE(Lab(linear: b.r, b.g, b.b))
                #expect(delta <= 1, "shot \(i + 1), neutral patch at \(patch): moved by ΔE \(delta)")
            }
        }
    }

    /// A photo held while the batch's light is found keeps its pixels, not its file (read into a
    /// buffer the next photo reads into): its item still records the file's size and sha256, and
    /// a file that does not match its claim still fails as changed.
    @Test func aHeldPhotoIsCheckedAgainstItsClaim() async throws {
        let shots = [(3000.0, 0.0), (5200, -0.75), (7500, 1.1)].map { SampleSet.shot(Self.scene, kelvin: $0.0, ev: $0.1) }
        let (folder, plain) = try Self.files(shots)
        let files = try plain.map { try [UInt8](Data(contentsOf: URL(fileURLWithPath: $0.path.description))) }
        let sources = plain.enumerated().map { i, source in
            BatchRunner.Source(path: source.path, claimed: .init(bytes: files[i].count,
                                                                 sha256: i == 1 ? String(repeating: "0", count: 64) : SHA256.hex(of: files[i])))
        }
        let report = await Self.run(try Self.template("true"), sources, into: folder)
        #expect(report.items.map(\.status) == [.ok, .failed, .ok])
        #expect(report.items[1].error?.message.contains("changed since it was claimed") == true, "\(report.items[1].error?.message ?? "")")
        for i in [0, 2] {
            #expect(report.items[i].bytes == files[i].count && report.items[i].sha256 == SHA256.hex(of: files[i]))
            #expect(report.items[i].outputs?.first?.applied.harmonize != nil)
        }
    }

    /// A photo as a camera set to daylight would have taken it under light of `kelvin`: its
    /// linear light multiplied by that light's colour over daylight's (6,500 K).
    static func lit(_ image: Image, kelvin: Double) -> Image {
        let light = ColourTemperature.white(kelvin: kelvin), day = ColourTemperature.white(kelvin: 6500)
        let k = [light.r / day.r, light.g / day.g, light.b / day.b]
        var canvas = Canvas(width: image.width, height: image.height, channels: 3)
        image.withUnsafeRows { source in
            canvas.withUnsafeMutableRows { rows in
                for y in 0..<source.height {
                    for i in 0..<source.rowBytes { rows[y][i] = SRGBCurve.code(SRGBCurve.linear[Int(source[y][i])] * k[i % 3]) }
                }
            }
        }
        return canvas.finished()
    }

    /// The mean colour of a face's skin: the middle of the detector's box (cheeks, nose, below
    /// the brows), as Lab.
    static func skin(_ image: Image, _ face: FocusBox) -> Lab {
        let box = face.pixels(width: image.width, height: image.height)
        let patch = PixelRect(x: box.x + box.width / 4, y: box.y + box.height * 3 / 10, width: box.width / 2, height: box.height * 2 / 5)
        let m = mean(image, patch)
        return Lab(linear: m.r, m.g, m.b)
    }

    @Test func aLookIsSearchedForFacesOnlyWithSkinColouredPixelsEnoughForOne() throws {
        guard let close = TestPhotos.photo("obama2.jpg"), let other = TestPhotos.photo("biden.jpg") else { return }
        // Skin keeps its colour from lamplight to deep shade: each portrait is searched, its
        // face found.
        for photo in [try decodeRGB(close), try decodeRGB(other)] {
            for kelvin in [3000.0, 4500, 6500, 9000, 11000] {
                let shot = Self.lit(photo, kelvin: kelvin)
                let share = shot.withUnsafeRows { LightEstimate.skinColouredShare($0) }
                #expect(share >= 3 * PhotoLook.skinForAFace, "\(kelvin) K: \(share) of the pixels skin-coloured")
                #expect(!PhotoLook.faces(in: shot).isEmpty, "\(kelvin) K: no face found")
            }
        }
        // The same portrait in black and white has no skin colour: it is not searched (its
        // skin is as grey as the rest, so leaving it out would not move the white), and the
        // detector would have found the face.
        let portrait = try decodeRGB(close)
        let grey = Image(width: portrait.width, height: portrait.height, channels: 3) { rows in
            portrait.withUnsafeRows { from in
                for y in 0..<rows.height {
                    for x in 0..<rows.width {
                        let p = from[y] + 3 * x
                        let r: Int = Int(p[0]) * 299, g: Int = Int(p[1]) * 587, b: Int = Int(p[2]) * 114
                        let value = UInt8((r + g + b) / 1000)
                        for c in 0..<3 { rows[y][3 * x + c] = value }
                    }
                }
            }
        }
        #expect(grey.withUnsafeRows { LightEstimate.skinColouredShare($0) } == 0)
        #expect(PhotoLook.faces(in: grey).isEmpty)
        #expect(try !FaceDetector.shared.get().faces(in: grey, shortSide: PhotoLook.faceSearch).isEmpty)
        // Sky, water, grass and purple flowers: none.
        let colours: [[UInt8]] = [[110, 160, 225], [40, 90, 120], [70, 140, 50], [120, 60, 150], [128, 128, 128]]
        let scene = Image(width: 500, height: 400, channels: 3) { rows in
            for y in 0..<rows.height {
                for x in 0..<rows.width { for c in 0..<3 { rows[y][3 * x + c] = colours[(x / 100 + y / 80) % colours.count][c] } }
            }
        }
        #expect(scene.withUnsafeRows { LightEstimate.skinColouredShare($0) } == 0)
    }

    @Test func skinMovesWithItsPhotoNotTowardGrey() async throws {
        // A close portrait (its face a fifth of the frame) as it was taken — the reference — and
        // as if under a warm and a cool light, with two other portraits as they were taken.
        guard let close = TestPhotos.photo("obama2.jpg"), let other = TestPhotos.photo("obama.jpg"),
              let third = TestPhotos.photo("biden.jpg") else { return }
        let portrait = try decodeRGB(close)
        let face = try #require(try FaceDetector.shared.get().faces(in: portrait).first, "the detector finds the face")
        // Its skin is left out of the white point: counted, the photo's white is warmer.
        let look = PhotoLook.measure(portrait, faces: [face]), counted = PhotoLook.measure(portrait, faces: [])
        #expect(counted.chromaticity.u - look.chromaticity.u > 0.01, "skin left out: \(look.white), counted: \(counted.white)")

        let shots = [portrait, Self.lit(portrait, kelvin: 4500), Self.lit(portrait, kelvin: 9000),
                     try decodeRGB(other), try decodeRGB(third)]
        let (folder, sources) = try Self.files(shots, names: ["close.jpg", "warm.jpg", "cool.jpg", "other.jpg", "third.jpg"])
        let report = await Self.run(try Self.template("{ strength: 1, reference: \"close.jpg\" }"), sources, into: folder)
        let finished = try Self.outputs(report, in: folder)
        #expect(report.harmonize?.reference == "close.jpg")
        let asTaken = Self.skin(portrait, face)
        let before = shots.prefix(3).map { Self.skin($0, face) }, after = finished.prefix(3).map { Self.skin($0, face) }
        print("skin: as taken \(asTaken.hex) (chroma \(asTaken.chroma)); before: \(before.map { "\($0.hex) ΔE \($0.deltaE(asTaken))" }); "
              + "after: \(after.map { "\($0.hex) ΔE \($0.deltaE(asTaken))" })")
        // The reference keeps its skin.
        #expect(after[0].deltaE(asTaken) <= 1, "skin as taken moved by ΔE \(after[0].deltaE(asTaken))")
        // The warm and the cool ones were corrected as their photos were: their skin comes back
        // toward where the photo as taken has it (as much closer as the neutral patches come in
        // aSetUnderMixedLightComesTogether), not to grey.
        for i in 1..<3 {
            let was = before[i].deltaE(asTaken), now = after[i].deltaE(asTaken)
            #expect(now <= 0.3 * was, "portrait \(i + 1)'s skin: ΔE \(was) → \(now) from the reference's")
            #expect(after[i].chroma >= 0.85 * asTaken.chroma, "portrait \(i + 1)'s skin greyed: chroma \(after[i].chroma)")
        }
    }
}
