/// Where an aspect-fill crop goes along the one axis it can slide on (pure geometry, in
/// fractions of the photo), never beyond the photo.
///
/// With faces, faces are atoms: a crop edge never passes through a face (its box grown for
/// hair and chin) when any placement avoids it; among the placements that cut no face, the
/// one keeping the most faces whole, then the most of the attention subject, then the one
/// nearest the photo's centre. When every placement cuts a face (a crowd), one cutting only
/// margins (hair, chin) before one cutting a face's own box: the fewest boxes, then the least
/// of them (a small face, or a slice at its edge), then the margins shaved least deep.
///
/// Without faces: around the whole subject (with its parts to keep) when it fits, else the
/// subject's own box, else around as many of the parts to keep whole as fit, else on the
/// strongest point — centred on what it keeps.
public enum CropPlacement {
    /// A face as a crop keeps it whole: its box (brows to chin, ear to ear, as dlib draws it;
    /// a file's face region is about the same) grown by 0.8 of its height above for the
    /// forehead and hair, a fifth below for the chin, and a fifth of its width at each side for
    /// the ears and hair, within the photo.
    public static func atom(_ face: FocusBox) -> FocusBox {
        let x0 = max(0, face.x - face.width * 0.2), y0 = max(0, face.y - face.height * 0.8)
        let x1 = min(1, face.maxX + face.width * 0.2), y1 = min(1, face.maxY + face.height * 0.2)
        return FocusBox(x: x0, y: y0, width: max(0, x1 - x0), height: max(0, y1 - y0))
    }

    /// One face along the sliding axis: the span it keeps whole with hair and chin (`atom`),
    /// the face's own box, and its size (area), which weighs what cutting it costs.
    public struct Face: Sendable {
        public var grown: ClosedRange<Double>
        public var box: ClosedRange<Double>
        public var size: Double
        public init(grown: ClosedRange<Double>, box: ClosedRange<Double>, size: Double) {
            self.grown = grown; self.box = box; self.size = size
        }
    }

