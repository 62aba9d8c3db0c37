@testable import Pixels
import Testing

@Suite struct OrientationTests {
    /// Stored 3×2 picture:
    ///     a b c
    ///     d e f
    static let letters = ["a", "b", "c", "d", "e", "f"]

    /// The upright result of each EXIF value, written out from the EXIF definitions.
    static let expected: [Int: [[String]]] = [
        1: [["a", "b", "c"], ["d", "e", "f"]],
        2: [["c", "b", "a"], ["f", "e", "d"]],  // mirror horizontal
        3: [["f", "e", "d"], ["c", "b", "a"]],  // rotate 180
        4: [["d", "e", "f"], ["a", "b", "c"]],  // mirror vertical
        5: [["a", "d"], ["b", "e"], ["c", "f"]],  // transpose
        6: [["d", "a"], ["e", "b"], ["f", "c"]],  // rotate 90 CW
        7: [["f", "c"], ["e", "b"], ["d", "a"]],  // transverse
        8: [["c", "f"], ["b", "e"], ["a", "d"]],  // rotate 90 CCW
    ]

    static func value(_ letter: String, channels: Int) -> [UInt8] {
        let i = UInt8(letters.firstIndex(of: letter)!)
        return [10 + i, 100 + i, 200 - i, 50 + i].prefix(channels).map { $0 }
    }

    @Test(arguments: 1...8, [3, 4])
    func matchesExifDefinition(exif: Int, channels: Int) {
        let stored = makeImage(width: 3, height: 2, channels: channels) { x, y in
            Self.value(Self.letters[y * 3 + x], channels: channels)
        }
        let upright = Orientation.apply(stored, exif: exif)
        let want = Self.expected[exif]!
        #expect(upright.width == want[0].count && upright.height == want.count)
        let size = Orientation.uprightSize(width: 3, height: 2, exif: exif)
        #expect(size.width == upright.width && size.height == upright.height)
        #expect(pixels(upright) == want.map { $0.map { Self.value($0, channels: channels) } })
    }

    @Test func orientationOneReturnsTheSameBuffer() {
        let image = naturalImage(width: 4, height: 3, channels: 3)
        #expect(Orientation.apply(image, exif: 1).storage === image.storage)
    }

    @Test(arguments: 1...8)
    func largeImageRotatesLikeTheDefinition(exif: Int) {
        // Bigger than one 64-pixel tile, odd sizes: exercises the tiled walk.
        let stored = makeImage(width: 150, height: 71, channels: 3) { x, y in
            [UInt8(x), UInt8(y), UInt8((x * 3 + y) % 256)]
        }
        let upright = Orientation.apply(stored, exif: exif)
        // Upright (x, y) must hold the stored pixel whose coordinates it encodes.
        for y in 0..<upright.height {
            for x in 0..<upright.width {
                let p = upright.pixel(x, y)
                let rect = Orientation.storedRect(forUpright: PixelRect(x: x, y: y, width: 1, height: 1),
                                                  storedWidth: 150, storedHeight: 71, exif: exif)
                if p[0] != UInt8(rect.x) || p[1] != UInt8(rect.y) {
                    Issue.record("exif \(exif): upright (\(x), \(y)) holds \(p), stored rect \(rect)")
                    return
                }
            }
        }
    }

    @Test(arguments: 1...8)
    func storedRectCropsTheSamePixels(exif: Int) {
        let stored = naturalImage(width: 9, height: 5, channels: 3)
        let upright = Orientation.apply(stored, exif: exif)
        let rects = [PixelRect(x: 0, y: 0, width: upright.width, height: upright.height),
                     PixelRect(x: 1, y: 2, width: 2, height: 3),
                     PixelRect(x: 0, y: 1, width: 1, height: 1),
                     PixelRect(x: upright.width - 3, y: upright.height - 2, width: 3, height: 2)]
        for rect in rects {
            let storedRect = Orientation.storedRect(forUpright: rect, storedWidth: 9, storedHeight: 5,
                                                    exif: exif)
            let orientThenCrop = cropped(upright, rect)
            let cropThenOrient = Orientation.apply(cropped(stored, storedRect), exif: exif)
            #expect(pixels(cropThenOrient) == pixels(orientThenCrop), "exif \(exif), rect \(rect)")
        }
    }
}
