import Codecs
import Finishing
import Foundation
import Pixels
import Testing

@Suite struct ProofTests {
    typealias Size = OutputPlan.Size

    @Test func sheetLayoutPutsEachSampleOnItsOwnRowAtOneHeight() {
        let h = ProofSheet.tileHeight, m = ProofSheet.margin, g = ProofSheet.gap, l = ProofSheet.labelHeight
        let sheet = ProofSheet.layout(rows: [[Size(4032, 3024), Size(1080, 1080)], [Size(1179, 2556)]])
        let top = m + ProofSheet.titleHeight
        #expect(sheet.tiles == [
            PixelRect(x: m, y: top, width: 480, height: h),                   // 4:3 at 360 px high
            PixelRect(x: m + 480 + g, y: top, width: h, height: h),
            PixelRect(x: m, y: top + h + l + g, width: 166, height: h),       // 1179×2556 → 166.1
        ])
        #expect(sheet.labels[0] == PixelRect(x: m, y: top + h, width: 480, height: l))
        #expect(sheet.width == m + 480 + g + h + m)
        #expect(sheet.height == top + 2 * (h + l) + g + m)
    }

    @Test func aRowWiderThanTheSheetWrapsAndAVeryLongPanoramaIsBroughtToTheSheetWidth() {
        let usable = ProofSheet.maxWidth - 2 * ProofSheet.margin
        let sheet = ProofSheet.layout(rows: [[Size(16000, 3400), Size(16000, 3400)], [Size(40000, 1000)]])
        // 16000×3400 at 360 px high is 1694 px: two do not fit side by side.
        #expect(sheet.tiles[0].x == ProofSheet.margin && sheet.tiles[1].x == ProofSheet.margin)
        #expect(sheet.tiles[1].y > sheet.tiles[0].y)
        #expect(sheet.tiles[2].width == usable && sheet.tiles[2].height == 58)  // 360 × 2336 / 14400
        #expect(sheet.width == ProofSheet.maxWidth)
        #expect(ProofSheet.layout(rows: [[Size(100, 100)]]).width == 800)  // the narrowest sheet: room for the title
    }

    /// The proof of a template with crops, a frame and a text mark: every output of every
    /// sample is a tile of the sheet, at its place, labelled; the mark shows in the tiles.
    @Test func aProofShowsEveryOutputAsALabelledTile() throws {
        let text = """
            { version: 1, resize: { longSide: 600 }, crops: ["1:1", { ratio: "16:9", skipIfCutOver: 0.5 }],
              frame: { width: 0.04, color: "#ffffff" },
              text: { text: "PROOF", font: "DejaVu Sans:bold", capHeight: 0.08, position: "center", color: "#ffff00", opacity: 1 },
              output: { format: "jpeg", quality: 85 } }
            """
        let template = try TemplateLoader.parse(text: text, file: "t.json5", name: "t", directory: ".")
        let sheet = try #require(try Proof.render(template: template, shrink: 16))
        #expect(sheet.failures.isEmpty, "\(sheet.failures)")
        // 1:1 for all six; 16:9 only where it cuts at most half: landscape, 48 MP, square (the
        // portrait, the screenshot and the 4.7:1 panorama would lose more).
        #expect(sheet.outputs == 9 && sheet.layout.tiles.count == 9)
        #expect(sheet.notes.count == 3, "\(sheet.notes)")
        let image = try decodeRGB(sheet.png)
        #expect(image.width == sheet.layout.width && image.height == sheet.layout.height)
        let bg = ProofSheet.background
        for (tile, band) in zip(sheet.layout.tiles, sheet.layout.labels) {
            // The white frame at the tile's edges, the photo inside; the sheet just outside.
            #expect(image.pixel(tile.x + 1, tile.y + tile.height / 2).allSatisfy { $0 > 230 }, "\(tile)")
            #expect(image.pixel(tile.x - 2, tile.y + tile.height / 2) == bg, "\(tile)")
            #expect(image.pixel(tile.x + tile.width / 2, tile.y - 2) == bg, "\(tile)")
            // The yellow mark in the middle of the tile.
            #expect(count(image, in: PixelRect(x: tile.x + tile.width / 4, y: tile.y + tile.height / 3,
                                               width: tile.width / 2, height: tile.height / 3)) { p in
                p[0] > 200 && p[1] > 200 && p[2] < 80 } > 20, "\(tile)")
            // Label ink in the band.
            #expect(count(image, in: band) { p in p != bg } > 50, "\(band)")
        }
        // The skipped crops are said on the sheet too, in amber, beside their rows' outputs.
        #expect(sheet.layout.notes.keys.sorted() == [1, 3, 5])
        for box in sheet.layout.notes.values {
            #expect(count(image, in: box) { $0[0] > 200 && $0[1] > 150 && $0[2] < 120 } > 30, "no note in \(box)")
        }
    }

    func count(_ image: Image, in rect: PixelRect, _ match: ([UInt8]) -> Bool) -> Int {
        var n = 0
        for y in rect.y..<(rect.y + rect.height) {
            for x in rect.x..<(rect.x + rect.width) where match(image.pixel(x, y)) { n += 1 }
        }
        return n
    }
}

extension ProofTests {
    /// A sample the recipe cannot finish (here: over `maxPixels`) keeps its row, with the
    /// reason written in it; the others are shown as usual.
    @Test func aSampleThatFailsKeepsItsRowWithTheReason() throws {
        let template = try TemplateLoader.parse(text: "{ version: 1, resize: { longSide: 200 } }", file: "t.json5",
                                                name: "t", directory: ".")
        // At 1/16: the 48 MP sample is 504×378 and the panorama 1000×212, both over 150 000 px.
        let sheet = try #require(try Proof.render(template: template, shrink: 16, maxPixels: 150_000))
        #expect(sheet.outputs == 4 && sheet.failures.count == 2, "\(sheet.failures)")
        #expect(sheet.failures[0].hasPrefix("48 MP 504×378, snow: "), "\(sheet.failures)")
        #expect(sheet.layout.emptyRows.keys.sorted() == [2, 5])
        let image = try decodeRGB(sheet.png)
        for band in sheet.layout.emptyRows.values {
            #expect(count(image, in: band) { $0[0] > 200 && $0[1] < 200 } > 50, "no reason written in \(band)")
        }
    }
}
