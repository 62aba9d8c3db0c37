import Pixels
import Testing

/// Collects the RGB bands an `UprightPlanes` hands on.
private final class Bands: BandSink {
    var pixels: [UInt8] = []
    var nextTop = 0

    func take(_ band: MutablePixelRows, top: Int) {
        #expect(top == nextTop, "bands in order")
        for y in 0..<band.height { pixels += UnsafeBufferPointer(start: band[y], count: band.rowBytes) }
        nextTop = top + band.height
    }
}

@Suite struct UprightPlanesTests {
    /// Planes of noise, 4:2:0 and 4:2:2, handed over in libjpeg's bands (padded strides,
    /// padding rows past the picture): every orientation gives exactly the picture made RGB
    /// in stored orientation as libjpeg does it (its filter and rounding, its tables), then
    /// turned.
    @Test(arguments: [1, 2], [(36, 22), (6, 50), (10, 2)])
    func turnedPlanesAreTheTurnedPicture(rowsPerChroma: Int, size: (Int, Int)) {
        let (w, h) = size
        let cw = w / 2, ch = h / rowsPerChroma
        var seed: UInt32 = 7
        func noise() -> UInt8 { seed = seed &* 1_664_525 &+ 1_013_904_223; return UInt8(truncatingIfNeeded: seed >> 24) }
        let y = (0..<(w * h)).map { _ in noise() }
        let cb = (0..<(cw * ch)).map { _ in noise() }
        let cr = (0..<(cw * ch)).map { _ in noise() }
        let stored = Image(width: w, height: h, channels: 3) { rows in
            for sy in 0..<h {
                for sx in 0..<w {
                    func up(_ plane: [UInt8]) -> Int32 {
                        func at(_ x: Int, _ y: Int) -> Int32 { Int32(plane[min(max(y, 0), ch - 1) * cw + min(max(x, 0), cw - 1)]) }
                        // libjpeg-turbo's jdsample.c, written out: h2v2 (bias 8 for an even
                        // column, 7 for an odd one) and h2v1 (+1 and +2 in quarters).
                        let nx = sx / 2, fx = sx % 2 == 0 ? nx - 1 : nx + 1
                        if rowsPerChroma == 2 {
                            let ny = sy / 2, fy = sy % 2 == 0 ? ny - 1 : ny + 1
                            let near = 3 * at(nx, ny) + at(nx, fy), far = 3 * at(fx, ny) + at(fx, fy)
                            return (3 * near + far + (sx % 2 == 0 ? 8 : 7)) >> 4
                        }
                        return (3 * at(nx, sy) + at(fx, sy) + (sx % 2 == 0 ? 1 : 2)) >> 2
                    }
                    let yv = Double(y[sy * w + sx]), b = Double(up(cb)) - 128, r = Double(up(cr)) - 128
                    func clamp(_ v: Int) -> UInt8 { UInt8(min(max(v, 0), 255)) }
                    // libjpeg's tables, written out: FIX(c) = round(c · 65536).
                    let red = Int(yv) + ((91881 * Int(r) + 32768) >> 16)
                    let green = Int(yv) + ((-22554 * Int(b) + 32768 - 46802 * Int(r)) >> 16)
                    let blue = Int(yv) + ((116130 * Int(b) + 32768) >> 16)
                    rows[sy][sx * 3] = clamp(red)
                    rows[sy][sx * 3 + 1] = clamp(green)
                    rows[sy][sx * 3 + 2] = clamp(blue)
                }
            }
        }
        let lumaStride = w + 8, chromaStride = cw + 8, band = 8 * rowsPerChroma
        for exif in 1...8 {
            let expected = Orientation.apply(stored, exif: exif)
            let bands = Bands()
            let planes = UprightPlanes(storedWidth: w, storedHeight: h, lumaRowsPerChromaRow: rowsPerChroma, exif: exif,
                                       into: bands)
            var lumaBuffer = [UInt8](repeating: 0xEE, count: lumaStride * band)
            var cbBuffer = [UInt8](repeating: 0xEE, count: chromaStride * 8), crBuffer = cbBuffer
            for top in stride(from: 0, to: h, by: band) {
                let chromaTop = top / rowsPerChroma
                for k in 0..<band where top + k < h {
                    for x in 0..<w { lumaBuffer[k * lumaStride + x] = y[(top + k) * w + x] }
                }
                for k in 0..<8 where chromaTop + k < ch {
                    for x in 0..<cw {
                        cbBuffer[k * chromaStride + x] = cb[(chromaTop + k) * cw + x]
                        crBuffer[k * chromaStride + x] = cr[(chromaTop + k) * cw + x]
                    }
                }
                lumaBuffer.withUnsafeBufferPointer { l in
                    cbBuffer.withUnsafeBufferPointer { b in
                        crBuffer.withUnsafeBufferPointer { r in
                            planes.take(PlaneRows(top: top, lumaRows: band, luma: l.baseAddress!, lumaStride: lumaStride,
                                                  chromaTop: chromaTop, chromaRows: 8, cb: b.baseAddress!, cr: r.baseAddress!,
                                                  chromaStride: chromaStride, width: w))
                        }
                    }
                }
            }
            planes.finish()
            #expect(planes.width == expected.width && planes.height == expected.height)
            var wrong = 0
            for uy in 0..<expected.height {
                for ux in 0..<expected.width {
                    let at = (uy * expected.width + ux) * 3
                    if Array(bands.pixels[at..<at + 3]) != expected.pixel(ux, uy) { wrong += 1 }
                }
            }
            #expect(wrong == 0, "exif \(exif), \(w)×\(h), \(rowsPerChroma) luma rows a chroma row: \(wrong) pixels differ")
        }
    }
}
