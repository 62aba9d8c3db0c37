/// A band of a JPEG's planes as libjpeg stores them (YCbCr, chroma halved across and, for
/// 4:2:0, down): `lumaRows` rows of luma from image row `top`, `chromaRows` rows of each
/// chroma plane from chroma row `chromaTop`. Rows are `…Stride` bytes apart; valid only
/// during the call that hands them over.
public struct PlaneRows {
    public var top: Int
    public var lumaRows: Int
    public var luma: UnsafePointer<UInt8>
    public var lumaStride: Int
    public var chromaTop: Int
    public var chromaRows: Int
    public var cb: UnsafePointer<UInt8>
    public var cr: UnsafePointer<UInt8>
    public var chromaStride: Int
    /// The picture's width in luma pixels.
    public var width: Int

    public init(top: Int, lumaRows: Int, luma: UnsafePointer<UInt8>, lumaStride: Int, chromaTop: Int, chromaRows: Int,
                cb: UnsafePointer<UInt8>, cr: UnsafePointer<UInt8>, chromaStride: Int, width: Int) {
        self.top = top
        self.lumaRows = lumaRows
        self.luma = luma
        self.lumaStride = lumaStride
        self.chromaTop = chromaTop
        self.chromaRows = chromaRows
        self.cb = cb
        self.cr = cr
        self.chromaStride = chromaStride
        self.width = width
    }
}

/// A JPEG turned upright while it is still YCbCr planes (`UprightRows`' job for a photo that
/// must be held whole, at half the memory for 4:2:0): each plane's rows are written into
/// their upright place as they arrive; after the last, `finish()` makes each upright band
/// RGB — chroma upsampled with libjpeg's "fancy" triangle filter (¾ nearer, ¼ further), the
/// colour converted with libjpeg's own fixed-point tables — and hands it to the sink.
///
/// Both sides of the picture must be even, so every chroma sample covers whole luma pairs
/// whichever way the picture is turned. The result is libjpeg's own RGB, byte for byte: the
/// triangle filter's sum is the same whichever axis is summed first, and its rounding bias
/// (libjpeg-turbo's jdsample.c: 8 and 7 for 4:2:0, 1 and 2 in quarters for 4:2:2) follows the
/// parity of the *stored* column. (libjpeg does not filter chroma 2 samples wide or less:
/// such pictures are not for this type.) The luma plane is held in bands, each freed once
/// handed on; the chroma planes (a quarter of luma each for 4:2:0) whole.
///
/// Not thread-safe: one writer belongs to one decode.
public final class UprightPlanes {
    /// Upright width and height in pixels.
    public let width: Int
    public let height: Int
    /// Rows per band handed on (the last may be shorter).
    public let bandRows: Int

    private let sink: BandSink
    private let storedWidth: Int
    private let storedHeight: Int
    private let exif: Int
    /// Stored chroma size, and upright chroma size.
    private let chromaWidth: Int
    private let chromaHeight: Int
    private let uprightChroma: (width: Int, height: Int)
    /// Luma pixels per chroma sample across and down, upright.
    private let across: Int
    private let down: Int
    /// Upright columns run along stored rows (a quarter turn: the stored column is the
    /// upright row), and whether the stored column's parity is the upright one's flipped.
    private let turned: Bool
    private let flipped: Bool
    /// The filter's rounding, in sixteenths, for an even and an odd stored column.
    private let evenBias: Int32
    private let oddBias: Int32
    /// The upright luma plane, in bands freed as they are handed on.
    private let luma: BandedImage
    private let cb: PixelStorage
    private let cr: PixelStorage
    private var finished = false

