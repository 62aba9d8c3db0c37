import Pixels

/// A canvas whose pixel (x, y) is `value(x, y)`.
func makeCanvas(width: Int, height: Int, channels: Int,
                _ value: (Int, Int) -> [UInt8]) -> Canvas {
    var canvas = Canvas(width: width, height: height, channels: channels)
    canvas.withUnsafeMutableRows { rows in
        for y in 0..<height {
            for x in 0..<width {
                let v = value(x, y)
                for c in 0..<channels { rows[y][x * channels + c] = v[c] }
            }
        }
    }
    return canvas
}

/// An image whose pixel (x, y) is `value(x, y)`.
func makeImage(width: Int, height: Int, channels: Int,
               _ value: (Int, Int) -> [UInt8]) -> Image {
    makeCanvas(width: width, height: height, channels: channels, value).finished()
}

/// A canvas holding a copy of `image` (to draw on it).
func canvas(copying image: Image) -> Canvas {
    makeCanvas(width: image.width, height: image.height, channels: image.channels) { x, y in image.pixel(x, y) }
}

/// All pixels, row by row.
func pixels(_ image: Image) -> [[[UInt8]]] {
    (0..<image.height).map { y in (0..<image.width).map { x in image.pixel(x, y) } }
}

/// A copy of a rectangle of `image`.
func cropped(_ image: Image, _ rect: PixelRect) -> Image {
    makeImage(width: rect.width, height: rect.height, channels: image.channels) { x, y in
        image.pixel(rect.x + x, rect.y + y)
    }
}

/// Pushes every row of `image` (or stops at completion when `stopEarly`).
func stream(_ image: Image, crop: PixelRect, width: Int, height: Int,
            stopEarly: Bool = false) -> Image {
    let resizer = StreamingResizer(sourceWidth: image.width, sourceHeight: image.height, crop: crop,
                                   targetWidth: width, targetHeight: height, channels: image.channels)
    image.withUnsafeRows { rows in
        for y in 0..<rows.height {
            if stopEarly && resizer.isComplete { break }
            resizer.push(rows[y])
        }
    }
    return resizer.finish().finished()
}

/// A smooth, non-periodic test picture with some texture (deterministic).
func naturalImage(width: Int, height: Int, channels: Int, alpha: (Int, Int) -> UInt8 = { _, _ in 255 }) -> Image {
    var seed: UInt32 = 12345
    return makeImage(width: width, height: height, channels: channels) { x, y in
        seed = seed &* 1_664_525 &+ 1_013_904_223
        let noise = Int(seed >> 28)  // 0…15
        let r = (x * 255 / max(width - 1, 1) + noise) / 2 + 40
        let g = (y * 255 / max(height - 1, 1) + x % 37) / 2 + 30
        let b = ((x + y) % 200) / 2 + 60
        var p = [UInt8(r), UInt8(g), UInt8(b)]
        if channels == 4 { p.append(alpha(x, y)) }
        return p
    }
}
