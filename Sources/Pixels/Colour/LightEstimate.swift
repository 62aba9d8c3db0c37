import Foundation

/// The light a photo was taken in, as far as its pixels tell (docs/reference.md, `harmonize`):
/// the colour a neutral surface has in it and how bright its middle tones are, in linear light of
/// the photo's own RGB. Two photos of one set are made to match by comparing these
/// (`LightCorrection`).
///
/// Values are rounded as the report writes them, so an estimate read back from a report is the
/// one measured.
public struct LightEstimate: Sendable, Equatable, Codable {
    /// The colour of a neutral surface in the photo: linear R, G, B with G = 1 (`[1, 1, 1]` when
    /// the photo gives nothing to go by: see `neutral`).
    public var white: [Double]
    /// log₂ of the luminance of the photo's middle and upper tones (the mean over its pixels
    /// ranked 40–90 % by luminance: a dark suit or a black background does not drag it down),
    /// linear light with white at 0 (an 18 % grey is −2.47).
    public var level: Double
    /// The share of the pixels the white is measured on that look neutral under it (0 … 1): how
    /// much the white rests on. A photo of orange leaves or of a blue pool scores low, a street
    /// scene high.
    public var neutral: Double
    /// How many EV each channel (R, G, B) can be raised before more than 0.3 % of the photo, not
    /// clipped now, comes within 2 % of white in it (0: none; a photo of dark tones: several).
    public var headroom: [Double]

    public init(white: [Double], level: Double, neutral: Double, headroom: [Double] = [0, 0, 0]) {
        precondition(white.count == 3 && white.allSatisfy { $0 > 0 }, "white is three positive values")
        self.white = white.map { rounded($0 / white[1], 4) }
        self.level = rounded(level, 3)
        self.neutral = rounded(max(0, min(1, neutral)), 3)
        self.headroom = headroom.map { rounded(max(0, $0), 3) }
    }

    /// ln(R/G) and ln(B/G) of `white`: where the light sits in log chromaticity, where a change of
    /// light is a plain shift.
    public var chromaticity: (u: Double, v: Double) { (log(white[0]), log(white[2])) }

    /// How much the white point says of the light, 0 … 1: the weight of this photo's white in
    /// its set's median (nothing below 0.2 % of the measured pixels looking neutral, all from
    /// 1.5 %, a smooth step between). A photo with next to nothing neutral in it (a pool, a
    /// close-up of leaves) is given no white balance at all (`hasWhite`).
    public var confidence: Double { Self.smoothstep(0.002, 0.015, neutral) }

    /// Whether the white point is known well enough to correct toward or from: something of the
    /// photo looks neutral under it (0.2 % of the measured pixels).
    public var hasWhite: Bool { neutral >= 0.002 }

    /// A middle grey as the photo shows it (the colour card's swatch): `white` at the
    /// luminance of `level`.
    public var grey: Lab {
        let w = white, scale = exp2(level) / Luminance.of(w[0], w[1], w[2])
        return Lab(linear: w[0] * scale, w[1] * scale, w[2] * scale)
    }

    // MARK: - Measuring

    /// Pixels looked at, at most (an even stride over the image).
    public static let maxSamples = 40_000
    /// A pixel with a channel at this code or above is clipped: its colour is not the surface's.
    static let clippedCode: UInt8 = 250
    /// Luminance below this is very dark (noise and the JPEG's rounding are its colour).
    static let darkest = 0.004
    /// Luminance ranks the white is taken from: the darkest 2 % and the brightest 5 % are left
    /// out (rank, unlike a threshold, does not move with exposure).
    static let band = (low: 0.02, high: 0.95)
    /// Luminance ranks the level is the mean of.
    static let levelBand = (low: 0.4, high: 0.9)
    /// How fast a pixel's weight falls with its distance from the mean colour (ln units: the
    /// Gaussian's σ; a pixel of twice the red of the mean weighs a fifth): strongly saturated
    /// colours weigh next to nothing.
    static let spread = 0.35
    /// Pixels this close to the white (a ratio of 1.13) look neutral under it.
    static let tight = 0.12
    /// The share of a green or magenta tint the estimate keeps (the rest is taken for the
    /// scene's own colour: light varies mostly from warm to cool).
    static let tintKept = 0.5

    /// The share of a photo allowed to come near white by a correction (`headroom`).
    static let brightest = 0.003
    /// Near white: within 2 %.
    static let nearWhite = 0.98

