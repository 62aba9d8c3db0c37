import Codecs
import Foundation
import Pixels
import Testing
import Typesetting
@testable import Finishing

/// Full-resolution outputs go from the decoder's rows to the encoder band by band: memory is
/// measured through the pixel types (`PixelMeter`: images, canvases, bands and scratch rows;
/// libjpeg's own buffers and the file's bytes are outside it), and the pixels are compared
/// with the whole-frame way of finishing a photo.
@Suite struct StreamingTests {
    /// 3200×2400 (7.7 MP, a 23 MB frame): big enough that the bands (at least 1 MiB each) are
    /// a small part of it, small enough for CI. What an upright photo holds does not grow with
    /// the frame (a few bands and the preview), so the bound says more for 48 MP (a 145 MB
    /// frame, 1.5 MB bands).
    static let width = 3200, height = 2400

    /// A photo with texture everywhere (every pixel differs from its neighbours), stored
    /// with `orientation`, `width` × `height` unless told.
    static func photo(orientation: Int, width: Int = width, height: Int = height) throws -> [UInt8] {
        let stored = Image(width: width, height: height, channels: 3) { rows in
            for y in 0..<rows.height {
                let row = rows[y]
                for x in 0..<rows.width {
                    row[x * 3] = UInt8(truncatingIfNeeded: x &* 7 &+ y)
                    row[x * 3 + 1] = UInt8(truncatingIfNeeded: y &* 5 &+ x / 3)
                    row[x * 3 + 2] = UInt8(truncatingIfNeeded: (x ^ y) &* 3)
                }
            }
        }
        return try encodeImage(stored, options: EncodeOptions(format: .jpeg, quality: 92,
                                                              exif: ExifBuilder(orientation: orientation).bytes()))
    }

    /// Full resolution with every mark: text with a shadow, a logo, a tiled mark and a frame.
    static func template() -> Template {
        var t = Template(name: "full")
        var text = Template.TextMark(text: "© Example Studio")
        text.shadow = Template.Shadow(opacity: 0.5, blur: 0.004, offset: 0.002)
        text.opacity = 0.9
        t.text = text
        var logo = Template.LogoMark(file: "unused.png")
        logo.position = .topLeft
        t.logo = logo
        var tile = Template.TileMark(text: "PROOF")
        tile.opacity = 0.2
        t.tile = tile
        t.frame = Template.Frame(width: 0.02, color: .white)
        return t
    }

    static func assets() throws -> MarkAssets {
        let setter = try Typesetter(pattern: "DejaVu Sans:bold")
        return MarkAssets(textSetter: setter, tileSetter: setter, logo: MarkPainterTests.softDisc(size: 200, colour: [240, 30, 30]))
    }

    /// Finishes `bytes`: the outputs, and the most pixel memory held at once.
    func finish(_ bytes: [UInt8], template: Template = template()) throws -> (outputs: [FinishedOutput], peak: Int) {
        let meter = PixelMeter()
        let outputs = try meter.measure {
            try PhotoFinisher(template: template, marks: try Self.assets())
                .finish(bytes: bytes, limits: DecodeLimits()).outputs
        }
        // The preview, the logo and its scaled copy are gone with the photo and the finisher.
        #expect(meter.bytes == 0, "pixel memory left after the photo: \(meter.bytes) bytes")
        return (outputs, meter.peak)
    }

    static let frameBytes = width * height * 3

    /// What an upright photo may hold: its band, the framed band on its way to the encoder,
    /// the preview (and the logo), never a frame: 5 MiB, a fifth of this frame.
    static let streamingBound = 5 << 20

    @Test("an upright photo at full resolution is never whole: a few bands and the preview")
    func uprightHoldsABand() throws {
        let (outputs, peak) = try finish(try Self.photo(orientation: 1))
        #expect(outputs.first?.size == .init(Self.width + 2 * 48, Self.height + 2 * 48))
        #expect(peak < Self.streamingBound && peak < Self.frameBytes / 4, "peak \(peak) bytes, a frame is \(Self.frameBytes)")
    }

