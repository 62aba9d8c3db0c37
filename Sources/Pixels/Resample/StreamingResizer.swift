internal import CResample
import Foundation

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
/// The inner loops are C (`CResample`), built for SSE2 and for AVX2 and chosen at run time
/// (`ResampleKernels`); both give the same bytes. The horizontal pass takes source rows two at
/// a time (one 256-bit multiply-add serves both), and those pairs two at a time where it can (each
/// tap pair's weights loaded once for four rows), so a row waits for up to three after it before
/// it is filtered; the crop's last rows never wait.
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

    /// The horizontally resampled rows, two by two: pair row `q` holds crop rows `2q` and
    /// `2q + 1` interleaved value by value (`CResample.h`), `targetWidth * channels` values each
    /// (Int16, `ringFractionBits` fractional bits), in slot `q % ringPairs`, `pairStride`
    /// values apart: as many as the vertical kernel spans, and three more (two pair rows filtered
    /// at once may find the oldest output row still waiting on a pair row the kernel's span back).
    private let ring: UnsafeMutablePointer<Int16>
    private let ringPairs: Int
    private let ringRowBytes: Int
    /// Both rows' values plus 8 of slack (the horizontal pass stores whole 4-value pixels),
    /// rounded up to 32 bytes.
    private let pairStride: Int
    /// One filtered row before it goes into its lane of the ring (the paths that filter one row
    /// at a time: no horizontal filter, or an odd tap count), `ringRowBytes + 4` values.
    private let laneRow: UnsafeMutablePointer<Int16>?
    /// The last row filtered into the ring so far.
    private var filtered = -1
    /// One crop row as 4-byte pixels (RGB widened to RGBx for an odd tap count, or RGBA
    /// premultiplied); nil when RGB goes straight into `pairs` or there is nothing to filter.
    private let scratch: UnsafeMutablePointer<UInt8>?
    /// Two crop rows as overlapping pixel pairs (`CResample.h`): entry `j` is 32 bytes, for
    /// each row the 8 Int16 `r[j] r[j+1] g[j] g[j+1] b[j] b[j+1] x[j] x[j+1]`. Built once
    /// per row, it turns every two filter taps into one 16-bit multiply-add. Two such buffers of
    /// `inWidth` entries: a waiting pair's in the first, the next pair's in the second. Nil when
    /// the tap count is odd (sources narrower than the kernel) or there is no horizontal filter.
    private let pairs: UnsafeMutablePointer<Int16>?
    /// The even row (crop-relative) waiting for the odd one after it, and its pixels (a copy,
    /// `inWidth * channels` bytes: the decoder lends a row only during `push`).
    private var pendingRow: Int?
    private let pendingPixels: UnsafeMutablePointer<UInt8>?
    /// The pair row (`r / 2`) whose entries wait in the first pair buffer, to be filtered with the
    /// next pair's.
    private var waitingPair: Int?
    /// The last row `take` will see (the crop's, or the shrunk crop's).
    private let lastRow: Int
    /// The pair rows of the current vertical window.
    private let windowRows: UnsafeMutablePointer<UnsafePointer<Int16>?>
    /// The window's weights, two a pair row (0 for a row of the pair outside the window).
    private let windowWeights: UnsafeMutablePointer<Int16>
    /// The build of the inner loops this resizer runs (`PF_SIMD_SSE2` or `PF_SIMD_AVX2`).
    private let simd: Int32

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
    ///   - kernels: the build of the inner loops (tests compare them; the same bytes either way).
    public convenience init(sourceWidth: Int, sourceHeight: Int, crop: PixelRect,
                            targetWidth: Int, targetHeight: Int, channels: Int, into sink: RowSink? = nil,
                            shrinkFirst: Bool = false) {
        self.init(sourceWidth: sourceWidth, sourceHeight: sourceHeight, crop: crop, targetWidth: targetWidth,
                  targetHeight: targetHeight, channels: channels, into: sink, shrinkFirst: shrinkFirst,
                  kernels: .current)
    }

    init(sourceWidth: Int, sourceHeight: Int, crop: PixelRect,
         targetWidth: Int, targetHeight: Int, channels: Int, into sink: RowSink? = nil,
         shrinkFirst: Bool = false, kernels: ResampleKernels) {
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
                .map { BoxShrink(width: crop.width, height: crop.height, factor: $0, kernels: kernels) }
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
        simd = kernels.simd
        ringPairs = (vertical.taps + 1) / 2 + 3
        ringRowBytes = targetWidth * channels
        pairStride = (2 * ringRowBytes + 8 + 15) / 16 * 16
        ring = UnsafeMutableRawPointer.allocate(byteCount: ringPairs * pairStride * 2, alignment: 32)
            .bindMemory(to: Int16.self, capacity: ringPairs * pairStride)
        // A lone last row leaves its partner's lane as it was: weight 0, but a defined value.
        ring.initialize(repeating: 0, count: ringPairs * pairStride)
        lastRow = (shrink?.shrunkHeight ?? crop.height) - 1
        let paired = !horizontal.isIdentity && horizontal.taps % 2 == 0
        if paired {
            pairs = UnsafeMutableRawPointer.allocate(byteCount: 2 * inWidth * 32, alignment: 32)
                .bindMemory(to: Int16.self, capacity: 2 * inWidth * 16)
            pendingPixels = .allocate(capacity: inWidth * channels)
            laneRow = nil
        } else {
            pairs = nil
            pendingPixels = nil
            laneRow = .allocate(capacity: ringRowBytes + 4)
        }
        let needsScratch = premultiplies || (!horizontal.isIdentity && !paired)
        scratch = needsScratch ? .allocate(capacity: inWidth * 4) : nil
        let windowPairs = vertical.taps / 2 + 1
        windowRows = .allocate(capacity: windowPairs)
        windowWeights = .allocate(capacity: 2 * windowPairs)
    }

    deinit {
        UnsafeMutableRawPointer(ring).deallocate()
        scratch?.deallocate()
        pairs.map { UnsafeMutableRawPointer($0).deallocate() }
        pendingPixels?.deallocate()
        laneRow?.deallocate()
        windowRows.deallocate()
        windowWeights.deallocate()
    }

    /// True once every output row is written; later rows may be skipped (or pushed:
    /// they are ignored).
    public var isComplete: Bool { nextOutputRow == targetHeight }

    /// A correction every output row goes through before its sink sees it (`harmonize`: the
    /// batch's light, at the output's size); nil for none. Set it before the first row.
    public var curve: LightCurve?

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
            curve?.apply(sink.rowBuffer(r), width: targetWidth, channels: channels)
            sink.rowWritten(r)
            nextOutputRow += 1
            return
        }
        if let pairs, let pendingPixels {
            var pixels = source
            if channels == 4, let scratch {
                premultiply(source, into: scratch, pixels: inWidth)
                pixels = UnsafePointer(scratch)
            }
            if r % 2 == 0 && r < lastRow {
                pendingPixels.update(from: pixels, count: inWidth * channels)
                pendingRow = r
                return
            }
            // An odd row with the even one before it (or alone, in both lanes, when that one
            // was never needed), or the last row alone.
            let even = r % 2 == 1 && pendingRow == r - 1 ? UnsafePointer(pendingPixels) : pixels
            pendingRow = nil
            let q = r / 2
            let afterWaiting = waitingPair == q - 1
            let entries = afterWaiting ? pairs + inWidth * 16 : pairs
            pf_resample_pairs(simd, even, pixels, Int32(channels), Int32(inWidth), entries)
            if afterWaiting {
                pf_resample_rows2(simd, pairs, entries, horizontal.starts, horizontal.weights, Int32(horizontal.taps),
                                  Int32(targetWidth), Int32(channels), pairRow(q - 1), pairRow(q))
                waitingPair = nil
            } else if q % 2 == 0 && 2 * q + 3 <= lastRow {
                // Both rows of the next pair are to come: this pair's entries wait for them.
                waitingPair = q
                return
            } else {
                pf_resample_rows(simd, pairs, horizontal.starts, horizontal.weights, Int32(horizontal.taps),
                                 Int32(targetWidth), Int32(channels), pairRow(q))
            }
        } else if let laneRow {
            var pixels = source
            if let scratch {
                if channels == 4 {
                    premultiply(source, into: scratch, pixels: inWidth)
                } else if !horizontal.isIdentity {
                    widen(source, into: scratch, pixels: inWidth)
                }
                pixels = UnsafePointer(scratch)
            }
            if horizontal.isIdentity {
                toRing(pixels, laneRow)
            } else {
                resampleRow(pixels, into: laneRow)
            }
            let d = pairRow(r / 2) + r % 2
            for i in 0..<ringRowBytes { d[2 * i] = laneRow[i] }
        }
        filtered = r
        // Every output row whose window ends by this source row can be written now (several of
        // them when upscaling).
        while nextOutputRow < targetHeight
                && Int(vertical.starts[nextOutputRow]) + vertical.taps - 1 <= filtered {
            writeOutputRow(nextOutputRow)
            nextOutputRow += 1
        }
    }

    /// The ring's pair row `q` (crop rows `2q` and `2q + 1`).
    @inline(__always)
    private func pairRow(_ q: Int) -> UnsafeMutablePointer<Int16> {
        ring + (q % ringPairs) * pairStride
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
            let source = UnsafePointer(pairRow(start / 2) + start % 2)
            let half = Int32(1) &<< (ringFractionBits - 1)
            for i in 0..<count { out[i] = clamp8((Int32(source[2 * i]) &+ half) &>> ringFractionBits) }
        } else {
            // The window from the pair row its first row is in: an odd start leads with its
            // even partner, weight 0; the last pair row's second row may be past the window.
            let taps = vertical.taps
            let weights = vertical.weights + y * taps
            let lead = start % 2
            let pairs = (lead + taps + 1) / 2
            for k in 0..<pairs { windowRows[k] = UnsafePointer(pairRow(start / 2 + k)) }
            for k in 0..<(2 * pairs) {
                let t = k - lead
                windowWeights[k] = t >= 0 && t < taps ? weights[t] : 0
            }
            pf_resample_columns(simd, windowRows, windowWeights, Int32(pairs), Int32(count), out)
        }
        if premultiplies { unpremultiply(out, pixels: targetWidth) }
        curve?.apply(out, width: targetWidth, channels: channels)
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
    resized(image, width: width, height: height, shrinkFirst: shrinkFirst, kernels: .current)
}

