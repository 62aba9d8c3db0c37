import Codecs
import Foundation
import Pixels

/// Made-up photos for the demo: gradients and soft discs with grain, a red square in the
/// upright top-left corner (so a wrong rotation shows), in the shapes a real batch has.
enum SamplePhotos {
    struct Sample {
        var name: String
        var width: Int, height: Int
        var format: ImageFormat
        var orientation: Int = 1
        var gps = false
        var truncated = false
    }

    static let set: [Sample] = [
        Sample(name: "IMG_0001.jpg", width: 4032, height: 3024, format: .jpeg, gps: true),
        Sample(name: "IMG_0002.jpg", width: 4032, height: 3024, format: .jpeg, orientation: 6),
        Sample(name: "IMG_0010.heic", width: 4032, height: 3024, format: .heic),
        Sample(name: "square.jpg", width: 1080, height: 1080, format: .jpeg),
        Sample(name: "screenshot.png", width: 1179, height: 2556, format: .png),
        Sample(name: "broken.jpg", width: 1600, height: 1200, format: .jpeg, truncated: true),
    ]

    /// Writes the sample set into `folder`, returning the paths.
    static func write(into folder: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var paths: [String] = []
        for (i, s) in set.enumerated() {
            let upright = Layout(s).swapsAxes ? (s.height, s.width) : (s.width, s.height)
            let image = picture(width: upright.0, height: upright.1, seed: i + 1)
            // Store it the way a camera would: turned back, with the tag that turns it upright.
            let stored = Orientation.apply(image, exif: inverse(s.orientation))
            let exif = ExifBuilder(orientation: s.orientation, make: "PhotoFinish", model: "Demo",
                                   dateTimeOriginal: "2026:11:29 10:0\(i):00",
                                   gps: s.gps ? (48.8584, 2.2945) : nil).bytes()
            var bytes = try encodeImage(stored, options: EncodeOptions(format: s.format, quality: 90, exif: exif))
            if s.truncated { bytes.removeLast(bytes.count / 2) }
            let path = folder + "/" + s.name
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            paths.append(path)
        }
        return paths
    }

    private struct Layout {
        let swapsAxes: Bool
        init(_ s: Sample) { swapsAxes = (5...8).contains(s.orientation) }
    }

    /// The orientation that undoes `o` (6 and 8 undo each other; the rest undo themselves).
    static func inverse(_ o: Int) -> Int { o == 6 ? 8 : o == 8 ? 6 : o }

    /// A photo-like picture: a two-colour gradient, soft discs, grain, a red square top-left.
    static func picture(width w: Int, height h: Int, seed: Int) -> PixelBuffer {
        let image = PixelBuffer(width: w, height: h, channels: 3)
        var rng = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15
        let top = (Double(60 + seed * 37 % 120), Double(90 + seed * 53 % 120), Double(140 + seed * 71 % 100))
        let bottom = (top.2 * 0.6, top.0 * 0.8, top.1 * 0.5)
        var discs: [(x: Double, y: Double, radius: Double, lift: Double)] = []
        for k in 0..<6 {
            let x = Double(w) * Double((seed * 13 + k * 29) % 97) / 97
            let y = Double(h) * Double((seed * 7 + k * 41) % 89) / 89
            let radius = Double(min(w, h)) * (0.08 + Double(k % 3) * 0.05)
            discs.append((x, y, radius, Double(40 + k * 30 % 120)))
        }
        let square = max(8, min(w, h) / 10)
        for y in 0..<h {
            let row = image.row(y)
            let t = Double(y) / Double(max(1, h - 1))
            for x in 0..<w {
                var r = top.0 + (bottom.0 - top.0) * t, g = top.1 + (bottom.1 - top.1) * t, b = top.2 + (bottom.2 - top.2) * t
                for (cx, cy, radius, lift) in discs {
                    let dx = Double(x) - cx, dy = Double(y) - cy
                    let d2 = (dx * dx + dy * dy) / (radius * radius)
                    if d2 < 1 { let f = lift * (1 - d2); r += f; g += f * 0.8; b += f * 0.5 }
                }
                rng = rng &* 6364136223846793005 &+ 1442695040888963407
                let grain = Double(Int(rng >> 59)) - 16
                if x < square && y < square { r = 230; g = 30; b = 30 }
                row[x * 3] = UInt8(max(0, min(255, r + grain)))
                row[x * 3 + 1] = UInt8(max(0, min(255, g + grain)))
                row[x * 3 + 2] = UInt8(max(0, min(255, b + grain)))
            }
        }
        return image
    }
}
