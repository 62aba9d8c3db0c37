import Codecs
import Pixels
import Testing
@testable import Finishing

/// Subject-aware crops on made-up photos whose subject is known: every crop keeps the face
/// (or the product) whole, on either side of the frame; a centred subject stays centred.
@Suite struct SubjectCropTests {
    static let ratios = ["1:1", "4:5", "9:16"]

    /// Finishes `scene` with one crop per ratio and returns each crop's box (upright source
    /// pixels) and focus.
    func crops(_ scene: SampleScenes.Scene, ratios: [String] = ratios, focus: Template.CropFocus = .subject,
               xmp: [UInt8]? = nil) throws -> [(ratio: String, box: PixelRect, focus: String)] {
        var template = Template(name: "pack")
        template.resize = .longSide(240)
        template.cropFocus = focus
        template.crops = ratios.map {
            let parts = $0.split(separator: ":").map { Int($0)! }
            return Template.Crop(label: $0, width: parts[0], height: parts[1])
        }
        var options = EncodeOptions(format: .jpeg, quality: 92)
        options.xmp = xmp
        let bytes = try encodeImage(scene.image, options: options)
        let photo = try PhotoFinisher(template: template, marks: .none).finish(bytes: bytes, limits: DecodeLimits())
        return try photo.outputs.map { output in
            let crop = try #require(output.applied.crop)
            return (crop.ratio, PixelRect(x: crop.box[0], y: crop.box[1], width: crop.box[2], height: crop.box[3]), crop.focus ?? "")
        }
    }

    func contains(_ outer: PixelRect, _ inner: PixelRect, slack: Int = 2) -> Bool {
        inner.x >= outer.x - slack && inner.y >= outer.y - slack
            && inner.x + inner.width <= outer.x + outer.width + slack
            && inner.y + inner.height <= outer.y + outer.height + slack
    }

    @Test("a person off-centre beside a busy block keeps the whole face in every crop, on either side",
          arguments: [0.2, 0.8])
    func personOffCentre(at side: Double) throws {
        let scene = SampleScenes.draw(.person, width: 960, height: 720, at: side)
        let face = try #require(scene.face)
        for crop in try crops(scene) {
            #expect(contains(crop.box, face), "\(crop.ratio) at \(side): crop \(crop.box) cuts the face \(face)")
            // The drawn face is one the detector finds (see facesOfTheDrawnPeople).
            #expect(crop.focus == "faces")
            #expect(crop.box.x >= 0 && crop.box.x + crop.box.width <= 960 && crop.box.y >= 0 && crop.box.y + crop.box.height <= 720)
        }
        // The plain centred crops would have lost the face: the test is not trivially passed.
        let centred = try crops(scene, focus: .center)
        #expect(centred.contains { !contains($0.box, face) })
        #expect(centred.allSatisfy { $0.focus == "center" })
    }

    @Test("a portrait with the head near the top keeps the head in every crop")
    func portraitHeadAtTop() throws {
        let scene = SampleScenes.draw(.portrait, width: 720, height: 960, at: 0.5)
        let face = try #require(scene.face)
        for crop in try crops(scene, ratios: Self.ratios + ["16:9"]) {
            #expect(contains(crop.box, face), "\(crop.ratio): crop \(crop.box) cuts the head \(face)")
        }
        let centred = try crops(scene, ratios: ["1:1"], focus: .center)
        #expect(!contains(centred[0].box, face), "the centred square would have cut the head")
    }

    @Test("a product on white stays whole in every crop, on either side", arguments: [0.22, 0.78])
    func productOnWhite(at side: Double) throws {
        let scene = SampleScenes.draw(.product, width: 960, height: 720, at: side)
        for crop in try crops(scene) {
            #expect(contains(crop.box, scene.subject), "\(crop.ratio): crop \(crop.box) cuts the product \(scene.subject)")
        }
    }

