import Pixels

/// Where every photo of a batch goes in the stitched long image (reference: Stitch): pure
/// geometry, decided from the photos' upright sizes (read from their headers) alone.
///
/// One common width for the whole story; each photo's height follows from its aspect ratio;
/// `spacing` only between photos (no outer margin). Over `maxHeight`, either the width
/// shrinks until one part fits, or (`split`) new parts are started, filled greedily in batch
/// order with whole photos.
public struct StitchPlan: Sendable, Equatable {
    /// The canvas width of every part.
    public var width: Int
    /// The parts, in order (one when nothing had to be split).
    public var parts: [Part]

    /// One stitched image.
    public struct Part: Sendable, Equatable {
        /// The canvas height.
        public var height: Int
        /// The photos on this canvas, top to bottom.
        public var placements: [Placement]
    }

    /// One photo on a canvas.
    public struct Placement: Sendable, Equatable {
        /// Position of the photo in the list the plan was made from (0-based).
        public var photo: Int
        /// Where its upright pixels go on the canvas.
        public var rect: PixelRect
    }
}

/// Why a stitch cannot be planned.
public struct StitchPlanError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
}

public extension StitchPlan {
    /// Plans the stitched image.
    ///
    /// The canvas is `stitch.width` wide. Every photo is scaled to that width, except that a
    /// photo narrower than it stays at its own size, centred on the `background` (never
    /// enlarged, and never shrinking the canvas or the other photos), unless `stitch.upscale`
    /// asks for it to be enlarged. A photo that alone is taller than `maxHeight` gets a part
    /// of its own, shrunk to `maxHeight` and centred on the canvas (never cut).
    /// - Parameters:
    ///   - upright: each photo's size as a person sees it, in batch order (at least one).
    ///   - stitch: the template's `stitch` settings.
    /// - Throws: `StitchPlanError` when `split` is off and the photos cannot fit under
    ///   `maxHeight` at any width (too many photos, or too much spacing, for the cap).
    static func make(upright: [OutputPlan.Size], stitch: Template.Stitch) throws(StitchPlanError) -> StitchPlan {
        precondition(!upright.isEmpty, "a stitch needs at least one photo")
        precondition(upright.allSatisfy { $0.width > 0 && $0.height > 0 }, "empty photo in \(upright)")
        if stitch.split {
            return split(upright, width: stitch.width, upscale: stitch.upscale, spacing: stitch.spacing,
                         maxHeight: stitch.maxHeight)
        }
        let width = try shrunkWidth(upright, start: stitch.width, upscale: stitch.upscale, spacing: stitch.spacing,
                                    maxHeight: stitch.maxHeight)
        var placements: [Placement] = []
        var y = 0
        for (i, size) in upright.enumerated() {
            if i > 0 { y += stitch.spacing }
            let rect = placed(size, canvas: width, upscale: stitch.upscale, y: y)
            placements.append(Placement(photo: i, rect: rect))
            y += rect.height
        }
        return StitchPlan(width: width, parts: [Part(height: y, placements: placements)])
    }

    /// A photo's height at `width`, from its aspect ratio (at least 1 px).
    static func height(of size: OutputPlan.Size, atWidth width: Int) -> Int {
        max(1, Int((Double(width) * Double(size.height) / Double(size.width)).rounded()))
    }

    /// Where a photo goes on a canvas `canvas` wide, its top at `y`: the canvas's width, or
    /// its own when it is narrower (and not to be enlarged), centred.
    static func placed(_ size: OutputPlan.Size, canvas: Int, upscale: Bool, y: Int) -> PixelRect {
        let w = upscale ? canvas : min(canvas, size.width)
        return PixelRect(x: (canvas - w) / 2, y: y, width: w, height: height(of: size, atWidth: w))
    }

    /// The largest canvas width ≤ `start` at which every photo fits one part under
    /// `maxHeight`. Heights only grow with the width, so a binary search finds it exactly.
    private static func shrunkWidth(_ photos: [OutputPlan.Size], start: Int, upscale: Bool, spacing: Int,
                                    maxHeight: Int) throws(StitchPlanError) -> Int {
        func total(_ w: Int) -> Int {
            photos.reduce(spacing * (photos.count - 1)) { $0 + placed($1, canvas: w, upscale: upscale, y: 0).height }
        }
        if total(start) <= maxHeight { return start }
        guard total(1) <= maxHeight else {
            throw StitchPlanError(description: "\(photos.count) photos with \(spacing) px spacing cannot fit "
                                  + "under maxHeight \(maxHeight) px at any width: raise stitch.maxHeight, "
                                  + "lower stitch.spacing or set stitch.split: true")
        }
        var low = 1, high = start  // total(low) fits, total(high) does not
        while high - low > 1 {
            let mid = (low + high) / 2
            if total(mid) <= maxHeight { low = mid } else { high = mid }
        }
        return low
    }

    /// Greedy parts in batch order: a photo that would push the part past `maxHeight`
    /// starts the next part.
    private static func split(_ photos: [OutputPlan.Size], width: Int, upscale: Bool, spacing: Int,
                              maxHeight: Int) -> StitchPlan {
        var parts: [Part] = []
        var current: [Placement] = []
        var y = 0
        func close() {
            if !current.isEmpty { parts.append(Part(height: y, placements: current)) }
            current = []
            y = 0
        }
        for (i, size) in photos.enumerated() {
            let rect = placed(size, canvas: width, upscale: upscale, y: 0)
            let h = rect.height
            if h > maxHeight {
                // Alone over the cap: its own part, shrunk to the cap, centred across the width.
                close()
                let w = max(1, min(rect.width, Int((Double(maxHeight) * Double(size.width) / Double(size.height)).rounded())))
                parts.append(Part(height: maxHeight, placements: [
                    Placement(photo: i, rect: PixelRect(x: (width - w) / 2, y: 0, width: w, height: maxHeight)),
                ]))
                continue
            }
            if !current.isEmpty && y + spacing + h > maxHeight { close() }
            if !current.isEmpty { y += spacing }
            current.append(Placement(photo: i, rect: PixelRect(x: rect.x, y: y, width: rect.width, height: h)))
            y += h
        }
        close()
        return StitchPlan(width: width, parts: parts)
    }
}
