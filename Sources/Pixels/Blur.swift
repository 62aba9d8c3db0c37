import Foundation

/// A Gaussian blur of a coverage mask, for soft text shadows: a real blur (each pixel a
/// weighted mean of its neighbours), not an offset copy.
///
/// Separable: one horizontal pass into 16-bit rows, one vertical pass back to 8 bits, with
/// 16-bit fixed-point weights summing to exactly 65536, so a flat area stays flat. The
/// kernel reaches 3σ each way; the result is padded by that radius on every side so the
/// blur is never cut off at the mask's edge.
///
/// - Parameters:
///   - mask: the sharp coverage.
///   - sigma: the standard deviation in pixels; below 0.3 the mask is only padded.
/// - Returns: the blurred mask and the padding added on each side (the blurred mask's
///   (padding, padding) is the original's (0, 0)).
public func gaussianBlurred(_ mask: CoverageMask, sigma: Double) -> (mask: CoverageMask, padding: Int) {
    let radius = sigma < 0.3 ? 0 : Int((3 * sigma).rounded(.up))
    let width = mask.width + 2 * radius, height = mask.height + 2 * radius
    var result = MaskCanvas(width: width, height: height)
    guard mask.width > 0, mask.height > 0 else { return (result.finished(), radius) }
    mask.withUnsafeRows { mask in
        result.withUnsafeMutableRows { result in blur(mask, sigma: sigma, radius: radius, into: result) }
    }
    return (result.finished(), radius)
}

/// `gaussianBlurred`'s passes, from `mask` into `result` (padded by `radius` on every side).
private func blur(_ mask: MaskRows, sigma: Double, radius: Int, into result: MutableMaskRows) {
    let width = result.width, height = result.height
    if radius == 0 {
        for y in 0..<mask.height { result[y].update(from: mask[y], count: mask.width) }
        return
    }
    let weights = gaussianWeights(sigma: sigma, radius: radius)
    // Horizontal pass: each source row, padded, into `width` 16-bit values (8 fractional bits).
    let horizontal = UnsafeMutablePointer<UInt16>.allocate(capacity: width * mask.height)
    defer { horizontal.deallocate() }
    weights.withUnsafeBufferPointer { w in
        for y in 0..<mask.height {
            let s = mask[y]
            let d = horizontal + y * width
            for x in 0..<width {
                // Output x covers source columns x − 2r … x (in source coordinates x − r ± r).
                var sum: UInt32 = 0
                let first = x - 2 * radius
                let lo = max(0, first), hi = min(mask.width - 1, x)
                if lo <= hi {
                    for sx in lo...hi { sum &+= UInt32(s[sx]) &* w[sx - first] }
                }
                d[x] = UInt16(truncatingIfNeeded: (sum + 128) >> 8)
            }
        }
        // Vertical pass over the padded rows, a whole row of sums at a time (row after row of
        // the horizontal pass, not down each column: the loads stay in order). The sums hold
        // 8 + 16 fractional bits and fit 32 bits: 65280 · 65536 (the weights' total) + ½.
        let sums = UnsafeMutablePointer<UInt32>.allocate(capacity: width)
        defer { sums.deallocate() }
        for y in 0..<height {
            let d = result[y]
            let first = y - 2 * radius
            let lo = max(0, first), hi = min(mask.height - 1, y)
            guard lo <= hi else { continue }
            sums.update(repeating: 1 << 23, count: width)
            for sy in lo...hi {
                let weight = w[sy - first], h = horizontal + sy * width
                for x in 0..<width { sums[x] &+= UInt32(h[x]) &* weight }
            }
            for x in 0..<width { d[x] = UInt8(truncatingIfNeeded: min(255, sums[x] >> 24)) }
        }
    }
}

/// 2r + 1 weights of a Gaussian, in 16-bit fixed point, summing to exactly 65536.
func gaussianWeights(sigma: Double, radius: Int) -> [UInt32] {
    let raw = (-radius...radius).map { i in exp(-Double(i * i) / (2 * sigma * sigma)) }
    let total = raw.reduce(0, +)
    var weights = raw.map { UInt32(($0 / total * 65536).rounded()) }
    // Put the rounding error on the centre tap.
    let sum = weights.reduce(0, +)
    weights[radius] = UInt32(Int(weights[radius]) + 65536 - Int(sum))
    return weights
}
