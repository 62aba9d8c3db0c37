import Foundation
import Pixels

/// The choices "auto" makes for a mark, from what the photo shows under it: which colour
/// contrasts more (WCAG contrast ratio), which logo file, which place is calmest. Pure
/// arithmetic on luminances and boxes, so it is tested with plain values; `PhotoSample`
/// measures the photo.
public enum MarkChoice {
    /// WCAG relative luminance of an sRGB colour, 0 (black) … 1 (white).
    public static func luminance(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> Double {
        Double(linear[Int(r)]) * 0.2126 + Double(linear[Int(g)]) * 0.7152 + Double(linear[Int(b)]) * 0.0722
    }

    /// The WCAG contrast ratio of two luminances, 1 … 21.
    public static func contrast(_ a: Double, _ b: Double) -> Double {
        (max(a, b) + 0.05) / (min(a, b) + 0.05)
    }

    /// The contrast below which text stops being easy to read (WCAG's floor for large text).
    public static let legible = 3.0

    /// How a fill fares over the photo: the contrast it reaches over most of the box (its
    /// 25th percentile, so a few bright specks do not decide) and over nearly all of it (10th).
    public struct Fare: Sendable, Equatable {
        public var typical: Double
        public var worst: Double
    }

    /// How a fill of luminance `fill` fares over `under` (the luminances of the photo under
    /// the mark, in any order).
    public static func fare(of fill: Double, over under: [Double]) -> Fare {
        guard !under.isEmpty else { return Fare(typical: 21, worst: 21) }
        let ratios = under.map { contrast(fill, $0) }.sorted()
        return Fare(typical: ratios[ratios.count / 4], worst: ratios[ratios.count / 10])
    }

    /// `color: "auto"`: the light or the dark colour, whichever contrasts more with the photo
    /// under the mark, and whether a rim in the other colour is needed to keep every part
    /// legible (the photo under the box is both light and dark, or busy).
    /// - Returns: true for the light colour; `rim` when the chosen fill falls under 3:1 over
    ///   more than a tenth of the box.
    public static func fill(light: Double, dark: Double, under: [Double]) -> (light: Bool, rim: Bool) {
        let l = fare(of: light, over: under), d = fare(of: dark, over: under)
        let useLight = l.typical != d.typical ? l.typical > d.typical : l.worst >= d.worst
        return (useLight, (useLight ? l : d).worst < legible)
    }

    /// `logo.onDark`: whether the second logo contrasts more with the photo under the logo
    /// than the first: each logo's contrast with the photo's mean luminance there, averaged
    /// over the logo's pixels by their alpha (so dark lettering beside a bright emblem counts
    /// as the dark lettering it is).
    /// - Parameters:
    ///   - file: the first logo's luminances and their weights (alpha).
    ///   - onDark: the second's.
    ///   - under: the photo's luminances under the logo's box.
    public static func prefersOnDark(file: [(luminance: Double, weight: Double)],
                                     onDark: [(luminance: Double, weight: Double)], under: [Double]) -> Bool {
        guard !under.isEmpty else { return false }
        let mean = under.reduce(0, +) / Double(under.count)
        func fare(_ logo: [(luminance: Double, weight: Double)]) -> Double {
            let total = logo.reduce(0) { $0 + $1.weight }
            return total > 0 ? logo.reduce(0) { $0 + contrast($1.luminance, mean) * $1.weight } / total : 0
        }
        return fare(onDark) > fare(file)
    }

    /// A box grown by `by` pixels on every side (the room kept around the other mark).
    public static func grown(_ box: PixelRect, by: Int) -> PixelRect {
        PixelRect(x: box.x - by, y: box.y - by, width: box.width + 2 * by, height: box.height + 2 * by)
    }

    /// `position: "auto"`: the calmest candidate that stays off everything to avoid.
    /// - Parameters:
    ///   - boxes: each candidate place's box, in the image's pixels.
    ///   - detail: how busy the photo is under each box (lower is calmer).
    ///   - avoid: boxes never to cover, most important first (the other mark, then the
    ///     subject); when every candidate covers one, the later ones are given up first.
    /// - Returns: the index of the chosen candidate.
    public static func calmest(boxes: [PixelRect], detail: [Double], avoid: [PixelRect]) -> Int {
        precondition(!boxes.isEmpty && boxes.count == detail.count)
        func overlaps(_ a: PixelRect, _ b: PixelRect) -> Bool {
            a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height
        }
        func overlap(_ a: PixelRect, _ b: PixelRect) -> Int {
            max(0, min(a.x + a.width, b.x + b.width) - max(a.x, b.x))
                * max(0, min(a.y + a.height, b.y + b.height) - max(a.y, b.y))
        }
        for kept in stride(from: avoid.count, through: 0, by: -1) {
            let rules = avoid.prefix(kept)
            let free = boxes.indices.filter { i in !rules.contains { overlaps(boxes[i], $0) } }
            if let best = free.min(by: { detail[$0] < detail[$1] }) { return best }
        }
        // Unreachable (with no rules every candidate is free), kept total for the compiler.
        return boxes.indices.min { overlap(boxes[$0], avoid[0]) < overlap(boxes[$1], avoid[0]) } ?? 0
    }

    /// "#rrggbb" for the report.
    public static func hex(_ c: Template.Color) -> String {
        String(format: "#%02x%02x%02x", c.r, c.g, c.b)
    }

    private static let linear: [Float] = (0..<256).map { v in
        let c = Double(v) / 255
        return Float(c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4))
    }
}

