import Foundation

/// The sRGB transfer curve (IEC 61966-2-1): 8-bit code values to linear light and back. Display P3
/// uses the same curve; other profiles are close enough for the set-wide corrections that use
/// it (docs/reference.md, `harmonize`).
public enum SRGBCurve {
    /// Linear light (0 … 1) of each 8-bit code.
    public static let linear: [Double] = (0...255).map { decode(Double($0) / 255) }

    /// Linear light of an encoded value (both 0 … 1).
    @inline(__always)
    public static func decode(_ e: Double) -> Double {
        e <= 0.04045 ? e / 12.92 : pow((e + 0.055) / 1.055, 2.4)
    }

    /// The encoded value (0 … 1) of linear light, clamped to 0 … 1.
    @inline(__always)
    public static func encode(_ v: Double) -> Double {
        let c = max(0, min(1, v))
        return c <= 0.0031308 ? 12.92 * c : 1.055 * pow(c, 1 / 2.4) - 0.055
    }

    /// The nearest 8-bit code of linear light.
    @inline(__always)
    public static func code(_ v: Double) -> UInt8 {
        UInt8((encode(v) * 255).rounded())
    }
}

/// Rec. 709 / sRGB luminance weights of linear R, G, B.
public enum Luminance {
    public static let weights = (r: 0.2126729, g: 0.7151522, b: 0.0721750)

    /// The luminance of linear R, G, B.
    @inline(__always)
    public static func of(_ r: Double, _ g: Double, _ b: Double) -> Double {
        weights.r * r + weights.g * g + weights.b * b
    }
}

/// `v` rounded to `places` decimals, as the report writes it.
func rounded(_ v: Double, _ places: Int) -> Double {
    let f = pow(10, Double(places))
    return (v * f).rounded() / f
}