    @Test("a centred subject stays centred")
    func centredStaysCentred() throws {
        for kind in [SampleScenes.Kind.product, .portrait] {
            let scene = SampleScenes.draw(kind, width: 960, height: 720, at: 0.5)
            for crop in try crops(scene) {
                let centre = Double(crop.box.x) + Double(crop.box.width) / 2
                #expect(abs(centre - 480) <= 960 * 0.02, "\(kind) \(crop.ratio): centre at \(centre)")
            }
        }
    }

    /// An XMP packet naming one MWG region (centre and size as fractions of the photo).
    static func packet(type: String, x: Double, y: Double, width: Double, height: Double) -> [UInt8] {
        Array("""
            <x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>
            <rdf:Description rdf:about='' xmlns:mwg-rs='http://www.metadataworkinggroup.com/schemas/regions/'
              xmlns:stArea='http://ns.adobe.com/xmp/sType/Area#'>
            <mwg-rs:Regions rdf:parseType='Resource'><mwg-rs:RegionList><rdf:Bag>
              <rdf:li><rdf:Description mwg-rs:Name='Ada' mwg-rs:Type='\(type)'>
                <mwg-rs:Area stArea:x='\(x)' stArea:y='\(y)' stArea:w='\(width)' stArea:h='\(height)' stArea:unit='normalized'/>
              </rdf:Description></rdf:li>
            </rdf:Bag></mwg-rs:RegionList></mwg-rs:Regions>
            </rdf:Description></rdf:RDF></x:xmpmeta>
            """.utf8)
    }

    @Test("a face the file's XMP names far from the attention map's subject is whole in every crop",
          arguments: [(SampleScenes.Kind.person, 0.93, 0.3), (.person, 0.06, 0.8), (.portrait, 0.5, 0.92)])
    func xmpFaceRegion(_ kind: SampleScenes.Kind, x: Double, y: Double) throws {
        // The person stands at the left (the portrait's head is at the top): the map would go there.
        let (width, height) = kind == .portrait ? (720, 960) : (960, 720)
        let scene = SampleScenes.draw(kind, width: width, height: height, at: kind == .portrait ? 0.5 : 0.2)
        let (w, h) = (0.06, 0.1)
        let face = PixelRect(x: Int(((x - w / 2) * Double(width)).rounded(.down)),
                             y: Int(((y - h / 2) * Double(height)).rounded(.down)),
                             width: Int((w * Double(width)).rounded(.up)), height: Int((h * Double(height)).rounded(.up)))
        let ratios = Self.ratios + ["16:9"]
        let placed = try crops(scene, ratios: ratios, xmp: Self.packet(type: "Face", x: x, y: y, width: w, height: h))
        #expect(placed.map(\.ratio) == ratios)
        for crop in placed where crop.box.width < width || crop.box.height < height {
            #expect(contains(crop.box, face, slack: 0), "\(crop.ratio): crop \(crop.box) cuts the XMP face \(face)")
            #expect(crop.focus == "faces")
        }
        // Without the packet at least one crop loses that face: the regions did the placing.
        #expect(try crops(scene, ratios: ratios).contains { !contains($0.box, face, slack: 0) })
        // A region of another type places crops the same way, reported as such.
        let focus = try crops(scene, ratios: ["9:16"], xmp: Self.packet(type: "Focus", x: x, y: y, width: w, height: h))
        #expect(focus.allSatisfy { contains($0.box, face, slack: 0) && $0.focus == "xmp-region" })
    }

    @Test("a face the XMP names travels into the crop's own XMP, inside it")
    func xmpFaceRegionInTheOutput() throws {
        let scene = SampleScenes.draw(.person, width: 960, height: 720, at: 0.2)
        var template = Template(name: "pack")
        template.resize = .longSide(240)
        template.crops = [Template.Crop(label: "9:16", width: 9, height: 16)]
        var options = EncodeOptions(format: .jpeg, quality: 92)
        options.xmp = Self.packet(type: "Face", x: 0.93, y: 0.3, width: 0.06, height: 0.1)
        let photo = try PhotoFinisher(template: template, marks: .none)
            .finish(bytes: try encodeImage(scene.image, options: options), limits: DecodeLimits())
        let output = try #require(photo.outputs.first)
        let info = try JPEGDecoder(bytes: output.bytes, limits: DecodeLimits()).info
        let regions = try #require(info.xmp.flatMap(XMPPacket.init)?.regions)
        let area = try #require(regions.list.first { $0.type == "Face" }?.area)
        #expect(area.x - area.width / 2 >= 0 && area.x + area.width / 2 <= 1, "\(area)")
        #expect(area.y - area.height / 2 >= 0 && area.y + area.height / 2 <= 1, "\(area)")
    }

