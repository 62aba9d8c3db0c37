import Codecs
import Foundation
import Pixels
import Testing
@testable import Finishing

/// Crops of real photos of people (scripts/test-photos installs them from the Debian and
/// PyPI packages that ship them): no crop edge passes through a face, every crop keeps at
/// least one face whole, and the report names the faces. The face boxes below (brows to chin,
/// ear to ear) were found at twice the resolution PhotoFinish searches at and checked by eye
/// on each photo, so a face the detector misses in a crop's placing is still checked.
@Suite struct FaceCropTests {
    static let ratios = ["1:1", "4:5", "9:16", "16:9"]

    /// The photo's bytes, or nil (and a printed reason) when it is not installed.
    static func photo(_ name: String) -> [UInt8]? { TestPhotos.photo(name) }

    /// Six people round a table in a warm room with skin-toned walls (1280 × 886).
    static let group = [PixelRect(x: 64, y: 285, width: 101, height: 101), PixelRect(x: 263, y: 174, width: 101, height: 101),
                        PixelRect(x: 462, y: 307, width: 101, height: 101), PixelRect(x: 739, y: 374, width: 101, height: 101),
                        PixelRect(x: 894, y: 86, width: 101, height: 101), PixelRect(x: 1127, y: 296, width: 101, height: 101)]

    /// Finishes `bytes` with one crop per ratio at `longSide`.
    static func finish(_ bytes: [UInt8], ratios: [String] = ratios, longSide: Int = 1080) throws -> FinishedPhoto {
        var template = Template(name: "pack")
        template.resize = .longSide(longSide)
        template.crops = ratios.map {
            let parts = $0.split(separator: ":").map { Int($0)! }
            return Template.Crop(label: $0, width: parts[0], height: parts[1])
        }
        return try PhotoFinisher(template: template, marks: .none).finish(bytes: bytes, limits: DecodeLimits())
    }

    /// The share of `face` inside `crop` (0…1).
    static func inside(_ face: PixelRect, _ crop: PixelRect) -> Double {
        let w = min(face.x + face.width, crop.x + crop.width) - max(face.x, crop.x)
        let h = min(face.y + face.height, crop.y + crop.height) - max(face.y, crop.y)
        return w <= 0 || h <= 0 ? 0 : Double(w * h) / Double(face.width * face.height)
    }

    /// Every crop of `photo` cuts no face of `faces` (none between 15 % and 85 % inside) and
    /// keeps at least one whole; the crops were placed on faces the report names, most of
    /// them the photo's (`expected` of them at least).
    static func expectFacesKept(_ photo: FinishedPhoto, faces: [PixelRect], found expected: Int, _ label: String) throws {
        #expect(photo.outputs.count == ratios.count, "\(label)")
        for output in photo.outputs {
            let crop = try #require(output.applied.crop)
            let box = PixelRect(x: crop.box[0], y: crop.box[1], width: crop.box[2], height: crop.box[3])
            let shares = faces.map { inside($0, box) }
            for (face, share) in zip(faces, shares) {
                #expect(share <= 0.15 || share >= 0.85, "\(label) \(crop.ratio): crop \(box) cuts the face \(face) (\(share) inside)")
            }
            #expect(shares.contains { $0 >= 0.999 }, "\(label) \(crop.ratio): crop \(box) keeps no face whole")
            // A crop of the photo's own shape is not placed: it reports the focus asked for.
            let placed = box.width < photo.uprightSize.width || box.height < photo.uprightSize.height
            #expect(crop.focus == (placed ? "faces" : "subject"), "\(label) \(crop.ratio): placed by \(crop.focus ?? "nothing")")
        }
        let named = try #require(photo.faces, "\(label): the report names no faces")
        let matched = faces.filter { face in named.contains { inside(face, $0) > 0.4 && inside($0, face) > 0.4 } }
        #expect(matched.count >= expected, "\(label): the report's faces \(named) match \(matched.count) of \(faces.count)")
        #expect(named.count <= faces.count, "\(label): faces \(named) that are none")
    }