    /// - Parameters:
    ///   - storedWidth, storedHeight: the picture as stored (both even).
    ///   - lumaRowsPerChromaRow: 2 (4:2:0) or 1 (4:2:2).
    ///   - exif: the orientation (1–8) that turns it upright.
    ///   - sink: takes the upright RGB bands.
    public init(storedWidth: Int, storedHeight: Int, lumaRowsPerChromaRow: Int, exif: Int, into sink: BandSink) {
        precondition(storedWidth % 2 == 0 && storedHeight % 2 == 0 && storedWidth > 0 && storedHeight > 0,
                     "planes need even sides, not \(storedWidth)×\(storedHeight)")
        precondition(lumaRowsPerChromaRow == 1 || lumaRowsPerChromaRow == 2)
        self.storedWidth = storedWidth
        self.storedHeight = storedHeight
        self.exif = exif
        self.sink = sink
        let size = Orientation.uprightSize(width: storedWidth, height: storedHeight, exif: exif)
        width = size.width
        height = size.height
        chromaWidth = storedWidth / 2
        chromaHeight = storedHeight / lumaRowsPerChromaRow
        let map = StoredMap(exif: exif, storedWidth: storedWidth, storedHeight: storedHeight)
        let turned = map.xx == 0
        self.turned = turned
        uprightChroma = turned ? (chromaHeight, chromaWidth) : (chromaWidth, chromaHeight)
        across = turned ? lumaRowsPerChromaRow : 2
        down = turned ? 2 : lumaRowsPerChromaRow
        flipped = turned ? map.yx < 0 : map.xx < 0  // sides are even: w − 1 − x flips parity
        (evenBias, oddBias) = lumaRowsPerChromaRow == 2 ? (8, 7) : (4, 8)
        bandRows = UprightRows.rowsPerBand(rowBytes: size.width * 3, height: size.height)
        luma = BandedImage(rowBytes: size.width, height: size.height, bandRows: bandRows)
        cb = PixelStorage(byteCount: chromaWidth * chromaHeight)
        cr = PixelStorage(byteCount: chromaWidth * chromaHeight)
    }

    /// Places a band of stored planes (rows past the picture are ignored).
    public func take(_ rows: PlaneRows) {
        precondition(!finished && rows.width == storedWidth, "planes after finish, or of another width")
        let lumaCount = min(rows.lumaRows, storedHeight - rows.top)
        if lumaCount > 0 {
            place(rows.luma, stride: rows.lumaStride, rows: lumaCount, top: rows.top, planeWidth: storedWidth,
                  planeHeight: storedHeight) { uy in self.luma.row(uy) }
        }
        let chromaCount = min(rows.chromaRows, chromaHeight - rows.chromaTop)
        if chromaCount > 0 {
            let upW = uprightChroma.width
            for (source, plane) in [(rows.cb, cb), (rows.cr, cr)] {
                let base = plane.base
                place(source, stride: rows.chromaStride, rows: chromaCount, top: rows.chromaTop, planeWidth: chromaWidth,
                      planeHeight: chromaHeight) { uy in base + uy * upW }
            }
        }
    }

    /// After the last band of planes: the upright picture, RGB, band by band.
    public func finish() {
        precondition(!finished, "finished twice")
        finished = true
        let out = BandBuffer(width: width, rows: bandRows, channels: 3)
        let cw = uprightChroma.width
        let sums = UnsafeMutablePointer<Int32>.allocate(capacity: 2 * cw)
        defer { sums.deallocate() }
        for index in 0..<luma.count {
            let (top, count) = luma.rows(ofBand: index)
            let rows = out.rows(count)
            for y in 0..<count {
                columnSums(row: top + y, into: sums)
                convert(luma: luma.row(top + y), sums: sums, row: top + y, into: rows[y])
            }
            sink.take(rows, top: top)
            _ = luma.release(index)
        }
    }

    // MARK: - Placing stored rows

    /// Writes `rows` stored rows of a one-byte plane (from stored row `top`) into their
    /// upright places; `row(uy)` is the upright plane's row `uy`.
    private func place(_ source: UnsafePointer<UInt8>, stride: Int, rows: Int, top: Int, planeWidth: Int,
                       planeHeight: Int, row: (Int) -> UnsafeMutablePointer<UInt8>) {
        let map = StoredMap(exif: exif, storedWidth: planeWidth, storedHeight: planeHeight)
        if map.xx == 0 {
            // A quarter turn (`StoredMap.quarterTurnRun`): stored column sx is upright row
            // (sx − x0)·yx, where it takes a run of `rows` bytes.
            let run = map.quarterTurnRun(top: top, rows: rows, stride: stride)
            for sx in 0..<planeWidth {
                let d = row((sx - map.x0) * map.yx) + run.leftmost
                var s = source + run.firstRow + sx
                for k in 0..<rows {
                    d[k] = s.pointee
                    s += run.step
                }
            }
        } else {
            for k in 0..<rows {
                let d = row((top + k - map.y0) * map.yy)
                let s = source + k * stride
                if map.xx > 0 {
                    d.update(from: s, count: planeWidth)
                } else {
                    for x in 0..<planeWidth { d[x] = s[planeWidth - 1 - x] }
                }
            }
        }
    }

