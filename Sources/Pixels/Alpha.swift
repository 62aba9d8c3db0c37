/// Writes `pixels` RGBA pixels with colour multiplied by alpha (rounded), so a filter
/// mixing them weighs each colour by how visible it is.
func premultiply(_ source: UnsafePointer<UInt8>, into destination: UnsafeMutablePointer<UInt8>, pixels: Int) {
    for i in 0..<pixels {
        let s = source + i * 4
        let d = destination + i * 4
        let a = UInt32(s[3])
        // x / 255 rounded, for x ≤ 255 · 255, without a division.
        @inline(__always) func scaled(_ c: UInt8) -> UInt8 {
            let x = UInt32(c) &* a &+ 128
            return UInt8(truncatingIfNeeded: (x &+ (x &>> 8)) &>> 8)
        }
        d[0] = scaled(s[0])
        d[1] = scaled(s[1])
        d[2] = scaled(s[2])
        d[3] = s[3]
    }
}

/// Turns premultiplied RGBA back into straight alpha in place. Fully transparent pixels
/// become (0, 0, 0, 0); colour above alpha (filter overshoot) is clamped.
func unpremultiply(_ pixels: UnsafeMutablePointer<UInt8>, pixels count: Int) {
    for i in 0..<count {
        let p = pixels + i * 4
        let a = UInt32(p[3])
        if a == 255 { continue }
        if a == 0 {
            p[0] = 0; p[1] = 0; p[2] = 0
            continue
        }
        let half = a / 2
        p[0] = UInt8(min(255, (UInt32(p[0]) * 255 + half) / a))
        p[1] = UInt8(min(255, (UInt32(p[1]) * 255 + half) / a))
        p[2] = UInt8(min(255, (UInt32(p[2]) * 255 + half) / a))
    }
}

/// Flattens RGBA onto an opaque background colour: the result is RGB.
/// - Parameters:
///   - image: RGBA with straight alpha (an RGB image is returned unchanged).
///   - color: the background, 3 values (R, G, B).
/// - Returns: a new RGB buffer of the same size.
public func flattened(_ image: PixelBuffer, over color: [UInt8]) -> PixelBuffer {
    precondition(color.count == 3, "background colour needs 3 values, got \(color.count)")
    if image.channels == 3 { return image }
    let result = PixelBuffer(width: image.width, height: image.height, channels: 3)
    let background = color.map { UInt32($0) }
    for y in 0..<image.height {
        let s = image.row(y)
        let d = result.row(y)
        for x in 0..<image.width {
            let a = UInt32(s[x * 4 + 3])
            let inverse = 255 - a
            for c in 0..<3 {
                // (colour · a + background · (255 − a)) / 255, rounded.
                let v = UInt32(s[x * 4 + c]) * a + background[c] * inverse + 127
                d[x * 3 + c] = UInt8(truncatingIfNeeded: v / 255)
            }
        }
    }
    return result
}
