import Foundation

/// The colour of light of a correlated colour temperature, on the Planckian locus: the cubic
/// spline fit of Kim et al. (US patent 7,024,034; 1,667–25,000 K) in CIE xy, turned into linear
/// sRGB. Used to lay the white balance's expected direction (warm ↔ cool, docs/reference.md,
/// `harmonize`), and to light the sample scenes of the proof and the tests.
public enum ColourTemperature {
    /// Linear sRGB of light at `kelvin`, scaled to luminance 1 (6,500 K is about 1, 1, 1).
    /// - Parameter kelvin: clamped to 1,667 … 25,000.
    public static func white(kelvin: Double) -> (r: Double, g: Double, b: Double) {
        let t = max(1667, min(25000, kelvin))
        let t2 = t * t, t3 = t2 * t
        let x = t <= 4000
            ? -0.2661239e9 / t3 - 0.2343589e6 / t2 + 0.8776956e3 / t + 0.179910
            : -3.0258469e9 / t3 + 2.1070379e6 / t2 + 0.2226347e3 / t + 0.240390
        let x2 = x * x, x3 = x2 * x
        let y: Double
        if t <= 2222 {
            y = -1.1063814 * x3 - 1.34811020 * x2 + 2.18555832 * x - 0.20219683
        } else if t <= 4000 {
            y = -0.9549476 * x3 - 1.37418593 * x2 + 2.09137015 * x - 0.16748867
        } else {
            y = 3.0817580 * x3 - 5.87338670 * x2 + 3.75112997 * x - 0.37001483
        }
        let X = x / y, Z = (1 - x - y) / y
        let r = 3.2404542 * X - 1.5371385 - 0.4985314 * Z
        let g = -0.9692660 * X + 1.8760108 + 0.0415560 * Z
        let b = 0.0556434 * X - 0.2040259 + 1.0572252 * Z
        let lum = Luminance.of(r, g, b)
        return (r / lum, g / lum, b / lum)
    }

    /// The unit direction, in log chromaticity (ln r/g, ln b/g), in which light moves from warm
    /// (3,000 K) to cool (7,500 K): white balance errors lie mostly along it; the rest is a
    /// green–magenta tint.
    public static let coolward: (u: Double, v: Double) = {
        let warm = white(kelvin: 3000), cool = white(kelvin: 7500)
        let du = log(cool.r / cool.g) - log(warm.r / warm.g), dv = log(cool.b / cool.g) - log(warm.b / warm.g)
        let n = (du * du + dv * dv).squareRoot()
        return (du / n, dv / n)
    }()
}
