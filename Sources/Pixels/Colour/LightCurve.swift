import Foundation

/// A `LightCorrection` as three 8-bit tables, one per channel, applied to rows as they come
/// (docs/reference.md, `harmonize`). Each table multiplies linear light by the channel's gain
/// and bends only near white, so that
/// - a clipped white stays white (a lowered channel rises back to full at the top instead of
///   tinting a blown sky), and
/// - a raised channel eases into white instead of clipping: no channel clips that did not.
///
/// Below the bend (linear 0.5 for a lowered channel, an output of 0.65 for a raised one) the
/// gain is exact, so greys and skin move exactly as the correction says.
public struct LightCurve: Sendable {
    /// R, G, B tables, 256 entries each, one after the other.
    public let table: [UInt8]

    /// Where a lowered channel starts rising back to white (linear input).
    static let lowKnee = 0.5
    /// Where a raised channel starts easing into white (linear output).
    static let highKnee = 0.65

    public init(_ correction: LightCorrection) {
        var table: [UInt8] = []
        table.reserveCapacity(768)
        for gain in correction.channelGains {
            // Only what was clipped is clipped: the codes just below it, squeezed together near
            // white, stop one short.
            for code in 0...255 {
                let out = SRGBCurve.code(Self.value(SRGBCurve.linear[code], gain: gain))
                table.append(code < 255 ? min(out, 254) : out)
            }
        }
        self.table = table
    }

    /// The curve in linear light: `gain × v` below the bend, then a rational arc that meets 1
    /// at 1 with no step and no overshoot (monotone for every gain).
    static func value(_ v: Double, gain: Double) -> Double {
        guard gain != 1 else { return v }
        let start = gain < 1 ? lowKnee : highKnee / gain, level = gain * start
        guard v > start else { return gain * v }
        let t = min(1, (v - start) / (1 - start))
        // The arc's slope at its start is the gain's, so the curve bends smoothly.
        let s = gain * (1 - start) / (1 - level)
        return level + (1 - level) * (t * s / (1 + (s - 1) * t))
    }

    /// Corrects one row in place.
    /// - Parameters:
    ///   - row: `width` pixels of `channels` (3 or 4; alpha is left as it is).
    @inline(__always)
    public func apply(_ row: UnsafeMutablePointer<UInt8>, width: Int, channels: Int) {
        table.withUnsafeBufferPointer { t in
            let t = t.baseAddress!
            var p = row
            for _ in 0..<width {
                p[0] = t[Int(p[0])]
                p[1] = t[256 + Int(p[1])]
                p[2] = t[512 + Int(p[2])]
                p += channels
            }
        }
    }

    /// Corrects one row into `out` (the decoder's rows are read-only).
    @inline(__always)
    public func apply(_ row: UnsafePointer<UInt8>, into out: UnsafeMutablePointer<UInt8>, width: Int, channels: Int) {
        table.withUnsafeBufferPointer { t in
            let t = t.baseAddress!
            var p = row, q = out
            for _ in 0..<width {
                q[0] = t[Int(p[0])]
                q[1] = t[256 + Int(p[1])]
                q[2] = t[512 + Int(p[2])]
                if channels == 4 { q[3] = p[3] }
                p += channels
                q += channels
            }
        }
    }

    /// Corrects rows already lent (an image) in place.
    public func apply(to rows: MutablePixelRows) {
        for y in 0..<rows.height { apply(rows[y], width: rows.width, channels: rows.channels) }
    }
}