    @Test("a mirrored photo streams too")
    func mirroredHoldsABand() throws {
        let (_, peak) = try finish(try Self.photo(orientation: 2))
        #expect(peak < Self.streamingBound && peak < Self.frameBytes / 4, "peak \(peak) bytes, a frame is \(Self.frameBytes)")
    }

    /// A 4:2:0 JPEG is held as its YCbCr planes (`UprightPlanes`): 1.5 bytes a pixel, half
    /// an RGB frame, never two.
    @Test("a photo turned a quarter at full resolution is held once, as its planes: half a frame", arguments: [6, 8])
    func turnedHoldsOneFrame(orientation: Int) throws {
        let (outputs, peak) = try finish(try Self.photo(orientation: orientation))
        #expect(outputs.first?.size == .init(Self.height + 2 * 48, Self.width + 2 * 48))
        #expect(peak >= Self.frameBytes / 2 && peak < Self.frameBytes * 3 / 4,
                "peak \(peak) bytes, a frame is \(Self.frameBytes)")
    }

    /// A turned JPEG that cannot be read as planes (an odd side) is built upright in RGB:
    /// one frame, never two.
    @Test("a turned photo read as rows holds one RGB frame, never two", arguments: [6, 8])
    func turnedRowsHoldOneFrame(orientation: Int) throws {
        let width = Self.width - 1
        let (outputs, peak) = try finish(try Self.photo(orientation: orientation, width: width))
        let frame = width * Self.height * 3
        #expect(outputs.first?.size == .init(Self.height + 2 * 48, width + 2 * 48))
        #expect(peak >= frame && peak < frame * 5 / 4, "peak \(peak) bytes, a frame is \(frame)")
    }

    /// The planes made RGB upright are libjpeg's own RGB turned, byte for byte.
    @Test("planes turned upright are libjpeg's RGB turned", arguments: [3, 4, 5, 6, 7, 8])
    func planesMatchLibjpeg(orientation: Int) throws {
        let bytes = try Self.photo(orientation: orientation)
        let decoder = try #require(try openDecoder(bytes: bytes, limits: DecodeLimits()) as? JPEGDecoder)
        #expect(decoder.planarChromaRows == 2)
        let collector = Collected()
        let planes = UprightPlanes(storedWidth: Self.width, storedHeight: Self.height, lumaRowsPerChromaRow: 2,
                                   exif: orientation, into: collector)
        try decoder.decodePlanes(limits: DecodeLimits()) { planes.take($0) }
        planes.finish()
        let rgb = try Image(width: Self.width, height: Self.height, channels: 3) { rows in
            var y = 0
            try decoder.decode(eighths: 8, channels: 3, limits: DecodeLimits()) { row in
                rows[y].update(from: row, count: rows.rowBytes)
                y += 1
            }
        }
        let reference = Orientation.apply(rgb, exif: orientation)
        #expect(collector.rows == reference.height)
        var worst = 0, total = 0
        reference.withUnsafeRows { r in
            for y in 0..<r.height {
                for i in 0..<r.rowBytes {
                    let d = abs(Int(collector.pixels[y * r.rowBytes + i]) - Int(r[y][i]))
                    worst = max(worst, d)
                    total += d
                }
            }
        }
        #expect(worst == 0, "largest difference \(worst), mean \(Double(total) / Double(Self.frameBytes))")
    }

    /// The reference: the whole photo decoded, turned upright, marked and framed whole, then
    /// encoded, as the recipe did before outputs streamed.
    func wholeFrame(_ bytes: [UInt8], template: Template) throws -> Image {
        let decoder = try openDecoder(bytes: bytes, limits: DecodeLimits())
        var y = 0
        let stored = try Image(width: decoder.info.width, height: decoder.info.height, channels: 3) { rows in
            try decoder.decode(eighths: 8, channels: 3, limits: DecodeLimits()) { row in
                rows[y].update(from: row, count: rows.rowBytes)
                y += 1
            }
        }
        var canvas = Orientation.upright(stored.withUnsafeRows { $0 }, exif: decoder.info.orientation)
        _ = MarkPainter(template: template, assets: try Self.assets()).paint(&canvas, icc: nil)
        let border = Int((template.frame!.width * Double(min(canvas.width, canvas.height))).rounded())
        let framed = framed(canvas, border: border, color: [255, 255, 255]).finished()
        return try decodeRGB(try encodeImage(framed, options: EncodeOptions(format: .jpeg, quality: 88)))
    }

    @Test("streamed outputs are the whole-frame outputs, pixel for pixel within rounding", arguments: [1, 2, 3, 6, 7])
    func streamedEqualsWholeFrame(orientation: Int) throws {
        let bytes = try Self.photo(orientation: orientation)
        let template = Self.template()
        let (outputs, _) = try finish(bytes, template: template)
        let streamed = try decodeRGB(try #require(outputs.first).bytes)
        let reference = try wholeFrame(bytes, template: template)
        #expect(streamed.width == reference.width && streamed.height == reference.height)
        var worst = 0
        streamed.withUnsafeRows { a in
            reference.withUnsafeRows { b in
                for y in 0..<a.height {
                    for i in 0..<a.rowBytes { worst = max(worst, abs(Int(a[y][i]) - Int(b[y][i]))) }
                }
            }
        }
        #expect(worst <= 1, "largest difference \(worst)")
    }

    @Test("an output finished whole (maxBytes) is the streamed output, file for file")
    func wholeFrameOutputEqualsStreamed() throws {
        let bytes = try Self.photo(orientation: 6)
        let template = Self.template()
        var whole = template
        // Far above the file's size: never re-encoded, but finished whole.
        whole.output.maxBytes = 1 << 30
        #expect(OutputLine.WholeSteps(of: Layout.plan(stored: .init(Self.width, Self.height), orientation: 6,
                                                      template: template).outputs[0],
                                      template: template, assets: try Self.assets()).isEmpty)
        let (streamed, _) = try finish(bytes, template: template)
        let (finishedWhole, _) = try finish(bytes, template: whole)
        let a = try #require(streamed.first), b = try #require(finishedWhole.first)
        #expect(a.size == b.size)
        #expect(a.applied == b.applied)
        // Compared first, then expected: a failed `#expect(a == b)` on megabytes makes Swift
        // Testing diff the two arrays, which takes half an hour.
        let same = a.bytes == b.bytes
        #expect(same, "the two ways wrote different files (\(a.bytes.count) and \(b.bytes.count) bytes)")
    }

    /// Every output goes one way: a line that holds its output for a whole step (here
    /// `maxBytes`, far above the file's size: never encoded again) runs the same steps on it as
    /// one band of the whole height, and writes the file the streaming line writes — for the
    /// whole photo, a centred crop and a subject crop cut from its band after the decode,
    /// upright or turned.
    @Test("an output held for a whole step is the streamed output, file for file",
          arguments: [1, 6], [[], ["1:1"], ["4:5"]])
    func heldEqualsStreamed(orientation: Int, crops: [String]) throws {
        let bytes = try Self.photo(orientation: orientation, width: 1600, height: 1200)
        var template = Self.template()
        template.resize = .longSide(1000)
        template.crops = crops.map { Template.Crop(label: $0, width: Int($0.prefix(1))!, height: Int($0.suffix(1))!,
                                                   focus: $0 == "1:1" ? .center : .subject) }
        var held = template
        held.output.maxBytes = 1 << 30
        let streamed = try finish(bytes, template: template).outputs, whole = try finish(bytes, template: held).outputs
        #expect(streamed.count == 1 && whole.count == 1)
        for (a, b) in zip(streamed, whole) {
            #expect(a.size == b.size && a.applied == b.applied)
            let same = a.bytes == b.bytes  // see wholeFrameOutputEqualsStreamed
            #expect(same, "the two ways wrote different files (\(a.bytes.count) and \(b.bytes.count) bytes)")
        }
    }

    /// A whole step costs the output's frame once: the line keeps its bands once they are
    /// converted, and frames and encodes them band by band again (the whole-frame way held a
    /// framed copy besides). A photo stored turned is built upright first (`UprightRows`), then
    /// handed to the held copy band by band: two frames at most, as the stored and the upright
    /// frame were before.
    @Test("an output held for a whole step holds its frame once, a turned one twice at most", arguments: [1, 6])
    func heldHoldsItsFrame(orientation: Int) throws {
        var template = Self.template()
        template.output.maxBytes = 1 << 30
        // An odd side: a turned JPEG read as rows (planes are for a line that streams).
        let width = Self.width - 1
        let (outputs, peak) = try finish(try Self.photo(orientation: orientation, width: width), template: template)
        let frame = width * Self.height * 3
        #expect(outputs.first?.applied.quality == nil)
        let most = orientation == 1 ? frame * 5 / 4 : frame * 9 / 4
        #expect(peak >= frame && peak < most, "peak \(peak) bytes, a frame is \(frame)")
    }

    /// The preview is made in one place from whichever rows pass (`PhotoPlan.PreviewSource`):
    /// the whole photo's output as it streams or as it is held, the smallest band, or the
    /// decoder's rows. Each is the photo upright at the preview's size, with none of the marks.
    @Test("every source of the preview gives the photo, upright and unmarked", arguments: [
        ([String](), 0.0, PhotoPlan.PreviewSource.output(0, upright: true)),
        ([], 1.0, .output(0, upright: false)),
        (["4:5"], 0.0, .band(0)),
        (["1:1"], 0.0, .decode),
    ])
    func previewFromEverySource(crops: [String], sharpen: Double, source: PhotoPlan.PreviewSource) throws {
        // Smooth gradients: every way of shrinking them agrees within rounding.
        let stored = Image(width: 1600, height: 1200, channels: 3) { rows in
            for y in 0..<rows.height {
                for x in 0..<rows.width {
                    rows[y][x * 3] = UInt8(x * 255 / 1599)
                    rows[y][x * 3 + 1] = UInt8(y * 255 / 1199)
                    rows[y][x * 3 + 2] = UInt8((x + y) * 255 / 2798)
                }
            }
        }
        let bytes = try encodeImage(stored, options: EncodeOptions(format: .jpeg, quality: 95,
                                                                   exif: ExifBuilder(orientation: 6).bytes()))
        var template = Self.template()
        template.resize = .longSide(1000)
        template.output.sharpen = sharpen
        template.crops = crops.map { Template.Crop(label: $0, width: Int($0.prefix(1))!, height: Int($0.suffix(1))!,
                                                   focus: $0 == "1:1" ? .center : .subject) }
        let assets = try Self.assets()
        let plan = PhotoPlan(template: template, decoder: try openDecoder(bytes: bytes, limits: DecodeLimits()),
                             facts: PhotoFacts(), assets: assets)
        #expect(plan.preview == source)
        let preview = try #require(try PhotoFinisher(template: template, marks: assets)
            .finish(bytes: bytes, limits: DecodeLimits()).preview)
        #expect(preview.width == 360 && preview.height == 480)
        let reference = resized(Orientation.apply(try decodeRGB(bytes), exif: 6), width: 360, height: 480)
        var total = 0, worst = 0
        preview.withUnsafeRows { a in
            reference.withUnsafeRows { b in
                for y in 0..<a.height {
                    for i in 0..<a.rowBytes {
                        let d = abs(Int(a[y][i]) - Int(b[y][i]))
                        total += d
                        worst = max(worst, d)
                    }
                }
            }
        }
        // A mark (white text, a red logo, a tile) would be tens of levels off somewhere.
        #expect(worst <= 6, "largest difference \(worst), mean \(Double(total) / Double(360 * 480 * 3))")
    }

    /// The cost bounds a line held for a whole step too (its frame, and the turned frame
    /// handed to it).
    @Test("the memory budget counts what an output held whole holds", arguments: [1, 6])
    func costBoundsAHeldOutput(orientation: Int) throws {
        var template = Self.template()
        template.output.maxBytes = 1 << 30
        let bytes = try Self.photo(orientation: orientation, width: Self.width - 1)
        let cost = PhotoFinisher(template: template, marks: try Self.assets())
            .memoryCost(of: try openDecoder(bytes: bytes, limits: DecodeLimits()))
        let (_, peak) = try finish(bytes, template: template)
        #expect(cost >= peak, "cost \(cost) bytes, held \(peak)")
    }

    /// 8064×6048, the 48 MP of the bench's corpus: rows copied from a few textured ones, so the
    /// fixture is made fast; what the pipeline holds does not depend on the pixels.
    static func photo48() throws -> [UInt8] {
        let width = 8064, height = 6048
        let patterns = Image(width: width, height: 16, channels: 3) { rows in
            for y in 0..<rows.height {
                for x in 0..<rows.width {
                    rows[y][x * 3] = UInt8(truncatingIfNeeded: x &* 7 &+ y)
                    rows[y][x * 3 + 1] = UInt8(truncatingIfNeeded: y &* 29 &+ x / 5)
                    rows[y][x * 3 + 2] = UInt8(truncatingIfNeeded: (x ^ y) &* 3)
                }
            }
        }
        let stored = patterns.withUnsafeRows { source in
            Image(width: width, height: height, channels: 3) { rows in
                for y in 0..<height { rows[y].update(from: source[(y * 7) % 16], count: rows.rowBytes) }
            }
        }
        return try encodeImage(stored, options: EncodeOptions(format: .jpeg, quality: 85))
    }

    /// What a 48 MP photo at full resolution may hold at once: 12 MiB, a twelfth of its
    /// 146 MB frame (a band of 48 rows is 1.2 MB; the logo at 16 % of the short side 2.5 MB).
    static let streamingBound48 = 12 << 20

    @Test("a 48 MP photo at full resolution, upright, holds bands, never its frame")
    func upright48HoldsBands() throws {
        let bytes = try Self.photo48()
        var template = Self.template()
        template.tile = nil
        let (outputs, peak) = try finish(bytes, template: template)
        let frame = 8064 * 6048 * 3
        #expect(outputs.first?.size == .init(8064 + 2 * 121, 6048 + 2 * 121))
        #expect(peak < Self.streamingBound48, "peak \(peak) bytes, a frame is \(frame)")
    }

    /// The memory budget's cost of a photo (`memoryCost`, from the header) bounds what it
    /// really holds, and is what the new pipeline holds, not the frame: an upright photo at
    /// full resolution costs a few bands, a turned one its planes (half a frame).
    @Test("the memory budget counts what a photo really holds", arguments: [1, 6])
    func costBoundsWhatIsHeld(orientation: Int) throws {
        let bytes = try Self.photo(orientation: orientation)
        let finisher = PhotoFinisher(template: Self.template(), marks: try Self.assets())
        let cost = finisher.memoryCost(of: try openDecoder(bytes: bytes, limits: DecodeLimits()))
        let (_, peak) = try finish(bytes)
        #expect(cost >= peak, "cost \(cost) bytes, held \(peak)")
        if orientation == 1 {
            #expect(cost < Self.frameBytes / 3, "cost \(cost), a frame is \(Self.frameBytes)")
        } else {
            // Its JPEG planes: half a frame, and the bands on their way out.
            #expect(cost >= Self.frameBytes / 2 && cost < Self.frameBytes, "cost \(cost), a frame is \(Self.frameBytes)")
        }
    }

    @Test("two 48 MP photos at full resolution fit a budget that held one: the cost is bands, not the frame")
    func cost48() throws {
        let bytes = try Self.photo48()
        var template = Self.template()
        template.tile = nil
        let finisher = PhotoFinisher(template: template, marks: try Self.assets())
        let cost = finisher.memoryCost(of: try openDecoder(bytes: bytes, limits: DecodeLimits()))
        let frame = 8064 * 6048 * 3
        #expect(cost < 24 << 20, "cost \(cost) bytes; the budget counted \(8064 * 6048 * 4) before, the frame is \(frame)")
    }
}

/// The upright bands handed on, kept.
private final class Collected: BandSink {
    var pixels: [UInt8] = []
    var rows = 0

    func take(_ band: MutablePixelRows, top: Int) {
        for y in 0..<band.height { pixels += UnsafeBufferPointer(start: band[y], count: band.rowBytes) }
        rows = top + band.height
    }
}