    @Test("variants: crops are placed on the subject whichever recipe has the whole photo, outputs in order")
    func variantsPlaceTheirCrops() throws {
        let scene = SampleScenes.draw(.person, width: 960, height: 720, at: 0.8)
        let face = try #require(scene.face)
        // The template's own output is a crop (streamed into a band); the variant's is the
        // whole photo, which the subject is found on: it is finished first, kept second.
        var template = Template(name: "pack")
        template.resize = .longSide(240)
        template.crops = [Template.Crop(label: "9:16", width: 9, height: 16)]
        var web = template
        web.crops = []
        web.resize = .longSide(320)
        var square = template
        square.crops = [Template.Crop(label: "1:1", width: 1, height: 1)]
        template.variants = [.init(name: "web", recipe: web), .init(name: "square", recipe: square)]
        let bytes = try encodeImage(scene.image, options: EncodeOptions(format: .jpeg, quality: 92))
        let photo = try PhotoFinisher(template: template, marks: .none).finish(bytes: bytes, limits: DecodeLimits())
        #expect(photo.outputs.map(\.variant) == [nil, "web", "square"])
        #expect(zip(photo.outputs.map(\.name), ["9x16.jpg", "web.jpg", "square-1x1.jpg"]).allSatisfy { $0.hasSuffix($1) },
                "\(photo.outputs.map(\.name))")
        for output in photo.outputs where output.variant != "web" {
            let crop = try #require(output.applied.crop)
            let box = PixelRect(x: crop.box[0], y: crop.box[1], width: crop.box[2], height: crop.box[3])
            #expect(contains(box, face), "\(crop.ratio): crop \(box) cuts the face \(face)")
            #expect(crop.focus == "faces")
        }
    }

    @Test("the faces the detector finds on the drawn people are theirs, in the report's upright pixels")
    func facesOfTheDrawnPeople() throws {
        for (kind, size) in [(SampleScenes.Kind.person, (960, 720)), (.portrait, (720, 960))] {
            let scene = SampleScenes.draw(kind, width: size.0, height: size.1, at: 0.3)
            let face = try #require(scene.face)
            var template = Template(name: "pack")
            template.resize = .longSide(240)
            template.crops = [Template.Crop(label: "1:1", width: 1, height: 1)]
            let bytes = try encodeImage(scene.image, options: EncodeOptions(format: .jpeg, quality: 92))
            let photo = try PhotoFinisher(template: template, marks: .none).finish(bytes: bytes, limits: DecodeLimits())
            let found = try #require(photo.faces)
            #expect(found.count == 1, "\(kind): \(found)")
            for box in found {
                // The detector's box (brows to chin) lies within the drawn head.
                #expect(contains(face, box, slack: face.width / 4), "\(kind): found \(box), drawn \(face)")
            }
        }
    }

    @Test("a flat photo has no subject: its crops are centred and say so")
    func flatPhotoIsCentred() throws {
        let image = flat(960, 720, [128, 128, 128]).finished()
        let scene = SampleScenes.Scene(image: image, face: nil, subject: PixelRect(x: 0, y: 0, width: 960, height: 720))
        for crop in try crops(scene) {
            #expect(crop.focus == "center")
            #expect(abs(crop.box.x + crop.box.width / 2 - 480) <= 1)
        }
    }

    @Test("crops of one scale share one band, and the output is exactly the crop's size")
    func bandSizes() throws {
        let scene = SampleScenes.draw(.person, width: 960, height: 720, at: 0.2)
        var template = Template(name: "pack")
        template.resize = .longSide(240)
        template.crops = [Template.Crop(label: "1:1", width: 1, height: 1), Template.Crop(label: "4:5", width: 4, height: 5)]
        let bytes = try encodeImage(scene.image, options: EncodeOptions(format: .jpeg, quality: 92))
        let photo = try PhotoFinisher(template: template, marks: .none).finish(bytes: bytes, limits: DecodeLimits())
        #expect(photo.outputs.map(\.size) == [.init(240, 240), .init(192, 240)])
        let decoded = try decodeRGB(photo.outputs[0].bytes)
        #expect(decoded.width == 240 && decoded.height == 240)
        #expect(photo.preview != nil)
    }
}

