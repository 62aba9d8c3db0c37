import Codecs
import Foundation
import Pixels
import System

/// Made-up photos in the shapes a real batch has, for `photofinish demo` (files to drop) and
/// `photofinish proof` (a template tried on every shape). Each is a gradient with soft discs
/// and grain — texture under every mark — and a red square in the upright top-left corner, so
/// a wrong rotation shows at a glance.
public enum SamplePhotos {
    /// One sample: its stored size (before EXIF orientation), format and tag.
    public struct Sample: Sendable {
        public var name: String
        /// What it stands for, in a few words ("landscape").
        public var label: String
        public var width: Int, height: Int
        public var format: ImageFormat
        public var orientation: Int = 1
        public var gps = false
        public var truncated = false
        /// What it shows (a scene with a subject), or nil for the plain textured picture.
        public var scene: SampleScenes.Kind? = nil
        /// Where the scene's subject is across the photo, 0 … 1.
        public var subjectAt = 0.25

        /// The label with the upright size: "landscape 4032×3024".
        public var caption: String {
            let u = upright
            return label.replacingOccurrences(of: ",", with: " \(u.width)×\(u.height),", options: [], range: label.range(of: ","))
                + (label.contains(",") ? "" : " \(u.width)×\(u.height)")
        }

        /// The size a person sees (EXIF orientation applied).
        public var upright: (width: Int, height: Int) {
            (5...8).contains(orientation) ? (height, width) : (width, height)
        }
    }

    /// The demo's set: two 12 MP photos (one stored sideways), a HEIC, a square, a tall PNG
    /// screenshot and one broken JPEG that fails on purpose.
    public static let demoSet: [Sample] = [
        Sample(name: "IMG_0001.jpg", label: "landscape", width: 4032, height: 3024, format: .jpeg, gps: true),
        Sample(name: "IMG_0002.jpg", label: "portrait, EXIF 6", width: 4032, height: 3024, format: .jpeg, orientation: 6),
        Sample(name: "IMG_0010.heic", label: "HEIC", width: 4032, height: 3024, format: .heic),
        Sample(name: "square.jpg", label: "square", width: 1080, height: 1080, format: .jpeg),
        Sample(name: "screenshot.png", label: "screenshot", width: 1179, height: 2556, format: .png),
        Sample(name: "broken.jpg", label: "broken", width: 1600, height: 1200, format: .jpeg, truncated: true),
    ]

    /// The proof's mixed set (reference: `photofinish proof`), at its real sizes unless `shrink`
    /// divides them (tests on a debug build; the product always uses 1): every shape a batch has,
    /// each showing what crops and marks find hard — a person off-centre, a head near the top, a
    /// product on white, snow, night, and a group whose crops must keep every face whole.
    public static func proofSet(shrink: Int = 1) -> [Sample] {
        let s = max(1, shrink)
        func px(_ n: Int) -> Int { max(16, n / s) }
        return [
            Sample(name: "landscape.jpg", label: "landscape, a group of five on a warm wall", width: px(4032),
                   height: px(3024), format: .jpeg, scene: .group, subjectAt: 0.5),
            Sample(name: "portrait.jpg", label: "portrait, head near the top, stored sideways (EXIF 6)",
                   width: px(4032), height: px(3024), format: .jpeg, orientation: 6, scene: .portrait, subjectAt: 0.5),
            Sample(name: "48mp.jpg", label: "48 MP, snow", width: px(8064), height: px(6048), format: .jpeg,
                   scene: .snow, subjectAt: 0.7),
            Sample(name: "screenshot.png", label: "screenshot, a product on white", width: px(1179), height: px(2556),
                   format: .png, scene: .product, subjectAt: 0.5),
            Sample(name: "square.jpg", label: "square, night", width: px(1080), height: px(1080), format: .jpeg,
                   scene: .night, subjectAt: 0.3),
            Sample(name: "panorama.jpg", label: "panorama, a person at the right", width: px(16000), height: px(3400),
                   format: .jpeg, scene: .person, subjectAt: 0.8),
        ]
    }

    /// The sample encoded as a camera would store it: turned back, with the EXIF tag that
    /// turns it upright (and GPS when asked, for the metadata policy to strip).
    /// - Parameter seed: varies the picture.
    public static func encoded(_ s: Sample, seed: Int) throws(PhotoError) -> [UInt8] {
        let upright = s.upright
        let image = s.scene.map { kind in
            SampleScenes.draw(kind, width: upright.width, height: upright.height, at: s.subjectAt, seed: seed,
                              redSquare: true).image
        } ?? picture(width: upright.width, height: upright.height, seed: seed)
        let stored = Orientation.apply(image, exif: inverse(s.orientation))
        let exif = ExifBuilder(orientation: s.orientation, make: "PhotoFinish", model: "Sample",
                               dateTimeOriginal: "2026:11:29 10:\(String(format: "%02d", seed % 60)):00",
                               gps: s.gps ? (48.8584, 2.2945) : nil).bytes()
        var bytes = try encodeImage(stored, options: EncodeOptions(format: s.format, quality: 90, exif: exif))
        if s.truncated { bytes.removeLast(bytes.count / 2) }
        return bytes
    }

