/// Rows arriving in stored orientation (as a decoder or the resampler delivers them), handed
/// on upright, a band at a time, to a `BandSink`.
///
/// - EXIF orientations 1 and 2 (as stored, or mirrored left to right) stream: each band is
///   handed on as soon as its rows are in, so the image is never whole — one band of memory,
///   reused for the next.
/// - The others (180°, upside-down mirror, the four quarter turns) need the last stored row
///   for the first upright one. The upright image is built once, each row written into place
///   as it arrives (a quarter turn writes a stored row down an upright column, a few rows at
///   a time so both stay in cache), never held twice; after the last row `finish()` hands it
///   on band by band, and each band's memory goes back as soon as it has been handed on.
/// - `holdWhole` makes orientations 1 and 2 build the whole image too (when something must
///   look at the whole photo before its first band is drawn on).
///
/// Not thread-safe: one writer belongs to one decode.
public final class UprightRows: RowSink {
    /// Upright width in pixels.
    public let width: Int
    /// Upright height in pixels.
    public let height: Int
    /// 3 (RGB) or 4 (RGBA).
    public let channels: Int
    /// Rows per band (the last band may be shorter).
    public let bandRows: Int
    /// True when the whole upright image is built before any band is handed on.
    public let holdsWholeImage: Bool

    private let storedWidth: Int
    private let storedHeight: Int
    private let map: StoredMap
    private let sink: BandSink
    private let rowBytes: Int
    private let storedRowBytes: Int
    /// Bytes from one gathered stored row to the next in `tile` (`tileStride(rowBytes:)`).
    private let tileStride: Int

    /// Streaming: the band being filled, and the image row of its first row.
    private var band: PixelStorage?
    private var bandTop = 0
    /// Whole image, in bands (made when first written, freed once handed on); nil when it streams.
    private let whole: BandedImage?
    /// A stored row waiting to be mirrored into place.
    private var scratch: PixelStorage?
    /// Quarter turns: stored rows gathered before they are written down the columns.
    private var tile: PixelStorage?
    private var tileTop = 0
    private static let tileRows = 32
    private var finished = false

    /// - Parameters:
    ///   - storedWidth: width of the rows that will arrive.
    ///   - storedHeight: how many rows will arrive.
    ///   - channels: 3 or 4.
    ///   - exif: the orientation (1–8) that turns the stored rows upright.
    ///   - holdWhole: build the whole upright image even when it could stream.
    ///   - sink: takes the upright bands.
    public init(storedWidth: Int, storedHeight: Int, channels: Int, exif: Int, holdWhole: Bool = false,
                into sink: BandSink) {
        let size = Orientation.uprightSize(width: storedWidth, height: storedHeight, exif: exif)
        self.storedWidth = storedWidth
        self.storedHeight = storedHeight
        width = size.width
        height = size.height
        self.channels = channels
        self.sink = sink
        map = StoredMap(exif: exif, storedWidth: storedWidth, storedHeight: storedHeight)
        rowBytes = size.width * channels
        storedRowBytes = storedWidth * channels
        tileStride = Self.tileStride(rowBytes: storedRowBytes)
        bandRows = Self.rowsPerBand(rowBytes: rowBytes, height: size.height)
        let streams = map.yy == 1  // 1 and 2: stored rows are upright rows, in order
        holdsWholeImage = holdWhole || !streams
        whole = holdsWholeImage ? BandedImage(rowBytes: rowBytes, height: size.height, bandRows: bandRows) : nil
        if map.xx == 0 {
            tile = PixelStorage(byteCount: Self.tileRows * tileStride + 1)  // + the last 4-byte load's slack
        } else if map.xx == -1 {
            scratch = PixelStorage(byteCount: storedRowBytes)
        }
        if !holdsWholeImage { band = PixelStorage(byteCount: bandRows * rowBytes) }
    }

    /// At least 1 MiB a band and a multiple of 16 rows (two JPEG MCU rows): a band's own
    /// mapping goes back to the system when it is freed, and encoders take whole row groups.
    public static func rowsPerBand(rowBytes: Int, height: Int) -> Int {
        let rows = ((1 << 20) + rowBytes - 1) / rowBytes
        return min(height, max(16, (rows + 15) / 16 * 16))
    }

    /// The tile's row stride for stored rows of `rowBytes`: whole 64-byte cache lines, an odd
    /// number of them, so the tile's rows start in different cache sets. A quarter turn reads
    /// one pixel of every gathered row for each upright row; at a stride of a multiple of
    /// 2 KiB (a 2048-px RGB output: 6,144 bytes) all of them fall in two sets of the L1 cache,
    /// evict each other and are fetched again for every upright row.
    static func tileStride(rowBytes: Int) -> Int {
        let lines = (rowBytes + 63) / 64
        return (lines | 1) * 64
    }

    // MARK: - RowSink