    /// The even stride the pixels looked at are taken at, across and down: `maxSamples` at most.
    static func sampleStep(_ image: PixelRows) -> Int {
        max(1, Int((Double(image.width * image.height) / Double(maxSamples)).squareRoot().rounded(.up)))
    }

    /// The unknown light: neutral, an 18 % middle, nothing to go by.
    public static let unknown = LightEstimate(white: [1, 1, 1], level: log2(0.18), neutral: 0)

    /// Measures the light of an image.
    /// - Parameters:
    ///   - image: 8-bit RGB or RGBA, the photo's own colours (fully transparent pixels are skipped).
    ///   - excluding: rectangles whose pixels say nothing of the light's colour (faces: skin is
    ///     not grey); they still count for the level.
    /// - Returns: the estimate; `unknown` for an empty image.
    public static func measure(_ image: PixelRows, excluding: [PixelRect] = []) -> LightEstimate {
        guard image.width * image.height > 0 else { return .unknown }
        let step = sampleStep(image)
        let ch = image.channels, lin = SRGBCurve.linear
        // Ranks by luminance come from a histogram of log₂ luminance (1/32 EV a bin), the
        // brightest channels from one of codes per channel: no sorting.
        var levels = LevelHistogram()
        // The candidates, four bytes each (`Sample`): a preview's 20,000 stay under glibc's
        // trim threshold (128 KiB), so each measure does not fault in fresh pages.
        var candidates: [UInt32] = []
        candidates.reserveCapacity((image.width / step + 1) * (image.height / step + 1))
        // Each channel's codes of the pixels not clipped (clipped ones stay white, whatever
        // the correction): R's 256 counts, then G's, then B's.
        var codes = [Int](repeating: 0, count: 3 * 256)
        for y in stride(from: step / 2, to: image.height, by: step) {
            let row = image[y]
            let skips = excluding.filter { y >= $0.y && y < $0.y + $0.height }
            for x in stride(from: step / 2, to: image.width, by: step) {
                let p = row + x * ch
                if ch == 4 && p[3] == 0 { continue }
                let r = lin[Int(p[0])], g = lin[Int(p[1])], b = lin[Int(p[2])]
                let luminance = Luminance.of(r, g, b)
                let bin = levels.add(log2(max(luminance, 1.0 / 4096)))
                let clipped = max(p[0], p[1], p[2]) >= clippedCode
                if !clipped { codes[Int(p[0])] += 1; codes[256 + Int(p[1])] += 1; codes[512 + Int(p[2])] += 1 }
                if clipped || luminance < darkest || min(r, g, b) < darkest / 4 { continue }
                if skips.contains(where: { x >= $0.x && x < $0.x + $0.width }) { continue }
                candidates.append(Sample.packed(p[0], p[1], p[2], bin: bin))
            }
        }
        let n = levels.count
        guard n > 0 else { return .unknown }
        let level = levels.mean(ranks: levelBand.low..<levelBand.high)
        let low = levels.bin(atRank: band.low), high = levels.bin(atRank: band.high)
        candidates.removeAll { Sample.bin($0) < low || Sample.bin($0) > high }
        // In each channel, the value only `brightest` of the photo's pixels pass.
        let allowed = Int(brightest * Double(n))
        let headroom = (0..<3).map { channel -> Double in
            var above = 0
            for code in stride(from: 255, through: 0, by: -1) {
                above += codes[256 * channel + code]
                if above > allowed { return log2(nearWhite / max(lin[code], 1e-6)) }
            }
            return 8
        }
        guard candidates.count >= 64, let centre = neutralCentre(candidates) else {
            return LightEstimate(white: [1, 1, 1], level: level, neutral: 0, headroom: headroom)
        }
        let looksNeutral = candidates.count { packed in
            let s = Sample(packed), du = s.u - centre.u, dv = s.v - centre.v
            return du * du + dv * dv < tight * tight
        }
        // Half of a tint across the warm–cool line is kept.
        let along = ColourTemperature.coolward, across = (u: -along.v, v: along.u)
        let tint = centre.u * across.u + centre.v * across.v
        let u = centre.u - (1 - tintKept) * tint * across.u, v = centre.v - (1 - tintKept) * tint * across.v
        return LightEstimate(white: [exp(u), 1, exp(v)], level: level,
                             neutral: Double(looksNeutral) / Double(candidates.count), headroom: headroom)
    }

    /// One pixel that may show the light's colour: where it sits in log chromaticity.
    struct Sample {
        var u: Double, v: Double

