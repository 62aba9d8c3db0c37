/// Where an aspect-fill crop goes along the one axis it can slide on (pure geometry, in
/// fractions of the photo), never beyond the photo.
///
/// With faces, faces are atoms: a crop edge never passes through a face (its box grown for
/// hair and chin) when any placement avoids it; among the placements that cut no face, the
/// one keeping the most faces whole, then the most of the attention subject, then the one
/// nearest the photo's centre. When every placement cuts a face (a crowd), the one cutting
/// the fewest, then the least face (a small one, or a slice at its edge: its hair, not its
/// eyes).
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
    /// - Parameters:
    ///   - window: the window's length along the axis, as a fraction (0 < window ≤ 1).
    ///   - faces: the faces; spans beyond 0…1 are cut to it, others left out.
    ///   - subject: the attention subject's span along the axis, if there is one.
    /// - Returns: the start, in 0…(1 − window).
    public static func start(window: Double, faces: [Face], subject: ClosedRange<Double>?) -> Double {
        let last = max(0, 1 - window)
        let tolerance = 1e-9
        var atoms: [(lower: Double, upper: Double, size: Double)] = [], large: [ClosedRange<Double>] = []
        for face in faces {
            guard let grown = onPhoto(face.grown), let box = onPhoto(face.box) else { continue }
            let size = face.size.isFinite ? max(0, face.size) : 0
            if grown.upperBound - grown.lowerBound <= window + tolerance {
                atoms.append((grown.lowerBound, grown.upperBound, size))
            } else if box.upperBound - box.lowerBound <= window + tolerance {
                atoms.append((box.lowerBound, box.upperBound, size))
            } else {
                large.append(box)
            }
        }
        let kept = subject.flatMap(onPhoto)
        // The score changes only where a window edge meets a face's or the subject's edge, and
        // the centre is best where nothing else decides: those starts are all there is to try.
        var starts = [0, last, last / 2]
        for atom in atoms { starts += [atom.lower, atom.upper - window, atom.lower - window, atom.upper] }
        for span in large + (kept.map { [$0] } ?? []) { starts += [span.lowerBound, span.upperBound - window] }
        typealias Score = (cut: Int, cutAway: Double, whole: Int, large: Double, subject: Double, centre: Double)
        func keeps(_ span: ClosedRange<Double>, _ start: Double) -> Double {
            max(0, min(span.upperBound, start + window) - max(span.lowerBound, start))
        }
        func score(_ start: Double) -> Score {
            var cut = 0, cutAway = 0.0, whole = 0
            for atom in atoms {
                let length = atom.upper - atom.lower
                let inside = keeps(atom.lower...atom.upper, start)
                if inside >= length - tolerance {
                    whole += 1
                } else if inside > tolerance {
                    // What a cut costs: the smaller part of the face, in its size's terms (a small
                    // face, or a slice at its edge, costs least).
                    cut += 1
                    cutAway += atom.size * min(inside, length - inside) / max(length, tolerance)
                }
            }
            return (cut, cutAway, whole, large.reduce(0) { $0 + keeps($1, start) },
                    kept.map { keeps($0, start) } ?? 0, abs(start + window / 2 - 0.5))
        }
        func better(_ a: Score, than b: Score) -> Bool {
            if a.cut != b.cut { return a.cut < b.cut }
            if abs(a.cutAway - b.cutAway) > tolerance { return a.cutAway < b.cutAway }
            if a.whole != b.whole { return a.whole > b.whole }
            if abs(a.large - b.large) > tolerance { return a.large > b.large }
            if abs(a.subject - b.subject) > tolerance { return a.subject > b.subject }
            return a.centre < b.centre - tolerance
        }
        var best = last / 2, bestScore = score(last / 2)
        for start in starts.map({ $0.isFinite ? min(last, max(0, $0)) : last / 2 }).sorted() {
            let s = score(start)
            if better(s, than: bestScore) { best = start; bestScore = s }
        }
        return best
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
