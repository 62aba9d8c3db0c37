import Finishing
import Foundation
import Pixels

/// A batch's reference light and each photo's correction toward it (reference: `harmonize`):
/// pure decisions on plain values, made before the photos are finished.
public struct SetLight: Sendable, Equatable {
    /// The template's `harmonize`.
    public let settings: Template.Harmonize
    /// What every photo is brought toward.
    public let reference: LightEstimate
    /// What the reference is, for the report: "median", or the named photo's file name.
    public let name: String
    /// Why the named reference could not be used, for the report's warnings.
    public let warning: String?

    /// Two corrections of one photo differing by more than this (ΔE of a middle grey: about a
    /// just-noticeable difference side by side) look different: a photo finished with one is
    /// finished again with the other.
    public static let visible = 2.0

    /// Fixes the reference of a batch.
    /// - Parameters:
    ///   - settings: the template's `harmonize`.
    ///   - lights: each photo's light, in batch order (nil: unknown — it could not be read).
    ///   - names: each photo's file name, in the same order.
    /// - Returns: the named photo's light when `reference` names a photo whose light is known
    ///   (its exact name first, then the same name in other case); otherwise the batch's median
    ///   white point (photos weighted by how far their white may be trusted) and median level,
    ///   and a warning when a named photo was not found.
    public static func choose(_ settings: Template.Harmonize, lights: [LightEstimate?], names: [String]) -> SetLight {
        precondition(lights.count == names.count, "one name per light")
        var warning: String?
        if case .file(let wanted) = settings.reference {
            let index = names.firstIndex(of: wanted) ?? names.firstIndex { $0.lowercased() == wanted.lowercased() }
            if let index, let light = lights[index] {
                return SetLight(settings: settings, reference: light, name: names[index], warning: nil)
            }
            warning = index == nil
                ? "harmonize: the reference \(wanted) is not a photo of this batch: the batch's median light is the reference"
                : "harmonize: the reference \(wanted) could not be read: the batch's median light is the reference"
        }
        return SetLight(settings: settings, reference: median(lights.compactMap { $0 }), name: "median", warning: warning)
    }

    /// The median light of `lights`: the white point as the median of ln(R/G) and of ln(B/G),
    /// each photo weighing its `confidence` (`unknown`'s neutral white when none may be
    /// trusted); the level as the plain median.
    static func median(_ lights: [LightEstimate]) -> LightEstimate {
        guard !lights.isEmpty else { return .unknown }
        let level = weightedMedian(lights.map { ($0.level, 1) })
        let trusted = lights.filter { $0.confidence > 0 }
        guard !trusted.isEmpty else { return LightEstimate(white: [1, 1, 1], level: level, neutral: 0) }
        let u = weightedMedian(trusted.map { ($0.chromaticity.u, $0.confidence) })
        let v = weightedMedian(trusted.map { ($0.chromaticity.v, $0.confidence) })
        return LightEstimate(white: [exp(u), 1, exp(v)], level: level, neutral: 1)
    }

    /// The value at half the total weight, the lower of two when it falls between them.
    static func weightedMedian(_ values: [(Double, Double)]) -> Double {
        let sorted = values.sorted { $0.0 < $1.0 }
        let half = sorted.reduce(0) { $0 + $1.1 } / 2
        var sum = 0.0
        for (value, weight) in sorted {
            sum += weight
            if sum >= half { return value }
        }
        return sorted.last?.0 ?? 0
    }

    /// The correction of a photo of `light` toward the reference (none for the reference photo
    /// itself, whose light is the reference).
    public func correction(for light: LightEstimate) -> LightCorrection {
        LightCorrection.toward(reference, from: light, strength: settings.strength,
                               whiteBalance: settings.whiteBalance, exposure: settings.exposure)
    }

    /// How much a photo finished with `applied` differs from the correction it gets now (ΔE of a
    /// middle grey); more than `visible`: it is to be finished again.
    public func change(from applied: LightCorrection, light: LightEstimate) -> Double {
        correction(for: light).difference(applied)
    }
}
