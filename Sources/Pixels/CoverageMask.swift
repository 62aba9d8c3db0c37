/// 8-bit single-channel images: how much of each pixel a mark covers (0 = none, 255 = all).
/// Text is rasterised into one, a shadow is a blurred one, and `composite(_:…)` paints one
/// over a photo in a colour. In two states, as `Image` and `Canvas`: a `MaskCanvas` is being
/// drawn on and has one owner (it cannot be copied); `finished()` makes it a `CoverageMask`,
/// read only, which any number of threads may share (a cache of rendered marks hands the same
/// mask to every worker). Bytes are reached only inside `withUnsafeRows` /
/// `withUnsafeMutableRows`.

/// A read-only view of a mask's rows, valid only inside the call that handed it out.
public struct MaskRows {
    /// Width in pixels (may be 0).
    public let width: Int
    /// Height in pixels (may be 0).
    public let height: Int
    /// The first byte of the first row; rows are `width` bytes apart.
    public let base: UnsafePointer<UInt8>

    /// The first byte of row `y`.
    @inline(__always) public subscript(y: Int) -> UnsafePointer<UInt8> { base + y * width }
}

/// A writable view of a mask canvas's rows, valid only inside the call that handed it out.
public struct MutableMaskRows {
    /// Width in pixels (may be 0).
    public let width: Int
    /// Height in pixels (may be 0).
    public let height: Int
    /// The first byte of the first row; rows are `width` bytes apart.
    public let base: UnsafeMutablePointer<UInt8>

    /// The first byte of row `y`.
    @inline(__always) public subscript(y: Int) -> UnsafeMutablePointer<UInt8> { base + y * width }

    /// The same rows, read only.
    public var readOnly: MaskRows { MaskRows(width: width, height: height, base: base) }
}

/// The bytes behind one mask: allocated zeroed, freed when the last owner lets go.
///
/// `@unchecked Sendable` for the same reason as `PixelStorage`: a `MaskCanvas` is its only
/// owner while it is drawn on, and once `finished()` hands it to a `CoverageMask` nothing
/// writes it again.
final class MaskStorage: @unchecked Sendable {
    let base: UnsafeMutablePointer<UInt8>

    init(width: Int, height: Int) {
        precondition(width >= 0 && height >= 0, "negative mask size \(width)×\(height)")
        let count = max(1, width * height)
        base = .allocate(capacity: count)
        base.initialize(repeating: 0, count: count)
    }

    deinit { base.deallocate() }
}

/// A finished coverage mask: read only, shared by value (copies share the bytes).
public struct CoverageMask: Sendable {
    /// Width in pixels (may be 0 for a mark with no ink).
    public let width: Int
    /// Height in pixels (may be 0).
    public let height: Int
    let storage: MaskStorage

    /// A mask with no coverage at all (a mark with no ink).
    public init(width: Int, height: Int) {
        self = MaskCanvas(width: width, height: height).finished()
    }

    init(width: Int, height: Int, storage: MaskStorage) {
        self.width = width
        self.height = height
        self.storage = storage
    }

    /// Lends the rows for reading.
    @inline(__always)
    public func withUnsafeRows<R: ~Copyable, E: Error>(_ body: (MaskRows) throws(E) -> R) throws(E) -> R {
        try body(MaskRows(width: width, height: height, base: storage.base))
    }

    /// The coverage at (x, y) (for tests and diagnostics).
    public subscript(x: Int, y: Int) -> UInt8 { storage.base[y * width + x] }

    /// The smallest rectangle holding every non-zero value, or nil when the mask is empty.
    public var inkBounds: PixelRect? {
        withUnsafeRows { rows in
            var minX = width, minY = height, maxX = -1, maxY = -1
            for y in 0..<height {
                let r = rows[y]
                for x in 0..<width where r[x] != 0 {
                    minX = min(minX, x); maxX = max(maxX, x)
                    minY = min(minY, y); maxY = max(maxY, y)
                }
            }
            return maxX < 0 ? nil : PixelRect(x: minX, y: minY, width: maxX - minX + 1, height: maxY - minY + 1)
        }
    }
}

/// A coverage mask being drawn on (glyphs rasterised into it, a blur written into it): one
/// owner, never copied. `finished()` ends the drawing.
public struct MaskCanvas: ~Copyable, Sendable {
    /// Width in pixels (may be 0).
    public let width: Int
    /// Height in pixels (may be 0).
    public let height: Int
    let storage: MaskStorage

    /// A canvas of zeros.
    /// - Parameters:
    ///   - width: pixels per row, 0 or more.
    ///   - height: rows, 0 or more.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
        storage = MaskStorage(width: width, height: height)
    }

    /// Lends the rows for reading.
    @inline(__always)
    public func withUnsafeRows<R: ~Copyable, E: Error>(_ body: (MaskRows) throws(E) -> R) throws(E) -> R {
        try body(MaskRows(width: width, height: height, base: storage.base))
    }

    /// Lends the rows for drawing.
    @inline(__always)
    public mutating func withUnsafeMutableRows<R: ~Copyable, E: Error>(_ body: (MutableMaskRows) throws(E) -> R) throws(E) -> R {
        try body(MutableMaskRows(width: width, height: height, base: storage.base))
    }

    /// The coverage at (x, y) (tests and small drawings; loops use rows).
    public subscript(x: Int, y: Int) -> UInt8 {
        get { storage.base[y * width + x] }
        set { storage.base[y * width + x] = newValue }
    }

    /// Ends the drawing: the same bytes, now read only.
    public consuming func finished() -> CoverageMask {
        CoverageMask(width: width, height: height, storage: storage)
    }
}

/// The mask grown by `radius` pixels on every side (a grey-level dilation with a square:
/// each pixel takes the largest coverage within `radius` of it), for the rim of an outlined
/// mark. The result is `2 × radius` larger each way, the original's (0, 0) at (`radius`,
/// `radius`). Separable: a running maximum along rows, then along columns.
public func dilated(_ mask: CoverageMask, radius: Int) -> CoverageMask {
    precondition(radius >= 0)
    let w = mask.width + 2 * radius, h = mask.height + 2 * radius
    var result = MaskCanvas(width: w, height: h)
    guard mask.width > 0, mask.height > 0 else { return result.finished() }
    // Rows: each source row spread sideways into the padded width.
    var spread = MaskCanvas(width: w, height: mask.height)
    mask.withUnsafeRows { source in
        spread.withUnsafeMutableRows { rows in
            for y in 0..<mask.height {
                let s = source[y], out = rows[y]
                for x in 0..<w {
                    var best: UInt8 = 0
                    let lo = max(0, x - 2 * radius), hi = min(mask.width - 1, x)
                    if lo <= hi { for k in lo...hi where s[k] > best { best = s[k] } }
                    out[x] = best
                }
            }
        }
    }
    // Columns: the spread rows spread up and down into the padded height.
    spread.withUnsafeRows { rows in
        result.withUnsafeMutableRows { out in
            for y in 0..<h {
                let o = out[y]
                let lo = max(0, y - 2 * radius), hi = min(mask.height - 1, y)
                guard lo <= hi else { continue }
                for k in lo...hi {
                    let source = rows[k]
                    for x in 0..<w where source[x] > o[x] { o[x] = source[x] }
                }
            }
        }
    }
    return result.finished()
}
