import Foundation
import Pixels

/// One made-up scene shot under different light: the set the proof shows before and after
/// `harmonize`, and the tests' synthetic sets. A street corner — sky and clouds, a grey wall, a
/// white wall, brick, stone, a road, a tree, a red car — with a 24-patch colour chart (the
/// classic chart's sRGB values) whose bottom row is six neutral patches, white to black.
public enum SampleSet {
    /// A scene in linear light as lit by daylight (D65).
    public struct Scene: Sendable {
        public let width: Int
        public let height: Int
        /// Linear R, G, B, row by row.
        let linear: [Float]
        /// The chart's 24 patches (their inner squares), row by row: `patches[18...]` are the
        /// neutral ones, white to black.
        public let patches: [PixelRect]

        /// The neutral patches, white to black.
        public var neutralPatches: ArraySlice<PixelRect> { patches[18...] }
    }

    /// The chart's colours, 8-bit sRGB, row by row (the last row neutral, white to black).
    public static let chart: [(UInt8, UInt8, UInt8)] = [
        (115, 82, 68), (194, 150, 130), (98, 122, 157), (87, 108, 67), (133, 128, 177), (103, 189, 170),
        (214, 126, 44), (80, 91, 166), (193, 90, 99), (94, 60, 108), (157, 188, 64), (224, 163, 46),
        (56, 61, 150), (70, 148, 73), (175, 54, 60), (231, 199, 31), (187, 86, 149), (8, 133, 161),
        (243, 243, 242), (200, 200, 200), (160, 160, 160), (122, 122, 121), (85, 85, 85), (52, 52, 52),
    ]

    /// The street corner at `width` × `height`.
    /// - Parameter seed: moves the clouds and the grain.
    public static func street(width: Int, height: Int, seed: UInt64 = 2) -> Scene {
        precondition(width >= 60 && height >= 40, "the scene needs room for its chart")
        var px = [Float](repeating: 0, count: width * height * 3)
        func lin(_ c: (UInt8, UInt8, UInt8)) -> (Float, Float, Float) {
            (Float(SRGBCurve.linear[Int(c.0)]), Float(SRGBCurve.linear[Int(c.1)]), Float(SRGBCurve.linear[Int(c.2)]))
        }
        func fill(_ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int, _ c: (Float, Float, Float)) {
            for y in max(0, y0)..<min(height, y1) {
                for x in max(0, x0)..<min(width, x1) {
                    let i = (y * width + x) * 3
                    px[i] = c.0; px[i + 1] = c.1; px[i + 2] = c.2
                }
            }
        }
        func fx(_ f: Double) -> Int { Int(f * Double(width)) }
        func fy(_ f: Double) -> Int { Int(f * Double(height)) }
        // The sky, darker toward the top, with clouds.
        let sky = lin((120, 165, 220)), skyBottom = fy(0.3)
        for y in 0..<skyBottom {
            let k = Float(0.7 + 0.3 * Double(y) / Double(max(1, skyBottom)))
            fill(0, y, width, y + 1, (sky.0 * k, sky.1 * k, sky.2 * k))
        }
        var random = Random(seed: seed)
        let cloud = lin((235, 236, 238))
        for _ in 0..<5 {
            let cx = random.unit() * Double(width), cy = random.unit() * 0.25 * Double(height)
            let r = (0.03 + 0.05 * random.unit()) * Double(width)
            for y in max(0, Int(cy - r))..<min(skyBottom, Int(cy + r) + 1) {
                for x in max(0, Int(cx - 2 * r))..<min(width, Int(cx + 2 * r) + 1) {
                    let dx = (Double(x) - cx) / (2 * r), dy = (Double(y) - cy) / r
                    if dx * dx + dy * dy < 1 { fill(x, y, x + 1, y + 1, cloud) }
                }
            }
        }
        let blocks: [(Double, Double, Double, Double, (UInt8, UInt8, UInt8))] = [
            (0, 0.3, 0.25, 1, (130, 130, 128)),      // a grey concrete wall
            (0.3, 0.25, 0.55, 1, (215, 212, 205)),   // a white wall
            (0.55, 0.3, 0.75, 0.65, (150, 80, 60)),  // brick
            (0.75, 0.25, 1, 0.7, (175, 170, 160)),   // stone
            (0, 0.7, 1, 1, (90, 90, 92)),            // the road
            (0.05, 0.55, 0.25, 0.8, (60, 90, 40)),   // a tree
            (0.6, 0.78, 0.8, 0.9, (180, 30, 35)),    // a red car
        ]
        for (x0, y0, x1, y1, c) in blocks { fill(fx(x0), fy(y0), fx(x1), fy(y1), lin(c)) }
        // The chart: 6 × 4 patches in a dark frame, bottom centre.
        let p = max(6, min(width / 16, height / 10)), left = (width - 6 * p) / 2, top = height - 4 * p - max(2, p / 3)
        fill(left - p / 6, top - p / 6, left + 6 * p + p / 6, top + 4 * p + p / 6, lin((20, 20, 20)))
        var patches: [PixelRect] = []
        let inset = max(1, p / 8)
        for (i, c) in chart.enumerated() {
            let x = left + (i % 6) * p + inset, y = top + (i / 6) * p + inset
            fill(x, y, x + p - 2 * inset, y + p - 2 * inset, lin(c))
            patches.append(PixelRect(x: x, y: y, width: p - 2 * inset, height: p - 2 * inset))
        }
        // Grain everywhere but on the chart (its patches are measured), light falling off to
        // the left.
        for y in 0..<height {
            for x in 0..<width {
                let onChart = x >= left && x < left + 6 * p && y >= top && y < top + 4 * p
                let shade = Float(0.8 + 0.4 * Double(x) / Double(width))
                let grain = onChart ? 1 : Float(exp(0.05 * random.normal()))
                for c in 0..<3 { px[(y * width + x) * 3 + c] *= onChart ? 1 : shade * grain }
            }
        }
        return Scene(width: width, height: height, linear: px, patches: patches)
    }