    /// The crop window's start along its sliding axis when the photo has faces (see the type).
    /// A face whose grown span is longer than the window is kept by its own box; one whose box
    /// is longer still cannot be kept whole, and the window keeps as much of it as it can.
    ///
    /// When no start keeps every face whole or out, an edge through a face's margin (its hair
    /// or chin growth, the box itself whole or out) is taken before one through a face's box:
    /// first the fewest boxes cut, then the least of them cut away (see `score`); then the
    /// shallowest deepest margin cut (as a share of that side's margin, so a crowd's margins
    /// are shaved evenly rather than one face's to its box), then the fewest margins cut; then
    /// the most faces whole, the subject, the centre.
    /// - Parameters:
    ///   - window: the window's length along the axis, as a fraction (0 < window ≤ 1).
    ///   - faces: the faces; spans beyond 0…1 are cut to it, others left out.
    ///   - subject: the attention subject's span along the axis, if there is one.
    /// - Returns: the start, in 0…(1 − window).
    public static func start(window: Double, faces: [Face], subject: ClosedRange<Double>?) -> Double {
        let last = max(0, 1 - window)
        let tolerance = 1e-9
        var atoms: [Atom] = [], large: [ClosedRange<Double>] = []
        for face in faces {
            guard let grown = onPhoto(face.grown), let box = onPhoto(face.box) else { continue }
            let size = face.size.isFinite ? max(0, face.size) : 0
            if grown.upperBound - grown.lowerBound <= window + tolerance {
                // The box within its grown span (a file's region and its growth always are).
                let lower = min(max(box.lowerBound, grown.lowerBound), grown.upperBound)
                atoms.append(Atom(grown: grown, box: lower...min(max(box.upperBound, lower), grown.upperBound), size: size))
            } else if box.upperBound - box.lowerBound <= window + tolerance {
                atoms.append(Atom(grown: box, box: box, size: size))
            } else {
                large.append(box)
            }
        }
        let kept = subject.flatMap(onPhoto)
        // The score changes only where a window edge meets a face's or the subject's edge, and
        // the centre is best where nothing else decides: those starts are all there is to try;
        // and the deepest margin cut is least where an edge's cut into one face's margin equals
        // the other edge's into another's.
        var starts = [0, last, last / 2]
        for atom in atoms {
            starts += [atom.grown.lowerBound, atom.grown.upperBound - window, atom.grown.lowerBound - window, atom.grown.upperBound,
                       atom.box.lowerBound, atom.box.upperBound - window, atom.box.lowerBound - window, atom.box.upperBound]
        }
        // An edge's depth into a left margin grows as the window moves right, into a right
        // margin it shrinks: where one edge's (at offset 0 or `window` from the start) meets
        // the other's.
        for x in atoms where x.box.lowerBound - x.grown.lowerBound > tolerance {
            let l = x.box.lowerBound - x.grown.lowerBound
            for y in atoms where y.grown.upperBound - y.box.upperBound > tolerance {
                let r = y.grown.upperBound - y.box.upperBound
                for o1 in [0, window] {
                    for o2 in [0, window] { starts.append(((x.grown.lowerBound - o1) * r + (y.grown.upperBound - o2) * l) / (l + r)) }
                }
            }
        }
        for span in large + (kept.map { [$0] } ?? []) { starts += [span.lowerBound, span.upperBound - window] }
        func keeps(_ span: ClosedRange<Double>, _ start: Double) -> Double {
            max(0, min(span.upperBound, start + window) - max(span.lowerBound, start))
        }
        func score(_ start: Double) -> Score {
            var score = Score()
            let end = start + window
            for atom in atoms {
                let length = atom.box.upperBound - atom.box.lowerBound
                let inside = keeps(atom.box, start)
                if inside > tolerance && inside < length - tolerance {
                    // What a cut through a box costs: the smaller part of the face, in its size's
                    // terms (a small face, or a slice at its edge, costs least).
                    score.boxes += 1
                    score.boxCutAway += atom.size * min(inside, length - inside) / max(length, tolerance)
                    continue
                }
                // The box is whole or out: how deep an edge goes into a margin, from its rim
                // (0) to the box (1): into the margin of a face kept, or over that of one left out.
                let left = atom.box.lowerBound - atom.grown.lowerBound, right = atom.grown.upperBound - atom.box.upperBound
                var depth = 0.0
                if left > tolerance {
                    if start > atom.grown.lowerBound + tolerance && start < atom.box.lowerBound + tolerance {
                        depth = max(depth, (start - atom.grown.lowerBound) / left)
                    }
                    if end > atom.grown.lowerBound + tolerance && end < atom.box.lowerBound + tolerance {
                        depth = max(depth, (end - atom.grown.lowerBound) / left)
                    }
                }
                if right > tolerance {
                    if end < atom.grown.upperBound - tolerance && end > atom.box.upperBound - tolerance {
                        depth = max(depth, (atom.grown.upperBound - end) / right)
                    }
                    if start < atom.grown.upperBound - tolerance && start > atom.box.upperBound - tolerance {
                        depth = max(depth, (atom.grown.upperBound - start) / right)
                    }
                }
                if depth > tolerance {
                    score.margins += 1
                    score.deepestMargin = max(score.deepestMargin, min(1, depth))
                } else if inside > tolerance {
                    score.whole += 1
                }
            }
            score.large = large.reduce(0) { $0 + keeps($1, start) }
            score.subject = kept.map { keeps($0, start) } ?? 0
            score.centre = abs(start + window / 2 - 0.5)
            return score
        }
        var best = last / 2, bestScore = score(last / 2)
        for start in starts.map({ $0.isFinite ? min(last, max(0, $0)) : last / 2 }).sorted() {
            let s = score(start)
            if s.isBetter(than: bestScore, tolerance: tolerance) { best = start; bestScore = s }
        }
        return best
    }

    /// A face as `start(window:faces:subject:)` keeps it: on the photo, its box within its
    /// grown span (the box alone when the grown span is longer than the window).
    struct Atom {
        var grown: ClosedRange<Double>
        var box: ClosedRange<Double>
        var size: Double
    }

    /// What one start of the window costs, in the order it counts.
    struct Score {
        /// Faces whose own box an edge passes through, and the least part of each (size-weighted).
        var boxes = 0, boxCutAway = 0.0
        /// Faces whose box is whole or out but whose margin an edge passes through, and the
        /// deepest such cut (a share of that margin: 0 at its rim, 1 at the box).
        var margins = 0, deepestMargin = 0.0
        /// Faces kept whole with their margins.
        var whole = 0
        /// What it keeps of faces larger than the window, of the subject; its distance from the centre.
        var large = 0.0, subject = 0.0, centre = 0.0