/// `resized`, with the inner loops of `kernels` (tests compare the builds).
func resized(_ image: Image, width: Int, height: Int, shrinkFirst: Bool = false,
             kernels: ResampleKernels) -> Image {
    if width == image.width && height == image.height { return image }
    return image.withUnsafeRows {
        resized($0, width: width, height: height, shrinkFirst: shrinkFirst, kernels: kernels)
    }.finished()
}

/// Resizes rows lent for reading into a new canvas (a copy when the size is unchanged);
/// `shrinkFirst` as in `StreamingResizer` (previews).
public func resized(_ image: PixelRows, width: Int, height: Int, shrinkFirst: Bool = false) -> Canvas {
    resized(image, width: width, height: height, shrinkFirst: shrinkFirst, kernels: .current)
}

func resized(_ image: PixelRows, width: Int, height: Int, shrinkFirst: Bool = false,
             kernels: ResampleKernels) -> Canvas {
    let resizer = StreamingResizer(
        sourceWidth: image.width, sourceHeight: image.height,
        crop: PixelRect(x: 0, y: 0, width: image.width, height: image.height),
        targetWidth: width, targetHeight: height, channels: image.channels, shrinkFirst: shrinkFirst,
        kernels: kernels)
    for y in 0..<image.height where !resizer.isComplete {
        resizer.push(image[y])
    }
    return resizer.finish()
}

@inline(__always)
func clamp8(_ v: Int32) -> UInt8 {
    UInt8(truncatingIfNeeded: min(max(v, 0), 255))
}
