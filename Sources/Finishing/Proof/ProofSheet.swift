import Pixels

/// The layout of a proof's contact sheet (pure geometry): a title band, then one row per
/// sample photo holding its outputs side by side, every tile the same height, each with a
/// two-line label band under it. A row too wide for the sheet wraps.
public struct ProofSheet: Sendable, Equatable {
    /// The sheet's size.
    public var width: Int
    public var height: Int
    /// Where the title goes.
    public var title: PixelRect
    /// Each output's tile, in sample order then output order.
    public var tiles: [PixelRect]
    /// The label band under each tile.
    public var labels: [PixelRect]
    /// For each row with no outputs (a sample that failed), by row index: the band that says so.
    public var emptyRows: [Int: PixelRect] = [:]
    /// For each row whose sample had crops skipped, by row index: the box after its tiles
    /// where the sheet says which and why.
    public var notes: [Int: PixelRect] = [:]

    /// The width of a row's note on skipped crops.
    public static let noteWidth = 260

    /// Tile height, outer margin, gap between tiles and rows, label band, title band, and
    /// the widest a sheet gets (a wider row wraps), in pixels.
    public static let tileHeight = 360, margin = 32, gap = 24, labelHeight = 48, titleHeight = 56, maxWidth = 2400
    /// The sheet's background (a dark neutral grey: white frames and light photos show
    /// their edges on it). No tile is ever painted in exactly this colour's flat field.
    public static let background: [UInt8] = [64, 64, 64]

    /// Lays out a sheet.
    /// - Parameters:
    ///   - rows: per sample, the upright sizes of its outputs (a sample with none still gets
    ///     its row, empty, so nothing is silently left out).
    ///   - noted: the rows that get a note after their tiles (skipped crops).
    public static func layout(rows: [[OutputPlan.Size]], noted: Set<Int> = []) -> ProofSheet {
        let usable = maxWidth - 2 * margin
        var tiles: [PixelRect] = [], labels: [PixelRect] = []
        var y = margin + titleHeight
        var widest = 800
        var emptyRows: [Int: PixelRect] = [:], notes: [Int: PixelRect] = [:]
        for (index, row) in rows.enumerated() {
            if row.isEmpty { emptyRows[index] = PixelRect(x: margin, y: y, width: usable, height: labelHeight) }
            var x = margin
            var rowHeight = 0
            // The note is laid out like one more tile, noteWidth wide, after the outputs.
            let note = noted.contains(index) && !row.isEmpty ? [OutputPlan.Size(noteWidth, tileHeight)] : []
            for (k, size) in (row + note).enumerated() {
                let isNote = k == row.count
                var h = tileHeight
                var w = max(1, Int((Double(tileHeight) * Double(size.width) / Double(max(1, size.height))).rounded()))
                if w > usable {  // only a very long panorama: shrink it to the sheet's width
                    h = max(1, Int((Double(h) * Double(usable) / Double(w)).rounded()))
                    w = usable
                }
                if x > margin && x + w > margin + usable {
                    y += rowHeight + gap
                    x = margin
                    rowHeight = 0
                }
                if isNote {
                    notes[index] = PixelRect(x: x, y: y, width: w, height: h)
                } else {
                    tiles.append(PixelRect(x: x, y: y, width: w, height: h))
                    labels.append(PixelRect(x: x, y: y + h, width: w, height: labelHeight))
                }
                widest = max(widest, x + w + margin)
                x += w + gap
                rowHeight = max(rowHeight, h + labelHeight)
            }
            y += (row.isEmpty ? labelHeight : rowHeight) + gap
        }
        let height = y - gap + margin
        return ProofSheet(width: widest, height: height,
                          title: PixelRect(x: margin, y: margin, width: widest - 2 * margin, height: titleHeight),
                          tiles: tiles, labels: labels, emptyRows: emptyRows, notes: notes)
    }
}
