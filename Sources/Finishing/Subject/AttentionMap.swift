import Foundation
import Pixels

/// Where a person's eye goes in a photo, as one weight per pixel of a small analysis image —
/// in the spirit of libvips' smartcrop "attention": detail (edges of the lightness), skin
/// tones and strongly saturated colour draw the eye; flat sky, snow, a white table and grain
/// do not. Pure arithmetic on a small upright RGB image (the preview every photo already
/// has), so it is tested with plain pixels and costs a few milliseconds.
public struct AttentionMap: Sendable {
    /// The map's size (the analysis image's).
    public let width: Int
    public let height: Int
    /// One weight per pixel, row by row: 0 (nothing to see) upwards.
    public var weights: [Float]
    /// 1 where the pixel has a skin tone, row by row.
    public var skin: [Float]

    /// The longest side the analysis works at: enough to place a crop within half a percent
    /// of the photo, small enough to cost a few milliseconds.
    public static let analysisLongSide = 192

    /// How much each cue counts. Skin counts most (people look at people), then saturated
    /// colour (a red shirt, a product), then detail — capped, so a busy texture never
    /// outweighs a face.
    static let skinWeight: Float = 1.0, saturationWeight: Float = 0.8, edgeWeight: Float = 0.4
    /// How much skin tones count when `share` of the picture has them: fully up to a third,
    /// nothing from two thirds on (the whole frame is skin-toned: a warm room, a cat's fur).
    static func skinSays(share: Float) -> Float { min(1, max(0, (2 / 3 - share) * 3)) }
    /// A lightness step (CIE L*, 0–100) that counts as a full edge; Sobel's gain is 4.
    static let fullEdge: Float = 4 * 15
    /// Chroma (C*ab) from which colour starts to count, and where it counts fully.
    static let saturationStart: Float = 35, saturationFull: Float = 65

    /// Measures `image`.
    /// - Parameters:
    ///   - image: upright RGB or RGBA (alpha ignored), at most a few hundred pixels a side
    ///     (use `analysisImage(from:)` for anything larger).
    ///   - topBias: for portrait-shaped photos, rows near the top count up to this much
    ///     more than rows near the bottom (heads are near the top); 0 for none.
    public init(_ image: Image, topBias: Float = 0) {
        self = image.withUnsafeRows { Self($0, topBias: topBias) }
    }

    /// Measures rows lent for reading (see `init(_:topBias:)`).
    public init(_ image: PixelRows, topBias: Float = 0) {
        width = image.width
        height = image.height
        let count = width * height
        var lightness = [Float](repeating: 0, count: count)
        var weights = [Float](repeating: 0, count: count)
        var skin = [Float](repeating: 0, count: count)
        let linear = Self.linearTable
        let channels = image.channels
        for y in 0..<height {
            let row = image[y]
            for x in 0..<width {
                let p = row + x * channels
                let lab = Self.lab(linear[Int(p[0])], linear[Int(p[1])], linear[Int(p[2])])
                let i = y * width + x
                lightness[i] = lab.l
                // libvips' skin box in a*b*, trained on many skin tones, with some lightness.
                if lab.l >= 15, lab.a >= 3, lab.a <= 22, lab.b >= 4, lab.b <= 31 { skin[i] = 1 }
                let chroma = (lab.a * lab.a + lab.b * lab.b).squareRoot()
                let saturation = min(1, max(0, (chroma - Self.saturationStart) / (Self.saturationFull - Self.saturationStart)))
                weights[i] = Self.saturationWeight * saturation
            }
        }
        // Skin tones draw the eye where they are rare: a warm wood-and-plaster room or a
        // ginger cat's fur is skin-toned all over, and then they say nothing.
        let skinWeight = Self.skinWeight * Self.skinSays(share: count > 0 ? Float(skin.reduce(0, +)) / Float(count) : 0)
        if skinWeight > 0 { for i in 0..<count { weights[i] += skinWeight * skin[i] } }
        // Sobel on the lightness, |gx| + |gy|, capped: detail counts, but a wall of texture
        // is no more interesting than a little of it.
        if width >= 3 && height >= 3 {
            for y in 1..<(height - 1) {
                for x in 1..<(width - 1) {
                    let i = y * width + x
                    let tl = lightness[i - width - 1], t = lightness[i - width], tr = lightness[i - width + 1]
                    let l = lightness[i - 1], r = lightness[i + 1]
                    let bl = lightness[i + width - 1], b = lightness[i + width], br = lightness[i + width + 1]
                    let gx = (tr + 2 * r + br) - (tl + 2 * l + bl)
                    let gy = (bl + 2 * b + br) - (tl + 2 * t + tr)
                    weights[i] += Self.edgeWeight * min(1, (abs(gx) + abs(gy)) / Self.fullEdge)
                }
            }
        }
        if topBias > 0 && height > 1 {
            for y in 0..<height {
                let factor = 1 + topBias * (1 - 2 * Float(y) / Float(height - 1)) / 2
                for x in 0..<width { weights[y * width + x] *= factor }
            }
        }
        self.weights = weights
        self.skin = skin
    }

    /// An image small enough to analyse: `image` shrunk by whole-pixel box averaging so its
    /// long side is at most `analysisLongSide` (the image itself when it already is).
    public static func analysisImage(from image: Image) -> Image {
        let factor = (max(image.width, image.height) + analysisLongSide - 1) / analysisLongSide
        guard factor > 1 else { return image }
        let w = max(1, image.width / factor), h = max(1, image.height / factor)
        // A side shorter than the factor (a photo 3 px wide and 2,000 tall) averages all it has.
        let fx = min(factor, image.width), fy = min(factor, image.height)
        let channels = image.channels
        let (g, b) = channels >= 3 ? (1, 2) : (0, 0)
        var sums = [Int](repeating: 0, count: w * 3)
        let area = fx * fy
        return image.withUnsafeRows { rows in
            Image(width: w, height: h, channels: 3) { result in
                for y in 0..<h {
                    for i in sums.indices { sums[i] = 0 }
                    for dy in 0..<fy {
                        let row = rows[y * fy + dy]
                        for x in 0..<w {
                            for dx in 0..<fx {
                                let p = row + (x * fx + dx) * channels
                                sums[x * 3] += Int(p[0]); sums[x * 3 + 1] += Int(p[g]); sums[x * 3 + 2] += Int(p[b])
                            }
                        }
                    }
                    let out = result[y]
                    for i in 0..<(w * 3) { out[i] = UInt8((sums[i] + area / 2) / area) }
                }
            }
        }
    }

    /// sRGB code value → linear light.
    static let linearTable: [Float] = (0..<256).map { v in
        let c = Float(v) / 255
        return c <= 0.04045 ? c / 12.92 : powf((c + 0.055) / 1.055, 2.4)
    }

    /// Linear sRGB (D65) → CIE L*a*b*.
    @inline(__always)
    static func lab(_ r: Float, _ g: Float, _ b: Float) -> (l: Float, a: Float, b: Float) {
        let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
        let y = 0.2126 * r + 0.7152 * g + 0.0722 * b
        let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
        @inline(__always) func f(_ t: Float) -> Float { t > 0.008856 ? cbrtf(t) : 7.787 * t + 16 / 116 }
        let fx = f(x), fy = f(y), fz = f(z)
        return (116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz))
    }
}