    // MARK: - Upsampling and colour

    /// For upright luma row `y`: each upright chroma column's vertical sum, ¾ of the nearer
    /// chroma row and ¼ of the further one, times 16 (×4 when chroma is not halved down),
    /// Cb in `sums[0..<cw]`, Cr after it.
    private func columnSums(row y: Int, into sums: UnsafeMutablePointer<Int32>) {
        let cw = uprightChroma.width, ch = uprightChroma.height
        for (plane, offset) in [(cb, 0), (cr, cw)] {
            let s = sums + offset
            if down == 2 {
                let near = y / 2
                let far = min(max(y % 2 == 0 ? near - 1 : near + 1, 0), ch - 1)
                let a = plane.base + near * cw, b = plane.base + far * cw
                for x in 0..<cw { s[x] = 3 * Int32(a[x]) + Int32(b[x]) }
            } else {
                let a = plane.base + y * cw
                for x in 0..<cw { s[x] = 4 * Int32(a[x]) }
            }
        }
    }

    /// One upright RGB row (`row`) from its luma and its chroma column sums (libjpeg's
    /// jdcolor.c arithmetic: 16-bit fixed point, ½ added before the shift). Columns go two by
    /// two when chroma is halved across: both share the nearer sum, the even one takes its left
    /// neighbour, the odd one its right.
    private func convert(luma: UnsafeMutablePointer<UInt8>, sums: UnsafeMutablePointer<Int32>, row: Int,
                         into out: UnsafeMutablePointer<UInt8>) {
        let cw = uprightChroma.width
        let cbSums = sums, crSums = sums + cw
        let t = YCbCrTables.shared
        let flip = flipped ? 1 : 0
        // The stored column is the upright row when turned, else the upright column.
        let rowBias = (row & 1) ^ flip == 0 ? evenBias : oddBias
        let firstBias = turned ? rowBias : (flip == 0 ? evenBias : oddBias)
        let secondBias = turned ? rowBias : (flip == 0 ? oddBias : evenBias)
        @inline(__always) func pixel(_ x: Int, _ cb: Int32, _ cr: Int32) {
            let y = Int32(luma[x]), d = out + x * 3
            let b = Int(cb), r = Int(cr)
            d[0] = UInt8(truncatingIfNeeded: min(max(y + t.crR[r], 0), 255))
            d[1] = UInt8(truncatingIfNeeded: min(max(y + ((t.cbG[b] + t.crG[r]) >> 16), 0), 255))
            d[2] = UInt8(truncatingIfNeeded: min(max(y + t.cbB[b], 0), 255))
        }
        if across == 2 {
            @inline(__always) func pair(_ k: Int) {
                let left = max(k - 1, 0), right = min(k + 1, cw - 1)
                let cbNear = 3 * cbSums[k], crNear = 3 * crSums[k]
                pixel(2 * k, (cbNear + cbSums[left] + firstBias) >> 4, (crNear + crSums[left] + firstBias) >> 4)
                pixel(2 * k + 1, (cbNear + cbSums[right] + secondBias) >> 4, (crNear + crSums[right] + secondBias) >> 4)
            }
            // Four chroma columns (eight pixels) at a time away from the edges, in 32-bit
            // lanes with the tables' own arithmetic; the edges one pair at a time.
            let vectorEnd = cw >= 6 ? 1 + (cw - 2) / 4 * 4 : 1
            pair(0)
            var k = 1
            while k < vectorEnd {
                convert8(luma: luma + 2 * k, cb: cbSums + k, cr: crSums + k, first: firstBias, second: secondBias,
                         into: out + 6 * k)
                k += 4
            }
            while k < cw { pair(k); k += 1 }
        } else {
            for x in 0..<width {
                let bias = turned ? rowBias : ((x & 1) ^ flip == 0 ? evenBias : oddBias)
                pixel(x, (4 * cbSums[x] + bias) >> 4, (4 * crSums[x] + bias) >> 4)
            }
        }
    }
}