/// The analysis image of photos with a side shorter than the shrink factor (found by the
/// `finish` fuzz target: a 2-px-wide JPEG read past its rows).
@Suite struct AnalysisImageTests {
    @Test(arguments: [(2, 2000), (2000, 3), (1, 1), (1, 5000)])
    func thinPhotosAverageWhatTheyHave(width: Int, height: Int) {
        let image = Image(width: width, height: height, channels: 4, fill: [10, 120, 250, 255])
        let small = AttentionMap.analysisImage(from: image)
        #expect(small.width >= 1 && small.height >= 1)
        #expect(max(small.width, small.height) <= max(AttentionMap.analysisLongSide, 1))
        #expect(Array(small.pixel(0, small.height - 1).prefix(3)) == [10, 120, 250])
        #expect(Array(small.pixel(small.width - 1, 0).prefix(3)) == [10, 120, 250])
    }
}

/// The placement rule with plain numbers.
@Suite struct CropPlacementTests {
    @Test func keepsTheWholeSubjectCentredWhenItFits() {
        // Subject 0.1…0.3 in a window of 0.5: centred on 0.2 would start at −0.05: clamped to 0.
        #expect(CropPlacement.start(window: 0.5, groups: [[0.1...0.3]], point: 0.2) == 0)
        // Subject 0.6…0.8: centred on 0.7 → 0.45, within the starts that keep it (0.3…0.6).
        #expect(abs(CropPlacement.start(window: 0.5, groups: [[0.6...0.8]], point: 0.7) - 0.45) < 1e-9)
        // Never beyond the photo.
        #expect(CropPlacement.start(window: 0.5, groups: [[0.9...1.0]], point: 0.95) == 0.5)
    }

    /// Found by the `finish` fuzz target: a region a file names may lie beyond the photo or
    /// be no number at all; the start stays on the photo and nothing traps.
    @Test func spansBeyondThePhotoOrNotNumbersNeverTrap() {
        // Wholly before the photo: left out, so the point decides.
        #expect(abs(CropPlacement.start(window: 0.5, groups: [[-0.5...(-0.4)]], point: 0.5) - 0.25) < 1e-9)
        // Reaching past the end: cut to 0.8…1, kept.
        #expect(CropPlacement.start(window: 0.5, groups: [[0.8...1.7]], point: 0.5) == 0.5)
        let inf = Double.infinity
        for start in [CropPlacement.start(window: 0.5, groups: [[0.2...0.3]], point: .nan),
                      CropPlacement.start(window: 0.5, groups: [[-inf...inf]], point: inf),
                      CropPlacement.start(window: 0.3, groups: [[0.2...0.2 + 0.3 + 1e-10]], point: 0)] {
            #expect(start >= 0 && start <= 0.5, "\(start)")
        }
        // A subject box that is no number places the crop on the photo all the same.
        let odd = Subject(source: .subject, box: FocusBox(x: .nan, y: 0.2, width: 0.1, height: -0.5), keep: [], peak: (x: .nan, y: .infinity))
        let corner = CropPlacement.place(window: OutputPlan.Size(50, 50),
                                         in: OutputPlan.Size(100, 100), subject: odd)
        #expect((0...50).contains(corner.x) && (0...50).contains(corner.y))
    }

