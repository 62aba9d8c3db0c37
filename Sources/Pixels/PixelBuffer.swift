/// An 8-bit interleaved image in memory: RGB (3 channels) or RGBA (4 channels, straight
/// alpha). It owns its pixels: allocated once, freed in `deinit`.
///
/// Rows are `rowBytes` apart and tightly packed (`rowBytes == width * channels`).
public final class PixelBuffer: @unchecked Sendable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// 3 (RGB) or 4 (RGBA).
    public let channels: Int
    /// Bytes from one row to the next.
    public let rowBytes: Int
    /// The first byte of the first row.
    public let base: UnsafeMutablePointer<UInt8>

    /// Allocates an uninitialised buffer.
    /// - Parameters:
    ///   - width: pixels per row, at least 1.
    ///   - height: rows, at least 1.
    ///   - channels: 3 or 4.
    public init(width: Int, height: Int, channels: Int) {
        precondition(width > 0 && height > 0, "empty image \(width)×\(height)")
        precondition(channels == 3 || channels == 4, "channels must be 3 or 4")
        self.width = width
        self.height = height
        self.channels = channels
        self.rowBytes = width * channels
        self.base = .allocate(capacity: rowBytes * height)
    }

    /// Allocates a buffer filled with one colour.
    /// - Parameter fill: channel values, `channels` of them.
    public convenience init(width: Int, height: Int, channels: Int, fill: [UInt8]) {
        self.init(width: width, height: height, channels: channels)
        precondition(fill.count == channels)
        for y in 0..<height {
            let row = self.row(y)
            for x in 0..<width {
                for c in 0..<channels { row[x * channels + c] = fill[c] }
            }
        }
    }

    deinit { base.deallocate() }

    /// The first byte of row `y`.
    @inline(__always)
    public func row(_ y: Int) -> UnsafeMutablePointer<UInt8> {
        base + y * rowBytes
    }

    /// The pixel at (x, y) as an array of `channels` values (for tests and diagnostics;
    /// pixel loops use `row(_:)`).
    public func pixel(_ x: Int, _ y: Int) -> [UInt8] {
        let p = row(y) + x * channels
        return (0..<channels).map { p[$0] }
    }

    /// Bytes held by the pixels.
    public var byteCount: Int { rowBytes * height }
}
