import Codecs
import Pixels

/// An encoded image decoded whole, as RGB: what a test measures pixels in.
func decodeRGB(_ bytes: [UInt8]) throws -> Image {
    let decoder = try openDecoder(bytes: bytes, limits: DecodeLimits())
    var y = 0
    return try Image(width: decoder.info.width, height: decoder.info.height, channels: 3) { rows in
        try decoder.decode(denominator: 1, channels: 3, limits: DecodeLimits()) { row in
            rows[y].update(from: row, count: rows.rowBytes)
            y += 1
        }
    }
}
