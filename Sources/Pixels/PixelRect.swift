/// A rectangle of whole pixels: `x`, `y` of the top-left pixel, then `width` × `height`.
public struct PixelRect: Sendable, Equatable, CustomStringConvertible {
    /// Column of the leftmost pixel.
    public var x: Int
    /// Row of the top pixel.
    public var y: Int
    /// Pixels per row.
    public var width: Int
    /// Rows.
    public var height: Int

    /// Creates a rectangle.
    /// - Parameters:
    ///   - x: column of the leftmost pixel.
    ///   - y: row of the top pixel.
    ///   - width: pixels per row.
    ///   - height: rows.
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// `[x, y, w, h]`, the way the report writes boxes.
    public var description: String { "[\(x), \(y), \(width), \(height)]" }
}
