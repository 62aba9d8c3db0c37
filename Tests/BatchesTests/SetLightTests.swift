@testable import Batches
import Finishing
import Foundation
import Pixels
import Testing

/// The batch's reference and the rule for photos finished while it was open (docs/reference.md,
/// `harmonize`), on plain values.
@Suite struct SetLightTests {
    static func light(_ u: Double, _ v: Double, level: Double = -2.5, neutral: Double = 0.2) -> LightEstimate {
        LightEstimate(white: [exp(u), 1, exp(v)], level: level, neutral: neutral, headroom: [3, 3, 3])
    }

    @Test func theMedianIsAPhotosOwnLight() {
        let lights = [Self.light(0.5, -0.8, level: -3), Self.light(0.1, -0.1, level: -2), Self.light(0.2, -0.3, level: -2.4)]
        let set = SetLight.choose(Template.Harmonize(), lights: lights, names: ["a", "b", "c"])
        #expect(set.name == "median" && set.warning == nil)
        #expect(abs(set.reference.chromaticity.u - 0.2) < 1e-3 && abs(set.reference.chromaticity.v + 0.3) < 1e-3)
        #expect(set.reference.level == -2.4)
        // A photo with nothing neutral in it has no say in the white point (it still has one
        // in the level).
        let blind = SetLight.choose(Template.Harmonize(), lights: lights + [Self.light(2, 2, level: -1, neutral: 0)],
                                    names: ["a", "b", "c", "pool"])
        #expect(abs(blind.reference.chromaticity.u - 0.2) < 1e-3)
        #expect(blind.reference.level == -2.4, "the lower of the two middle levels")
        // Two photos under a lamp, two in daylight: the white is one of theirs, not the
        // daylight's red with the lamps' blue.
        let mixed = [Self.light(0.9, -2.2), Self.light(1.2, -2.2), Self.light(0.03, -0.08), Self.light(0.03, -0.07)]
        let white = SetLight.choose(Template.Harmonize(), lights: mixed, names: ["a", "b", "c", "d"]).reference.white
        #expect(mixed.contains { $0.white == white }, "\(white)")
        // Unknown lights (photos that could not be read) are left out.
        #expect(SetLight.choose(Template.Harmonize(), lights: [nil, lights[1]], names: ["x", "b"]).reference.level == -2)
    }

    @Test func aNamedReferenceIsThatPhotosLight() {
        var settings = Template.Harmonize()
        settings.reference = .file("IMG_2.JPG")
        let lights = [Self.light(0.5, -0.8), Self.light(0.1, -0.1), Self.light(0.2, -0.3)]
        let exact = SetLight.choose(settings, lights: lights, names: ["IMG_1.JPG", "IMG_2.JPG", "img_2.jpg"])
        #expect(exact.name == "IMG_2.JPG" && exact.reference == lights[1])
        let anyCase = SetLight.choose(settings, lights: lights, names: ["IMG_1.JPG", "x.jpg", "img_2.jpg"])
        #expect(anyCase.name == "img_2.jpg" && anyCase.reference == lights[2])
        // Its own correction is none.
        #expect(anyCase.correction(for: lights[2]).isNone)
        let missing = SetLight.choose(settings, lights: lights, names: ["a", "b", "c"])
        #expect(missing.name == "median")
        #expect(missing.warning?.contains("IMG_2.JPG is not a photo of this batch") == true)
    }

    @Test func anOpenBatchsReferenceIsProvisionalUntilItsNamedPhotoComes() {
        var settings = Template.Harmonize()
        settings.reference = .file("key.jpg")
        let open = OpenSetLight(settings)
        let first = open.add("a.jpg", Self.light(0.5, -0.8))
        #expect(first.name == "median" && first.correction(for: Self.light(0.5, -0.8)).isNone, "alone, a photo is the set")
        let keyed = open.add("key.jpg", Self.light(0.1, -0.1))
        #expect(keyed.name == "key.jpg")
        #expect(open.add("b.jpg", Self.light(0.9, -1.2)).name == "key.jpg", "fixed once it has come")
    }

    @Test func aPhotoFinishedEarlyIsDoneAgainOnlyWhenItsCorrectionMovesVisibly() {
        let settings = Template.Harmonize()
        let photo = Self.light(0.3, -0.4)
        let provisional = SetLight.choose(settings, lights: [photo], names: ["a"])
        let applied = provisional.correction(for: photo)
        #expect(applied.isNone)
        // The final reference moved a little (within the deadband): taken as it is.
        let near = SetLight.choose(settings, lights: [photo, Self.light(0.33, -0.42), Self.light(0.32, -0.41)], names: ["a", "b", "c"])
        #expect(near.change(from: applied, light: photo) <= SetLight.visible)
        // It moved a lot: done again.
        let far = SetLight.choose(settings, lights: [photo, Self.light(0.0, 0.1), Self.light(0.02, 0.05)], names: ["a", "b", "c"])
        #expect(far.change(from: applied, light: photo) > SetLight.visible)
    }
}
