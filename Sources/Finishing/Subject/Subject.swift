import Codecs
import Pixels

/// A rectangle as fractions of the upright photo (0…1 on each axis), so one subject serves
/// every crop and output size.
public struct FocusBox: Sendable, Equatable, CustomStringConvertible {
    public var x: Double, y: Double, width: Double, height: Double
    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }
    public var maxX: Double { x + width }
    public var maxY: Double { y + height }
    public var area: Double { width * height }
    public var description: String {
        func f(_ v: Double) -> String { String(Double(Int((v * 1000).rounded())) / 1000) }
        return "[\(f(x)), \(f(y)), \(f(width)), \(f(height))]"
    }

    /// The smallest box holding both.
    public func union(_ other: FocusBox) -> FocusBox {
        let x0 = min(x, other.x), y0 = min(y, other.y)
        return FocusBox(x: x0, y: y0, width: max(maxX, other.maxX) - x0, height: max(maxY, other.maxY) - y0)
    }

    /// True when the two boxes share some area.
    public func intersects(_ other: FocusBox) -> Bool {
        x < other.maxX && other.x < maxX && y < other.maxY && other.y < maxY
    }

    /// This box in the pixels of a `width` × `height` image, rounded outwards.
    public func pixels(width w: Int, height h: Int) -> PixelRect {
        let x0 = max(0, Int((x * Double(w)).rounded(.down))), y0 = max(0, Int((y * Double(h)).rounded(.down)))
        let x1 = min(w, Int((maxX * Double(w)).rounded(.up))), y1 = min(h, Int((maxY * Double(h)).rounded(.up)))
        return PixelRect(x: x0, y: y0, width: max(0, x1 - x0), height: max(0, y1 - y0))
    }
}

/// What a photo is about, found once per photo and used by every crop and auto mark.
public struct Subject: Sendable, Equatable {
    /// Where the subject's boxes came from: the report's `applied.crop.focus`.
    public enum Source: String, Sendable {
        /// Face regions (MWG `Face`) the file carries.
        case faces
        /// Other regions (MWG `Focus`, `Pet`, …) the file carries.
        case xmpRegion = "xmp-region"
        /// The attention map.
        case subject
    }

    public var source: Source
    /// The whole subject: every part a crop should keep when it can.
    public var box: FocusBox
    /// The parts to keep whole first, most important first (faces, skin-toned areas or
    /// regions); a crop too small for `box` keeps as many of these as fit. Not used when
    /// there are `faces`.
    public var keep: [FocusBox]
    /// The point to keep when not even the first of `keep` fits (the strongest attention).
    public var peak: (x: Double, y: Double)
    /// The faces, as found by the detector or named by the file (not grown for hair): when
    /// there are any, crops are placed on them (`CropPlacement`: faces are atoms).
    public var faces: [FocusBox]

    public init(source: Source, box: FocusBox, keep: [FocusBox], peak: (x: Double, y: Double), faces: [FocusBox] = []) {
        self.source = source; self.box = box; self.keep = keep; self.peak = peak; self.faces = faces
    }

    public static func == (a: Subject, b: Subject) -> Bool {
        a.source == b.source && a.box == b.box && a.keep == b.keep && a.peak == b.peak && a.faces == b.faces
    }

    /// The subject of a photo whose faces were found by the detector: the faces placed every
    /// crop (`focus: "faces"`); the attention map's subject, when there is one, is what a crop
    /// keeps most of among the placements that keep the faces alike. Nil without faces and
    /// without an attention subject.
    public static func detected(faces: [FocusBox], attention: Subject?) -> Subject? {
        guard let first = faces.first else { return attention }
        let union = faces.dropFirst().reduce(first) { $0.union($1) }
        let largest = faces.max { $0.area < $1.area } ?? first
        return Subject(source: .faces, box: attention?.box ?? union, keep: [],
                       peak: attention?.peak ?? (largest.x + largest.width / 2, largest.y + largest.height / 2),
                       faces: faces)
    }
}

/// Finding the subject in an attention map: the strongest area, grown over what stays
/// strong around it, plus the skin-toned parts inside it (faces, usually) to keep whole.
public enum SubjectFinder {
    /// A map whose strongest (blurred) weight is below this shows nothing to centre on: a
    /// flat wall, an empty sky. Weights are in the map's units (a skin pixel is 1).
    static let nothingToSee: Float = 0.06
    /// The subject is the connected area whose blurred weight stays above this fraction of
    /// the peak.
    static let grow: Float = 0.5
    /// A skin-toned area smaller than this fraction of the photo is not worth keeping whole
    /// (a hand at the edge, a speck of sand).
    static let smallestKeep = 0.002

