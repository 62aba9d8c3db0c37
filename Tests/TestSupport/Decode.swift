import Codecs
import Foundation
import Pixels

/// An encoded image decoded whole, as RGB, upright as stored (outputs carry orientation 1),
/// with what its decoder says of the file: what a test measures pixels in.
public func decodeWhole(_ bytes: [UInt8]) throws -> (image: Image, info: SourceInfo) {
    let decoder = try openDecoder(bytes: bytes, limits: DecodeLimits())
    let info = decoder.info
    var y = 0
    let image = try Image(width: info.width, height: info.height, channels: 3) { rows in
        try decoder.decode(eighths: 8, channels: 3, limits: DecodeLimits()) { row in
            rows[y].update(from: row, count: rows.rowBytes)
            y += 1
        }
    }
    return (image, info)
}

/// An encoded image decoded whole, as RGB.
public func decodeRGB(_ bytes: [UInt8]) throws -> Image {
    try decodeWhole(bytes).image
}

/// The image in the file at `path` decoded whole, as RGB.
public func decodeRGB(file path: String) throws -> Image {
    try decodeRGB([UInt8](Data(contentsOf: URL(fileURLWithPath: path))))
}
