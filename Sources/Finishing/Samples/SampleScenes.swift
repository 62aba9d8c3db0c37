import Pixels

/// Made-up photos with a subject and the backgrounds marks find hard, for `proof` (a template
/// tried on what real shoots hold) and the tests of subject crops and auto marks: a person
/// off-centre beside a distracting texture, a portrait with the head near the top, a group of
/// five on a warm, skin-toned wall, a product on white, a snow scene, a night scene. Each
/// knows where its subject and its faces are, so a test can check that a crop kept them. Drawn by spans (a row at a time), so even 54 MP takes a moment.
public enum SampleScenes {
    /// A picture and where its subject is.
    public struct Scene: Sendable {
        public var image: Image
        /// The face (skin and hair), for scenes with a person (a group's first).
        public var face: PixelRect?
        /// The whole subject: the person, the group, the product.
        public var subject: PixelRect
        /// Every face (skin and hair), left to right.
        public var faces: [PixelRect] = []
    }

    /// The kinds of scene.
    public enum Kind: String, Sendable, CaseIterable {
        case person, portrait, group, product, snow, night
    }

    /// Draws a scene.
    /// - Parameters:
    ///   - kind: what it shows.
    ///   - width: pixels.
    ///   - height: pixels.
    ///   - at: where the subject's centre is across the photo, 0 (left) … 1 (right).
    ///   - seed: varies the grain.
    ///   - redSquare: a red square in the top-left corner, which shows a wrong rotation.
    public static func draw(_ kind: Kind, width: Int, height: Int, at centre: Double = 0.25, seed: Int = 1,
                            redSquare: Bool = false) -> Scene {
        var shown: (faces: [PixelRect], subject: PixelRect)!
        let image = Image(width: width, height: height, channels: 3) { rows in
            let painter = Painter(rows, seed: seed)
            shown = painter.draw(kind, at: centre, seed: seed)
            if redSquare { painter.redSquare() }
        }
        return Scene(image: image, face: shown.faces.first, subject: shown.subject, faces: shown.faces)
    }

    /// A row-by-row painter with a grain table (a textured, photo-like surface, fast), over
    /// rows lent for writing.
    struct Painter {
        let image: MutablePixelRows
        private var grain: [Int32]
        private var rng: UInt64

        init(_ rows: MutablePixelRows, seed: Int) {
            precondition(rows.channels == 3)
            image = rows
            rng = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 | 1
            grain = []
            grain.reserveCapacity(1 << 16)
            for _ in 0..<(1 << 16) {
                rng = rng &* 6364136223846793005 &+ 1442695040888963407
                grain.append(Int32(truncatingIfNeeded: Int(rng >> 56)) - 128)  // -128…127
            }
        }

