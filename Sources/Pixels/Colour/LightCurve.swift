import Foundation
internal import CResample

/// A `LightCorrection` as three 8-bit tables, one per channel, applied to rows as they come
/// out of the resampler (docs/reference.md, `harmonize`: a gain in linear light is nearly a
/// constant factor on the sRGB codes the resampler filters, so before or after it is the same
/// to about a code). Each table multiplies linear light by the channel's gain and bends only
/// near white, so that
/// - a clipped white stays white (a lowered channel rises back to full at the top instead of
///   tinting a blown sky), and
/// - a raised channel eases into white instead of clipping: no channel clips that did not.
///
/// Below the bend the gain is exact, so greys and skin move exactly as the correction says. The
/// bend starts as high as it can while the arc above it stays within 4 times the gain's slope (a
/// lowered channel) or half of it (a raised one): near white for a small correction (linear 0.9
/// for a gain of 0.9), lower for a large one (0.45 for 0.5), so highlights are neither
/// posterised nor flattened into a band that a JPEG encoder then rounds up to white.
public struct LightCurve: Sendable {
    /// R, G, B tables, 256 entries each, one after the other.
    public let table: [UInt8]

    /// The highest code a channel below white is raised to (a JPEG's rounding lifts 254 to 255).
    static let unclipped: UInt8 = 250

    /// The arc's slope at white is at most this many times the gain's (a lowered channel)…
    static let steepest = 4.0
    /// …and at least this share of it (a raised channel).
    static let flattest = 0.5

    public init(_ correction: LightCorrection) {
        var table: [UInt8] = []
        table.reserveCapacity(768)
        for gain in correction.channelGains {
            // Only what was clipped is clipped: a raised channel's codes squeezed together near
            // white stop at `unclipped`, out of reach of the JPEG encoder's rounding.
            for code in 0...255 {
                let out = SRGBCurve.code(Self.value(SRGBCurve.linear[code], gain: gain))
                table.append(code < 255 ? min(out, max(UInt8(code), Self.unclipped)) : out)
            }
        }
        self.table = table
    }

    /// The curve in linear light: `gain × v` below the bend, then a rational arc that meets 1
    /// at 1 with no step and no overshoot (monotone for every gain).
    static func value(_ v: Double, gain: Double) -> Double {
        guard gain != 1 else { return v }
        let start = bend(gain), level = gain * start
        guard v > start else { return gain * v }
        let t = min(1, (v - start) / (1 - start))
        // The arc's slope at its start is the gain's, so the curve bends smoothly.
        let s = gain * (1 - start) / (1 - level)
        return level + (1 - level) * (t * s / (1 + (s - 1) * t))
    }

    /// Where the arc starts (linear input): the highest start whose arc meets white with a slope
    /// of `steepest` times the gain's (a lowered channel) or `flattest` times (a raised one): the
    /// arc's slope at white is ((1 − gain·start) / (1 − start))² / gain. Between 0.3 and 0.95.
    static func bend(_ gain: Double) -> Double {
        let r = (gain * (gain < 1 ? steepest : flattest)).squareRoot()
        guard abs(r - gain) > 1e-9 else { return 0.95 }
        return max(0.3, min(0.95, (r - 1) / (r - gain)))
    }

    /// True where the CPU has AVX-512 VBMI: RGB rows are looked up 64 pixels a step (byte
    /// permutes), into the same bytes as the scalar loop's.
    public static let vbmi = pf_table_cpu_has_vbmi() != 0

    /// Corrects one row in place.
    /// - Parameters:
    ///   - row: `width` pixels of `channels` (3 or 4; alpha is left as it is).
    @inline(__always)
    public func apply(_ row: UnsafeMutablePointer<UInt8>, width: Int, channels: Int) {
        apply(from: row, to: row, width: width, channels: channels)
    }

    /// Corrects one row into another (a held row on its way into a line): the copy and the
    /// correction in one pass.
    /// - Parameter simd: the VBMI loop where the CPU has it (tests compare the two).
    @inline(__always)
    public func apply(from row: UnsafePointer<UInt8>, to out: UnsafeMutablePointer<UInt8>, width: Int, channels: Int,
                      simd: Bool = vbmi) {
        table.withUnsafeBufferPointer {
            pf_table_rgb_copy(simd && Self.vbmi ? 1 : 0, row, out, Int32(width), Int32(channels), $0.baseAddress)
        }
    }

    /// Corrects rows already lent (an image) in place.
    public func apply(to rows: MutablePixelRows) {
        for y in 0..<rows.height { apply(rows[y], width: rows.width, channels: rows.channels) }
    }
}
