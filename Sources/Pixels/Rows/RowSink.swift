/// Where a producer (a decoder, the resampler) puts an image's rows as it finishes them,
/// top to bottom, so the consumer decides whether the image is ever whole: a canvas keeps
/// every row, an upright band writer keeps a band.
public protocol RowSink: AnyObject {
    /// Where row `y` goes: `width * channels` writable bytes, valid until `rowWritten(y)`.
    func rowBuffer(_ y: Int) -> UnsafeMutablePointer<UInt8>
    /// Row `y` is complete.
    func rowWritten(_ y: Int)
}

/// Takes an image a band of rows at a time, top to bottom. The rows may be drawn on during
/// the call and are gone after it.
public protocol BandSink: AnyObject {
    /// - Parameters:
    ///   - band: the band's rows (`band.height` of them, the last band may be shorter).
    ///   - top: the image row of the band's first row.
    func take(_ band: MutablePixelRows, top: Int)
}

/// A row sink that keeps every row: the whole image, handed over once as a `Canvas`.
public final class CanvasRows: RowSink {
    public let width: Int
    public let height: Int
    public let channels: Int
    private let storage: PixelStorage
    private var handedOver = false

    /// - Parameter prefault: its pixels are written whole and kept a while (a photo's output
    ///   held while its batch's light is found): its pages mapped at once (`PixelPool.allocate`).
    public init(width: Int, height: Int, channels: Int, prefault: Bool = false) {
        self.width = width
        self.height = height
        self.channels = channels
        storage = PixelStorage(byteCount: pixelBytes(width, height, channels), prefault: prefault)
    }

    public func rowBuffer(_ y: Int) -> UnsafeMutablePointer<UInt8> {
        precondition(!handedOver, "rows written after the canvas was handed over")
        return storage.base + y * width * channels
    }

    public func rowWritten(_ y: Int) {}

    /// The image, handed over once, after its last row.
    public func take() -> Canvas {
        precondition(!handedOver, "the canvas was already handed over")
        handedOver = true
        return Canvas(width: width, height: height, channels: channels, storage: storage)
    }
}

/// Rows of scratch, reused band after band by the one object that owns them (a band
/// flattened or framed on its way to an encoder): a small, counted buffer, never shared.
public final class BandBuffer {
    public let width: Int
    /// Rows it holds at most.
    public let capacity: Int
    public let channels: Int
    private let storage: PixelStorage

    public init(width: Int, rows: Int, channels: Int) {
        self.width = width
        capacity = rows
        self.channels = channels
        storage = PixelStorage(byteCount: pixelBytes(width, rows, channels))
    }

    /// The first `count` rows, to be written and read during the caller's use of them.
    public func rows(_ count: Int) -> MutablePixelRows {
        precondition(count > 0 && count <= capacity, "\(count) rows of a \(capacity)-row buffer")
        return MutablePixelRows(width: width, height: count, channels: channels, base: storage.base)
    }
}
