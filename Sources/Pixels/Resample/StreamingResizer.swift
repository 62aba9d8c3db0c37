/// Resizes an image with a Lanczos-3 filter while its rows stream in, top to bottom.
///
/// A decoder pushes every source row in order; the resizer ignores the rows outside
/// `crop`, resamples each needed row horizontally into a small ring (as many rows as
/// the vertical kernel spans), and writes an output row as soon as its last source row
/// has arrived. The whole source frame is never held: memory is the ring plus the
/// output buffer.
///
/// Arithmetic is fixed point (Int16 weights with 14 fractional bits, Int32 sums,
/// rounded and clamped to 0…255). The horizontally resampled rows in the ring are
/// 8-bit, as in Pillow: that keeps the ring and the vertical pass small and fast.
/// RGBA (straight alpha) is resampled premultiplied, so colour under transparent
/// pixels cannot bleed into visible ones.
///
/// Not thread-safe: one resizer belongs to one decode.
public final class StreamingResizer {
    /// Output width in pixels.
    public let targetWidth: Int
    /// Output height in pixels.
    public let targetHeight: Int
    /// 3 (RGB) or 4 (RGBA).
    public let channels: Int

    private let sourceWidth: Int
    private let sourceHeight: Int
    private let crop: PixelRect
    private let horizontal: AxisWeights
    private let vertical: AxisWeights
    private let output: PixelBuffer
    /// Premultiply on the way in, unpremultiply on the way out. Not needed for a pure
    /// copy (no filtering, so no mixing of pixels).
    private let premultiplies: Bool

    /// `ringRows` horizontally resampled rows of `targetWidth * channels` bytes; source
    /// row `r` (crop-relative) lives in slot `r % ringRows`.
    private let ring: UnsafeMutablePointer<UInt8>
    private let ringRows: Int
    private let ringRowBytes: Int
    /// One premultiplied crop row (RGBA only).
    private let scratch: UnsafeMutablePointer<UInt8>?
    /// Vertical accumulators for one output row.
    private let sums: UnsafeMutablePointer<Int32>
    /// Row pointers of the current vertical window.
    private let windowRows: UnsafeMutablePointer<UnsafePointer<UInt8>>

    /// Source rows pushed so far.
    private var rowsPushed = 0
    /// Next output row to write.
    private var nextOutputRow = 0

    /// Prepares a resize; computes the filter weights once.
    /// - Parameters:
    ///   - sourceWidth: pixels per pushed row (`sourceWidth * channels` bytes).
    ///   - sourceHeight: rows the decoder will deliver.
    ///   - crop: the part of the source to use; must lie inside it.
    ///   - targetWidth: output width (smaller, equal or larger than `crop.width`).
    ///   - targetHeight: output height (smaller, equal or larger than `crop.height`).
    ///   - channels: 3 (RGB) or 4 (RGBA, straight alpha).
    public init(sourceWidth: Int, sourceHeight: Int, crop: PixelRect,
                targetWidth: Int, targetHeight: Int, channels: Int) {
        precondition(channels == 3 || channels == 4, "channels must be 3 or 4")
        precondition(crop.width > 0 && crop.height > 0 && crop.x >= 0 && crop.y >= 0
                     && crop.x + crop.width <= sourceWidth && crop.y + crop.height <= sourceHeight,
                     "crop \(crop) outside the \(sourceWidth)×\(sourceHeight) source")
        precondition(targetWidth > 0 && targetHeight > 0, "empty target \(targetWidth)×\(targetHeight)")
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.crop = crop
        self.targetWidth = targetWidth
        self.targetHeight = targetHeight
        self.channels = channels
        horizontal = AxisWeights(inSize: crop.width, outSize: targetWidth)
        vertical = AxisWeights(inSize: crop.height, outSize: targetHeight)
        output = PixelBuffer(width: targetWidth, height: targetHeight, channels: channels)
        premultiplies = channels == 4 && !(horizontal.isIdentity && vertical.isIdentity)
        ringRows = vertical.taps
        ringRowBytes = targetWidth * channels
        ring = .allocate(capacity: ringRows * ringRowBytes)
        scratch = premultiplies ? .allocate(capacity: crop.width * 4) : nil
        sums = .allocate(capacity: ringRowBytes)
        windowRows = .allocate(capacity: ringRows)
    }

    deinit {
        ring.deallocate()
        scratch?.deallocate()
        sums.deallocate()
        windowRows.deallocate()
    }

    /// True once every output row is written; later rows may be skipped (or pushed:
    /// they are ignored).
    public var isComplete: Bool { nextOutputRow == targetHeight }