/// Reading the photo under a mark's box: luminances (sampled) and how busy it is.
enum PhotoSample {
    /// At most this many samples per box: enough for percentiles, cheap on a 48 MP photo.
    static let samples = 4096

    /// The WCAG luminances of the pixels under `box` (clipped to the image), on a regular
    /// grid of at most `samples` points.
    static func luminances(_ image: PixelRows, in box: PixelRect) -> [Double] {
        guard let r = clipped(box, image) else { return [] }
        let step = max(1, Int((Double(r.width * r.height) / Double(samples)).squareRoot().rounded(.up)))
        var values: [Double] = []
        values.reserveCapacity((r.width / step + 1) * (r.height / step + 1))
        for y in stride(from: r.y, to: r.y + r.height, by: step) {
            let row = image[y]
            for x in stride(from: r.x, to: r.x + r.width, by: step) {
                let p = row + x * image.channels
                values.append(MarkChoice.luminance(p[0], p[1], p[2]))
            }
        }
        return values
    }

    /// How busy the photo is under `box`: the mean absolute difference of neighbouring
    /// pixels' green (a stand-in for lightness), on a sampled grid. 0 on a flat area.
    static func detail(_ image: PixelRows, in box: PixelRect) -> Double {
        guard let r = clipped(box, image), r.width > 1, r.height > 1 else { return 0 }
        let step = max(1, Int((Double(r.width * r.height) / Double(samples)).squareRoot().rounded(.up)))
        var total = 0, count = 0
        let c = image.channels
        for y in stride(from: r.y, to: r.y + r.height - 1, by: step) {
            let row = image[y], below = image[y + 1]
            for x in stride(from: r.x, to: r.x + r.width - 1, by: step) {
                let g = Int(row[x * c + 1])
                total += abs(g - Int(row[(x + 1) * c + 1])) + abs(g - Int(below[x * c + 1]))
                count += 2
            }
        }
        return count == 0 ? 0 : Double(total) / Double(count)
    }

    private static func clipped(_ box: PixelRect, _ image: PixelRows) -> PixelRect? {
        let x0 = max(0, box.x), y0 = max(0, box.y)
        let x1 = min(image.width, box.x + box.width), y1 = min(image.height, box.y + box.height)
        return x1 > x0 && y1 > y0 ? PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0) : nil
    }
}