        func isBetter(than other: Score, tolerance: Double) -> Bool {
            if boxes != other.boxes { return boxes < other.boxes }
            if abs(boxCutAway - other.boxCutAway) > tolerance { return boxCutAway < other.boxCutAway }
            if abs(deepestMargin - other.deepestMargin) > tolerance { return deepestMargin < other.deepestMargin }
            if margins != other.margins { return margins < other.margins }
            if whole != other.whole { return whole > other.whole }
            if abs(large - other.large) > tolerance { return large > other.large }
            if abs(subject - other.subject) > tolerance { return subject > other.subject }
            return centre < other.centre - tolerance
        }
    }

    /// A span cut to the photo (0…1), or nil when it is wholly outside or no numbers.
    static func onPhoto(_ span: ClosedRange<Double>) -> ClosedRange<Double>? {
        guard span.lowerBound.isFinite, span.upperBound.isFinite else { return nil }
        let lower = max(0, span.lowerBound), upper = min(1, span.upperBound)
        return lower <= upper ? lower...upper : nil
    }

    /// The crop window's start along its sliding axis, as a fraction of that axis.
    /// - Parameters:
    ///   - window: the window's length along the axis, as a fraction (0 < window ≤ 1).
    ///   - spans: what to keep, as intervals along the axis, most important group first:
    ///     each entry is one group (the whole subject; the parts to keep; the first part).
    ///     Only what lies on the photo counts: an interval reaching beyond 0…1 (regions a file
    ///     names may) is cut to it, one wholly outside or not finite is left out.
    ///   - point: the position to centre on when no group fits.
    /// - Returns: the start, in 0…(1 − window), whatever the inputs.
    public static func start(window: Double, groups: [[ClosedRange<Double>]], point: Double) -> Double {
        let last = max(0, 1 - window)
        func onAxis(_ start: Double) -> Double { start.isFinite ? min(last, max(0, start)) : last / 2 }
        for group in groups {
            let spans = group.compactMap(onPhoto)
            guard let lower = spans.map(\.lowerBound).min(), let upper = spans.map(\.upperBound).max(),
                  upper - lower <= window + 1e-9 else { continue }
            // Centred on what it keeps, within the starts that keep all of it.
            let first = max(0, upper - window), latest = max(first, min(last, lower))
            return onAxis(min(latest, max(first, (lower + upper) / 2 - window / 2)))
        }
        return onAxis(point - window / 2)
    }

    /// The crop of `window` size placed in a `photo`-sized upright picture around `subject`.
    /// - Parameters:
    ///   - window: the crop's size (one side equals the photo's: aspect-fill).
    ///   - photo: the upright photo's size.
    ///   - subject: what the photo is about.
    /// - Returns: the crop's top-left corner in the photo's pixels.
    public static func place(window: OutputPlan.Size, in photo: OutputPlan.Size, subject: Subject) -> (x: Int, y: Int) {
        // A box whose ends are no numbers or out of order (a file's region may be) keeps nothing.
        func span(_ box: FocusBox, _ axis: (FocusBox) -> (Double, Double)) -> ClosedRange<Double>? {
            let (lower, upper) = axis(box)
            return lower <= upper ? lower...upper : nil
        }
        func start(_ fraction: Double, _ axis: (FocusBox) -> (Double, Double), point: Double) -> Double {
            if !subject.faces.isEmpty {
                let faces = subject.faces.compactMap { face -> Face? in
                    guard let grown = span(atom(face), axis), let box = span(face, axis) else { return nil }
                    return Face(grown: grown, box: box, size: face.area)
                }
                return Self.start(window: fraction, faces: faces, subject: span(subject.box, axis))
            }
            // The whole subject with its parts to keep; the subject's own box (kept whole when it
            // fits though its skin-toned parts, grown for hair, reach beyond it); the parts; the first.
            let keep = subject.keep.compactMap { span($0, axis) }
            let box = [span(subject.box, axis)].compactMap { $0 }
            return Self.start(window: fraction, groups: [box + keep, box, keep, subject.keep.prefix(1).compactMap { span($0, axis) }],
                              point: point)
        }
        var x = 0, y = 0
        if window.width < photo.width {
            let s = start(Double(window.width) / Double(photo.width), { ($0.x, $0.maxX) }, point: subject.peak.x)
            x = min(photo.width - window.width, max(0, Int((s * Double(photo.width)).rounded())))
        }
        if window.height < photo.height {
            let s = start(Double(window.height) / Double(photo.height), { ($0.y, $0.maxY) }, point: subject.peak.y)
            y = min(photo.height - window.height, max(0, Int((s * Double(photo.height)).rounded())))
        }
        return (x, y)
    }
}
