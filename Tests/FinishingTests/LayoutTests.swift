import Finishing
import Pixels
import Testing

@Suite struct LayoutTests {
    typealias Size = OutputPlan.Size

    func template(resize: Template.Resize? = nil, crops: [Template.Crop] = []) -> Template {
        var t = Template(name: "t")
        t.resize = resize
        t.crops = crops
        return t
    }

    @Test func longSideNeverUpscales() {
        #expect(Layout.resized(Size(4032, 3024), by: .longSide(2048)) == Size(2048, 1536))
        #expect(Layout.resized(Size(3024, 4032), by: .longSide(2048)) == Size(1536, 2048))
        #expect(Layout.resized(Size(1080, 1080), by: .longSide(2048)) == Size(1080, 1080))
        #expect(Layout.resized(Size(4032, 3024), by: .shortSide(1080)) == Size(1440, 1080))
        #expect(Layout.resized(Size(4032, 3024), by: .fit(width: 1000, height: 1000)) == Size(1000, 750))
        #expect(Layout.resized(Size(800, 600), by: .fit(width: 1000, height: 1000)) == Size(800, 600))
        #expect(Layout.resized(Size(16000, 3400), by: .longSide(2048)) == Size(2048, 435))
    }

    @Test func centredCropsAndCutFraction() {
        let (square, cut) = Layout.centredCrop(of: Size(4032, 3024), ratioWidth: 1, ratioHeight: 1)
        #expect(square == PixelRect(x: 504, y: 0, width: 3024, height: 3024))
        #expect(abs(cut - 0.25) < 1e-9)
        let (portrait, _) = Layout.centredCrop(of: Size(4032, 3024), ratioWidth: 4, ratioHeight: 5)
        #expect(portrait == PixelRect(x: 806, y: 0, width: 2419, height: 3024))
        let (wide, wideCut) = Layout.centredCrop(of: Size(3024, 4032), ratioWidth: 16, ratioHeight: 9)
        #expect(wide == PixelRect(x: 0, y: 1165, width: 3024, height: 1701))
        #expect(wideCut > 0.57 && wideCut < 0.58)
        let (same, none) = Layout.centredCrop(of: Size(1600, 900), ratioWidth: 16, ratioHeight: 9)
        #expect(same == PixelRect(x: 0, y: 0, width: 1600, height: 900))
        #expect(none == 0)
    }

    @Test func skipRuleAndOneOutputPerRatio() {
        let crops = [Template.Crop(label: "1:1", width: 1, height: 1),
                     Template.Crop(label: "4:5", width: 4, height: 5),
                     Template.Crop(label: "16:9", width: 16, height: 9, skipIfCutOver: 0.5)]
        // A portrait (stored landscape, orientation 6): 16:9 would cut 57 % → skipped.
        let (outputs, skipped) = Layout.plan(stored: Size(4032, 3024), orientation: 6,
                                             template: template(resize: .longSide(1080), crops: crops))
        #expect(outputs.map { $0.crop?.label } == ["1:1", "4:5"])
        #expect(outputs[0].upright == Size(1080, 1080))
        #expect(outputs[1].upright == Size(864, 1080))
        #expect(outputs[1].stored == Size(1080, 864))
        #expect(skipped.map(\.crop.label) == ["16:9"])
        // The same crops on a landscape keep all three.
        let (landscape, none) = Layout.plan(stored: Size(4032, 3024), orientation: 1,
                                            template: template(resize: .longSide(1080), crops: crops))
        #expect(landscape.count == 3 && none.isEmpty)
        #expect(landscape[2].upright == Size(1080, 608))
    }

    @Test func decodeScaleStillCoversTheTarget() {
        // 4032 → 2048: 4/8 would give 2016 px, too small (TRAPS: shrink-on-load edge); 5/8 gives 2520.
        let plan12 = Layout.plan(stored: Size(4032, 3024), orientation: 1, template: template(resize: .longSide(2048)))
        let jpeg = { (e: Int) in Size((4032 * e + 7) / 8, (3024 * e + 7) / 8) }
        #expect(Layout.decodeEighths(stored: Size(4032, 3024), outputs: plan12.outputs,
                                     scales: Array(1...8), scaledSize: jpeg) == 5)
        // 8064 → 2048: 3/8 would give 3024 (2/8: 2016), but 3/8 aliases fine detail: 1/2.
        let jpeg48 = { (e: Int) in Size((8064 * e + 7) / 8, (6048 * e + 7) / 8) }
        let plan48 = Layout.plan(stored: Size(8064, 6048), orientation: 6, template: template(resize: .longSide(2048)))
        #expect(Layout.decodeEighths(stored: Size(8064, 6048), outputs: plan48.outputs,
                                     scales: Array(1...8), scaledSize: jpeg48) == 4)
        // 4032 → 2600: 6/8 (3024).
        let plan26 = Layout.plan(stored: Size(4032, 3024), orientation: 1, template: template(resize: .longSide(2600)))
        #expect(Layout.decodeEighths(stored: Size(4032, 3024), outputs: plan26.outputs,
                                     scales: Array(1...8), scaledSize: jpeg) == 6)
        // 4032 → 500: 1/8 gives 504 ≥ 500.
        let small = Layout.plan(stored: Size(4032, 3024), orientation: 1, template: template(resize: .longSide(500)))
        #expect(Layout.decodeEighths(stored: Size(4032, 3024), outputs: small.outputs,
                                     scales: Array(1...8), scaledSize: jpeg) == 1)
        // Without scaled decodes (PNG, HEIF, WebP), full size; and full size when nothing smaller serves.
        #expect(Layout.decodeEighths(stored: Size(4032, 3024), outputs: small.outputs, scales: [8], scaledSize: jpeg) == 8)
        let whole = Layout.plan(stored: Size(4032, 3024), orientation: 1, template: template(resize: nil))
        #expect(Layout.decodeEighths(stored: Size(4032, 3024), outputs: whole.outputs,
                                     scales: Array(1...8), scaledSize: jpeg) == 8)
    }

    @Test func decodeScaleLabelsAreFractionsInLowestTerms() {
        #expect((1...8).map { Layout.scaleLabel(eighths: $0) } == ["1/8", "1/4", "3/8", "1/2", "5/8", "3/4", "7/8", "1/1"])
    }

    @Test func uprightCropMapsToStoredPixels() {
        let crops = [Template.Crop(label: "1:1", width: 1, height: 1)]
        let (outputs, _) = Layout.plan(stored: Size(4000, 3000), orientation: 6, template: template(crops: crops))
        // Upright 3000×4000: the square is rows 500..<3500; stored, those are columns.
        #expect(outputs[0].uprightCrop == PixelRect(x: 0, y: 500, width: 3000, height: 3000))
        #expect(outputs[0].storedCrop == PixelRect(x: 500, y: 0, width: 3000, height: 3000))
    }
}