    @Test("a group of six in a warm, skin-toned room: no crop cuts a face (1:1, 4:5, 9:16, 16:9)")
    func groupRoundATable() throws {
        guard let bytes = Self.photo("group-table.jpg") else { return }
        try Self.expectFacesKept(try Self.finish(bytes), faces: Self.group, found: 5, "group")
    }

    @Test("the same group at 12 MP stored sideways (EXIF orientation 6): the same, in upright pixels")
    func groupSidewaysAt12MP() throws {
        guard let bytes = Self.photo("group-table.jpg") else { return }
        // 1280 × 886 enlarged to 4240 × 2935 (12.4 MP), stored turned a quarter to the left so
        // that orientation 6 (a quarter to the right) shows it upright.
        let upright = resized(try decodeRGB(bytes), width: 4240, height: 2935)
        let stored = Orientation.apply(upright, exif: 8)
        let jpeg = try encodeImage(stored, options: EncodeOptions(format: .jpeg, quality: 90,
                                                                  exif: ExifBuilder(orientation: 6).bytes()))
        let photo = try Self.finish(jpeg)
        #expect(photo.uprightSize == OutputPlan.Size(4240, 2935))
        let scale = 4240.0 / 1280.0
        let faces = Self.group.map {
            PixelRect(x: Int(Double($0.x) * scale), y: Int(Double($0.y) * scale),
                      width: Int(Double($0.width) * scale), height: Int(Double($0.height) * scale))
        }
        try Self.expectFacesKept(photo, faces: faces, found: 5, "group at 12 MP, orientation 6")
    }

    @Test("single portraits (dark and light skin): the face is whole in every crop", arguments: [
        ("obama.jpg", PixelRect(x: 381, y: 151, width: 231, height: 231)),
        ("biden.jpg", PixelRect(x: 461, y: 270, width: 246, height: 246)),
        ("obama3.jpg", PixelRect(x: 668, y: 318, width: 244, height: 244)),
        ("astronaut.png", PixelRect(x: 181, y: 85, width: 87, height: 87)),
    ])
    func portraits(_ name: String, face: PixelRect) throws {
        guard let bytes = Self.photo(name) else { return }
        try Self.expectFacesKept(try Self.finish(bytes, longSide: 720), faces: [face], found: 1, name)
    }

    @Test("a cat's face filling the frame: the 4:5 crop keeps both eyes (no face found, the subject's box)")
    func catKeepsBothEyes() throws {
        guard let bytes = Self.photo("chelsea.png") else { return }
        let eyes = [PixelRect(x: 135, y: 85, width: 75, height: 63), PixelRect(x: 293, y: 108, width: 50, height: 55)]
        let photo = try Self.finish(bytes, ratios: ["4:5", "1:1"], longSide: 300)
        for output in photo.outputs {
            let crop = try #require(output.applied.crop)
            let box = PixelRect(x: crop.box[0], y: crop.box[1], width: crop.box[2], height: crop.box[3])
            for eye in eyes { #expect(Self.inside(eye, box) >= 0.999, "\(crop.ratio): crop \(box) cuts the eye \(eye)") }
            #expect(crop.focus == "subject")
        }
        #expect(photo.faces == [], "the detector looked (a crop was placed) and found no face")
    }
}

/// The proof's group sample (drawn: five people of five skin tones on a warm wall; the proof
/// draws it at 4032 × 3024, the test at half that): every crop keeps every face whole or
/// leaves it out, and the detector finds all five.
@Suite struct ProofGroupTests {
    @Test("the proof's group: no crop cuts a face, each keeps one whole, all five found (1:1, 4:5, 9:16, 16:9)")
    func proofGroupKeepsEveryFace() throws {
        let sample = try #require(SamplePhotos.proofSet(shrink: 2).first { $0.scene == .group })
        let upright = sample.upright
        let scene = SampleScenes.draw(.group, width: upright.width, height: upright.height, at: sample.subjectAt, seed: 1)
        #expect(scene.faces.count == 5)
        let photo = try FaceCropTests.finish(try SamplePhotos.encoded(sample, seed: 1), longSide: 720)
        for output in photo.outputs {
            let crop = try #require(output.applied.crop)
            let box = PixelRect(x: crop.box[0], y: crop.box[1], width: crop.box[2], height: crop.box[3])
            let shares = scene.faces.map { FaceCropTests.inside($0, box) }
            // The drawn boxes hold the hair: at most a slice of its rim may go (a 1:1 crop cannot
            // hold all five, and shaves the hair of the one it leaves, not its face).
            #expect(shares.allSatisfy { $0 <= 0.05 || $0 >= 0.95 }, "\(crop.ratio): crop \(box) cuts a face: \(shares)")
            #expect(shares.contains { $0 >= 0.999 }, "\(crop.ratio): crop \(box) keeps no face")
            #expect(crop.focus == "faces")
        }
        let found = try #require(photo.faces)
        #expect(found.count == 5, "\(found)")
        for face in scene.faces {
            #expect(found.contains { FaceCropTests.inside($0, face) > 0.8 }, "the drawn face \(face) is not among \(found)")
        }
    }
}

/// The detector itself, on what it must not fail on.
@Suite struct FaceDetectorTests {
    @Test("a plain, a tiny and a one-colour picture have no faces")
    func nothingToFind() throws {
        let detector = try FaceDetector.shared.get()
        for image in [Image(width: 640, height: 480, channels: 3, fill: [200, 150, 120]),
                      Image(width: 2, height: 2, channels: 3, fill: [0, 0, 0]),
                      Image(width: 1, height: 900, channels: 4, fill: [255, 255, 255, 0])] {
            #expect(try detector.faces(in: image).isEmpty)
        }
    }

