/// Writes `pixels` RGBA pixels with colour multiplied by alpha (rounded), so a filter
/// mixing them weighs each colour by how visible it is.
func premultiply(_ source: UnsafePointer<UInt8>, into destination: UnsafeMutablePointer<UInt8>, pixels: Int) {
    let s = UnsafeRawPointer(source)
    let d = UnsafeMutableRawPointer(destination)
    // x / 255 rounded, for x ≤ 255 · 255, without a division: (x + 128 + (x + 128) >> 8) >> 8.
    // Alpha is multiplied by 255, which gives it back unchanged.
    @inline(__always) func scaled(_ v: SIMD8<UInt8>) -> SIMD8<UInt8> {
        let c = SIMD8<UInt16>(truncatingIfNeeded: v)
        let a = SIMD8<UInt16>(c[3], c[3], c[3], 255, c[7], c[7], c[7], 255)
        let x = c &* a &+ 128
        return SIMD8<UInt8>(truncatingIfNeeded: (x &+ (x &>> 8)) &>> 8)
    }
    for i in 0..<(pixels / 2) {
        d.storeBytes(of: scaled(s.loadUnaligned(fromByteOffset: i * 8, as: SIMD8<UInt8>.self)),
                     toByteOffset: i * 8, as: SIMD8<UInt8>.self)
    }
    if pixels % 2 == 1 {
        let last = (pixels - 1) * 4
        let v = SIMD8<UInt8>(lowHalf: s.loadUnaligned(fromByteOffset: last, as: SIMD4<UInt8>.self), highHalf: .zero)
        d.storeBytes(of: scaled(v).lowHalf, toByteOffset: last, as: SIMD4<UInt8>.self)
    }
}

/// 255 · 2¹⁶ / a, rounded up, for a in 1…255: unpremultiplying by a multiply and a shift.
private let reciprocals: [UInt32] = (0...255).map { $0 == 0 ? 0 : (255 << 16 + UInt32($0) - 1) / UInt32($0) }

/// Turns premultiplied RGBA back into straight alpha in place. Fully transparent pixels
/// become (0, 0, 0, 0); colour above alpha (filter overshoot) is clamped.
func unpremultiply(_ pixels: UnsafeMutablePointer<UInt8>, pixels count: Int) {
    reciprocals.withUnsafeBufferPointer { table in
        for i in 0..<count {
            let p = pixels + i * 4
            let a = Int(p[3])
            if a == 255 { continue }
            let r = table[a]
            // c · 255 / a, rounded; 255 · r < 2³² for every a, so no overflow.
            p[0] = UInt8(truncatingIfNeeded: min(255, (UInt32(p[0]) &* r &+ 32768) &>> 16))
            p[1] = UInt8(truncatingIfNeeded: min(255, (UInt32(p[1]) &* r &+ 32768) &>> 16))
            p[2] = UInt8(truncatingIfNeeded: min(255, (UInt32(p[2]) &* r &+ 32768) &>> 16))
        }
    }
}

/// Flattens RGBA onto an opaque background colour: the result is RGB.
/// - Parameters:
///   - canvas: RGBA with straight alpha (an RGB canvas is returned as it is).
///   - color: the background, 3 values (R, G, B).
/// - Returns: an RGB canvas of the same size.
public func flattened(_ canvas: consuming Canvas, over color: [UInt8]) -> Canvas {
    precondition(color.count == 3, "background colour needs 3 values, got \(color.count)")
    if canvas.channels == 3 { return canvas }
    var result = Canvas(width: canvas.width, height: canvas.height, channels: 3)
    canvas.withUnsafeRows { source in
        result.withUnsafeMutableRows { out in
            for y in 0..<source.height { flattenRow(source[y], into: out[y], width: source.width, over: color) }
        }
    }
    return result
}

/// One row of straight-alpha RGBA flattened onto an opaque colour, into RGB (decoders use it
/// row by row, without a whole RGBA frame).
/// - Parameter color: the background, 3 values (R, G, B).
public func flattenRow(_ rgba: UnsafePointer<UInt8>, into rgb: UnsafeMutablePointer<UInt8>, width: Int,
                       over color: [UInt8]) {
    let r = UInt32(color[0]), g = UInt32(color[1]), b = UInt32(color[2])
    for x in 0..<width {
        let a = UInt32(rgba[x * 4 + 3])
        let inverse = 255 - a
        // (colour · a + background · (255 − a)) / 255, rounded.
        rgb[x * 3] = UInt8(truncatingIfNeeded: (UInt32(rgba[x * 4]) * a + r * inverse + 127) / 255)
        rgb[x * 3 + 1] = UInt8(truncatingIfNeeded: (UInt32(rgba[x * 4 + 1]) * a + g * inverse + 127) / 255)
        rgb[x * 3 + 2] = UInt8(truncatingIfNeeded: (UInt32(rgba[x * 4 + 2]) * a + b * inverse + 127) / 255)
    }
}