extension UprightPlanes {
    /// Eight pixels from four chroma columns' sums (`cb[-1...4]`, `cr[-1...4]` are read):
    /// the even pixel of each pair takes the left neighbour, the odd one the right. The
    /// colour is `YCbCrTables`' arithmetic, computed in lanes.
    @inline(__always)
    fileprivate func convert8(luma: UnsafeMutablePointer<UInt8>, cb: UnsafeMutablePointer<Int32>,
                              cr: UnsafeMutablePointer<Int32>, first: Int32, second: Int32,
                              into out: UnsafeMutablePointer<UInt8>) {
        @inline(__always) func load(_ p: UnsafeMutablePointer<Int32>) -> SIMD4<Int32> {
            UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Int32>.self)
        }
        @inline(__always) func upsampled(_ sums: UnsafeMutablePointer<Int32>) -> SIMD8<Int32> {
            let near = 3 &* load(sums)
            let even = (near &+ load(sums - 1) &+ first) &>> 4
            let odd = (near &+ load(sums + 1) &+ second) &>> 4
            return SIMD8(even[0], odd[0], even[1], odd[1], even[2], odd[2], even[3], odd[3]) &- 128
        }
        let b = upsampled(cb), r = upsampled(cr)
        let y = SIMD8<Int32>(truncatingIfNeeded: UnsafeRawPointer(luma).loadUnaligned(as: SIMD8<UInt8>.self))
        let half = SIMD8<Int32>(repeating: YCbCrTables.half)
        var red = y &+ ((YCbCrTables.crToR &* r &+ half) &>> 16)
        var green = y &+ ((half &- YCbCrTables.cbToG &* b &- YCbCrTables.crToG &* r) &>> 16)
        var blue = y &+ ((YCbCrTables.cbToB &* b &+ half) &>> 16)
        let zero = SIMD8<Int32>.zero, top = SIMD8<Int32>(repeating: 255)
        red.clamp(lowerBound: zero, upperBound: top)
        green.clamp(lowerBound: zero, upperBound: top)
        blue.clamp(lowerBound: zero, upperBound: top)
        for i in 0..<8 {
            out[3 * i] = UInt8(truncatingIfNeeded: red[i])
            out[3 * i + 1] = UInt8(truncatingIfNeeded: green[i])
            out[3 * i + 2] = UInt8(truncatingIfNeeded: blue[i])
        }
    }
}

/// libjpeg's YCbCr → RGB tables (jdcolor.c, `build_ycc_rgb_table`), so converted planes
/// match its own conversion. Made once and never freed; read only.
final class YCbCrTables: @unchecked Sendable {
    static let shared = YCbCrTables()
    /// The coefficients in 16-bit fixed point (jdcolor.c's `FIX`), and ½ for rounding.
    static let crToR = fix(1.40200), cbToB = fix(1.77200), crToG = fix(0.71414), cbToG = fix(0.34414)
    static let half: Int32 = 1 << 15
    let crR: UnsafeMutablePointer<Int32>, cbB: UnsafeMutablePointer<Int32>
    let crG: UnsafeMutablePointer<Int32>, cbG: UnsafeMutablePointer<Int32>

    private static func fix(_ x: Double) -> Int32 { Int32(x * 65536 + 0.5) }

    private init() {
        func table(_ value: (Int32) -> Int32) -> UnsafeMutablePointer<Int32> {
            let t = UnsafeMutablePointer<Int32>.allocate(capacity: 256)
            for i in 0..<256 { t[i] = value(Int32(i) - 128) }
            return t
        }
        let half = Self.half
        crR = table { (Self.crToR * $0 + half) >> 16 }
        cbB = table { (Self.cbToB * $0 + half) >> 16 }
        crG = table { -Self.crToG * $0 }
        cbG = table { -Self.cbToG * $0 + half }
    }
}
