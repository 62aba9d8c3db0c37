import Synchronization

/// 8-bit interleaved images in two states, as libvips keeps them: an `Image` is finished and
/// read only (any number of threads may read it, it is never changed), a `Canvas` is being
/// drawn on and has exactly one owner (it cannot be copied, only moved or lent). A canvas
/// becomes an image with `finished()`, without copying a byte; nothing turns an image back
/// into a canvas except a new canvas written from it.
///
/// Pixels are RGB (3 channels) or RGBA (4, straight alpha), rows tightly packed
/// (`rowBytes == width * channels`), and reached only inside `withUnsafeRows` /
/// `withUnsafeMutableRows`: the pointers they hand out are valid during that call.

/// A read-only view of an image's rows, valid only inside the `withUnsafeRows` call that
/// handed it out.
public struct PixelRows {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// 3 (RGB) or 4 (RGBA).
    public let channels: Int
    /// The first byte of the first row.
    public let base: UnsafePointer<UInt8>

    /// Bytes from one row to the next (`width * channels`).
    @inline(__always) public var rowBytes: Int { width * channels }

    /// The first byte of row `y`.
    @inline(__always) public subscript(y: Int) -> UnsafePointer<UInt8> { base + y * rowBytes }

    /// Bytes held by the pixels.
    public var byteCount: Int { rowBytes * height }

    /// The pixel at (x, y) as `channels` values (tests and diagnostics; loops use rows).
    public func pixel(_ x: Int, _ y: Int) -> [UInt8] {
        let p = self[y] + x * channels
        return (0..<channels).map { p[$0] }
    }
}

/// A writable view of a canvas's rows, valid only inside the `withUnsafeMutableRows` call
/// that handed it out.
public struct MutablePixelRows {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// 3 (RGB) or 4 (RGBA).
    public let channels: Int
    /// The first byte of the first row.
    public let base: UnsafeMutablePointer<UInt8>

    /// Bytes from one row to the next (`width * channels`).
    @inline(__always) public var rowBytes: Int { width * channels }

    /// The first byte of row `y`.
    @inline(__always) public subscript(y: Int) -> UnsafeMutablePointer<UInt8> { base + y * rowBytes }

    /// The same rows, read only.
    public var readOnly: PixelRows { PixelRows(width: width, height: height, channels: channels, base: base) }
}

/// The bytes behind one image, canvas, band or pixel scratch: allocated once (large blocks
/// from the `PixelPool`), freed when the last owner lets go, and counted by the `PixelMeter`
/// that was active when they were made.
///
/// `@unchecked Sendable` because the pointer is shared by reference; what makes that safe is
/// who can reach it: a `Canvas` is its only owner while it is drawn on (and cannot be
/// copied), and once `finished()` hands it to an `Image`, nothing writes it again. Bands and
/// scratch rows never leave the object that made them.
final class PixelStorage: @unchecked Sendable {
    let base: UnsafeMutablePointer<UInt8>
    let byteCount: Int
    private let meter: PixelMeter?

    /// - Parameter prefault: a large block written whole once and kept a while (`PixelPool.allocate`).
    init(byteCount: Int, prefault: Bool = false) {
        self.byteCount = byteCount
        base = PixelPool.shared.allocate(byteCount, prefault: prefault)
        meter = PixelMeter.current
        meter?.add(byteCount)
    }

    deinit {
        meter?.add(-byteCount)
        PixelPool.shared.deallocate(base, bytes: byteCount)
    }
}

/// Counts the pixel memory (images, canvases, bands, rows of scratch) made while it is
/// active in a task, and the most held at once: what a recipe really holds, measured through
/// the types that hold it (tests bound it; the memory budget is built on it).
public final class PixelMeter: Sendable {
    /// The meter pixel memory made in this task is counted by (none by default).
    @TaskLocal public static var current: PixelMeter?

    private let state = Mutex((now: 0, peak: 0))

    public init() {}

    /// Bytes held now.
    public var bytes: Int { state.withLock { $0.now } }
    /// The most bytes held at once.
    public var peak: Int { state.withLock { $0.peak } }

    func add(_ count: Int) {
        state.withLock {
            $0.now += count
            $0.peak = max($0.peak, $0.now)
        }
    }

    /// Runs `body` with this meter counting the pixel memory it makes.
    public func measure<R>(_ body: () throws -> R) rethrows -> R {
        try Self.$current.withValue(self, operation: body)
    }
}

/// Checks a size and returns its byte count.
func pixelBytes(_ width: Int, _ height: Int, _ channels: Int) -> Int {
    precondition(width > 0 && height > 0, "empty image \(width)×\(height)")
    precondition(channels == 3 || channels == 4, "channels must be 3 or 4")
    return width * height * channels
}