    public func rowBuffer(_ y: Int) -> UnsafeMutablePointer<UInt8> {
        precondition(y >= 0 && y < storedHeight && !finished, "stored row \(y) of \(storedHeight)")
        if let tile { return tile.base + (y - tileTop) * tileStride }
        if let scratch { return scratch.base }
        // Kept as it arrives: the band's row, or its place in the whole image.
        if let band { return band.base + (y - bandTop) * rowBytes }
        return wholeRow(uprightRow(y))
    }

    public func rowWritten(_ y: Int) {
        if tile != nil {
            if y - tileTop + 1 == Self.tileRows || y == storedHeight - 1 { writeTile(rows: y - tileTop + 1) }
            return
        }
        if let scratch {
            let target = band.map { $0.base + (y - bandTop) * rowBytes } ?? wholeRow(uprightRow(y))
            mirror(scratch.base, into: target)
        }
        if let band, y - bandTop + 1 == bandRows || y == storedHeight - 1 {
            let rows = y - bandTop + 1
            sink.take(MutablePixelRows(width: width, height: rows, channels: channels, base: band.base), top: bandTop)
            bandTop = y + 1
        }
    }

    /// After the last row: hands on the whole image band by band (nothing to do when the
    /// bands streamed), freeing each band once it has been handed on.
    public func finish() {
        precondition(!finished, "finished twice")
        finished = true
        band = nil
        scratch = nil
        tile = nil
        guard let whole else { return }
        for index in 0..<whole.count {
            guard let chunk = whole.release(index) else { preconditionFailure("band \(index) was never written") }
            let (top, rows) = whole.rows(ofBand: index)
            sink.take(MutablePixelRows(width: width, height: rows, channels: channels, base: chunk.base), top: top)
        }
    }

    // MARK: - Whole image

    /// Row `y` of the whole upright image (its band made on first use).
    private func wholeRow(_ y: Int) -> UnsafeMutablePointer<UInt8> {
        guard let whole else { preconditionFailure("a streaming writer holds no whole image") }
        return whole.row(y)
    }

    /// The upright row a stored row lands on (orientations that keep rows as rows).
    private func uprightRow(_ storedRow: Int) -> Int { (storedRow - map.y0) * map.yy }

    /// A stored row written right to left.
    private func mirror(_ source: UnsafeMutablePointer<UInt8>, into target: UnsafeMutablePointer<UInt8>) {
        let c = channels
        for x in 0..<width {
            let s = source + (width - 1 - x) * c, d = target + x * c
            for k in 0..<c { d[k] = s[k] }
        }
    }

    /// Quarter turns: `rows` gathered stored rows written down their upright columns
    /// (`StoredMap.quarterTurnRun`): each upright row gets a run of `rows` pixels side by
    /// side, written left to right; the band's storage is looked up once per band, not per row.
    private func writeTile(rows: Int) {
        guard let tile, let whole else { return }
        let c = channels
        let run = map.quarterTurnRun(top: tileTop, rows: rows, stride: tileStride)
        let firstSource = tile.base + run.firstRow
        for index in 0..<whole.count {
            let storage = whole.band(index)
            let (top, count) = whole.rows(ofBand: index)
            var d = storage.base + run.leftmost * c
            for y in top..<(top + count) {
                let s = firstSource + (map.x0 + map.yx * y) * c
                if c == 3 { Self.runRGB(from: s, step: run.step, to: d, count: rows) } else {
                    Self.runRGBA(from: s, step: run.step, to: d, count: rows)
                }
                d += rowBytes
            }
            withExtendedLifetime(storage) {}
        }
        tileTop += rows
    }

    /// `count` RGB pixels, `step` bytes apart, written side by side: 4-byte loads and stores
    /// (the fourth byte lands on the next pixel's place and is overwritten by it), the last
    /// pixel byte by byte so nothing past the run is touched. The tile has a byte of slack
    /// for the 4-byte load of its very last pixel.
    @inline(__always)
    private static func runRGB(from source: UnsafeMutablePointer<UInt8>, step: Int, to target: UnsafeMutablePointer<UInt8>,
                               count: Int) {
        var s = UnsafeRawPointer(source), d = UnsafeMutableRawPointer(target)
        for _ in 0..<(count - 1) {
            d.storeBytes(of: s.loadUnaligned(as: UInt32.self), as: UInt32.self)
            s += step
            d += 3
        }
        d.storeBytes(of: s.loadUnaligned(as: UInt16.self), as: UInt16.self)
        d.storeBytes(of: s.load(fromByteOffset: 2, as: UInt8.self), toByteOffset: 2, as: UInt8.self)
    }

    /// `count` RGBA pixels, `step` bytes apart, written side by side.
    @inline(__always)
    private static func runRGBA(from source: UnsafeMutablePointer<UInt8>, step: Int, to target: UnsafeMutablePointer<UInt8>,
                                count: Int) {
        var s = UnsafeRawPointer(source), d = UnsafeMutableRawPointer(target)
        for _ in 0..<count {
            d.storeBytes(of: s.loadUnaligned(as: UInt32.self), as: UInt32.self)
            s += step
            d += 4
        }
    }
}