    @Test func fallsBackToTheFacesThenThePoint() {
        // The whole subject (0.1…0.9) does not fit 0.4; the face (0.15…0.3) does.
        let s = CropPlacement.start(window: 0.4, groups: [[0.1...0.9, 0.15...0.3], [0.15...0.3]], point: 0.5)
        #expect(s <= 0.15 && s + 0.4 >= 0.3)
        // Nothing fits: centred on the point.
        #expect(abs(CropPlacement.start(window: 0.2, groups: [[0.0...1.0]], point: 0.5) - 0.4) < 1e-9)
    }

    @Test func regionsFromTheFileComeFirst() throws {
        let face = FocusBox(x: 0.7, y: 0.1, width: 0.1, height: 0.15)
        let subject = try #require(SubjectFinder.fromRegions([(face, true), (FocusBox(x: 0.1, y: 0.5, width: 0.2, height: 0.2), false)]))
        #expect(subject.source == .faces)
        let origin = CropPlacement.place(window: .init(300, 400), in: .init(1000, 400), subject: subject)
        #expect(origin.x <= 700 && origin.x + 300 >= 800)
        let region = try #require(SubjectFinder.fromRegions([(FocusBox(x: 0.1, y: 0.5, width: 0.2, height: 0.2), false)]))
        #expect(region.source == .xmpRegion)
    }

    @Test func mwgRegionsBecomeTheSubject() throws {
        // MWG areas are centre + size: a face centred at (0.75, 0.2), 0.1 × 0.15.
        let regions = [XMPRegion(type: "Face", name: "Ada", area: .init(x: 0.75, y: 0.2, width: 0.1, height: 0.15)),
                       XMPRegion(type: "Focus", name: nil, area: .init(x: 0.2, y: 0.6, width: 0.2, height: 0.2))]
        let subject = try #require(SubjectFinder.fromRegions(regions))
        #expect(subject.source == .faces)
        #expect(abs(subject.keep[0].x - 0.7) < 1e-9 && abs(subject.keep[0].width - 0.1) < 1e-9)
        #expect(SubjectFinder.fromRegions([XMPRegion]()) == nil)
        #expect(SubjectFinder.fromRegions([regions[1]])?.source == .xmpRegion)
    }
}

/// Faces are atoms, with plain numbers (one axis, fractions of the photo).
@Suite struct FaceAtomTests {
    static func face(_ lower: Double, _ upper: Double, grown: Double = 0.02) -> CropPlacement.Face {
        .init(grown: (lower - grown)...(upper + grown), box: lower...upper, size: (upper - lower) * (upper - lower))
    }

    /// No box of `faces` is cut by the window of `window` at `start` (each whole or out).
    static func expectNoBoxCut(_ faces: [CropPlacement.Face], window: Double, start s: Double) {
        for f in faces {
            let inside = max(0, min(f.box.upperBound, s + window) - max(f.box.lowerBound, s))
            #expect(inside < 1e-9 || inside >= f.box.upperBound - f.box.lowerBound - 1e-9, "start \(s) cuts the box \(f.box)")
        }
    }

    @Test func noEdgeThroughAFaceWhenOneCanBeAvoided() {
        // Faces at 0.1…0.2, 0.45…0.55, 0.8…0.9; a window of 0.5 keeps two whole and cuts none.
        let faces = [Self.face(0.1, 0.2), Self.face(0.45, 0.55), Self.face(0.8, 0.9)]
        let s = CropPlacement.start(window: 0.5, faces: faces, subject: nil)
        for f in faces {
            let inside = max(0, min(f.grown.upperBound, s + 0.5) - max(f.grown.lowerBound, s))
            #expect(inside < 1e-9 || inside >= f.grown.upperBound - f.grown.lowerBound - 1e-9, "start \(s) cuts \(f.grown)")
        }
    }

    @Test func theSubjectThenTheCentreDecideAmongEqualPlacements() {
        // One face the window keeps wherever it goes from 0 to 0.3: the subject (0.4…0.9) pulls it right.
        let one = [Self.face(0.3, 0.35)]
        #expect(abs(CropPlacement.start(window: 0.6, faces: one, subject: 0.4...0.9) - 0.28) < 1e-9)
        // No subject: the centre (0.2 is the centred start).
        #expect(abs(CropPlacement.start(window: 0.6, faces: one, subject: nil) - 0.2) < 1e-9)
    }