        /// A candidate as kept: its R, G, B codes and its luminance's bin (`LevelHistogram`)
        /// less 128, a byte each. A candidate is neither dark (luminance from 0.004: bin 129
        /// up) nor clipped (every channel under 250: bin 381 at most).
        static func packed(_ r: UInt8, _ g: UInt8, _ b: UInt8, bin: Int) -> UInt32 {
            UInt32(r) | UInt32(g) << 8 | UInt32(b) << 16 | UInt32(min(255, max(0, bin - 128))) << 24
        }

        /// The bin of a packed candidate.
        static func bin(_ packed: UInt32) -> Int { Int(packed >> 24) + 128 }

        /// A packed candidate's place: ln(R/G), ln(B/G) of its codes' linear light.
        init(_ packed: UInt32) {
            let ln = LightEstimate.lnLinear, g = ln[Int(packed >> 8 & 0xFF)]
            u = ln[Int(packed & 0xFF)] - g
            v = ln[Int(packed >> 16 & 0xFF)] - g
        }
    }

    /// ln of each code's linear light (ln 0 stands in for 1/4096: dark pixels are left out anyway).
    static let lnLinear: [Double] = SRGBCurve.linear.map { log(max($0, 1.0 / 4096)) }

    /// Log₂ luminances in bins of 1/32 EV from −12 (1/4096) to 0 (white): ranks and means of
    /// ranks without sorting (to a bin's width).
    struct LevelHistogram {
        static let perEV = 32, lowest = -12.0
        private(set) var counts = [Int](repeating: 0, count: 12 * 32 + 1)
        private(set) var sums = [Double](repeating: 0, count: 12 * 32 + 1)
        private(set) var count = 0

        /// Adds a level (−12 … 0); returns its bin.
        mutating func add(_ level: Double) -> Int {
            let bin = max(0, min(counts.count - 1, Int((level - Self.lowest) * Double(Self.perEV))))
            counts[bin] += 1
            sums[bin] += level
            count += 1
            return bin
        }

        /// The bin holding the value at rank `fraction` (0 … 1) of all added.
        func bin(atRank fraction: Double) -> Int {
            let rank = min(count - 1, Int(fraction * Double(count)))
            var seen = 0
            for (bin, n) in counts.enumerated() {
                seen += n
                if seen > rank { return bin }
            }
            return counts.count - 1
        }

        /// The mean of the values ranked within `ranks` (fractions of all added); a bin on the
        /// edge counts by the share of it inside.
        func mean(ranks: Range<Double>) -> Double {
            let from = Double(count) * ranks.lowerBound, to = max(from + 1, Double(count) * ranks.upperBound)
            var seen = 0.0, sum = 0.0, taken = 0.0
            for (bin, n) in counts.enumerated() where n > 0 {
                let start = seen, end = seen + Double(n)
                seen = end
                let inside = min(end, to) - max(start, from)
                guard inside > 0 else { continue }
                sum += sums[bin] / Double(n) * inside
                taken += inside
            }
            return taken > 0 ? sum / taken : Self.lowest
        }
    }

    /// Where the near-neutral pixels sit: the mean of every candidate (ln space: a geometric
    /// mean; each pixel counts alike, a bright one no more: which of them clip changes with
    /// exposure), then the mean again with each pixel weighed down by its distance from it, so
    /// that strongly saturated colours fall away. One step, not a search for the
    /// densest colour: a photo of sky over autumn leaves would swing between the two on a small
    /// change, and the set with it. Shifting every pixel's colour shifts the result by as much (a
    /// set lit differently is measured alike).
    static func neutralCentre(_ samples: [UInt32]) -> (u: Double, v: Double)? {
        guard !samples.isEmpty else { return nil }
        var su = 0.0, sv = 0.0, sw = 0.0
        for packed in samples {
            let s = Sample(packed)
            su += s.u; sv += s.v
        }
        let mean = (u: su / Double(samples.count), v: sv / Double(samples.count))
        su = 0; sv = 0
        for packed in samples {
            let s = Sample(packed), du = s.u - mean.u, dv = s.v - mean.v
            let w = exp(-(du * du + dv * dv) / (2 * spread * spread))
            su += w * s.u; sv += w * s.v; sw += w
        }
        return sw > 0 ? (su / sw, sv / sw) : mean
    }


    static func smoothstep(_ a: Double, _ b: Double, _ x: Double) -> Double {
        let t = max(0, min(1, (x - a) / (b - a)))
        return t * t * (3 - 2 * t)
    }
}

