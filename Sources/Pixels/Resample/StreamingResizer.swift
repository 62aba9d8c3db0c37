/// Resizes an image with a Lanczos-3 filter while its rows stream in, top to bottom.
///
/// A decoder pushes every source row in order; the resizer ignores the rows outside
/// `crop`, resamples each needed row horizontally into a small ring (as many rows as
/// the vertical kernel spans), and writes an output row into its `RowSink` as soon as
/// its last source row has arrived. The whole source frame is never held: memory is the
/// ring plus what the sink keeps (for 4032×3024 → 2048×1536 RGB: a ring of 12 rows × 12 KB,
/// a 64 KB pair row, 200 KB of expanded weights; a `CanvasRows` sink keeps the 9.4 MB
/// output, an upright band writer a band of it).
///
/// Arithmetic is fixed point (Int16 weights with 14 fractional bits, Int32 sums,
/// rounded and clamped to 0…255 at the end). The horizontally resampled rows in the
/// ring are Int16 with 6 fractional bits and keep the filter's overshoot below 0 and
/// above 255: an 8-bit ring (as in Pillow) clamps the ringing of hard edges between
/// the passes: on a 12 MP photo it was up to 5 levels off a double-precision Lanczos,
/// on black-and-white blocks 22; the Int16 ring stays within rounding, at the same speed.
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
    /// Averages the crop's pixels in blocks before the filter (`shrinkFirst`), or nil.
    private let shrink: BoxShrink?
    /// Pixels per row the filter takes: the crop's, or the shrunk crop's.
    private let inWidth: Int
    private let horizontal: AxisWeights
    private let vertical: AxisWeights
    /// Where output rows go.
    private let sink: RowSink
    /// The sink when it is this resizer's own whole canvas (`finish()` hands it over).
    private let canvas: CanvasRows?
    /// Premultiply on the way in, unpremultiply on the way out. Not needed for a pure
    /// copy (no filtering, so no mixing of pixels).
    private let premultiplies: Bool

    /// `ringRows` horizontally resampled rows of `targetWidth * channels` values
    /// (Int16, `ringFractionBits` fractional bits), `ringStride` apart; source row `r`
    /// (crop-relative) lives in slot `r % ringRows`.
    private let ring: UnsafeMutablePointer<Int16>
    private let ringRows: Int
    private let ringRowBytes: Int
    /// Row values plus 4 of slack: the RGB loop stores whole 4-value pixels.
    private let ringStride: Int
    /// One crop row as 4-byte pixels (RGB widened to RGBx, or RGBA premultiplied), so
    /// one vector loop serves both; nil when there is nothing to filter or premultiply.
    private let scratch: UnsafeMutablePointer<UInt8>?
    /// The crop row as overlapping pixel pairs with their channels side by side: entry
    /// `j` is 8 Int16 `r[j] r[j+1] g[j] g[j+1] b[j] b[j+1] x[j] x[j+1]`. Built once per
    /// row, it turns every two filter taps into one load and one 16-bit multiply-add.
    /// Nil when the tap count is odd (sources narrower than the kernel).
    private let pairRow: UnsafeMutablePointer<SIMD8<Int16>>?
    /// The horizontal weights two by two, each pair repeated for the 4 channels
    /// (`w0 w1 w0 w1 w0 w1 w0 w1`), ready to multiply with a `pairRow` entry.
    private let pairWeights: UnsafeMutablePointer<SIMD8<Int16>>?
    /// Row pointers of the current vertical window, padded to an even count.
    private let windowRows: UnsafeMutablePointer<UnsafePointer<Int16>>
    /// The window's weights two by two (the second is 0 for the padding row).
    private let windowWeights: UnsafeMutablePointer<SIMD2<Int16>>
    /// Zeros, standing in for the missing row of an odd vertical window.
    private let zeroRow: UnsafeMutablePointer<Int16>

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
    ///   - sink: where output rows go; nil: into a canvas of its own, handed over by `finish()`.
    ///   - shrinkFirst: average RGB blocks (`BoxShrink`) before the filter when the shrink is
    ///     4:1 or more, leaving the filter 2:1 to 4:1: far cheaper, a little softer than
    ///     Lanczos all the way (previews; never an output).
    public init(sourceWidth: Int, sourceHeight: Int, crop: PixelRect,
                targetWidth: Int, targetHeight: Int, channels: Int, into sink: RowSink? = nil,
                shrinkFirst: Bool = false) {
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
        shrink = shrinkFirst && channels == 3
            ? BoxShrink.factor(crop: crop, targetWidth: targetWidth, targetHeight: targetHeight)
                .map { BoxShrink(width: crop.width, height: crop.height, factor: $0) }
            : nil
        inWidth = shrink?.shrunkWidth ?? crop.width
        let factor = Double(shrink?.factor ?? 1)
        horizontal = AxisWeights.shared(inSize: inWidth, outSize: targetWidth, evenTaps: true,
                                 scale: shrink.map { _ in Double(crop.width) / factor / Double(targetWidth) })
        vertical = AxisWeights.shared(inSize: shrink?.shrunkHeight ?? crop.height, outSize: targetHeight,
                               scale: shrink.map { _ in Double(crop.height) / factor / Double(targetHeight) })
        canvas = sink == nil ? CanvasRows(width: targetWidth, height: targetHeight, channels: channels) : nil
        self.sink = sink ?? canvas!
        premultiplies = channels == 4 && !(horizontal.isIdentity && vertical.isIdentity)
        ringRows = vertical.taps
        ringRowBytes = targetWidth * channels
        ringStride = ringRowBytes + 4
        ring = .allocate(capacity: ringRows * ringStride)
        scratch = horizontal.isIdentity && !premultiplies ? nil : .allocate(capacity: inWidth * 4)
        if !horizontal.isIdentity && horizontal.taps % 2 == 0 {
            pairRow = .allocate(capacity: inWidth)
            let steps = horizontal.taps / 2
            let expanded = UnsafeMutablePointer<SIMD8<Int16>>.allocate(capacity: targetWidth * steps)
            for i in 0..<(targetWidth * steps) {
                let w0 = horizontal.weights[2 * i], w1 = horizontal.weights[2 * i + 1]
                expanded[i] = SIMD8(w0, w1, w0, w1, w0, w1, w0, w1)
            }
            pairWeights = expanded
        } else {
            pairRow = nil
            pairWeights = nil
        }
        let pairs = (ringRows + 1) / 2
        windowRows = .allocate(capacity: 2 * pairs)
        windowWeights = .allocate(capacity: pairs)
        zeroRow = .allocate(capacity: ringRowBytes)
        zeroRow.initialize(repeating: 0, count: ringRowBytes)
    }

    deinit {
        ring.deallocate()
        scratch?.deallocate()
        pairRow?.deallocate()
        pairWeights?.deallocate()
        windowRows.deallocate()
        windowWeights.deallocate()
        zeroRow.deallocate()
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
        if let shrink {
            guard r >= 0, r < crop.height, let shrunk = shrink.add(row + crop.x * channels, row: r) else { return }
            take(shrunk, r / shrink.factor)
            return
        }
        // Above the crop, or a row no remaining output row reaches (only possible
        // before the first window starts).
        guard r >= 0, r < crop.height, r >= Int(vertical.starts[nextOutputRow]) else { return }
        take(row + crop.x * channels, r)
    }

    /// Filters row `r` of the crop (or of the shrunk crop): `inWidth` pixels.
    private func take(_ source: UnsafePointer<UInt8>, _ r: Int) {
        if horizontal.isIdentity && vertical.isIdentity {
            // Same size: a crop, copied straight through.
            sink.rowBuffer(r).update(from: source, count: ringRowBytes)
            sink.rowWritten(r)
            nextOutputRow += 1
            return
        }
        let slot = ring + (r % ringRows) * ringStride
        if horizontal.isIdentity {
            if let scratch {
                premultiply(source, into: scratch, pixels: inWidth)
                toRing(scratch, slot)
            } else {
                toRing(source, slot)
            }
        } else if let scratch {
            if let pairRow, channels == 3 {
                makePairsRGB(source, into: pairRow, pixels: inWidth)
                resampleRowInPairs(pairRow, into: slot)
            } else {
                if channels == 3 {
                    widen(source, into: scratch, pixels: inWidth)
                } else {
                    premultiply(source, into: scratch, pixels: inWidth)
                }
                if let pairRow {
                    makePairs(scratch, into: pairRow, pixels: inWidth)
                    resampleRowInPairs(pairRow, into: slot)
                } else {
                    resampleRow(scratch, into: slot)
                }
            }
        }
        // Every output row whose window ends at this source row can be written now
        // (several of them when upscaling).
        while nextOutputRow < targetHeight
                && Int(vertical.starts[nextOutputRow]) + vertical.taps - 1 <= r {
            writeOutputRow(nextOutputRow)
            nextOutputRow += 1
        }
    }

    /// The resized image, handed over once (a resizer made without a sink of its own).
    ///
    /// - Precondition: `isComplete` (all rows down to the crop's bottom were pushed), and
    ///   `finish()` not called before.
    public func finish() -> Canvas {
        precondition(isComplete, "resize finished after \(rowsPushed) of \(crop.y + crop.height) needed rows")
        guard let canvas else { preconditionFailure("this resizer wrote into a sink: it has no canvas to hand over") }
        return canvas.take()
    }

    // MARK: - Horizontal pass

    /// RGB → RGBx (the fourth byte is whatever follows; it is computed and dropped).
    private func widen(_ source: UnsafePointer<UInt8>, into destination: UnsafeMutablePointer<UInt8>,
                       pixels: Int) {
        let s = UnsafeRawPointer(source)
        let d = UnsafeMutableRawPointer(destination)
        // 4-byte loads read one byte past each pixel: stop before the last one.
        for i in 0..<(pixels - 1) {
            d.storeBytes(of: s.loadUnaligned(fromByteOffset: i * 3, as: UInt32.self),
                         toByteOffset: i * 4, as: UInt32.self)
        }
        let last = pixels - 1
        destination[last * 4] = source[last * 3]
        destination[last * 4 + 1] = source[last * 3 + 1]
        destination[last * 4 + 2] = source[last * 3 + 2]
    }

    /// An unfiltered row (same width) into the ring.
    private func toRing(_ source: UnsafePointer<UInt8>, _ slot: UnsafeMutablePointer<Int16>) {
        for i in 0..<ringRowBytes { slot[i] = Int16(source[i]) &<< Int16(ringFractionBits) }
    }

    /// Stores one filtered pixel: 4 values (for RGB the fourth lands in the next pixel's
    /// place, or in the slack at the row's end, and is overwritten). The sum started at
    /// `ringHalf`, so the shift rounds; saturation only guards against the impossible.
    @inline(__always)
    private func store(_ sum: SIMD4<Int32>, _ destination: UnsafeMutablePointer<Int16>) {
        var v = sum &>> SIMD4(repeating: weightBits - ringFractionBits)
        // Written as a clamp and a truncation, which LLVM emits as one `packssdw`
        // (`init(clamping:)` comes out as scalar compares and branches).
        v.clamp(lowerBound: SIMD4(repeating: Int32(Int16.min)), upperBound: SIMD4(repeating: Int32(Int16.max)))
        UnsafeMutableRawPointer(destination).storeBytes(of: SIMD4<Int16>(truncatingIfNeeded: v),
                                                        as: SIMD4<Int16>.self)
    }

    /// Builds the pair row from 4-byte pixels (see `pairRow`).
    private func makePairs(_ source: UnsafePointer<UInt8>, into destination: UnsafeMutablePointer<SIMD8<Int16>>,
                           pixels: Int) {
        makePairs(source, stride: 4, safeLoads: pixels, into: destination, pixels: pixels)
    }

    /// Builds the pair row straight from RGB pixels (the fourth lane is the next
    /// pixel's red, computed and dropped).
    private func makePairsRGB(_ source: UnsafePointer<UInt8>, into destination: UnsafeMutablePointer<SIMD8<Int16>>,
                              pixels: Int) {
        // A 4-byte load at the last pixel would read one byte past the row.
        makePairs(source, stride: 3, safeLoads: pixels - 1, into: destination, pixels: pixels)
    }

    /// Each pixel is widened once to 16 bits and interleaved with its left neighbour
    /// (`punpcklwd`), instead of shuffling bytes per entry, which SSE2 has no single
    /// instruction for.
    @inline(__always)
    private func makePairs(_ source: UnsafePointer<UInt8>, stride: Int, safeLoads: Int,
                           into destination: UnsafeMutablePointer<SIMD8<Int16>>, pixels: Int) {
        let s = UnsafeRawPointer(source)
        @inline(__always) func pixel(_ j: Int) -> SIMD4<Int16> {
            if j < safeLoads {
                return SIMD4<Int16>(truncatingIfNeeded: s.loadUnaligned(fromByteOffset: j * stride, as: SIMD4<UInt8>.self))
            }
            let p = source + j * stride
            return SIMD4<Int16>(Int16(p[0]), Int16(p[1]), Int16(p[2]), stride == 4 ? Int16(p[3]) : 0)
        }
        @inline(__always) func pair(_ a: SIMD4<Int16>, _ b: SIMD4<Int16>) -> SIMD8<Int16> {
            SIMD8(a[0], b[0], a[1], b[1], a[2], b[2], a[3], b[3])
        }
        var previous = pixel(0)
        let fast = min(safeLoads, pixels) - 1
        for j in 0..<max(fast, 0) {
            let next = SIMD4<Int16>(truncatingIfNeeded: s.loadUnaligned(fromByteOffset: (j + 1) * stride,
                                                                       as: SIMD4<UInt8>.self))
            destination[j] = pair(previous, next)
            previous = next
        }
        for j in max(fast, 0)..<pixels {
            // The last pixel has no right neighbour; no window starts a pair there.
            let next = pixel(min(j + 1, pixels - 1))
            destination[j] = pair(previous, next)
            previous = next
        }
    }

    /// The horizontal filter, two taps per multiply: a `pairRow` entry times its
    /// expanded weights, 16-bit products summed in pairs into 32 bits (the shape LLVM
    /// turns into SSE2 `pmaddwd`). Unrolled by two with two sums to keep the adds apart.
    private func resampleRowInPairs(_ pairs: UnsafePointer<SIMD8<Int16>>, into destination: UnsafeMutablePointer<Int16>) {
        let steps = horizontal.taps / 2
        let starts = horizontal.starts
        let channels = self.channels
        var weight = UnsafePointer(pairWeights!)
        let d = destination
        @inline(__always) func madd(_ a: SIMD8<Int16>, _ b: SIMD8<Int16>) -> SIMD4<Int32> {
            let product = SIMD8<Int32>(truncatingIfNeeded: a) &* SIMD8<Int32>(truncatingIfNeeded: b)
            return product.evenHalf &+ product.oddHalf
        }
        for x in 0..<targetWidth {
            // Entries two pixels apart: the next pair of taps.
            var p = pairs + Int(starts[x])
            var sum = SIMD4<Int32>(repeating: ringHalf)
            var other = SIMD4<Int32>.zero
            for _ in 0..<(steps / 2) {
                sum &+= madd(p[0], weight[0])
                other &+= madd(p[2], weight[1])
                p += 4
                weight += 2
            }
            if steps % 2 == 1 {
                sum &+= madd(p[0], weight[0])
                weight += 1
            }
            store(sum &+ other, d + x * channels)
        }
    }

    /// The horizontal filter one tap at a time (an odd tap count: only tiny sources).
    private func resampleRow(_ source: UnsafePointer<UInt8>, into destination: UnsafeMutablePointer<Int16>) {
        let taps = horizontal.taps
        let starts = horizontal.starts
        var weight = UnsafePointer(horizontal.weights)
        let d = destination
        for x in 0..<targetWidth {
            var s = UnsafeRawPointer(source + Int(starts[x]) * 4)
            var sum = SIMD4<Int32>(repeating: ringHalf)
            for _ in 0..<taps {
                let pixel = SIMD4<Int32>(truncatingIfNeeded: s.loadUnaligned(as: SIMD4<UInt8>.self))
                sum &+= pixel &* Int32(weight.pointee)
                s += 4
                weight += 1
            }
            store(sum, d + x * channels)
        }
    }

    // MARK: - Vertical pass

    private func writeOutputRow(_ y: Int) {
        let out = sink.rowBuffer(y)
        defer { sink.rowWritten(y) }
        let start = Int(vertical.starts[y])
        let count = ringRowBytes
        if vertical.isIdentity {
            let source = ring + (start % ringRows) * ringStride
            let half = Int32(1) &<< (ringFractionBits - 1)
            for i in 0..<count { out[i] = clamp8((Int32(source[i]) &+ half) &>> ringFractionBits) }
        } else {
            let taps = vertical.taps
            let weights = vertical.weights + y * taps
            let pairs = (taps + 1) / 2
            for k in 0..<(2 * pairs) {
                windowRows[k] = k < taps ? UnsafePointer(ring + ((start + k) % ringRows) * ringStride)
                                         : UnsafePointer(zeroRow)
            }
            for p in 0..<pairs {
                windowWeights[p] = SIMD2(weights[2 * p], 2 * p + 1 < taps ? weights[2 * p + 1] : 0)
            }
            if count >= 16 {
                filterColumns(into: out, count: count, pairs: pairs)
            } else {
                for i in 0..<count {
                    var sum = outputHalf
                    for k in 0..<taps { sum &+= Int32(weights[k]) &* Int32(windowRows[k][i]) }
                    out[i] = clamp8(sum &>> outputBits)
                }
            }
        }
        if premultiplies { unpremultiply(out, pixels: targetWidth) }
    }

    /// The vertical filter, 16 values of the row at a time with the sums in registers,
    /// two rows per step: their values are interleaved so each step is a 16-bit
    /// multiply with 32-bit pair sums (SSE2 `pmaddwd`).
    private func filterColumns(into out: UnsafeMutablePointer<UInt8>, count: Int, pairs: Int) {
        let rows = windowRows
        let weights = windowWeights
        let o = UnsafeMutableRawPointer(out)
        var i = 0
        while true {
            // The last block overlaps the one before rather than running past the row.
            let at = min(i, count - 16)
            // Four blocks of 4 values; written as 8-lane pieces, the shape LLVM turns
            // into `pmaddwd` (it does not for 16 lanes).
            var s0 = SIMD4<Int32>(repeating: outputHalf), s1 = s0, s2 = s0, s3 = s0
            for p in 0..<pairs {
                let a = UnsafeRawPointer(rows[2 * p] + at).loadUnaligned(as: SIMD16<Int16>.self)
                let b = UnsafeRawPointer(rows[2 * p + 1] + at).loadUnaligned(as: SIMD16<Int16>.self)
                let w = weights[p]
                let w32 = SIMD8<Int32>(truncatingIfNeeded: SIMD8<Int16>(
                    w[0], w[1], w[0], w[1], w[0], w[1], w[0], w[1]))
                @inline(__always) func step(_ q: Int) -> SIMD4<Int32> {
                    let paired = SIMD8<Int16>(a[q], b[q], a[q + 1], b[q + 1], a[q + 2], b[q + 2], a[q + 3], b[q + 3])
                    let product = SIMD8<Int32>(truncatingIfNeeded: paired) &* w32
                    return product.evenHalf &+ product.oddHalf
                }
                s0 &+= step(0)
                s1 &+= step(4)
                s2 &+= step(8)
                s3 &+= step(12)
            }
            @inline(__always) func bytes(_ v: SIMD4<Int32>) -> SIMD4<UInt8> {
                var v = v &>> SIMD4(repeating: outputBits)
                v.clamp(lowerBound: .zero, upperBound: SIMD4(repeating: 255))
                return SIMD4<UInt8>(truncatingIfNeeded: v)
            }
            o.storeBytes(of: SIMD16<UInt8>(lowHalf: SIMD8(lowHalf: bytes(s0), highHalf: bytes(s1)),
                                           highHalf: SIMD8(lowHalf: bytes(s2), highHalf: bytes(s3))),
                         toByteOffset: at, as: SIMD16<UInt8>.self)
            if at == count - 16 { break }
            i += 16
        }
    }
}