    /// The subject of `map`, or nil when the map shows nothing to centre on.
    public static func find(in map: AttentionMap) -> Subject? {
        let w = map.width, h = map.height
        guard w >= 2, h >= 2 else { return nil }
        // Blur over about a twelfth of the short side: an area draws the eye, not a pixel.
        let radius = max(1, min(w, h) / 24)
        let blurred = boxBlur(map.weights, width: w, height: h, radius: radius)
        var peak = 0
        for i in blurred.indices where blurred[i] > blurred[peak] { peak = i }
        guard blurred[peak] >= nothingToSee else { return nil }
        let region = grown(from: peak, where: { blurred[$0] >= blurred[peak] * grow }, width: w, height: h)
        let box = fraction(region.bounds, width: w, height: h)
        // Skin inside the subject, as areas: the parts to keep whole first, largest first.
        let skinBlurred = boxBlur(map.skin, width: w, height: h, radius: max(1, radius / 2))
        var seen = [Bool](repeating: false, count: w * h)
        var keep: [(box: FocusBox, area: Int)] = []
        for i in region.members where skinBlurred[i] >= 0.5 && !seen[i] {
            let blob = grown(from: i, where: { skinBlurred[$0] >= 0.5 }, width: w, height: h)
            for j in blob.members { seen[j] = true }
            if Double(blob.members.count) >= smallestKeep * Double(w * h) {
                keep.append((headroom(fraction(blob.bounds, width: w, height: h)), blob.members.count))
            }
        }
        keep.sort { $0.area > $1.area }
        return Subject(source: .subject, box: box, keep: keep.prefix(3).map(\.box),
                       peak: ((Double(peak % w) + 0.5) / Double(w), (Double(peak / w) + 0.5) / Double(h)))
    }

    /// A subject from regions the file names (MWG): faces are kept whole first.
    /// - Parameter regions: boxes as fractions of the upright photo, with whether each is a face.
    public static func fromRegions(_ regions: [(box: FocusBox, isFace: Bool)]) -> Subject? {
        guard let first = regions.first else { return nil }
        let faces = regions.filter(\.isFace).map(\.box).sorted { $0.area > $1.area }
        let box = regions.dropFirst().reduce(first.box) { $0.union($1.box) }
        let anchor = faces.first ?? first.box
        return Subject(source: faces.isEmpty ? .xmpRegion : .faces, box: box,
                       keep: faces.isEmpty ? regions.map(\.box).sorted { $0.area > $1.area } : faces,
                       peak: (anchor.x + anchor.width / 2, anchor.y + anchor.height / 2), faces: faces)
    }

    /// A skin-toned area grown to the head it likely belongs to: hair above (a third of its
    /// height) and a little at the sides, within the photo.
    static func headroom(_ box: FocusBox) -> FocusBox {
        let x0 = max(0, box.x - box.width * 0.15), y0 = max(0, box.y - box.height / 3)
        return FocusBox(x: x0, y: y0, width: min(1, box.maxX + box.width * 0.15) - x0, height: box.maxY - y0)
    }

    /// A subject from the MWG regions a file carries (turned upright with the photo): faces
    /// (`Type` "Face") are kept whole first; any other region (a focus area, a pet) otherwise.
    /// Nil when there is none.
    public static func fromRegions(_ regions: [XMPRegion]) -> Subject? {
        fromRegions(regions.compactMap { region in
            let a = region.area
            let x0 = max(0, a.x - a.width / 2), y0 = max(0, a.y - a.height / 2)
            let x1 = min(1, a.x + a.width / 2), y1 = min(1, a.y + a.height / 2)
            guard x1 > x0, y1 > y0 else { return nil }
            return (FocusBox(x: x0, y: y0, width: x1 - x0, height: y1 - y0), region.type == "Face")
        })
    }

    static func fraction(_ r: PixelRect, width: Int, height: Int) -> FocusBox {
        FocusBox(x: Double(r.x) / Double(width), y: Double(r.y) / Double(height),
                 width: Double(r.width) / Double(width), height: Double(r.height) / Double(height))
    }

    /// The 4-connected area around `start` where `inside` holds: its pixels and bounds.
    static func grown(from start: Int, where inside: (Int) -> Bool, width w: Int,
                      height h: Int) -> (members: [Int], bounds: PixelRect) {
        var visited = [Bool](repeating: false, count: w * h)
        var stack = [start], members: [Int] = []
        visited[start] = true
        var minX = w, minY = h, maxX = -1, maxY = -1
        while let i = stack.popLast() {
            members.append(i)
            let x = i % w, y = i / w
            minX = min(minX, x); maxX = max(maxX, x); minY = min(minY, y); maxY = max(maxY, y)
            for (nx, ny) in [(x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)] where nx >= 0 && ny >= 0 && nx < w && ny < h {
                let j = ny * w + nx
                if !visited[j] && inside(j) { visited[j] = true; stack.append(j) }
            }
        }
        return (members, PixelRect(x: minX, y: minY, width: maxX - minX + 1, height: maxY - minY + 1))
    }

    /// A separable box blur of `radius` (edges clamped), by running sums.
    static func boxBlur(_ values: [Float], width w: Int, height h: Int, radius r: Int) -> [Float] {
        var horizontal = [Float](repeating: 0, count: w * h)
        let span = Float(2 * r + 1)
        for y in 0..<h {
            let row = y * w
            var sum: Float = 0
            for k in -r...r { sum += values[row + min(w - 1, max(0, k))] }
            for x in 0..<w {
                horizontal[row + x] = sum / span
                sum += values[row + min(w - 1, x + r + 1)] - values[row + max(0, x - r)]
            }
        }
        var result = [Float](repeating: 0, count: w * h)
        for x in 0..<w {
            var sum: Float = 0
            for k in -r...r { sum += horizontal[min(h - 1, max(0, k)) * w + x] }
            for y in 0..<h {
                result[y * w + x] = sum / span
                sum += horizontal[min(h - 1, y + r + 1) * w + x] - horizontal[max(0, y - r) * w + x]
            }
        }
        return result
    }
}
