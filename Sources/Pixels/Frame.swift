/// Adds a solid border of `border` pixels on every side.
/// - Parameters:
///   - canvas: the picture to frame.
///   - border: border width in pixels (0 returns `canvas` as it is).
///   - color: the border colour, `canvas.channels` values.
/// - Returns: a canvas `2 · border` larger in each dimension.
public func framed(_ canvas: consuming Canvas, border: Int, color: [UInt8]) -> Canvas {
    precondition(border >= 0, "negative border \(border)")
    precondition(color.count == canvas.channels,
                 "border colour has \(color.count) values for a \(canvas.channels)-channel image")
    if border == 0 { return canvas }
    let channels = canvas.channels
    var result = Canvas(width: canvas.width + 2 * border, height: canvas.height + 2 * border, channels: channels)
    // One row of border colour, copied wherever the border shows.
    let rowBytes = result.rowBytes
    let fullRow = UnsafeMutablePointer<UInt8>.allocate(capacity: rowBytes)
    defer { fullRow.deallocate() }
    for x in 0..<result.width {
        for c in 0..<channels { fullRow[x * channels + c] = color[c] }
    }
    let side = border * channels
    canvas.withUnsafeRows { image in
        result.withUnsafeMutableRows { out in
            for y in 0..<out.height {
                let d = out[y]
                guard y >= border && y < border + image.height else {
                    d.update(from: fullRow, count: rowBytes)
                    continue
                }
                d.update(from: fullRow, count: side)
                (d + side).update(from: image[y - border], count: image.rowBytes)
                (d + side + image.rowBytes).update(from: fullRow, count: side)
            }
        }
    }
    return result
}
