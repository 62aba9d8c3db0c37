import Foundation

/// A colour in CIELAB (D65 white), where equal distances look about equally different.
public struct Lab: Sendable, Equatable {
    public var l: Double
    public var a: Double
    public var b: Double

    public init(l: Double, a: Double, b: Double) {
        self.l = l; self.a = a; self.b = b
    }

    /// The colour of 8-bit sRGB values.
    public init(srgb r: UInt8, _ g: UInt8, _ b: UInt8) {
        self.init(linear: SRGBCurve.linear[Int(r)], SRGBCurve.linear[Int(g)], SRGBCurve.linear[Int(b)])
    }

    /// The colour of linear-light sRGB values (1 is white; larger values are lighter than white).
    public init(linear r: Double, _ g: Double, _ b: Double) {
        let (x, y, z) = Self.xyz(r, g, b)
        let fx = Self.f(x / 0.95047), fy = Self.f(y), fz = Self.f(z / 1.08883)
        self.init(l: 116 * fy - 16, a: 500 * (fx - fy), b: 200 * (fy - fz))
    }

    /// The nearest 8-bit sRGB colour (out-of-gamut values clamped).
    public var srgb: (r: UInt8, g: UInt8, b: UInt8) {
        let fy = (l + 16) / 116, fx = fy + a / 500, fz = fy - b / 200
        func finv(_ t: Double) -> Double { t > 6.0 / 29 ? t * t * t : 3 * (6.0 / 29) * (6.0 / 29) * (t - 4.0 / 29) }
        let x = 0.95047 * finv(fx), y = finv(fy), z = 1.08883 * finv(fz)
        let rl = 3.2404542 * x - 1.5371385 * y - 0.4985314 * z
        let gl = -0.9692660 * x + 1.8760108 * y + 0.0415560 * z
        let bl = 0.0556434 * x - 0.2040259 * y + 1.0572252 * z
        return (SRGBCurve.code(rl), SRGBCurve.code(gl), SRGBCurve.code(bl))
    }

    /// `#rrggbb`, lower case.
    public var hex: String {
        let c = srgb
        return String(format: "#%02x%02x%02x", c.r, c.g, c.b)
    }

    /// Chroma: how far from grey.
    public var chroma: Double { (a * a + b * b).squareRoot() }

    /// CIE76 ΔE: the Euclidean distance (about 2.3 is a just-noticeable difference).
    public func deltaE(_ other: Lab) -> Double { distanceSquared(other).squareRoot() }

    @inline(__always)
    func distanceSquared(_ o: Lab) -> Double {
        let dl = l - o.l, da = a - o.a, db = b - o.b
        return dl * dl + da * da + db * db
    }

    private static func xyz(_ r: Double, _ g: Double, _ b: Double) -> (Double, Double, Double) {
        (0.4124564 * r + 0.3575761 * g + 0.1804375 * b,
         0.2126729 * r + 0.7151522 * g + 0.0721750 * b,
         0.0193339 * r + 0.1191920 * g + 0.9503041 * b)
    }

    private static func f(_ t: Double) -> Double {
        t > 216.0 / 24389 ? cbrt(t) : (24389.0 / 27 * t + 16) / 116
    }
}

/// The colour a person would name for a photo: k-means in CIELAB over a downsampled copy,
/// the biggest cluster's mean. Near-black and near-white pixels (shadows, sky, a studio
/// background) are left out unless they are most of the picture, so a red dress on white
/// paper comes out red, and a night shot comes out dark.
public enum DominantColor {
    /// Pixels sampled at most (the image is walked with an even stride above this).
    public static let maxSamples = 4096
    /// Clusters tried.
    public static let clusters = 5
    /// When fewer than this fraction of the pixels are neither near-black nor near-white,
    /// the neutrals are what the picture is, and they are clustered too.
    public static let minimumColourful = 0.2

    /// True for pixels that say little about a photo's colour: very dark, or very light and
    /// nearly grey.
    public static func isNeutralExtreme(_ c: Lab) -> Bool {
        c.l < 12 || (c.l > 92 && c.chroma < 10)
    }

    /// The dominant colour of `image` (RGB or RGBA; fully transparent pixels are ignored).
    /// Deterministic: the same pixels always give the same colour.
    public static func of(_ image: Image) -> Lab {
        let all = samples(image)
        guard !all.isEmpty else { return Lab(srgb: 255, 255, 255) }
        let colourful = all.filter { !isNeutralExtreme($0) }
        let points = Double(colourful.count) >= minimumColourful * Double(all.count) ? colourful : all
        return largestCluster(points)
    }

    /// An evenly strided sample of the image's pixels, as Lab.
    static func samples(_ image: Image) -> [Lab] {
        image.withUnsafeRows { samples($0) }
    }

    private static func samples(_ image: PixelRows) -> [Lab] {
        let total = image.width * image.height
        let step = max(1, Int((Double(total) / Double(maxSamples)).squareRoot().rounded(.up)))
        var out: [Lab] = []
        out.reserveCapacity((image.width / step + 1) * (image.height / step + 1))
        let ch = image.channels
        for y in stride(from: step / 2, to: image.height, by: step) {
            let row = image[y]
            for x in stride(from: step / 2, to: image.width, by: step) {
                let p = row + x * ch
                if ch == 4 && p[3] == 0 { continue }
                out.append(Lab(srgb: p[0], p[1], p[2]))
            }
        }
        return out
    }

    /// k-means (k-means++ seeding with a fixed generator, so results repeat), returning the
    /// mean of the cluster with the most points.
    static func largestCluster(_ points: [Lab]) -> Lab {
        let k = min(clusters, points.count)
        var rng = SplitMix(seed: 0x5EED)
        var centres = [points[Int(rng.next() % UInt64(points.count))]]
        var nearest = points.map { $0.distanceSquared(centres[0]) }
        while centres.count < k {
            let sum = nearest.reduce(0, +)
            if sum <= 0 { break }  // every point already sits on a centre
            var target = Double(rng.next() >> 11) / Double(1 << 53) * sum
            var chosen = points.count - 1
            for (i, d) in nearest.enumerated() {
                target -= d
                if target < 0 { chosen = i; break }
            }
            centres.append(points[chosen])
            for i in points.indices { nearest[i] = min(nearest[i], points[i].distanceSquared(points[chosen])) }
        }
        var assignment = [Int](repeating: 0, count: points.count)
        var counts = [Int](repeating: 0, count: centres.count)
        for _ in 0..<20 {
            var sums = [(Double, Double, Double)](repeating: (0, 0, 0), count: centres.count)
            counts = [Int](repeating: 0, count: centres.count)
            var moved = false
            for (i, p) in points.enumerated() {
                var best = 0, bestDistance = Double.infinity
                for (c, centre) in centres.enumerated() {
                    let d = p.distanceSquared(centre)
                    if d < bestDistance { bestDistance = d; best = c }
                }
                if assignment[i] != best { assignment[i] = best; moved = true }
                counts[best] += 1
                sums[best].0 += p.l; sums[best].1 += p.a; sums[best].2 += p.b
            }
            for c in centres.indices where counts[c] > 0 {
                let n = Double(counts[c])
                centres[c] = Lab(l: sums[c].0 / n, a: sums[c].1 / n, b: sums[c].2 / n)
            }
            if !moved { break }
        }
        let biggest = counts.indices.max { counts[$0] < counts[$1] }!
        return centres[biggest]
    }
}

/// A tiny deterministic generator (SplitMix64), so clustering repeats exactly (and the sample
/// scenes are the same every time).
public struct SplitMix: Sendable {
    var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