/// Resizes a whole image with the same Lanczos-3 resampler (for logos and thumbnails).
/// - Parameters:
///   - image: the source, RGB or RGBA.
///   - width: output width.
///   - height: output height.
///   - shrinkFirst: as in `StreamingResizer` (previews).
/// - Returns: a new image; or `image` itself when the size is unchanged (it is read only).
public func resized(_ image: Image, width: Int, height: Int, shrinkFirst: Bool = false) -> Image {
    if width == image.width && height == image.height { return image }
    return image.withUnsafeRows { resized($0, width: width, height: height, shrinkFirst: shrinkFirst) }.finished()
}

/// Resizes rows lent for reading into a new canvas (a copy when the size is unchanged);
/// `shrinkFirst` as in `StreamingResizer` (previews).
public func resized(_ image: PixelRows, width: Int, height: Int, shrinkFirst: Bool = false) -> Canvas {
    let resizer = StreamingResizer(
        sourceWidth: image.width, sourceHeight: image.height,
        crop: PixelRect(x: 0, y: 0, width: image.width, height: image.height),
        targetWidth: width, targetHeight: height, channels: image.channels, shrinkFirst: shrinkFirst)
    for y in 0..<image.height where !resizer.isComplete {
        resizer.push(image[y])
    }
    return resizer.finish()
}

@inline(__always)
func clamp8(_ v: Int32) -> UInt8 {
    UInt8(truncatingIfNeeded: min(max(v, 0), 255))
}
