internal import CResample

/// Averages blocks of `factor` × `factor` RGB pixels as rows stream in, before a Lanczos
/// resize that still has at least 2:1 to go: what a large shrink (a full-resolution photo
/// into its 480 px preview) costs is then one add per source value instead of a 50-tap
/// filter per source row. As libvips' `shrink` before `reduce`; only for images whose
/// exact filter response matters less than their cost (the preview), never for outputs.
///
/// Not thread-safe: one shrink belongs to one resizer.
final class BoxShrink {
    /// Pixels averaged per block side, a power of two (2…16).
    let factor: Int
    /// Source width and height (pixels).
    let width: Int
    let height: Int
    /// Shrunk width and height: the last block of a row or column may be narrower.
    let shrunkWidth: Int
    let shrunkHeight: Int

    private let shift: Int
    /// Column sums of the block's rows so far (at most 16 × 255 each).
    private let sums: UnsafeMutablePointer<UInt16>
    private let row: UnsafeMutablePointer<UInt8>
    /// Every pixel's block average before the blocks' first pixels are kept (`pf_box_row`).
    private let averages: UnsafeMutablePointer<UInt8>
    private var rowsInBlock = 0

    /// The factor for shrinking `crop` to `target` first, or nil when it is under 2: the
    /// largest power of two (at most 16) that leaves the filter at least 2:1 on both axes.
    static func factor(crop: PixelRect, targetWidth: Int, targetHeight: Int) -> Int? {
        let ratio = min(crop.width / max(1, targetWidth), crop.height / max(1, targetHeight)) / 2
        guard ratio >= 2 else { return nil }
        var factor = 2
        while factor * 2 <= min(ratio, 16) { factor *= 2 }
        return factor
    }

    /// The build of the inner loops (`ResampleKernels`).
    private let simd: Int32

    init(width: Int, height: Int, factor: Int, kernels: ResampleKernels = .current) {
        precondition([2, 4, 8, 16].contains(factor), "box factor \(factor)")
        self.width = width
        self.height = height
        self.factor = factor
        simd = kernels.simd
        shift = factor.trailingZeroBitCount * 2
        shrunkWidth = (width + factor - 1) / factor
        shrunkHeight = (height + factor - 1) / factor
        sums = .allocate(capacity: width * 3)
        row = .allocate(capacity: shrunkWidth * 3)
        averages = .allocate(capacity: width * 3)
    }

    deinit {
        sums.deallocate()
        row.deallocate()
        averages.deallocate()
    }

    /// Adds source row `y` (`width * 3` bytes, read during the call).
    /// - Returns: shrunk row `y / factor` (`shrunkWidth * 3` bytes, valid until the next
    ///   call) when `y` completes its block, else nil.
    func add(_ source: UnsafePointer<UInt8>, row y: Int) -> UnsafePointer<UInt8>? {
        pf_box_add(simd, source, sums, Int32(width * 3), rowsInBlock == 0 ? 1 : 0)
        rowsInBlock += 1
        guard rowsInBlock == factor || y == height - 1 else { return nil }
        let rows = rowsInBlock
        rowsInBlock = 0
        let whole = rows == factor ? width / factor : 0
        // Whole blocks: a shift divides; rounded to nearest.
        pf_box_row(simd, sums, Int32(whole), Int32(factor), Int32(shift), averages, row)
        // Narrower blocks at the right edge (or every block of a shorter last row of blocks).
        for x in whole..<shrunkWidth {
            let columns = min(factor, width - x * factor)
            let n = UInt32(columns * rows)
            for k in 0..<3 {
                var sum: UInt32 = 0
                for c in 0..<columns { sum &+= UInt32(sums[(x * factor + c) * 3 + k]) }
                row[x * 3 + k] = UInt8(truncatingIfNeeded: (sum + n / 2) / n)
            }
        }
        return UnsafePointer(row)
    }
}
