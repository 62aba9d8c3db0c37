@testable import Pixels
import Testing

/// Collects the bands an `UprightRows` hands on into one image.
private final class Collector: BandSink {
    var pixels: [UInt8]
    let width: Int, channels: Int
    var nextTop = 0

    init(width: Int, height: Int, channels: Int) {
        self.width = width
        self.channels = channels
        pixels = Array(repeating: 0, count: width * height * channels)
    }

    func take(_ band: MutablePixelRows, top: Int) {
        #expect(top == nextTop, "bands in order")
        for y in 0..<band.height {
            for i in 0..<band.rowBytes { pixels[(top + y) * width * channels + i] = band[y][i] }
        }
        nextTop = top + band.height
    }
}

@Suite struct UprightRowsTests {
    /// Every orientation, RGB and RGBA, sizes that leave a partial tile (32 rows) and a
    /// partial band: the bands are exactly `Orientation.apply` of the stored image.
    @Test(arguments: [3, 4], [(37, 53), (70, 33), (1, 40), (40, 1)])
    func bandsAreTheOrientedImage(channels: Int, size: (Int, Int)) {
        let (w, h) = size
        let image = naturalImage(width: w, height: h, channels: channels) { x, y in UInt8((x * 7 + y * 13) % 256) }
        for exif in 1...8 {
            let expected = Orientation.apply(image, exif: exif)
            let collector = Collector(width: expected.width, height: expected.height, channels: channels)
            let rows = UprightRows(storedWidth: w, storedHeight: h, channels: channels, exif: exif, into: collector)
            #expect(rows.width == expected.width && rows.height == expected.height)
            image.withUnsafeRows { stored in
                for y in 0..<h {
                    rows.rowBuffer(y).update(from: stored[y], count: stored.rowBytes)
                    rows.rowWritten(y)
                }
            }
            rows.finish()
            #expect(collector.nextTop == expected.height, "exif \(exif): every row handed on")
            var wrong = 0
            for y in 0..<expected.height {
                for x in 0..<expected.width {
                    let got = Array(collector.pixels[(y * expected.width + x) * channels..<(y * expected.width + x + 1) * channels])
                    if got != expected.pixel(x, y) { wrong += 1 }
                }
            }
            #expect(wrong == 0, "exif \(exif), \(w)×\(h)×\(channels): \(wrong) pixels differ")
        }
    }

    /// A quarter turn's gathered rows start an odd number of cache lines apart, whatever the
    /// row's length (a 2048-px RGB row is 6,144 bytes: 96 lines), and hold the whole row.
    @Test(arguments: [1, 64, 111, 2048 * 3, 2048 * 4, 1536 * 3, 4032 * 3])
    func tileRowsStartAnOddNumberOfCacheLinesApart(rowBytes: Int) {
        let stride = UprightRows.tileStride(rowBytes: rowBytes)
        #expect(stride >= rowBytes && stride < rowBytes + 128)
        #expect(stride % 64 == 0 && (stride / 64) % 2 == 1)
    }
}