    @Test("a photo as stored is searched as the grey of its upright picture, for every EXIF orientation: made grey before it is turned, the same bytes as turning it first", arguments: [3, 4])
    func searchImageOfAStoredPhoto(channels: Int) throws {
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        // Stored 1,001 × 757 (odd sizes, not the search's shape), random pixels, alpha too.
        let stored = Image(width: 1001, height: 757, channels: channels) { rows in
            for y in 0..<rows.height {
                for x in 0..<(rows.width * rows.channels) {
                    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    rows[y][x] = UInt8(truncatingIfNeeded: state >> 56)
                }
            }
        }
        for exif in 1...8 {
            let found = stored.withUnsafeRows { FaceDetector.searchImage(stored: $0, orientation: exif) }
            // The path before: resampled as stored, turned upright, flattened, then made grey.
            let turned = Layout.swapsAxes(exif)
            let upright = turned ? (stored.height, stored.width) : (stored.width, stored.height)
            let size = FaceDetector.searchSize(width: upright.0, height: upright.1)
            let small = stored.withUnsafeRows {
                resized($0, width: turned ? size.height : size.width, height: turned ? size.width : size.height,
                        shrinkFirst: true)
            }
            let before = FaceDetector.grey(flattened(Orientation.apply(small, exif: exif), over: [255, 255, 255]).finished())
            #expect(found.width == size.width && found.height == size.height, "orientation \(exif)")
            #expect(found.grey == before, "orientation \(exif): \(zip(found.grey, before).filter { $0 != $1 }.count) pixels differ")
        }
    }

    @Test("the search size: the short side 720 px (enlarged when smaller), a panorama's long side at most 1,440")
    func searchSize() {
        #expect(FaceDetector.searchSize(width: 4032, height: 3024) == (960, 720))
        #expect(FaceDetector.searchSize(width: 3024, height: 4032) == (720, 960))
        #expect(FaceDetector.searchSize(width: 240, height: 180) == (960, 720))
        #expect(FaceDetector.searchSize(width: 9000, height: 3000) == (1120, 373))
    }

    @Test("a real face is found where it is, as fractions of the photo")
    func findsAFace() throws {
        guard let bytes = FaceCropTests.photo("astronaut.png") else { return }
        let faces = try FaceDetector.shared.get().faces(in: try decodeRGB(bytes))
        #expect(faces.count == 1)
        let face = try #require(faces.first)
        // 181, 85, 87 × 87 in 512 × 512.
        #expect(abs(face.x * 512 - 181) < 20 && abs(face.y * 512 - 85) < 20 && abs(face.width * 512 - 87) < 25, "\(face)")
    }
}
