/// EXIF orientation (tag 0x0112, values 1–8): how stored pixels become the upright
/// picture a person sees.
///
/// | value | to display            | upright size |
/// |-------|-----------------------|--------------|
/// | 1     | as stored             | W × H        |
/// | 2     | mirror horizontally   | W × H        |
/// | 3     | rotate 180°           | W × H        |
/// | 4     | mirror vertically     | W × H        |
/// | 5     | transpose (mirror across the main diagonal)  | H × W |
/// | 6     | rotate 90° clockwise  | H × W        |
/// | 7     | transverse (mirror across the anti-diagonal) | H × W |
/// | 8     | rotate 90° counter-clockwise | H × W |
///
/// Values outside 1–8 are treated as 1 (the EXIF default), which is what viewers do.
public enum Orientation {
    /// The size of the upright picture.
    /// - Parameters:
    ///   - width: stored width.
    ///   - height: stored height.
    ///   - exif: orientation value 1–8.
    public static func uprightSize(width: Int, height: Int, exif: Int) -> (width: Int, height: Int) {
        swapsAxes(exif) ? (height, width) : (width, height)
    }

    /// Turns stored pixels upright.
    /// - Parameters:
    ///   - image: the pixels as stored.
    ///   - exif: orientation value 1–8.
    /// - Returns: `image` itself for 1 (it is read only, so sharing it is safe); otherwise a
    ///   new upright image.
    public static func apply(_ image: Image, exif: Int) -> Image {
        if StoredMap(exif: exif, storedWidth: image.width, storedHeight: image.height).isIdentity { return image }
        return image.withUnsafeRows { upright($0, exif: exif) }.finished()
    }

    /// Turns a canvas upright.
    /// - Returns: the same canvas for 1; otherwise a new upright canvas (the stored one is
    ///   freed once it is read).
    public static func apply(_ canvas: consuming Canvas, exif: Int) -> Canvas {
        if StoredMap(exif: exif, storedWidth: canvas.width, storedHeight: canvas.height).isIdentity { return canvas }
        return canvas.withUnsafeRows { upright($0, exif: exif) }
    }

    /// The stored rows written upright into a new canvas.
    public static func upright(_ image: PixelRows, exif: Int) -> Canvas {
        let map = StoredMap(exif: exif, storedWidth: image.width, storedHeight: image.height)
        let size = uprightSize(width: image.width, height: image.height, exif: exif)
        let channels = image.channels
        var result = Canvas(width: size.width, height: size.height, channels: channels)
        // Byte steps in the source for one step right / down in the result.
        let stepX = map.xx * channels + map.xy * image.rowBytes
        let stepY = map.yx * channels + map.yy * image.rowBytes
        let origin = image.base + map.x0 * channels + map.y0 * image.rowBytes
        // Square tiles keep both the rows read and the rows written in cache when the
        // walk goes down source columns (rotations by 90°).
        let tile = 64
        result.withUnsafeMutableRows { out in
            for tileY in stride(from: 0, to: size.height, by: tile) {
                let endY = min(tileY + tile, size.height)
                for tileX in stride(from: 0, to: size.width, by: tile) {
                    let endX = min(tileX + tile, size.width)
                    for y in tileY..<endY {
                        var d = out[y] + tileX * channels
                        var s = origin + tileX * stepX + y * stepY
                        if channels == 3 {
                            for _ in tileX..<endX {
                                d[0] = s[0]; d[1] = s[1]; d[2] = s[2]
                                d += 3
                                s += stepX
                            }
                        } else {
                            for _ in tileX..<endX {
                                UnsafeMutableRawPointer(d).storeBytes(
                                    of: UnsafeRawPointer(s).loadUnaligned(as: UInt32.self), as: UInt32.self)
                                d += 4
                                s += stepX
                            }
                        }
                    }
                }
            }
        }
        return result
    }