    @Test func aCrowdIsCutWhereItCostsLeast() {
        // Faces side by side, no gap, none 0.4 apart: every window of 0.4 cuts one. The least
        // face cut away: a quarter of the first (0.05…0.45), not a slice of a larger one.
        let crowd = [Self.face(0.0, 0.2, grown: 0), Self.face(0.2, 0.45, grown: 0), Self.face(0.45, 0.7, grown: 0),
                     Self.face(0.7, 0.78, grown: 0), Self.face(0.78, 1.0, grown: 0)]
        let s = CropPlacement.start(window: 0.4, faces: crowd, subject: nil)
        let cut = crowd.filter { f in
            let inside = max(0, min(f.box.upperBound, s + 0.4) - max(f.box.lowerBound, s))
            return inside > 1e-9 && inside < f.box.upperBound - f.box.lowerBound - 1e-9
        }
        #expect(cut.count == 1, "start \(s) cuts \(cut.map(\.box))")
        #expect(abs(s - 0.05) < 1e-9, "start \(s)")
    }

    @Test func aCrowdTooWideForItsMarginsShavesTheMarginsEvenlyAndCutsNoBox() {
        // The proof's group along its width: five boxes 0.12 wide, 0.2 apart, grown 0.024 each
        // side; a 1:1 window of a 4:3 photo (0.75) holds four boxes (0.24…0.96) but not their
        // margins (0.216…0.984). No box is cut, and the two outer margins are shaved alike
        // (0.009 each, at 0.225, or the same four from the left at 0.025) rather than one
        // twice as deep (0.018, at 0.216 or 0.234).
        let crowd = (0..<5).map { Self.face(0.04 + 0.2 * Double($0), 0.16 + 0.2 * Double($0), grown: 0.024) }
        let s = CropPlacement.start(window: 0.75, faces: crowd, subject: nil)
        Self.expectNoBoxCut(crowd, window: 0.75, start: s)
        #expect(abs(s - 0.225) < 1e-9 || abs(s - 0.025) < 1e-9, "start \(s)")
    }

    @Test func twoEdgesThroughMarginsComeBeforeOneThroughABox() {
        // Boxes 0.08 wide, 0.2 apart, grown 0.05 each side (gaps of 0.02); a window of 0.5.
        // With one edge in a gap (or at the photo's edge) the other is inside a box: each start
        // that cuts one face cuts its box. With both edges in margins no box is cut: those are
        // taken, the two margins shaved alike (0.8 of each), two faces whole between them:
        // 0.15…0.65 (the window holds a rim of the first face's hair) or 0.35…0.85.
        let crowd = (0..<5).map { Self.face(0.06 + 0.2 * Double($0), 0.14 + 0.2 * Double($0), grown: 0.05) }
        let s = CropPlacement.start(window: 0.5, faces: crowd, subject: nil)
        Self.expectNoBoxCut(crowd, window: 0.5, start: s)
        #expect(abs(s - 0.15) < 1e-9 || abs(s - 0.35) < 1e-9, "start \(s)")
    }

    @Test func aFaceLargerThanTheWindowWithItsHairIsKeptByItsBoxAndAHugeOneAsMuchAsCan() {
        // Grown 0.1…0.7 does not fit 0.45; its box 0.25…0.6 does: kept whole, not left out.
        let big = CropPlacement.Face(grown: 0.1...0.7, box: 0.25...0.6, size: 0.1)
        let s = CropPlacement.start(window: 0.45, faces: [big], subject: nil)
        #expect(s <= 0.25 + 1e-9 && s + 0.45 >= 0.6 - 1e-9, "\(s)")
        // A box of 0.1…0.9 in a window of 0.3: the window stays on the face.
        let huge = CropPlacement.Face(grown: 0.0...1.0, box: 0.1...0.9, size: 0.6)
        let h = CropPlacement.start(window: 0.3, faces: [huge], subject: nil)
        #expect(h >= 0.1 - 1e-9 && h + 0.3 <= 0.9 + 1e-9, "\(h)")
    }
}
