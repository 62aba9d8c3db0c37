import Pixels
import Testing

@Suite struct FrameAndAlphaTests {
    @Test(arguments: [3, 4])
    func frameAddsBorderOnEverySide(channels: Int) {
        let image = naturalImage(width: 7, height: 4, channels: channels)
        let colour: [UInt8] = [1, 2, 3, 4].prefix(channels).map { $0 }
        let out = framed(canvas(copying: image), border: 3, color: colour)
        #expect(out.width == 13 && out.height == 10 && out.channels == channels)
        for y in 0..<10 {
            for x in 0..<13 {
                let inside = (3..<10).contains(x) && (3..<7).contains(y)
                let want = inside ? image.pixel(x - 3, y - 3) : colour
                #expect(out.pixel(x, y) == want, "(\(x), \(y))")
            }
        }
        let unframed = framed(canvas(copying: image), border: 0, color: colour).finished()
        #expect(pixels(unframed) == pixels(image))
    }

    @Test func flattenBlendsOverBackground() {
        let image = makeCanvas(width: 3, height: 1, channels: 4) { x, _ in
            [[200, 100, 0, 255], [200, 100, 0, 0], [200, 100, 0, 128]][x]
        }
        let out = flattened(image, over: [0, 0, 255])
        #expect(out.channels == 3 && out.width == 3 && out.height == 1)
        #expect(out.pixel(0, 0) == [200, 100, 0])
        #expect(out.pixel(1, 0) == [0, 0, 255])
        // 200·128/255 ≈ 100.4; 100·128/255 ≈ 50.2; 255·127/255 = 127.
        #expect(out.pixel(2, 0) == [100, 50, 127])
    }
}