/// A finished image: read only, so it may be shared between threads and kept in caches;
/// copies of an `Image` value share the same pixels.
public struct Image: Sendable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// 3 (RGB) or 4 (RGBA).
    public let channels: Int
    let storage: PixelStorage

    init(width: Int, height: Int, channels: Int, storage: PixelStorage) {
        self.width = width
        self.height = height
        self.channels = channels
        self.storage = storage
    }

    /// An image of one colour.
    /// - Parameter fill: `channels` values.
    public init(width: Int, height: Int, channels: Int, fill: [UInt8]) {
        self = Canvas(width: width, height: height, channels: channels, fill: fill).finished()
    }

    /// An image whose rows `body` writes, once, before anyone can read them (a decode, a
    /// generated picture).
    /// - Parameter body: must write every byte of every row.
    public init<E: Error>(width: Int, height: Int, channels: Int,
                          writingRows body: (MutablePixelRows) throws(E) -> Void) throws(E) {
        var canvas = Canvas(width: width, height: height, channels: channels)
        try canvas.withUnsafeMutableRows(body)
        self = canvas.finished()
    }

    /// Bytes from one row to the next.
    public var rowBytes: Int { width * channels }

    /// Bytes held by the pixels.
    public var byteCount: Int { rowBytes * height }

    /// Lends the rows for reading.
    @inline(__always)
    public func withUnsafeRows<R: ~Copyable, E: Error>(_ body: (PixelRows) throws(E) -> R) throws(E) -> R {
        try body(PixelRows(width: width, height: height, channels: channels, base: storage.base))
    }

    /// The pixel at (x, y) as `channels` values (tests and diagnostics).
    public func pixel(_ x: Int, _ y: Int) -> [UInt8] {
        withUnsafeRows { $0.pixel(x, y) }
    }
}

/// An image being drawn on: one owner, never copied. Hand it on with `consume`, lend it with
/// `inout`, and end it with `finished()` when it is done.
public struct Canvas: ~Copyable, Sendable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// 3 (RGB) or 4 (RGBA).
    public let channels: Int
    let storage: PixelStorage

    /// A canvas whose pixels are not yet written: the caller writes every row before reading.
    /// - Parameters:
    ///   - width: pixels per row, at least 1.
    ///   - height: rows, at least 1.
    ///   - channels: 3 or 4.
    public init(width: Int, height: Int, channels: Int) {
        let bytes = pixelBytes(width, height, channels)
        self.width = width
        self.height = height
        self.channels = channels
        storage = PixelStorage(byteCount: bytes)
    }

    /// Takes over pixels a producer in this module wrote, one owner from now on.
    init(width: Int, height: Int, channels: Int, storage: PixelStorage) {
        precondition(storage.byteCount == pixelBytes(width, height, channels), "storage does not fit the size")
        self.width = width
        self.height = height
        self.channels = channels
        self.storage = storage
    }

    /// A canvas of one colour (one row filled, then copied: fast for tall canvases).
    /// - Parameter fill: `channels` values.
    public init(width: Int, height: Int, channels: Int, fill: [UInt8]) {
        self.init(width: width, height: height, channels: channels)
        precondition(fill.count == channels, "\(fill.count) fill values for \(channels) channels")
        withUnsafeMutableRows { rows in
            let first = rows[0]
            for x in 0..<width { for c in 0..<channels { first[x * channels + c] = fill[c] } }
            for y in 1..<height { rows[y].update(from: first, count: rows.rowBytes) }
        }
    }

    /// Bytes from one row to the next.
    public var rowBytes: Int { width * channels }

    /// Bytes held by the pixels.
    public var byteCount: Int { rowBytes * height }

    /// Lends the rows for reading.
    @inline(__always)
    public func withUnsafeRows<R: ~Copyable, E: Error>(_ body: (PixelRows) throws(E) -> R) throws(E) -> R {
        try body(PixelRows(width: width, height: height, channels: channels, base: storage.base))
    }

    /// Lends the rows for drawing.
    @inline(__always)
    public mutating func withUnsafeMutableRows<R: ~Copyable, E: Error>(_ body: (MutablePixelRows) throws(E) -> R) throws(E) -> R {
        try body(MutablePixelRows(width: width, height: height, channels: channels, base: storage.base))
    }

    /// The pixel at (x, y) as `channels` values (tests and diagnostics).
    public func pixel(_ x: Int, _ y: Int) -> [UInt8] {
        withUnsafeRows { $0.pixel(x, y) }
    }

    /// Ends the drawing: the same pixels, now read only.
    public consuming func finished() -> Image {
        Image(width: width, height: height, channels: channels, storage: storage)
    }
}
