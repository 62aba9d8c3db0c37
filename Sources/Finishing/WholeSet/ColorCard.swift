import Codecs
import Pixels

/// Writes a swatch's label (its hex code) into the band under it: see `WholeSetMarks`.
public typealias SwatchLabeler = @Sendable (_ canvas: inout Canvas, _ band: PixelRect, _ text: String) throws(PhotoError) -> Void

/// The colour card (reference: Colour card): one swatch per photo, in batch order, on a white
/// card `width` px wide, with a band under each swatch for its hex code.
public struct ColorCard: Sendable, Equatable {
    /// The card's size.
    public var width: Int
    public var height: Int
    /// Each swatch's square, in order.
    public var swatches: [PixelRect]
    /// The band under each swatch, where its label goes.
    public var labels: [PixelRect]

    /// Card width, outer margin and gap between swatches, in pixels.
    public static let cardWidth = 1200, margin = 40, gap = 24
    /// Swatches per row at most.
    public static let maxColumns = 6

    /// Lays out a card for `count` swatches (at least one): up to six per row, square
    /// swatches as wide as the row allows, rows as many as needed.
    public static func layout(count: Int) -> ColorCard {
        precondition(count > 0, "a colour card needs at least one colour")
        let columns = min(count, maxColumns)
        let side = (cardWidth - 2 * margin - (columns - 1) * gap) / columns
        let band = max(24, side / 4)
        let rows = (count + columns - 1) / columns
        var swatches: [PixelRect] = [], labels: [PixelRect] = []
        for i in 0..<count {
            let x = margin + (i % columns) * (side + gap)
            let y = margin + (i / columns) * (side + band + gap)
            swatches.append(PixelRect(x: x, y: y, width: side, height: side))
            labels.append(PixelRect(x: x, y: y + side, width: side, height: band))
        }
        return ColorCard(width: cardWidth, height: 2 * margin + rows * (side + band) + (rows - 1) * gap,
                         swatches: swatches, labels: labels)
    }

    /// Paints the card: white, each swatch filled with its colour, a hairline under it.
    /// - Parameters:
    ///   - colors: one `Lab` per swatch, in order.
    ///   - labeler: writes each hex code into its band (nil: bands left blank).
    /// - Throws: whatever the labeler throws.
    public func render(_ colors: [Lab], labeler: SwatchLabeler? = nil) throws(PhotoError) -> Image {
        precondition(colors.count == swatches.count, "\(colors.count) colours for \(swatches.count) swatches")
        var card = Canvas(width: width, height: height, channels: 3, fill: [255, 255, 255])
        for (rect, lab) in zip(swatches, colors) {
            let c = lab.srgb
            fill(&card, rect, [c.r, c.g, c.b])
        }
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
