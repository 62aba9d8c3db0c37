import Foundation

/// One photo's correction toward its set's light (docs/reference.md, `harmonize`): white balance
/// gains and an exposure, in linear light of the photo's own RGB. Channel `c` is multiplied by
/// `gains[c] × 2^exposure` (then `LightCurve` keeps whites white and nothing clips that did not).
public struct LightCorrection: Sendable, Equatable {
    /// The white balance: gains of linear R, G, B, their geometric mean 1, each within
    /// `1/maxGain … maxGain`.
    public var gains: [Double]
    /// The exposure on top, in EV: the correction toward the set's level (at most `maxEV` either
    /// way), and the small shift that keeps a grey's luminance through the white balance.
    public var exposure: Double

    public init(gains: [Double], exposure: Double) {
        precondition(gains.count == 3 && gains.allSatisfy { $0 > 0 }, "gains are three positive values")
        self.gains = gains.map { rounded($0, 4) }
        self.exposure = rounded(exposure, 3)
    }

    /// Nothing changed.
    public static let none = LightCorrection(gains: [1, 1, 1], exposure: 0)

    public var isNone: Bool { self == .none }

    /// What channel `c` is multiplied by, in linear light.
    public var channelGains: [Double] { gains.map { $0 * exp2(exposure) } }

    /// A channel is raised or lowered at most this much by the white balance (around the
    /// channels' common level).
    public static let maxGain = 1.5
    /// The exposure moves at most this many EV toward the set's level.
    public static let maxEV = 1.0
    /// A white balance move smaller than this (ln units, about ΔE 2: hardly visible) is not
    /// made: a set that already matches is not touched.
    public static let whiteDeadband = 0.04
    /// An exposure move smaller than this (EV: ΔL* about 2 on a middle grey) is not made either.
    public static let exposureDeadband = 0.15

    /// The correction that brings `photo` toward `reference`.
    /// - Parameters:
    ///   - reference: the set's light.
    ///   - photo: this photo's light, as measured.
    ///   - strength: the share of the difference taken away, 0 … 1 (before the caps).
    ///   - whiteBalance: match the white points.
    ///   - exposure: match the levels.
    /// - Returns: gains moving by `strength` × the white point difference (none below
    ///   `whiteDeadband`, none when either white is unknown: `hasWhite`), within `maxGain`; an
    ///   exposure of `strength` × the level difference (none below `exposureDeadband`) within
    ///   `maxEV` and, upward, within the photo's `headroom`; plus what keeps a grey's luminance.
    public static func toward(_ reference: LightEstimate, from photo: LightEstimate, strength: Double,
                              whiteBalance: Bool = true, exposure: Bool = true) -> LightCorrection {
        var logGains = [0.0, 0, 0]
        var keep = 0.0
        if whiteBalance && photo.hasWhite && reference.hasWhite {
            let p = photo.chromaticity, r = reference.chromaticity
            var du = strength * (r.u - p.u), dv = strength * (r.v - p.v)
            if (du * du + dv * dv).squareRoot() < whiteDeadband { (du, dv) = (0, 0) }
            let mean = (du + dv) / 3
            logGains = [du - mean, -mean, dv - mean]
            let largest = logGains.map(abs).max() ?? 0
            if largest > log(maxGain) { logGains = logGains.map { $0 * log(maxGain) / largest } }
            // The photo's grey keeps its luminance through the gains.
            let w = photo.white
            let before = Luminance.of(w[0], w[1], w[2])
            let after = Luminance.of(w[0] * exp(logGains[0]), w[1] * exp(logGains[1]), w[2] * exp(logGains[2]))
            keep = -log2(after / before)
        }
        var ev = 0.0
        if exposure {
            let d = strength * (reference.level - photo.level)
            ev = abs(d) < exposureDeadband ? 0 : max(-maxEV, min(maxEV, d))
            // Brightened only as far as each channel has room, its white balance gain counted:
            // highlights are not pushed into white.
            let room = (0..<3).map { photo.headroom[$0] - logGains[$0] / log(2) }.min()! - keep
            if ev > 0 { ev = min(ev, max(0, room)) }
        }
        return LightCorrection(gains: logGains.map(exp), exposure: ev + keep)
    }

    /// How visibly two corrections of one photo differ: the ΔE (CIE76) between a middle grey
    /// corrected by each (about 2.3 is just noticeable side by side).
    public func difference(_ other: LightCorrection) -> Double {
        func grey(_ c: LightCorrection) -> Lab {
            let g = c.channelGains
            return Lab(linear: 0.18 * g[0], 0.18 * g[1], 0.18 * g[2])
        }
        return grey(self).deltaE(grey(other))
    }

    /// The light a photo of `estimate` has once corrected (as far as the gains reach: highlights
    /// are kept by `LightCurve`).
    public func applied(to estimate: LightEstimate) -> LightEstimate {
        let w = estimate.white, g = channelGains
        return LightEstimate(white: [w[0] * gains[0], w[1] * gains[1], w[2] * gains[2]],
                             level: estimate.level + exposure + log2(Self.lumaRatio(w, gains)), neutral: estimate.neutral,
                             headroom: (0..<3).map { estimate.headroom[$0] - log2(g[$0]) })
    }

    /// The light a photo had before this correction, from the light measured on it after: the
    /// inverse of `applied(to:)`.
    public func undone(_ after: LightEstimate) -> LightEstimate {
        let w = after.white, g = channelGains
        let white = [w[0] / gains[0], w[1] / gains[1], w[2] / gains[2]]
        return LightEstimate(white: white, level: after.level - exposure - log2(Self.lumaRatio(white, gains)),
                             neutral: after.neutral, headroom: (0..<3).map { after.headroom[$0] + log2(g[$0]) })
    }

    /// How much a grey of `white` brightens under `gains`.
    static func lumaRatio(_ white: [Double], _ gains: [Double]) -> Double {
        Luminance.of(white[0] * gains[0], white[1] * gains[1], white[2] * gains[2]) / Luminance.of(white[0], white[1], white[2])
    }

}