        /// Paints a whole scene.
        /// - Returns: the faces (none without a person) and the whole subject.
        func draw(_ kind: Kind, at centre: Double, seed: Int) -> (faces: [PixelRect], subject: PixelRect) {
            let w = Double(image.width), h = Double(image.height), s = Double(min(image.width, image.height))
            switch kind {
            case .group:
                // Five people of five skin tones, heads at different heights, on a warm wall
                // the skin-tone rule takes for skin all over; a fifth of the width apart, so a
                // crop edge can pass between two faces.
                gradient(top: (214, 168, 128), bottom: (168, 118, 84), grain: 4)
                let skins: [(Int32, Int32, Int32)] = [(236, 196, 166), (222, 170, 136), (186, 132, 96), (150, 102, 72), (118, 78, 56)]
                let shirts: [(Int32, Int32, Int32)] = [(40, 90, 160), (200, 40, 50), (40, 130, 80), (230, 190, 40), (90, 50, 130)]
                let tops = [0.14, 0.24, 0.1, 0.22, 0.16]
                let figures = (0..<5).map { k in
                    person(centreX: w * (0.1 + 0.2 * Double(k)), top: h * tops[k], headRadius: h * 0.095, bottom: h,
                           shirt: shirts[k], skin: skins[k])
                }
                let x0 = figures.map(\.body.x).min()!, y0 = figures.map(\.body.y).min()!
                let x1 = figures.map { $0.body.x + $0.body.width }.max()!, y1 = figures.map { $0.body.y + $0.body.height }.max()!
                return (figures.map(\.face), PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0))
            case .person:
                gradient(top: (150, 170, 190), bottom: (175, 180, 170), grain: 3)
                // A distracting, busy block on the other side: texture, but no skin and no colour.
                let blockX = centre < 0.5 ? w * 0.62 : w * 0.12
                checker(PixelRect(x: Int(blockX), y: Int(h * 0.2), width: Int(w * 0.26), height: Int(h * 0.45)),
                        cell: max(2, Int(s / 48)), dark: (60, 60, 64), light: (200, 200, 196))
                let figure = person(centreX: w * centre, top: h * 0.2, headRadius: h * 0.085, bottom: h)
                return ([figure.face], figure.body)
            case .portrait:
                gradient(top: (205, 200, 190), bottom: (120, 110, 100), grain: 3)
                let figure = person(centreX: w * centre, top: h * 0.03, headRadius: w * 0.12, bottom: h)
                return ([figure.face], figure.body)
            case .product:
                gradient(top: (250, 250, 250), bottom: (244, 244, 244), grain: 1)
                let bw = s * 0.22, bh = s * 0.5
                let box = PixelRect(x: Int(w * centre - bw / 2), y: Int(h * 0.55 - bh / 2), width: Int(bw), height: Int(bh))
                ellipse(cx: w * centre, cy: Double(box.y + box.height), rx: bw * 0.7, ry: bh * 0.05,
                        colour: (215, 215, 215), grain: 1)
                rect(box, colour: (20, 110, 190), grain: 6)
                rect(PixelRect(x: box.x, y: box.y + box.height / 3, width: box.width, height: box.height / 4),
                     colour: (245, 200, 40), grain: 6)
                rect(PixelRect(x: box.x + box.width / 4, y: box.y - box.height / 8, width: box.width / 2,
                               height: box.height / 8), colour: (30, 30, 30), grain: 4)
                return ([], PixelRect(x: box.x, y: box.y - box.height / 8, width: box.width,
                                       height: box.height + box.height / 8))
            case .snow:
                gradient(top: (236, 242, 250), bottom: (250, 251, 252), grain: 2)
                // Dark trees along the back, a skier in red in front.
                for k in 0..<7 {
                    let x = w * (0.05 + 0.14 * Double(k)) + Double((k * 37 + seed * 11) % 23) * w / 400
                    triangle(apexX: x, apexY: h * 0.12, base: h * 0.55, halfWidth: s * 0.06,
                             colour: (38, 60, 45), grain: 10)
                }
                let figure = person(centreX: w * centre, top: h * 0.38, headRadius: h * 0.05, bottom: h * 0.92,
                                    shirt: (210, 30, 40))
                return ([figure.face], figure.body)
            case .night:
                gradient(top: (8, 10, 24), bottom: (20, 18, 22), grain: 3)
                // Lit windows and street lights: small, bright, warm.
                for k in 0..<9 {
                    let x = w * (0.06 + 0.11 * Double(k)), y = h * (0.3 + 0.08 * Double((k * 5 + seed) % 4))
                    ellipse(cx: x, cy: y, rx: s * 0.015, ry: s * 0.015, colour: (255, 214, 140), grain: 4)
                }
                let figure = person(centreX: w * centre, top: h * 0.3, headRadius: h * 0.07, bottom: h,
                                    shirt: (30, 120, 200))
                return ([figure.face], figure.body)
            }
        }

        /// The red square in the top-left corner that shows a wrong rotation.
        func redSquare() {
            let square = max(8, min(image.width, image.height) / 25)
            for y in 0..<min(square, image.height) {
                let row = image[y]
                for x in 0..<min(square, image.width) { row[x * 3] = 230; row[x * 3 + 1] = 30; row[x * 3 + 2] = 30 }
            }
        }

        /// The grain at (x, y), scaled to ±`amount`.
        @inline(__always)
        private func noise(_ x: Int, _ y: Int, _ amount: Int32) -> Int32 {
            grain[(x &+ y &* 7919) & 0xFFFF] * amount / 128
        }

        @inline(__always)
        private func put(_ p: UnsafeMutablePointer<UInt8>, _ c: (Int32, Int32, Int32), _ n: Int32) {
            p[0] = UInt8(max(0, min(255, c.0 + n)))
            p[1] = UInt8(max(0, min(255, c.1 + n)))
            p[2] = UInt8(max(0, min(255, c.2 + n)))
        }

        func gradient(top: (Int32, Int32, Int32), bottom: (Int32, Int32, Int32), grain amount: Int32) {
            let h = image.height
            for y in 0..<h {
                let t = Double(y) / Double(max(1, h - 1))
                func mix(_ a: Int32, _ b: Int32) -> Int32 { Int32(Double(a) + Double(b - a) * t) }
                let c = (mix(top.0, bottom.0), mix(top.1, bottom.1), mix(top.2, bottom.2))
                let row = image[y]
                for x in 0..<image.width { put(row + x * 3, c, noise(x, y, amount)) }
            }
        }

        /// Fills the span [x0, x1) of row y.
        private func span(_ y: Int, _ x0: Int, _ x1: Int, _ c: (Int32, Int32, Int32), _ amount: Int32) {
            guard y >= 0, y < image.height else { return }
            let a = max(0, x0), b = min(image.width, x1)
            guard a < b else { return }
            let row = image[y]
            for x in a..<b { put(row + x * 3, c, noise(x, y, amount)) }
        }

        func rect(_ r: PixelRect, colour: (Int32, Int32, Int32), grain amount: Int32) {
            for y in r.y..<(r.y + r.height) { span(y, r.x, r.x + r.width, colour, amount) }
        }

