import Codecs
import Pixels
import System

/// A QR code drawn: as SVG (pages, report.html, `/s/TOKEN/qr.svg`), as pixels (the `qr` mark)
/// and as a PNG (`/s/TOKEN/qr.png`). Every drawing keeps the quiet zone and draws each module
/// as a whole square of pixels, so a scanner sees hard edges (reference: Share links, QR codes).
extension QRCode {
    /// The symbol as SVG text: one square of `light` with the quiet zone, the dark modules as
    /// one path in `dark` (runs of a row joined, `crispEdges`, so a browser never smooths the
    /// edges), its `<title>` the text.
    /// - Parameters:
    ///   - pixelsPerModule: the width and height attributes, as this many pixels per module;
    ///     nil leaves them out (the page's CSS sizes it).
    ///   - dark: an sRGB colour, 3 values.
    ///   - light: an sRGB colour, 3 values.
    public func svg(pixelsPerModule: Int? = nil, dark: [UInt8] = [0, 0, 0], light: [UInt8] = [255, 255, 255]) -> String {
        let side = sizeWithQuietZone
        let size = pixelsPerModule.map { " width=\"\(side * $0)\" height=\"\(side * $0)\"" } ?? ""
        var path = ""
        for y in 0..<self.size {
            for run in darkRuns(row: y) {
                path += "M\(run.x + Self.quietZone) \(y + Self.quietZone)h\(run.length)v1h-\(run.length)z"
            }
        }
        let title = MarkupText.escaped(text)
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(side) \(side)\"\(size) "
            + "shape-rendering=\"crispEdges\" role=\"img\" aria-label=\"QR code: \(title)\">"
            + "<title>\(title)</title>"
            + "<rect width=\"\(side)\" height=\"\(side)\" fill=\"\(Self.hex(light))\"/>"
            + "<path fill=\"\(Self.hex(dark))\" d=\"\(path)\"/></svg>"
    }

    /// The symbol as pixels, quiet zone included: `pixelsPerModule` × `sizeWithQuietZone`
    /// pixels square.
    /// - Parameters:
    ///   - pixelsPerModule: at least 1.
    ///   - dark: the dark modules' colour, 3 (RGB) or 4 (RGBA) values.
    ///   - light: the light modules' and the quiet zone's colour, as many values as `dark`.
    public func image(pixelsPerModule: Int, dark: [UInt8] = [0, 0, 0], light: [UInt8] = [255, 255, 255]) -> Image {
        precondition(pixelsPerModule >= 1, "a module needs at least one pixel")
        precondition(dark.count == light.count && (dark.count == 3 || dark.count == 4), "colours of 3 or 4 values")
        let side = sizeWithQuietZone * pixelsPerModule
        let channels = dark.count
        return Image(width: side, height: side, channels: channels) { rows in
            for y in 0..<side {
                let row = rows[y]
                let moduleY = y / pixelsPerModule - Self.quietZone
                for x in 0..<side {
                    let colour = isDark(x / pixelsPerModule - Self.quietZone, moduleY) ? dark : light
                    for c in 0..<channels { row[x * channels + c] = colour[c] }
                }
            }
        }
    }

    /// The symbol as a black-on-white PNG, quiet zone included.
    /// - Parameter pixelsPerModule: at least 1.
    /// - Throws: `PhotoError` when libpng refuses (it does not for an image this small).
    public func png(pixelsPerModule: Int) throws(PhotoError) -> [UInt8] {
        try encodeImage(image(pixelsPerModule: pixelsPerModule), options: EncodeOptions(format: .png))
    }

    static func hex(_ colour: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        return "#" + String(colour.prefix(3).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
    }
}
