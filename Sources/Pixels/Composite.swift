/// Painting marks over a photo: a coverage mask in one colour (text, its shadow, a tiled
/// mark) or an RGBA overlay (a logo). Both clip to the image, so a mark may hang over an
/// edge, and both apply `opacity` exactly once.
///
/// The arithmetic is "over" with straight alpha: `out = mark · A + photo · (1 − A)`, which
/// is what premultiplied compositing computes, written so that an overlay's colour is
/// multiplied by its alpha exactly once (twice gives the dark fringes of a double
/// premultiply; zero times gives a box where the overlay is transparent).

/// Paints `mask` in `color` at `opacity` over `canvas`, the mask's top-left at (`x`, `y`).
/// - Parameters:
///   - mask: coverage; 0 leaves the photo untouched.
///   - x: column of the mask's left edge in `canvas` (may be negative).
///   - y: row of the mask's top edge in `canvas` (may be negative).
///   - color: R, G, B in the image's colour space.
///   - opacity: 0…1, applied on top of the mask's coverage.
///   - canvas: RGB, or RGBA (straight alpha: the result is the mark over the pixel).
public func composite(_ mask: CoverageMask, at x: Int, _ y: Int, color: [UInt8], opacity: Double,
                      onto canvas: inout Canvas) {
    canvas.withUnsafeMutableRows { composite(mask, at: x, y, color: color, opacity: opacity, onto: $0) }
}

/// `composite(_:at:_:color:opacity:onto:)` on rows already lent (a band being drawn).
public func composite(_ mask: CoverageMask, at x: Int, _ y: Int, color: [UInt8], opacity: Double,
                      onto image: MutablePixelRows) {
    mask.withUnsafeRows { composite($0, at: x, y, color: color, opacity: opacity, onto: image) }
}

/// `composite(_:at:_:color:opacity:onto:)` of mask rows already lent (a mask being drawn, one
/// row of a tiled mark).
public func composite(_ mask: MaskRows, at x: Int, _ y: Int, color: [UInt8], opacity: Double,
                      onto image: MutablePixelRows) {
    precondition(color.count == 3, "a mark colour has 3 values, got \(color.count)")
    guard let (o, x0, x1, y0, y1) = overlap(x, y, mask.width, mask.height, opacity, image.width, image.height)
    else { return }
    let c0 = UInt32(color[0]), c1 = UInt32(color[1]), c2 = UInt32(color[2])
    let channels = image.channels
    for row in y0..<y1 {
        let m = mask[row - y] + (x0 - x)
        let d = image[row] + x0 * channels
        for i in 0..<(x1 - x0) {
            let coverage = UInt32(m[i])
            if coverage == 0 { continue }
            // A in 0…255·255; both factors are exact 8-bit values, so A is too.
            let a = coverage * o
            let p = d + i * channels
            if channels == 3 {
                over3(p, c0, c1, c2, a)
            } else {
                over4(p, c0, c1, c2, a)
            }
        }
    }
}

/// Paints an RGBA `overlay` (straight alpha) at `opacity` over `canvas`, its top-left at
/// (`x`, `y`).
/// - Parameters:
///   - overlay: 4 channels, straight (not premultiplied) alpha, as decoders and
///     `StreamingResizer` deliver it.
///   - x: column of the overlay's left edge in `canvas` (may be negative).
///   - y: row of the overlay's top edge in `canvas` (may be negative).
///   - opacity: 0…1, multiplied with the overlay's own alpha once.
///   - canvas: RGB, or RGBA.
public func composite(_ overlay: Image, at x: Int, _ y: Int, opacity: Double, onto canvas: inout Canvas) {
    canvas.withUnsafeMutableRows { composite(overlay, at: x, y, opacity: opacity, onto: $0) }
}

/// `composite(_:at:_:opacity:onto:)` on rows already lent (a band being drawn).
public func composite(_ overlay: Image, at x: Int, _ y: Int, opacity: Double, onto image: MutablePixelRows) {
    precondition(overlay.channels == 4, "an overlay needs alpha (4 channels), got \(overlay.channels)")
    guard let (o, x0, x1, y0, y1) = overlap(x, y, overlay.width, overlay.height, opacity, image.width, image.height)
    else { return }
    let channels = image.channels
    overlay.withUnsafeRows { overlay in
        for row in y0..<y1 {
            let s = overlay[row - y] + (x0 - x) * 4
            let d = image[row] + x0 * channels
            for i in 0..<(x1 - x0) {
                let q = s + i * 4
                let a = UInt32(q[3]) * o
                if a == 0 { continue }
                let p = d + i * channels
                if channels == 3 {
                    over3(p, UInt32(q[0]), UInt32(q[1]), UInt32(q[2]), a)
                } else {
                    over4(p, UInt32(q[0]), UInt32(q[1]), UInt32(q[2]), a)
                }
            }
        }
    }
}

/// Opacity as 0…255 and the part of a `width` × `height` mark at (`x`, `y`) that lies on the
/// image (columns x0..<x1, rows y0..<y1); nil when nothing would change.
private func overlap(_ x: Int, _ y: Int, _ width: Int, _ height: Int, _ opacity: Double,
                     _ imageWidth: Int, _ imageHeight: Int) -> (UInt32, Int, Int, Int, Int)? {
    let o = UInt32((max(0, min(1, opacity)) * 255).rounded())
    let x0 = max(0, x), x1 = min(imageWidth, x + width)
    let y0 = max(0, y), y1 = min(imageHeight, y + height)
    return o > 0 && x0 < x1 && y0 < y1 ? (o, x0, x1, y0, y1) : nil
}

/// 255 · 255: full coverage in the fixed-point alpha used here.
private let full: UInt32 = 65025

/// `p = c · a + p · (1 − a)` for an opaque RGB pixel; `a` in 0…65025.
@inline(__always)
private func over3(_ p: UnsafeMutablePointer<UInt8>, _ c0: UInt32, _ c1: UInt32, _ c2: UInt32, _ a: UInt32) {
    let inverse = full - a
    p[0] = UInt8(truncatingIfNeeded: (c0 * a + UInt32(p[0]) * inverse + full / 2) / full)
    p[1] = UInt8(truncatingIfNeeded: (c1 * a + UInt32(p[1]) * inverse + full / 2) / full)
    p[2] = UInt8(truncatingIfNeeded: (c2 * a + UInt32(p[2]) * inverse + full / 2) / full)
}

/// Porter–Duff "over" onto a straight-alpha RGBA pixel; `a` in 0…65025.
@inline(__always)
private func over4(_ p: UnsafeMutablePointer<UInt8>, _ c0: UInt32, _ c1: UInt32, _ c2: UInt32, _ a: UInt32) {
    // Background weight: its own alpha times what the mark leaves (both in 0…65025 after scaling).
    let backgroundAlpha = UInt32(p[3]) * 255
    let behind = UInt64(backgroundAlpha) * UInt64(full - a) / UInt64(full)
    let total = UInt64(a) + behind  // 0…65025
    guard total > 0 else { return }
    func mix(_ c: UInt32, _ b: UInt8) -> UInt8 {
        UInt8(truncatingIfNeeded: (UInt64(c) * UInt64(a) + UInt64(b) * behind + total / 2) / total)
    }
    p[0] = mix(c0, p[0])
    p[1] = mix(c1, p[1])
    p[2] = mix(c2, p[2])
    p[3] = UInt8(truncatingIfNeeded: (total + 127) / 255)
}