    /// Takes the next source row.
    /// - Parameter row: `sourceWidth * channels` bytes of source row number
    ///   "rows pushed so far"; read only during the call.
    public func push(_ row: UnsafePointer<UInt8>) {
        if isComplete { return }
        precondition(rowsPushed < sourceHeight, "more than \(sourceHeight) rows pushed")
        let r = rowsPushed - crop.y
        rowsPushed += 1
        // Above the crop, or a row no remaining output row reaches (only possible
        // before the first window starts).
        guard r >= 0, r < crop.height, r >= Int(vertical.starts[nextOutputRow]) else { return }

        var source = row + crop.x * channels
        if let scratch {
            premultiply(source, into: scratch, pixels: crop.width)
            source = UnsafePointer(scratch)
        }
        let slot = ring + (r % ringRows) * ringRowBytes
        if horizontal.isIdentity {
            slot.update(from: source, count: ringRowBytes)
        } else if channels == 3 {
            resampleRow3(source, into: slot)
        } else {
            resampleRow4(source, into: slot)
        }
        // Every output row whose window ends at this source row can be written now
        // (several of them when upscaling).
        while nextOutputRow < targetHeight
                && Int(vertical.starts[nextOutputRow]) + vertical.taps - 1 <= r {
            writeOutputRow(nextOutputRow)
            nextOutputRow += 1
        }
    }

    /// The resized image.
    ///
    /// - Precondition: `isComplete` (all rows down to the crop's bottom were pushed).
    public func finish() -> PixelBuffer {
        precondition(isComplete, "resize finished after \(rowsPushed) of \(crop.y + crop.height) needed rows")
        return output
    }

    // MARK: - Horizontal pass

    private func resampleRow3(_ source: UnsafePointer<UInt8>, into destination: UnsafeMutablePointer<UInt8>) {
        let taps = horizontal.taps
        let starts = horizontal.starts
        var weight = UnsafePointer(horizontal.weights)
        for x in 0..<targetWidth {
            var s = source + Int(starts[x]) * 3
            var a0 = weightHalf, a1 = weightHalf, a2 = weightHalf
            for _ in 0..<taps {
                let w = Int32(weight.pointee)
                a0 &+= w &* Int32(s[0])
                a1 &+= w &* Int32(s[1])
                a2 &+= w &* Int32(s[2])
                s += 3
                weight += 1
            }
            let d = destination + x * 3
            d[0] = clamp8(a0 &>> weightBits)
            d[1] = clamp8(a1 &>> weightBits)
            d[2] = clamp8(a2 &>> weightBits)
        }
    }

    private func resampleRow4(_ source: UnsafePointer<UInt8>, into destination: UnsafeMutablePointer<UInt8>) {
        let taps = horizontal.taps
        let starts = horizontal.starts
        var weight = UnsafePointer(horizontal.weights)
        let half = SIMD4<Int32>(repeating: weightHalf)
        for x in 0..<targetWidth {
            var s = source + Int(starts[x]) * 4
            var sum = half
            for _ in 0..<taps {
                let pixel = SIMD4<Int32>(truncatingIfNeeded: UnsafeRawPointer(s).loadUnaligned(as: SIMD4<UInt8>.self))
                sum &+= pixel &* Int32(weight.pointee)
                s += 4
                weight += 1
            }
            sum &>>= SIMD4(repeating: weightBits)
            sum.clamp(lowerBound: .zero, upperBound: SIMD4(repeating: 255))
            UnsafeMutableRawPointer(destination + x * 4)
                .storeBytes(of: SIMD4<UInt8>(truncatingIfNeeded: sum), as: SIMD4<UInt8>.self)
        }
    }

    // MARK: - Vertical pass

    private func writeOutputRow(_ y: Int) {
        let out = output.row(y)
        let start = Int(vertical.starts[y])
        let count = ringRowBytes
        if vertical.isIdentity {
            out.update(from: ring + (start % ringRows) * ringRowBytes, count: count)
        } else {
            // Accumulate tap by tap over the whole row: simple loops the compiler
            // vectorises, with the sums staying in L1.
            let weights = vertical.weights + y * vertical.taps
            let sums = self.sums
            for k in 0..<vertical.taps {
                let source = UnsafePointer(ring + ((start + k) % ringRows) * ringRowBytes)
                let w = Int32(weights[k])
                if k == 0 {
                    for i in 0..<count { sums[i] = weightHalf &+ w &* Int32(source[i]) }
                } else if w != 0 {
                    for i in 0..<count { sums[i] &+= w &* Int32(source[i]) }
                }
            }
            for i in 0..<count { out[i] = clamp8(sums[i] &>> weightBits) }
        }
        if premultiplies { unpremultiply(out, pixels: targetWidth) }
    }
}

/// Resizes a whole image with the same Lanczos-3 resampler (for logos and thumbnails).
/// - Parameters:
///   - image: the source, RGB or RGBA.
///   - width: output width.
///   - height: output height.
/// - Returns: a new buffer; or `image` itself when the size is unchanged.
public func resized(_ image: PixelBuffer, width: Int, height: Int) -> PixelBuffer {
    if width == image.width && height == image.height { return image }
    let resizer = StreamingResizer(
        sourceWidth: image.width, sourceHeight: image.height,
        crop: PixelRect(x: 0, y: 0, width: image.width, height: image.height),
        targetWidth: width, targetHeight: height, channels: image.channels)
    for y in 0..<image.height where !resizer.isComplete {
        resizer.push(image.row(y))
    }
    return resizer.finish()
}

@inline(__always)
func clamp8(_ v: Int32) -> UInt8 {
    UInt8(truncatingIfNeeded: min(max(v, 0), 255))
}
