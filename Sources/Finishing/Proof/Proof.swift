import Codecs
import Pixels
import Typesetting

/// `photofinish proof` (reference: its section): the template tried on the built-in mixed set,
/// shown as one contact sheet. Each sample goes through the very recipe a batch uses
/// (`PhotoFinisher`), so every crop, mark and frame on the sheet is what a batch would write.
public enum Proof {
    /// A rendered proof.
    public struct Sheet: Sendable {
        /// The contact sheet, encoded as PNG.
        public var png: [UInt8]
        /// Its layout (tiles in sample order, then output order).
        public var layout: ProofSheet
        /// One line per sample that could not be finished ("48 MP 8064×6048: …").
        public var failures: [String]
        /// Crops the template skips on some shapes ("screenshot 1179×2556: 16:9 skipped (…)").
        public var notes: [String]
        /// Outputs shown.
        public var outputs: Int
    }

    /// Renders the proof of `template`.
    /// - Parameters:
    ///   - shrink: divides the samples' sizes (tests on a debug build); 1 for the real sizes.
    ///   - maxPixels: the `maxPixels` limit (the 16000×3400 panorama is 54 MP).
    ///   - proceed: asked before each sample; false abandons the proof (the daemon waits
    ///     there while a batch runs, and says false when it stops).
    /// - Returns: the sheet, or nil when `proceed` said false.
    /// - Throws: `PhotoError` only when the sheet itself cannot be encoded.
    public static func render(template: Template, shrink: Int = 1, maxPixels: Int = 150_000_000,
                              proceed: () -> Bool = { true }) throws(PhotoError) -> Sheet? {
        let finisher = PhotoFinisher(template: template)
        let samples = SamplePhotos.proofSet(shrink: shrink)
        var rows: [[Image]] = [], captions: [[String]] = [], failures: [String] = [], notes: [String] = []
        var rowFailures: [Int: String] = [:], rowSkips: [Int: [String]] = [:]
        for (i, sample) in samples.enumerated() {
            guard proceed() else { return nil }
            var tiles: [Image] = [], texts: [String] = []
            do throws(PhotoError) {
                let bytes = try SamplePhotos.encoded(sample, seed: i + 3)
                let facts = PhotoFacts(filename: sample.caption + ".jpg", batch: "proof", index: i + 1, count: samples.count)
                let finished = try finisher.finish(bytes: bytes, limits: DecodeLimits(maxPixels: maxPixels), facts: facts)
                for output in finished.outputs {
                    let size = tileSize(output.size)
                    tiles.append(try UprightDecode.decode(bytes: output.bytes, size: size, background: ProofSheet.background,
                                                          limits: DecodeLimits(maxPixels: maxPixels)).image)
                    texts.append("\(output.size.width)×\(output.size.height)"
                                 + (output.cropLabel.map { " · \($0)" } ?? "") + " · \(output.fileExtension)")
                }
                for skipped in finished.skipped {
                    let cut = Int((skipped.cutFraction * 100).rounded())
                    notes.append("\(sample.caption): \(skipped.crop.label) skipped (it would cut away \(cut) %)")
                    rowSkips[i, default: []].append("\(skipped.crop.label) skipped: it would cut away \(cut) %")
                }
            } catch {
                failures.append("\(sample.caption): \(error.message)")
                rowFailures[i] = "\(sample.caption): failed: \(error.message)"
                tiles = []
                texts = []
            }
            rows.append(tiles)
            captions.append(texts)
        }
        // With `harmonize`, a set under five lights as shot and harmonized, two more rows.
        var rowNames = samples.map(\.caption)
        if template.harmonize != nil {
            guard proceed() else { return nil }
            let tile = { (output: FinishedOutput) throws(PhotoError) -> Image in
                try UprightDecode.decode(bytes: output.bytes, size: tileSize(output.size), background: ProofSheet.background,
                                         limits: DecodeLimits(maxPixels: maxPixels)).image
            }
            do throws(PhotoError) {
                let set = try ProofSet.rows(finisher, shrink: shrink, maxPixels: maxPixels, tile: tile)
                for (name, part) in [("a set under five lights, as shot", set.before), ("the same set, harmonized", set.after)] {
                    rowNames.append(name)
                    rows.append(part.map(\.image))
                    captions.append(part.map(\.caption))
                }
            } catch {
                failures.append("harmonize set: \(error.message)")
                rowFailures[rows.count] = "harmonize set: failed: \(error.message)"
                rowNames.append("harmonize set")
                rows.append([])
                captions.append([])
            }
        }
        let layout = ProofSheet.layout(rows: rows.map { $0.map { OutputPlan.Size($0.width, $0.height) } },
                                       noted: Set(rowSkips.keys))
        var canvas = Canvas(width: layout.width, height: layout.height, channels: 3, fill: ProofSheet.background)
        let labeler: Labeler?
        do {
            labeler = try Labeler()
        } catch {
            labeler = nil
            notes.append("the sheet has no captions: \(error)")
        }
        let outputs = rows.reduce(0) { $0 + $1.count }
        labeler?.write("proof · template \(template.name) · \(samples.count) sample photos → \(outputs) outputs",
                       in: layout.title, capHeight: 18, color: [240, 240, 240], onto: &canvas)
        for (r, band) in layout.emptyRows {
            labeler?.write(rowFailures[r] ?? "\(rowNames[r]): no outputs", in: band, capHeight: 12,
                           color: [255, 150, 140], onto: &canvas)
        }
        // Skipped crops, said on the sheet beside the row's outputs (amber, like a warning).
        for (r, box) in layout.notes {
            for (line, text) in (rowSkips[r] ?? []).enumerated() {
                labeler?.write(text, in: PixelRect(x: box.x + 8, y: box.y + 8 + line * 26, width: box.width - 16, height: 22),
                               capHeight: 11, color: [240, 190, 80], onto: &canvas)
            }
        }
        var k = 0
        for (r, row) in rows.enumerated() {
            for (tile, caption) in zip(row, captions[r]) {
                let rect = layout.tiles[k], band = layout.labels[k]
                let placed = tile.width == rect.width && tile.height == rect.height
                    ? tile : resized(tile, width: rect.width, height: rect.height)
                placed.withUnsafeRows { tile in  // both RGB, the tile inside the sheet by layout
                    canvas.withUnsafeMutableRows { sheet in
                        for y in 0..<tile.height { (sheet[rect.y + y] + rect.x * 3).update(from: tile[y], count: tile.rowBytes) }
                    }
                }
                let line = band.height / 2
                labeler?.write(rowNames[r], in: PixelRect(x: band.x, y: band.y + 4, width: band.width, height: line - 4),
                               capHeight: 11, color: [235, 235, 235], onto: &canvas)
                labeler?.write(caption, in: PixelRect(x: band.x, y: band.y + line, width: band.width, height: line - 4),
                               capHeight: 11, color: [170, 200, 235], onto: &canvas)
                k += 1
            }
        }
        let png = try encodeImage(canvas.finished(), options: EncodeOptions(format: .png, quality: 90))
        return Sheet(png: png, layout: layout, failures: failures, notes: notes, outputs: outputs)
    }