extension LightEstimate {
    /// Skin's colour under any light a set is harmonized across, from lamplight (3,000 K) to deep
    /// shade (11,000 K), in log chromaticity of linear light: red above blue by more than 10 %
    /// (ln R/G − ln B/G over 0.1), blue not above green by more than 10 % (ln B/G under 0.1) and
    /// red at least 95 % of green (ln R/G over −0.05). Generous on purpose: wood, sand, brick and
    /// autumn leaves have it too; sky, water, grass, purple and grey do not.
    static let skinRedOverBlue = 0.1, skinBlueOverGreen = 0.1, skinRedOverGreen = -0.05

    /// The share of an image's pixels, looked at as `measure` looks at them (the same even
    /// stride), that have skin's colour (`skinRedOverBlue`) and are neither clipped nor very
    /// dark (a face there says nothing of the light either way).
    /// - Parameter image: 8-bit RGB or RGBA (fully transparent pixels are not counted).
    /// - Returns: 0 … 1; 0 for an empty image.
    public static func skinColouredShare(_ image: PixelRows) -> Double {
        guard image.width * image.height > 0 else { return 0 }
        let step = sampleStep(image), ch = image.channels, ln = lnLinear, lin = SRGBCurve.linear
        var looked = 0, skin = 0
        for y in stride(from: step / 2, to: image.height, by: step) {
            let row = image[y]
            for x in stride(from: step / 2, to: image.width, by: step) {
                let p = row + x * ch
                if ch == 4 && p[3] == 0 { continue }
                looked += 1
                guard max(p[0], p[1], p[2]) < clippedCode,
                      Luminance.of(lin[Int(p[0])], lin[Int(p[1])], lin[Int(p[2])]) >= darkest else { continue }
                let g = ln[Int(p[1])], u = ln[Int(p[0])] - g, v = ln[Int(p[2])] - g
                if u - v > skinRedOverBlue && v < skinBlueOverGreen && u > skinRedOverGreen { skin += 1 }
            }
        }
        return looked > 0 ? Double(skin) / Double(looked) : 0
    }
}

extension LightEstimate {
    /// How far apart a set's lights are: the white points' spread (root mean square ΔE of their
    /// middle greys, compared at one lightness, from their mean) and the levels' (their standard
    /// deviation, in EV). What `harmonize` narrows, and what the report gives before and after.
    public static func spread(_ set: [LightEstimate]) -> (white: Double, exposure: Double) {
        guard set.count > 1 else { return (0, 0) }
        let labs = set.map { e -> Lab in
            let w = e.white, s = 0.18 / Luminance.of(w[0], w[1], w[2])
            return Lab(linear: w[0] * s, w[1] * s, w[2] * s)
        }
        let n = Double(set.count)
        let ma = labs.reduce(0) { $0 + $1.a } / n, mb = labs.reduce(0) { $0 + $1.b } / n
        let white = (labs.reduce(0) { $0 + ($1.a - ma) * ($1.a - ma) + ($1.b - mb) * ($1.b - mb) } / n).squareRoot()
        let ml = set.reduce(0) { $0 + $1.level } / n
        let exposure = (set.reduce(0) { $0 + ($1.level - ml) * ($1.level - ml) } / n).squareRoot()
        return (rounded(white, 2), rounded(exposure, 3))
    }
}

extension LightEstimate {
    /// The median light of `lights`: the white point of the median photo — the one whose white
    /// is nearest all the others' (the sum of distances in log chromaticity least, each photo
    /// weighing its `confidence`; `unknown`'s neutral white when none may be trusted) — and the
    /// median level. Not the median of each channel apart: a set of lamplit and daylit photos
    /// would get a white none of them has (the daylight's red with the lamps' blue: yellow-green).
    public static func median(_ lights: [LightEstimate]) -> LightEstimate {
        guard !lights.isEmpty else { return .unknown }
        let level = weightedMedian(lights.map { ($0.level, 1) })
        let trusted = lights.filter { $0.confidence > 0 }
        func distances(_ light: LightEstimate) -> Double {
            let c = light.chromaticity
            return trusted.reduce(0) { sum, other in
                let o = other.chromaticity, du = c.u - o.u, dv = c.v - o.v
                return sum + other.confidence * (du * du + dv * dv).squareRoot()
            }
        }
        guard let middle = trusted.min(by: { distances($0) < distances($1) }) else {
            return LightEstimate(white: [1, 1, 1], level: level, neutral: 0)
        }
        return LightEstimate(white: middle.white, level: level, neutral: 1)
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
}
