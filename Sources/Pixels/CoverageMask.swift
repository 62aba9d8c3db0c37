/// An 8-bit single-channel image: how much of each pixel a mark covers (0 = none, 255 =
/// all). Text is rasterised into one, a shadow is a blurred one, and `composite(_:…)` paints
/// one over a photo in a colour. It owns its bytes: allocated zeroed, freed in `deinit`.
///
/// Shared between threads only once it is complete (a cache of rendered marks hands the
/// same mask to several workers, which only read it).
public final class CoverageMask: @unchecked Sendable {
    /// Width in pixels (may be 0 for a mark with no ink).
    public let width: Int
    /// Height in pixels (may be 0).
    public let height: Int
    /// The first byte of the first row; rows are `width` bytes apart.
    public let base: UnsafeMutablePointer<UInt8>

    /// Allocates a mask of zeros.
    /// - Parameters:
    ///   - width: pixels per row, 0 or more.
    ///   - height: rows, 0 or more.
    public init(width: Int, height: Int) {
        precondition(width >= 0 && height >= 0, "negative mask size \(width)×\(height)")
        self.width = width
        self.height = height
        let count = max(1, width * height)
        base = .allocate(capacity: count)
        base.initialize(repeating: 0, count: count)
    }

    deinit { base.deallocate() }

    /// The first byte of row `y`.
    @inline(__always)
    public func row(_ y: Int) -> UnsafeMutablePointer<UInt8> { base + y * width }

    /// The coverage at (x, y) (for tests and diagnostics).
    public subscript(x: Int, y: Int) -> UInt8 { base[y * width + x] }

    /// The smallest rectangle holding every non-zero value, or nil when the mask is empty.
    public var inkBounds: PixelRect? {
        var minX = width, minY = height, maxX = -1, maxY = -1
        for y in 0..<height {
            let r = row(y)
            for x in 0..<width where r[x] != 0 {
                minX = min(minX, x); maxX = max(maxX, x)
                minY = min(minY, y); maxY = max(maxY, y)
            }
        }
        return maxX < 0 ? nil : PixelRect(x: minX, y: minY, width: maxX - minX + 1, height: maxY - minY + 1)
    }
}

/// The mask grown by `radius` pixels on every side (a grey-level dilation with a square:
/// each pixel takes the largest coverage within `radius` of it), for the rim of an outlined
/// mark. The result is `2 × radius` larger each way, the original's (0, 0) at (`radius`,
/// `radius`). Separable: a running maximum along rows, then along columns.
public func dilated(_ mask: CoverageMask, radius: Int) -> CoverageMask {
    precondition(radius >= 0)
    let w = mask.width + 2 * radius, h = mask.height + 2 * radius
    let result = CoverageMask(width: w, height: h)
    guard mask.width > 0, mask.height > 0 else { return result }
    // Rows: each source row spread sideways into the padded width.
    let rows = CoverageMask(width: w, height: mask.height)
    for y in 0..<mask.height {
        let source = mask.row(y), out = rows.row(y)
        for x in 0..<w {
            var best: UInt8 = 0
            let lo = max(0, x - 2 * radius), hi = min(mask.width - 1, x)
            if lo <= hi { for k in lo...hi where source[k] > best { best = source[k] } }
            out[x] = best
        }
    }
    // Columns: the spread rows spread up and down into the padded height.
    for y in 0..<h {
        let out = result.row(y)
        let lo = max(0, y - 2 * radius), hi = min(mask.height - 1, y)
        guard lo <= hi else { continue }
        for k in lo...hi {
            let source = rows.row(k)
            for x in 0..<w where source[x] > out[x] { out[x] = source[x] }
        }
    }
    return result
}
