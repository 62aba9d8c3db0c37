import Foundation

/// Paints `mask` repeated over the whole of `image` on a rotated brick lattice: a tiled
/// watermark with no clean area to crop out. Each destination pixel is mapped back into the
/// lattice (rotation about the image's centre) and samples the mask bilinearly, so copies
/// at any angle stay smooth and every corner of the image is covered.
///
/// - Parameters:
///   - mask: one copy of the mark (tight around its ink).
///   - angle: degrees; positive turns clockwise on screen (y points down), so −30 makes the
///     text rise to the right.
///   - along: pixels from one copy to the next in the text's direction.
///   - across: pixels from one row of copies to the next; odd rows shift by `along` / 2.
///   - color: R, G, B in the image's colour space.
///   - opacity: 0…1.
///   - inset: where the copies' origin lies inside `mask`, in pixels on both axes: a rim
///     mask grown by r pixels (`dilated`) is drawn with inset r, so it sits exactly around
///     the copies drawn with inset 0 (as long as the grown copies do not touch).
///   - canvas: RGB or RGBA, painted in place.
public func compositeTiled(_ mask: CoverageMask, angle: Double, along: Double, across: Double,
                           color: [UInt8], opacity: Double, inset: Double = 0, onto canvas: inout Canvas) {
    canvas.withUnsafeMutableRows {
        compositeTiled(mask, angle: angle, along: along, across: across, color: color, opacity: opacity,
                       inset: inset, onto: $0)
    }
}

/// `compositeTiled` on rows already lent: the whole image, or one band of it.
/// - Parameters:
///   - top: the image row of the band's first row (0 for the whole image).
///   - imageHeight: the whole image's height (the band's height for the whole image): the
///     lattice turns about the whole image's centre, so bands drawn one by one join up.
public func compositeTiled(_ mask: CoverageMask, angle: Double, along: Double, across: Double,
                           color: [UInt8], opacity: Double, inset: Double = 0, onto image: MutablePixelRows,
                           top: Int = 0, imageHeight: Int? = nil) {
    precondition(color.count == 3, "a mark colour has 3 values, got \(color.count)")
    precondition(along > 0 && across > 0, "tile steps must be positive")
    guard mask.width > 0, mask.height > 0 else { return }
    mask.withUnsafeRows { mask in
        tile(mask, angle: angle, along: along, across: across, color: color, opacity: opacity, inset: inset,
             onto: image, top: top, imageHeight: imageHeight)
    }
}

/// `compositeTiled`'s lattice, from mask rows lent.
private func tile(_ mask: MaskRows, angle: Double, along: Double, across: Double, color: [UInt8], opacity: Double,
                  inset: Double, onto image: MutablePixelRows, top: Int, imageHeight: Int?) {
    // One row of coverage at a time, then the ordinary mask compositing paints it.
    var line = MaskCanvas(width: image.width, height: 1)
    let theta = angle * .pi / 180
    let c = cos(theta), s = sin(theta)
    let cx = Double(image.width) / 2, cy = Double(imageHeight ?? image.height) / 2
    let mw = mask.width, mh = mask.height
    for y in 0..<image.height { line.withUnsafeMutableRows { line in
        let dy = Double(top + y) + 0.5 - cy
        let l = line[0]
        var any = false
        for x in 0..<image.width {
            let dx = Double(x) + 0.5 - cx
            // Into the text's frame: u along the baseline, v across it.
            let u = dx * c + dy * s + inset
            let v = -dx * s + dy * c + inset
            let rowIndex = (v / across).rounded(.down)
            let lv = v - rowIndex * across
            // Mask sample position (pixel centres at +0.5).
            let my = lv - 0.5
            if my <= -1 || my >= Double(mh) { l[x] = 0; continue }
            let shift = Int(rowIndex) & 1 == 0 ? 0 : along / 2
            let uu = u - shift
            let lu = uu - (uu / along).rounded(.down) * along
            let mx = lu - 0.5
            if mx <= -1 || mx >= Double(mw) { l[x] = 0; continue }
            let value = bilinear(mask, mx, my)
            l[x] = value
            if value != 0 { any = true }
        }
        if any { composite(line.readOnly, at: 0, y, color: color, opacity: opacity, onto: image) }
    } }
}

/// The mask's coverage at a fractional position, zero outside it.
@inline(__always)
private func bilinear(_ mask: MaskRows, _ x: Double, _ y: Double) -> UInt8 {
    let x0 = Int(x.rounded(.down)), y0 = Int(y.rounded(.down))
    let fx = x - Double(x0), fy = y - Double(y0)
    @inline(__always) func at(_ px: Int, _ py: Int) -> Double {
        px < 0 || py < 0 || px >= mask.width || py >= mask.height ? 0 : Double(mask.base[py * mask.width + px])
    }
    let top = at(x0, y0) * (1 - fx) + at(x0 + 1, y0) * fx
    let bottom = at(x0, y0 + 1) * (1 - fx) + at(x0 + 1, y0 + 1) * fx
    return UInt8(min(255, (top * (1 - fy) + bottom * fy).rounded()))
}