        func ellipse(cx: Double, cy: Double, rx: Double, ry: Double, colour: (Int32, Int32, Int32), grain amount: Int32) {
            guard rx > 0, ry > 0 else { return }
            for y in Int((cy - ry).rounded(.down))...Int((cy + ry).rounded(.up)) {
                let dy = (Double(y) + 0.5 - cy) / ry
                guard abs(dy) < 1 else { continue }
                let half = rx * (1 - dy * dy).squareRoot()
                span(y, Int((cx - half).rounded()), Int((cx + half).rounded()), colour, amount)
            }
        }

        func triangle(apexX: Double, apexY: Double, base: Double, halfWidth: Double,
                      colour: (Int32, Int32, Int32), grain amount: Int32) {
            guard base > apexY else { return }
            for y in Int(apexY)..<Int(base) {
                let half = halfWidth * (Double(y) - apexY) / (base - apexY)
                span(y, Int(apexX - half), Int(apexX + half), colour, amount)
            }
        }

        func checker(_ r: PixelRect, cell: Int, dark: (Int32, Int32, Int32), light: (Int32, Int32, Int32)) {
            for y in max(0, r.y)..<min(image.height, r.y + r.height) {
                let row = image[y]
                for x in max(0, r.x)..<min(image.width, r.x + r.width) {
                    let on = ((x - r.x) / cell + (y - r.y) / cell + Int(grain[((x / cell) &* 31 &+ (y / cell) &* 7) & 0xFFFF] & 1)) & 1 == 0
                    put(row + x * 3, on ? light : dark, noise(x, y, 20))
                }
            }
        }

        /// A person: dark hair, a textured skin-tone face, a saturated shirt below.
        /// - Returns: the face's box (hair included) and the whole person's.
        func person(centreX cx: Double, top: Double, headRadius r: Double, bottom: Double,
                    shirt: (Int32, Int32, Int32) = (200, 40, 50),
                    skin: (Int32, Int32, Int32) = (222, 170, 136)) -> (face: PixelRect, body: PixelRect) {
            let faceCY = top + r * 1.25
            ellipse(cx: cx, cy: faceCY - r * 0.2, rx: r * 1.05, ry: r * 1.25, colour: (42, 30, 24), grain: 8)  // hair
            // The face: shaded towards its rim, brows, eyes with their whites, a nose's shadow and a
            // mouth, the shapes a face detector looks for.
            func shade(_ c: (Int32, Int32, Int32), _ f: Int32) -> (Int32, Int32, Int32) { (c.0 * f / 100, c.1 * f / 100, c.2 * f / 100) }
            ellipse(cx: cx, cy: faceCY + r * 0.1, rx: r * 0.85, ry: r * 1.05, colour: shade(skin, 78), grain: 12)
            ellipse(cx: cx, cy: faceCY + r * 0.05, rx: r * 0.7, ry: r * 0.95, colour: skin, grain: 12)
            for side in [-1.0, 1.0] {
                ellipse(cx: cx + side * r * 0.34, cy: faceCY - r * 0.24, rx: r * 0.22, ry: r * 0.05, colour: (38, 28, 22), grain: 4)
                ellipse(cx: cx + side * r * 0.34, cy: faceCY, rx: r * 0.17, ry: r * 0.085, colour: (236, 232, 226), grain: 4)
                ellipse(cx: cx + side * r * 0.34, cy: faceCY, rx: r * 0.08, ry: r * 0.08, colour: (35, 25, 22), grain: 4)
            }
            ellipse(cx: cx, cy: faceCY + r * 0.28, rx: r * 0.08, ry: r * 0.22, colour: shade(skin, 82), grain: 6)  // nose
            ellipse(cx: cx, cy: faceCY + r * 0.45, rx: r * 0.16, ry: r * 0.05, colour: shade(skin, 60), grain: 4)
            ellipse(cx: cx, cy: faceCY + r * 0.68, rx: r * 0.3, ry: r * 0.08, colour: (150, 62, 62), grain: 4)  // mouth
            let neckTop = faceCY + r * 1.0, shoulders = faceCY + r * 1.5
            rect(PixelRect(x: Int(cx - r * 0.3), y: Int(neckTop), width: Int(r * 0.6), height: Int(shoulders - neckTop)),
                 colour: (skin.0 - 12, skin.1 - 10, skin.2 - 8), grain: 10)
            // The shirt widens from the shoulders down.
            let shirtBottom = bottom
            for y in Int(shoulders)..<Int(shirtBottom) {
                let half = r * (1.5 + 0.4 * min(1, (Double(y) - shoulders) / (r * 3)))
                span(y, Int(cx - half), Int(cx + half), shirt, 14)
            }
            let faceTop = faceCY - r * 0.2 - r * 1.25
            let face = PixelRect(x: Int(cx - r * 1.05), y: Int(faceTop), width: Int(r * 2.1),
                                 height: Int(faceCY + r * 1.15 - faceTop))
            let bodyHalf = r * 1.9
            let body = PixelRect(x: Int(cx - bodyHalf), y: Int(faceTop), width: Int(bodyHalf * 2),
                                 height: Int(min(Double(image.height), shirtBottom) - faceTop))
            return (face, body)
        }
    }
}