    /// One-byte-a-pixel stored rows (a grey image, `width` × `height`, rows packed) turned
    /// upright: what `upright` does to each pixel of an RGB image, for a third of the bytes.
    /// - Returns: `grey` itself for 1; otherwise the upright grey image, rows packed.
    public static func upright(grey: [UInt8], width: Int, height: Int, exif: Int) -> [UInt8] {
        let map = StoredMap(exif: exif, storedWidth: width, storedHeight: height)
        if map.isIdentity { return grey }
        let size = uprightSize(width: width, height: height, exif: exif)
        var result = [UInt8](repeating: 0, count: grey.count)
        grey.withUnsafeBufferPointer { source in
            result.withUnsafeMutableBufferPointer { out in
                let stepX = map.xx + map.xy * width, stepY = map.yx + map.yy * width
                let origin = map.x0 + map.y0 * width
                for y in 0..<size.height {
                    var s = origin + y * stepY
                    let row = y * size.width
                    for x in 0..<size.width {
                        out[row + x] = source[s]
                        s += stepX
                    }
                }
            }
        }
        return result
    }

    /// Maps a rectangle chosen on the upright picture to the stored pixels that show in
    /// it, so a crop can be taken from the decoder's stream before rotating.
    /// - Parameters:
    ///   - rect: a rectangle in upright coordinates.
    ///   - storedWidth: stored width.
    ///   - storedHeight: stored height.
    ///   - exif: orientation value 1–8.
    /// - Returns: the same pixels' rectangle in stored coordinates.
    public static func storedRect(forUpright rect: PixelRect, storedWidth: Int, storedHeight: Int,
                                  exif: Int) -> PixelRect {
        precondition(rect.width > 0 && rect.height > 0, "empty rectangle \(rect)")
        let map = StoredMap(exif: exif, storedWidth: storedWidth, storedHeight: storedHeight)
        let a = map.stored(rect.x, rect.y)
        let b = map.stored(rect.x + rect.width - 1, rect.y + rect.height - 1)
        let x = min(a.x, b.x), y = min(a.y, b.y)
        return PixelRect(x: x, y: y, width: max(a.x, b.x) - x + 1, height: max(a.y, b.y) - y + 1)
    }

    private static func swapsAxes(_ exif: Int) -> Bool { (5...8).contains(exif) }
}

/// Where upright pixel (x, y) is stored: stored = (x0 + xx·x + yx·y, y0 + xy·x + yy·y).
struct StoredMap {
    var x0 = 0, y0 = 0
    var xx = 1, yx = 0
    var xy = 0, yy = 1

    init(exif: Int, storedWidth w: Int, storedHeight h: Int) {
        switch exif {
        case 2: (x0, xx) = (w - 1, -1)                               // mirror horizontal
        case 3: (x0, xx, y0, yy) = (w - 1, -1, h - 1, -1)            // rotate 180
        case 4: (y0, yy) = (h - 1, -1)                               // mirror vertical
        case 5: (xx, yx, xy, yy) = (0, 1, 1, 0)                      // transpose
        case 6: (xx, yx, xy, yy, y0) = (0, 1, -1, 0, h - 1)          // rotate 90 CW
        case 7: (xx, yx, xy, yy, x0, y0) = (0, -1, -1, 0, w - 1, h - 1) // transverse
        case 8: (xx, yx, xy, yy, x0) = (0, -1, 1, 0, w - 1)          // rotate 90 CCW
        default: break
        }
    }

    var isIdentity: Bool { x0 == 0 && y0 == 0 && xx == 1 && yy == 1 && yx == 0 && xy == 0 }

    func stored(_ x: Int, _ y: Int) -> (x: Int, y: Int) {
        (x0 + xx * x + yx * y, y0 + xy * x + yy * y)
    }

    /// A quarter turn (`xx == 0`): stored row `sy` becomes upright column `(sy − y0) · xy`,
    /// stored column `x0 + yx · uy` upright row `uy`. `rows` stored rows from `top`, `stride`
    /// bytes apart, land as a run across each upright row; written left to right, they are
    /// read from `firstRow` (a byte offset: the top row, or the bottom one when the columns
    /// run right to left) by `step`, and the run starts at upright column `leftmost`.
    func quarterTurnRun(top: Int, rows: Int, stride: Int) -> (leftmost: Int, firstRow: Int, step: Int) {
        let firstColumn = (top - y0) * xy
        return xy > 0 ? (firstColumn, 0, stride) : (firstColumn - (rows - 1), (rows - 1) * stride, -stride)
    }
}