    /// A tile's size for an output: `ProofSheet.tileHeight` high (a very long panorama is
    /// brought to the sheet's width instead).
    static func tileSize(_ output: OutputPlan.Size) -> OutputPlan.Size {
        let rect = ProofSheet.layout(rows: [[output]]).tiles[0]
        return OutputPlan.Size(rect.width, rect.height)
    }

    /// Writes labels with DejaVu Sans (any installed sans when it is missing), shrinking a
    /// line that would not fit its band and clipping to it.
    private final class Labeler {
        let setter: Typesetter

        /// - Throws: `TypesetError` when neither DejaVu Sans nor any sans font can be opened
        ///   (the reason for the sans, the last tried).
        init() throws(TypesetError) {
            do {
                setter = try Typesetter(pattern: "DejaVu Sans")
            } catch {
                setter = try Typesetter(pattern: "sans-serif")
            }
        }

        func write(_ text: String, in band: PixelRect, capHeight: Double, color: [UInt8], onto canvas: inout Canvas) {
            var rendered = setter.render(text, capHeight: capHeight)
            if rendered.mask.width > band.width, rendered.mask.width > 0 {
                rendered = setter.render(text, capHeight: max(5, capHeight * Double(band.width) / Double(rendered.mask.width)))
            }
            guard rendered.mask.width > 0, rendered.mask.width <= band.width else { return }
            // Capitals centred in the band.
            let cap = Int(rendered.capHeight.rounded())
            let y = band.y + (band.height - cap) / 2 - (rendered.baseline - cap)
            composite(rendered.mask, at: band.x, y, color: color, opacity: 1, onto: &canvas)
        }
    }
}
