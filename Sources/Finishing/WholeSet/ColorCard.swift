import Codecs
import Pixels

/// Writes a swatch's label (its hex code) into the band under it: see `WholeSetMarks`.
public typealias SwatchLabeler = @Sendable (_ canvas: inout Canvas, _ band: PixelRect, _ text: String) throws(PhotoError) -> Void

/// The colour card (reference: Colour card): one swatch per photo, in batch order, on a white
/// card `width` px wide, with a band under each swatch for its hex code. With `harmonize`, two
/// strips under each band show the photo's middle grey as shot and as finished — the set's
/// spread before and after, read across the card — and a caption at the bottom says so.
public struct ColorCard: Sendable, Equatable {
    /// The card's size.
    public var width: Int
    public var height: Int
    /// Each swatch's square, in order.
    public var swatches: [PixelRect]
    /// The band under each swatch, where its label goes.
    public var labels: [PixelRect]
    /// With `harmonize`: under each label, the strip of its middle grey as shot, then as finished.
    public var before: [PixelRect] = []
    public var after: [PixelRect] = []
    /// With `harmonize`: the caption across the card's foot.
    public var caption: PixelRect?

    /// What the caption says.
    public static let captionText = "under each colour: the photo's middle grey as shot, then as finished (harmonize)"

    /// Card width, outer margin and gap between swatches, in pixels.
    public static let cardWidth = 1200, margin = 40, gap = 24
    /// Swatches per row at most.
    public static let maxColumns = 6

    /// Lays out a card for `count` swatches (at least one): up to six per row, square
    /// swatches as wide as the row allows, rows as many as needed.
    /// - Parameter lights: room for each photo's greys as shot and as finished (`harmonize`).
    public static func layout(count: Int, lights: Bool = false) -> ColorCard {
        precondition(count > 0, "a colour card needs at least one colour")
        let columns = min(count, maxColumns)
        let side = (cardWidth - 2 * margin - (columns - 1) * gap) / columns
        let band = max(24, side / 4)
        let cell = side + band + (lights ? 2 * band : 0)
        let rows = (count + columns - 1) / columns
        var card = ColorCard(width: cardWidth, height: 2 * margin + rows * cell + (rows - 1) * gap, swatches: [], labels: [])
        for i in 0..<count {
            let x = margin + (i % columns) * (side + gap)
            let y = margin + (i / columns) * (cell + gap)
            card.swatches.append(PixelRect(x: x, y: y, width: side, height: side))
            card.labels.append(PixelRect(x: x, y: y + side, width: side, height: band))
            if lights {
                card.before.append(PixelRect(x: x, y: y + side + band, width: side, height: band))
                card.after.append(PixelRect(x: x, y: y + side + 2 * band, width: side, height: band))
            }
        }
        if lights {
            card.caption = PixelRect(x: margin, y: card.height - margin / 2 - band / 2, width: cardWidth - 2 * margin, height: band)
            card.height += band / 2
        }
        return card
    }

    /// Paints the card: white, each swatch filled with its colour, a hairline under it.
    /// - Parameters:
    ///   - colors: one `Lab` per swatch, in order.
    ///   - greys: with a card laid out for lights, each photo's middle grey as shot and as
    ///     finished (nil: its strips stay white).
    ///   - labeler: writes each hex code into its band (nil: bands left blank).
    /// - Throws: whatever the labeler throws.
    public func render(_ colors: [Lab], greys: [(before: Lab, after: Lab)?] = [],
                       labeler: SwatchLabeler? = nil) throws(PhotoError) -> Image {
        precondition(colors.count == swatches.count, "\(colors.count) colours for \(swatches.count) swatches")
        precondition(greys.count == before.count, "\(greys.count) greys for \(before.count) strips")
        var card = Canvas(width: width, height: height, channels: 3, fill: [255, 255, 255])
        for (rect, lab) in zip(swatches, colors) {
            let c = lab.srgb
            fill(&card, rect, [c.r, c.g, c.b])
        }
        for (i, grey) in greys.enumerated() {
            guard let grey else { continue }
            let b = grey.before.srgb, a = grey.after.srgb
            fill(&card, before[i], [b.r, b.g, b.b])
            fill(&card, after[i], [a.r, a.g, a.b])
        }
        if let caption { try labeler?(&card, caption, Self.captionText) }
        for (band, lab) in zip(labels, colors) {
            // A light-grey rule keeps a near-white swatch visible against the white card.
            fill(&card, PixelRect(x: band.x, y: band.y, width: band.width, height: 1), [220, 220, 220])
            try labeler?(&card, band, lab.hex)
        }
        return card.finished()
    }

    private func fill(_ card: inout Canvas, _ rect: PixelRect, _ color: [UInt8]) {
        card.withUnsafeMutableRows { rows in
            for y in rect.y..<(rect.y + rect.height) {
                let row = rows[y]
                for x in rect.x..<(rect.x + rect.width) {
                    row[x * 3] = color[0]; row[x * 3 + 1] = color[1]; row[x * 3 + 2] = color[2]
                }
            }
        }
    }
}
