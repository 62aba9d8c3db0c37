import Codecs
import Foundation
import Pixels
import Testing
@testable import Finishing

/// A photo held while its batch's light is found (`HeldPhoto`: decoded once, each output's
/// pixels resampled and kept) is finished into the same files as a photo decoded to be
/// finished with the same correction: the held pixels are corrected on their way into the
/// lines exactly as the resampler's rows are when they stream.
@Suite struct HeldPhotoTests {
    static let correction = LightCorrection(gains: [1.2, 1.0, 0.8], exposure: -0.3)

    static func template(crops: [String], sharpen: Double) -> Template {
        var template = Template(name: "web")
        template.resize = .longSide(800)
        template.output.sharpen = sharpen
        template.crops = crops.map { Template.Crop(label: $0, width: Int($0.prefix(1))!, height: Int($0.suffix(1))!,
                                                   focus: $0 == "1:1" ? .center : .subject) }
        return template
    }

    @Test("a held photo is finished into the files a streamed one gives", arguments: [
        (1, [String](), 0.0), (6, [], 0.0), (6, [], 1.0), (1, ["4:5", "1:1"], 0.0), (6, ["1:1"], 0.0),
    ])
    func heldEqualsStreamed(orientation: Int, crops: [String], sharpen: Double) throws {
        let bytes = try StreamingTests.photo(orientation: orientation, width: 1600, height: 1200)
        let finisher = PhotoFinisher(template: Self.template(crops: crops, sharpen: sharpen), marks: try StreamingTests.assets())
        let streamed = try finisher.finish(bytes: bytes, limits: DecodeLimits(), light: Self.correction)
        let held = try finisher.hold(bytes: bytes, limits: DecodeLimits())
        let heldPhoto = try finisher.finish(held: held, light: Self.correction)
        #expect(streamed.outputs.count == max(1, crops.count) && heldPhoto.outputs.count == streamed.outputs.count)
        for (a, b) in zip(streamed.outputs, heldPhoto.outputs) {
            #expect(a.name == b.name && a.size == b.size)
            // A subject crop is placed on what the preview shows, and the two previews differ
            // by rounding (below): on this patterned photo, with no subject to speak of, that
            // moves it. Every other output is the same file.
            guard a.applied.crop?.focus != "subject" else { continue }
            #expect(a.applied == b.applied)
            let same = a.bytes == b.bytes  // (an #expect on the arrays would diff them byte by byte)
            #expect(same, "\(a.name): the two ways wrote different files (\(a.bytes.count) and \(b.bytes.count) bytes)")
        }
        // Both previews show the corrected photo, upright, at the same size, within rounding
        // (one is shrunk from the corrected output, the other corrected once shrunk).
        let p = try #require(streamed.preview), q = try #require(heldPhoto.preview)
        #expect(p.width == q.width && p.height == q.height)
        var diff = 0, count = 0
        p.withUnsafeRows { a in
            q.withUnsafeRows { b in
                for y in 0..<a.height {
                    for x in 0..<a.rowBytes { diff += abs(Int(a[y][x]) - Int(b[y][x])); count += 1 }
                }
            }
        }
        #expect(Double(diff) / Double(count) < 1.5, "previews differ by \(Double(diff) / Double(count)) codes on average")
        #expect(held.preview.width == p.width && held.preview.height == p.height)
    }

    @Test func aHeldPhotoIsFinishedOnce() throws {
        let bytes = try StreamingTests.photo(orientation: 1, width: 640, height: 480)
        let finisher = PhotoFinisher(template: Self.template(crops: [], sharpen: 0), marks: try StreamingTests.assets())
        let held = try finisher.hold(bytes: bytes, limits: DecodeLimits())
        #expect(held.byteCount == 640 * 480 * 3 + 480 * 360 * 3, "800 px is not upscaled: 640×480 held, and the preview")
        let size = HeldPhoto.byteCount(of: try openDecoder(bytes: bytes, limits: DecodeLimits()), template: finisher.template)
        #expect(size == held.byteCount, "the header's estimate is what it holds")
        _ = try finisher.finish(held: held, light: nil)
    }
}
