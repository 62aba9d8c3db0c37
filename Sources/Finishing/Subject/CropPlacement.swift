/// Where an aspect-fill crop goes along the one axis it can slide on (pure geometry, in
/// fractions of the photo): around the whole subject when it fits, else around as many of
/// the parts to keep whole (faces first) as fit, else on the strongest point — centred on
/// what it keeps, never beyond the photo.
public enum CropPlacement {
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
            let spans = group.compactMap { span -> ClosedRange<Double>? in
                guard span.lowerBound.isFinite, span.upperBound.isFinite else { return nil }
                let lower = max(0, span.lowerBound), upper = min(1, span.upperBound)
                return lower <= upper ? lower...upper : nil
            }
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
        func groups(_ axis: (FocusBox) -> (Double, Double)) -> [[ClosedRange<Double>]] {
            func span(_ box: FocusBox) -> ClosedRange<Double>? {
                let (lower, upper) = axis(box)
                return lower <= upper ? lower...upper : nil
            }
            let keep = subject.keep.compactMap(span)
            return [[span(subject.box)].compactMap { $0 } + keep, keep, subject.keep.prefix(1).compactMap(span)]
        }
        var x = 0, y = 0
        if window.width < photo.width {
            let fraction = Double(window.width) / Double(photo.width)
            let s = start(window: fraction, groups: groups { ($0.x, $0.maxX) }, point: subject.peak.x)
            x = min(photo.width - window.width, max(0, Int((s * Double(photo.width)).rounded())))
        }
        if window.height < photo.height {
            let fraction = Double(window.height) / Double(photo.height)
            let s = start(window: fraction, groups: groups { ($0.y, $0.maxY) }, point: subject.peak.y)
            y = min(photo.height - window.height, max(0, Int((s * Double(photo.height)).rounded())))
        }
        return (x, y)
    }
}