    /// Writes the demo set into `folder`, returning the paths: the photos, and around them
    /// what a real card holds — the first photo's RAW (a DNG) and its XMP sidecar, and a text
    /// file — which the batch files as the photo's `alternates` and as `ignored`.
    public static func write(into folder: String) throws -> [String] {
        try Files.makeDirectories(folder, permissions: 0o777)
        var files: [(String, [UInt8])] = []
        for (i, s) in demoSet.enumerated() { files.append((s.name, try encoded(s, seed: i + 1))) }
        files += try cardExtras()
        var paths: [String] = []
        for (name, bytes) in files {
            let path = folder + "/" + name
            try Files.write(bytes, to: path)
            paths.append(path)
        }
        return paths
    }

    /// The demo card's other files: `IMG_0001.dng` (the first photo's RAW, 1008×756 with its
    /// preview), `IMG_0001.xmp` (a rating and a keyword) and `notes.txt`.
    static func cardExtras() throws -> [(String, [UInt8])] {
        let first = demoSet[0]
        let preview = try encodeImage(picture(width: 1008, height: 756, seed: 1), options: EncodeOptions(format: .jpeg, quality: 85))
        var facts = DNGWriter.Facts()
        facts.make = "PhotoFinish"
        facts.model = "Sample"
        let dng = DNGWriter.dng(preview: preview, previewWidth: 1008, previewHeight: 756, rawWidth: 1008, rawHeight: 756,
                                facts: facts)
        let stem = String(first.name.prefix { $0 != "." })
        let xmp = """
            <x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
            <rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/"
              xmp:Rating="4"><dc:subject><rdf:Bag><rdf:li>demo</rdf:li></rdf:Bag></dc:subject></rdf:Description>
            </rdf:RDF></x:xmpmeta>
            """
        let notes = "Demo card: a RAW+JPEG pair (IMG_0001), its XMP sidecar and this note are filed with the photos, not failed.\n"
        return [(stem + ".dng", dng), (stem + ".xmp", Array(xmp.utf8)), ("notes.txt", Array(notes.utf8))]
    }

    /// The orientation that undoes `o` (6 and 8 undo each other; the rest undo themselves).
    static func inverse(_ o: Int) -> Int { o == 6 ? 8 : o == 8 ? 6 : o }

    /// A photo-like picture: a two-colour gradient, soft discs, grain, a red square top-left.
    /// Quick even at 54 MP: the gradient is per row, the discs touch only the spans they
    /// cover, and the grain comes from a table.
    public static func picture(width w: Int, height h: Int, seed: Int) -> Image {
        var image = Canvas(width: w, height: h, channels: 3)
        var rng = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15
        let grainCount = 1 << 16
        let grain = UnsafeMutablePointer<Int32>.allocate(capacity: grainCount)
        defer { grain.deallocate() }
        for i in 0..<grainCount {
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            grain[i] = Int32(truncatingIfNeeded: Int(rng >> 59) - 16)
        }
        let top = (Double(60 + seed * 37 % 120), Double(90 + seed * 53 % 120), Double(140 + seed * 71 % 100))
        let bottom = (top.2 * 0.6, top.0 * 0.8, top.1 * 0.5)
        var discs: [(x: Double, y: Double, radius: Double, lift: Double)] = []
        for k in 0..<6 {
            let x = Double(w) * Double((seed * 13 + k * 29) % 97) / 97
            let y = Double(h) * Double((seed * 7 + k * 41) % 89) / 89
            let radius = Double(min(w, h)) * (0.08 + Double(k % 3) * 0.05)
            discs.append((x, y, radius, Double(40 + k * 30 % 120)))
        }
        // Small enough to leave a top-left logo on texture, large enough to see in a thumbnail.
        let square = max(8, min(w, h) / 25)
        // Per row: the lift each pixel gets from the discs, in 1/256ths of a level.
        let lift = UnsafeMutablePointer<Int32>.allocate(capacity: w)
        defer { lift.deallocate() }
        image.withUnsafeMutableRows { rows in
            for y in 0..<h {
                let row = rows[y]
                let t = Double(y) / Double(max(1, h - 1))
                let r0 = Int32(top.0 + (bottom.0 - top.0) * t), g0 = Int32(top.1 + (bottom.1 - top.1) * t)
                let b0 = Int32(top.2 + (bottom.2 - top.2) * t)
                lift.initialize(repeating: 0, count: w)
                for d in discs {
                    let dy = Double(y) - d.y
                    guard abs(dy) < d.radius else { continue }
                    let half = (d.radius * d.radius - dy * dy).squareRoot()
                    let x0 = max(0, Int(d.x - half)), x1 = min(w - 1, Int(d.x + half))
                    guard x0 <= x1 else { continue }
                    let r2 = d.radius * d.radius
                    for x in x0...x1 {
                        let dx = Double(x) - d.x
                        let f = 1 - (dx * dx + dy * dy) / r2
                        if f > 0 { lift[x] += Int32(d.lift * f * 256) }
                    }
                }
                let offset = (y &* 7919) & (grainCount - 1)
                var p = row
                for x in 0..<w {
                    let n = grain[(offset + x) & (grainCount - 1)], l = lift[x]
                    let r = r0 + l >> 8 + n, g = g0 + (l * 205) >> 16 + n, b = b0 + l >> 9 + n
                    p[0] = UInt8(r < 0 ? 0 : r > 255 ? 255 : r)
                    p[1] = UInt8(g < 0 ? 0 : g > 255 ? 255 : g)
                    p[2] = UInt8(b < 0 ? 0 : b > 255 ? 255 : b)
                    p += 3
                }
                if y < square {
                    for x in 0..<min(square, w) { row[x * 3] = 230; row[x * 3 + 1] = 30; row[x * 3 + 2] = 30 }
                }
            }
        }
        return image.finished()
    }
}
