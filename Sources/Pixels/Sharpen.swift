/// An unsharp mask on lightness: the difference between each pixel's luma and its Gaussian
/// blur, times `amount`, is added to R, G and B alike, so edges get crisper without colour
/// fringes. Differences under `threshold` levels are left alone (flat areas and noise stay
/// as they are). Alpha is untouched. The blur repeats the edge pixels past the border, so
/// the border is not brightened.
/// - Parameters:
///   - image: RGB or RGBA, changed in place.
///   - amount: how much of the difference is added (0.6: crisp, no halos at web sizes).
///   - sigma: the blur's standard deviation in pixels (0.5–1 for a downscaled photo).
///   - threshold: the smallest luma difference (0–255) that is sharpened.
public func unsharpMask(_ image: inout Canvas, amount: Double, sigma: Double, threshold: Int = 2) {
    guard amount > 0, sigma >= 0.3 else { return }
    image.withUnsafeMutableRows { rows in sharpen(rows, amount: amount, sigma: sigma, threshold: threshold) }
}

private func sharpen(_ rows: MutablePixelRows, amount: Double, sigma: Double, threshold: Int) {
    let width = rows.width, height = rows.height, channels = rows.channels
    let luma = UnsafeMutablePointer<UInt8>.allocate(capacity: width * height)
    defer { luma.deallocate() }
    for y in 0..<height {
        let p = rows[y], l = luma + y * width
        for x in 0..<width {
            let q = p + x * channels
            let weighted = 77 * Int(q[0]) + 150 * Int(q[1]) + 29 * Int(q[2]) + 128
            l[x] = UInt8(truncatingIfNeeded: weighted >> 8)
        }
    }
    let radius = Int((3 * sigma).rounded(.up))
    let weights = gaussianWeights(sigma: sigma, radius: radius)
    // Horizontal pass into 16-bit values (8 fractional bits), edges repeated.
    let horizontal = UnsafeMutablePointer<UInt16>.allocate(capacity: width * height)
    defer { horizontal.deallocate() }
    let scale = Int((amount * 256).rounded())
    weights.withUnsafeBufferPointer { w in
        for y in 0..<height {
            let l = luma + y * width, d = horizontal + y * width
            for x in 0..<width {
                var sum: UInt32 = 0
                for k in -radius...radius { sum &+= UInt32(l[min(width - 1, max(0, x + k))]) &* w[k + radius] }
                d[x] = UInt16(truncatingIfNeeded: (sum + 128) >> 8)
            }
        }
        // Vertical pass, then the sharpening itself, row by row.
        for y in 0..<height {
            let p = rows[y], l = luma + y * width
            for x in 0..<width {
                var sum: UInt64 = 0
                for k in -radius...radius {
                    sum &+= UInt64(horizontal[min(height - 1, max(0, y + k)) * width + x]) &* UInt64(w[k + radius])
                }
                let blurred = Int(min(255, (sum + (1 << 23)) >> 24))
                let difference = Int(l[x]) - blurred
                guard abs(difference) >= threshold else { continue }
                let delta = (difference * scale) >> 8
                let q = p + x * channels
                q[0] = UInt8(clamping: Int(q[0]) + delta)
                q[1] = UInt8(clamping: Int(q[1]) + delta)
                q[2] = UInt8(clamping: Int(q[2]) + delta)
            }
        }
    }
}
