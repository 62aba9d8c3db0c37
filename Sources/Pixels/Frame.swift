/// Adds a solid border of `border` pixels on every side.
/// - Parameters:
///   - image: the picture to frame.
///   - border: border width in pixels (0 returns `image` itself).
///   - color: the border colour, `image.channels` values.
/// - Returns: a new buffer `2 · border` larger in each dimension.
public func framed(_ image: PixelBuffer, border: Int, color: [UInt8]) -> PixelBuffer {
    precondition(border >= 0, "negative border \(border)")
    precondition(color.count == image.channels,
                 "border colour has \(color.count) values for a \(image.channels)-channel image")
    if border == 0 { return image }
    let channels = image.channels
    let result = PixelBuffer(width: image.width + 2 * border, height: image.height + 2 * border,
                             channels: channels)
    // One row of border colour, copied wherever the border shows.
    let fullRow = UnsafeMutablePointer<UInt8>.allocate(capacity: result.rowBytes)
    defer { fullRow.deallocate() }
    for x in 0..<result.width {
        for c in 0..<channels { fullRow[x * channels + c] = color[c] }
    }
    let side = border * channels
    for y in 0..<result.height {
        let d = result.row(y)
        let inside = y >= border && y < border + image.height
        if !inside {
            d.update(from: fullRow, count: result.rowBytes)
            continue
        }
        d.update(from: fullRow, count: side)
        (d + side).update(from: image.row(y - border), count: image.rowBytes)
        (d + side + image.rowBytes).update(from: fullRow, count: side)
    }
    return result
}
