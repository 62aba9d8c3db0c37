import Foundation
import Synchronization

/// Fixed-point precision of filter weights: they sum to `1 << weightBits` per output
/// pixel. 14 bits keep the largest Lanczos weight (≈ 1.0 when upscaling) inside Int16
/// and an 8-bit pixel times the absolute sum of weights inside Int32.
let weightBits: Int32 = 14
let weightOne: Int32 = 1 << weightBits
/// Fractional bits of the horizontally resampled rows (Int16): 255 · 1.3 (more than
/// the largest overshoot) · 2⁶ still fits, and so do Int32 sums of their products.
let ringFractionBits: Int32 = 6
/// Rounding for the horizontal pass: its sums are shifted by `weightBits − ringFractionBits`.
let ringHalf: Int32 = 1 << (weightBits - ringFractionBits - 1)
/// The vertical pass's sums carry `weightBits + ringFractionBits` fractional bits.
let outputBits: Int32 = weightBits + ringFractionBits
let outputHalf: Int32 = 1 << (outputBits - 1)

/// Lanczos-3 weights for one axis, computed once per resize.
///
/// Every output pixel uses the same number of taps (`taps`) starting at `starts[i]`,
/// so the pixel loops have a fixed trip count; windows near the edges are shifted
/// inwards and padded with zero weights. Taps that would fall outside the source are
/// folded onto the edge pixel (edge clamping), so a constant image stays constant.
///
/// Read only once made (`@unchecked Sendable` for that reason): `shared` hands the same
/// weights to every resize of the same geometry (the photos of one camera), instead of
/// computing some 80,000 sines per photo again.
final class AxisWeights: @unchecked Sendable {
    private struct Key: Hashable {
        var inSize: Int, outSize: Int, evenTaps: Bool, scale: Double?
    }

    /// The weights made last, newest at the end (a few geometries per batch at most).
    private static let recent = Mutex<[(key: Key, weights: AxisWeights)]>([])
    private static let kept = 16

    /// The weights for this geometry, made once and shared while it is among the last few used.
    static func shared(inSize: Int, outSize: Int, evenTaps: Bool = false, scale: Double? = nil) -> AxisWeights {
        let key = Key(inSize: inSize, outSize: outSize, evenTaps: evenTaps, scale: scale)
        if let found = recent.withLock({ list -> AxisWeights? in
            guard let index = list.firstIndex(where: { $0.key == key }) else { return nil }
            let entry = list.remove(at: index)
            list.append(entry)
            return entry.weights
        }) {
            return found
        }
        let made = AxisWeights(inSize: inSize, outSize: outSize, evenTaps: evenTaps, scale: scale)
        recent.withLock { list in
            list.append((key, made))
            if list.count > kept { list.removeFirst() }
        }
        return made
    }

    /// Taps per output pixel.
    let taps: Int
    /// Output pixels.
    let count: Int
    /// First source index (relative to the crop) of each output pixel's window.
    let starts: UnsafeMutablePointer<Int32>
    /// `count × taps` weights, each row summing exactly to `weightOne`.
    let weights: UnsafeMutablePointer<Int16>
    /// Input and output sizes are equal: output pixel `i` is input pixel `i`.
    let isIdentity: Bool

    /// - Parameters:
    ///   - inSize: source pixels along the axis (the crop's extent).
    ///   - outSize: output pixels along the axis.
    ///   - evenTaps: round the tap count up to an even number when the source is wide
    ///     enough, so the pixel loop can take taps two at a time.
    ///   - scale: input pixels per output pixel, when not `inSize / outSize` (a source
    ///     shrunk in boxes first, whose last box is narrower: the true scale keeps the
    ///     output pixels where the unshrunk source has them).
    init(inSize: Int, outSize: Int, evenTaps: Bool = false, scale trueScale: Double? = nil) {
        precondition(inSize > 0 && outSize > 0)
        count = outSize
        if inSize == outSize {
            isIdentity = true
            taps = 1
            starts = .allocate(capacity: outSize)
            weights = .allocate(capacity: outSize)
            for i in 0..<outSize {
                starts[i] = Int32(i)
                weights[i] = Int16(weightOne)
            }
            return
        }
        isIdentity = false
        // Pixel centres: output i sits at input (i + 0.5) * scale - 0.5. When shrinking,
        // the kernel is stretched by the scale so every source pixel contributes
        // (an area-aware filter, as Pillow and libvips reduce do).
        let scale = trueScale ?? Double(inSize) / Double(outSize)
        let filterScale = max(scale, 1)
        let support = 3 * filterScale

        // First pass: folded float weights per output pixel, and the widest window.
        var windows: [(lo: Int, weights: [Double])] = []
        windows.reserveCapacity(outSize)
        var widest = 1
        for i in 0..<outSize {
            let centre = (Double(i) + 0.5) * scale - 0.5
            let lo = Int((centre - support).rounded(.down))
            let hi = Int((centre + support).rounded(.up))
            let clampedLo = min(max(lo, 0), inSize - 1)
            let clampedHi = min(max(hi, 0), inSize - 1)
            var folded = [Double](repeating: 0, count: clampedHi - clampedLo + 1)
            for j in lo...hi {
                let w = lanczos3((Double(j) - centre) / filterScale)
                if w == 0 { continue }
                folded[min(max(j, 0), inSize - 1) - clampedLo] += w
            }
            // Trim zero weights at both ends so the windows stay as narrow as possible.
            var first = 0
            var last = folded.count - 1
            while first < last && folded[first] == 0 { first += 1 }
            while last > first && folded[last] == 0 { last -= 1 }
            let trimmed = Array(folded[first...last])
            windows.append((clampedLo + first, trimmed))
            widest = max(widest, trimmed.count)
        }
        if evenTaps && widest % 2 == 1 && widest < inSize { widest += 1 }
        taps = widest
        starts = .allocate(capacity: outSize)
        weights = .allocate(capacity: outSize * widest)
        weights.initialize(repeating: 0, count: outSize * widest)

        // Second pass: place each window in a fixed-width slot, normalise, quantise.
        for (i, window) in windows.enumerated() {
            let start = min(window.lo, inSize - widest)
            starts[i] = Int32(start)
            let offset = window.lo - start
            let sum = window.weights.reduce(0, +)
            let slot = weights + i * widest
            var total: Int32 = 0
            var largest = offset
            for (k, w) in window.weights.enumerated() {
                let q = Int32((w / sum * Double(weightOne)).rounded())
                slot[offset + k] = Int16(q)
                total += q
                if abs(w) > abs(window.weights[largest - offset]) { largest = offset + k }
            }
            // Rounding must not change the sum: a flat colour has to come out exact.
            slot[largest] = Int16(Int32(slot[largest]) + weightOne - total)
        }
    }

    deinit {
        starts.deallocate()
        weights.deallocate()
    }
}

/// The Lanczos kernel with a = 3: sinc(x) · sinc(x / 3) on |x| < 3.
@inline(__always)
func lanczos3(_ x: Double) -> Double {
    if x == 0 { return 1 }
    if abs(x) >= 3 { return 0 }
    let px = Double.pi * x
    return 3 * sin(px) * sin(px / 3) / (px * px)
}
