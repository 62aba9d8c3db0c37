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
        return SetLight(settings: settings, reference: LightEstimate.median(lights.compactMap { $0 }), name: "median", warning: warning)
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
