import Codecs
import Pixels
import Typesetting

/// The marks and text of the batch-level outputs: the template's marks on each stitched part
/// (drawn once on the part, in sRGB, like on a photo of that size) and the hex codes under
/// the colour card's swatches.
public enum WholeSetMarks {
    /// Draws `template`'s marks on a canvas, or nil when it has none.
    public static func canvas(template: Template, assets: MarkAssets) -> CanvasMarks? {
        guard template.text != nil || template.logo != nil || template.tile != nil || template.qr != nil else { return nil }
        return { canvas in _ = MarkPainter(template: template, assets: assets).paint(&canvas, icc: nil) }
    }

    /// The colour card's labels: the hex code centred in its band, dark grey DejaVu Sans,
    /// capitals 30 % of the band's height.
    /// - Throws: `TypesetError` when no font can be opened (the bands stay blank; the codes
    ///   are in the report, and the reason with them).
    public static func swatchLabels() throws(TypesetError) -> SwatchLabeler {
        let setter = try Typesetter(pattern: "DejaVu Sans:bold")
        return { canvas, band, text in
            let rendered = setter.render(text, capHeight: max(8, Double(band.height) * 0.3))
            guard rendered.mask.width > 0 else { return }
            let x = band.x + (band.width - rendered.mask.width) / 2
            // Centre the capitals (baseline to cap top) in the band.
            let capTop = rendered.baseline - Int(rendered.capHeight.rounded())
            let y = band.y + (band.height - Int(rendered.capHeight.rounded())) / 2 - capTop
            composite(rendered.mask, at: x, y, color: [60, 64, 70], opacity: 1, onto: &canvas)
        }
    }
}
