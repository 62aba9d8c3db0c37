import Codecs
import Pixels

/// An encoded image decoded whole, as RGB: what a test measures pixels in.
func decodeRGB(_ bytes: [UInt8]) throws -> PixelBuffer {
    let decoder = try openDecoder(bytes: bytes, limits: DecodeLimits())
    let image = PixelBuffer(width: decoder.info.width, height: decoder.info.height, channels: 3)
    var y = 0
    try decoder.decode(denominator: 1, channels: 3, limits: DecodeLimits()) { row in
        image.row(y).update(from: row, count: image.rowBytes)
        y += 1
    }
    return image
}