    /// The scene as a camera set to daylight records it under light of `kelvin`, `ev` brighter
    /// than a right exposure: 8-bit sRGB, clipped where it is too bright.
    /// - Parameter window: the part of the scene framed (the whole scene by default).
    public static func shot(_ scene: Scene, kelvin: Double, ev: Double = 0, window: PixelRect? = nil) -> Image {
        let light = ColourTemperature.white(kelvin: kelvin), gain = exp2(ev)
        let k = (Float(light.r * gain), Float(light.g * gain), Float(light.b * gain))
        let frame = window ?? PixelRect(x: 0, y: 0, width: scene.width, height: scene.height)
        var canvas = Canvas(width: frame.width, height: frame.height, channels: 3)
        canvas.withUnsafeMutableRows { rows in
            for y in 0..<frame.height {
                let row = rows[y]
                for x in 0..<frame.width {
                    let i = ((frame.y + y) * scene.width + frame.x + x) * 3
                    row[x * 3] = encoded(scene.linear[i] * k.0)
                    row[x * 3 + 1] = encoded(scene.linear[i + 1] * k.1)
                    row[x * 3 + 2] = encoded(scene.linear[i + 2] * k.2)
                }
            }
        }
        return canvas.finished()
    }

    /// Linear light to an 8-bit code through a table (exact to a hundredth of a code).
    static func encoded(_ v: Float) -> UInt8 {
        guard v > 0 else { return 0 }
        guard v < 1 else { return 255 }
        return encodeTable[Int(v * Float(encodeTable.count - 1) + 0.5)]
    }

    private static let encodeTable: [UInt8] = (0..<65536).map { SRGBCurve.code(Double($0) / 65535) }

    /// The scene's sun and grain: the same every time.
    typealias Random = SplitMix
}

extension SplitMix {
    /// 0 ..< 1.
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }

    /// Standard normal (Box–Muller).
    mutating func normal() -> Double {
        let u = max(unit(), 1e-12), v = unit()
        return (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
    }
}
