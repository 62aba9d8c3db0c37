import Codecs
import Pixels

/// Draws a finished canvas's marks (text, logo, tile) in place: see `WholeSetMarks`.
public typealias CanvasMarks = @Sendable (inout Canvas) throws(PhotoError) -> Void

/// What stopped a stitch: a photo (0-based, in the plan's list) that could not be read or
/// decoded, or the marks (`photo` nil), and why.
public struct StitchError: Error, Sendable {
    public var photo: Int?
    public var error: PhotoError
    public init(photo: Int?, error: PhotoError) { self.photo = photo; self.error = error }
}

/// Renders the parts of a `StitchPlan` (reference: Stitch). Each part's canvas is allocated
/// once; each photo is decoded at the size it appears (DCT scaling, streaming resampler),
/// turned upright, placed, and freed before the next, so memory is the canvas plus one
/// small photo.
public struct Stitcher: Sendable {
    public var stitch: Template.Stitch
    /// JPEG quality of the parts (the template's `output.quality`).
    public var quality: Int
    /// Marks for each part when `stitch.marks` is on (nil: none to draw).
    public var marks: CanvasMarks?

    public init(stitch: Template.Stitch, quality: Int, marks: CanvasMarks? = nil) {
        self.stitch = stitch
        self.quality = quality
        self.marks = marks
    }

    /// The file name of part `number` (1-based) of `count`: `<batch-id>-story-1-of-3.jpg`.
    public static func fileName(batch: String, part number: Int, of count: Int) -> String {
        "\(batch)-story-\(number)-of-\(count).jpg"
    }

    /// Paints one part.
    /// - Parameters:
    ///   - part: the part's placements.
    ///   - width: the plan's canvas width.
    ///   - read: the bytes of photo `i` (the plan's numbering).
    ///   - limits: decode limits for every photo.
    /// - Throws: `StitchError` naming the photo that could not be read or decoded.
    public func render(_ part: StitchPlan.Part, width: Int, read: (Int) throws(PhotoError) -> [UInt8],
                       limits: DecodeLimits) throws(StitchError) -> Image {
        let bg = stitch.background
        let background = [bg.r, bg.g, bg.b]
        var canvas = Canvas(width: width, height: part.height, channels: 3, fill: background)
        for placement in part.placements {
            do throws(PhotoError) {
                let bytes = try read(placement.photo)
                let r = placement.rect
                let photo = try UprightDecode.decode(bytes: bytes, size: .init(r.width, r.height),
                                                     background: background, limits: limits).image
                Self.place(photo, on: &canvas, at: r)
            } catch {
                throw StitchError(photo: placement.photo, error: error)
            }
        }
        if stitch.marks, let marks {
            do throws(PhotoError) { try marks(&canvas) } catch { throw StitchError(photo: nil, error: error) }
        }
        return canvas.finished()
    }

    /// Encodes a part: JPEG, sRGB profile embedded, no EXIF (a story is no single camera's).
    /// - Throws: `PhotoError` when the encoder refuses.
    public func encode(_ canvas: Image) throws(PhotoError) -> [UInt8] {
        try encodeImage(canvas, options: EncodeOptions(format: .jpeg, quality: quality, icc: ICC.sRGB, exif: nil))
    }

    /// Copies `photo` (RGB, exactly `rect`'s size) onto `canvas` at `rect`.
    static func place(_ photo: Image, on canvas: inout Canvas, at rect: PixelRect) {
        precondition(photo.channels == 3 && canvas.channels == 3, "stitch works in RGB")
        precondition(photo.width == rect.width && photo.height == rect.height, "photo \(photo.width)×\(photo.height) ≠ \(rect)")
        precondition(rect.x >= 0 && rect.y >= 0 && rect.x + rect.width <= canvas.width
                     && rect.y + rect.height <= canvas.height, "\(rect) outside the canvas")
        photo.withUnsafeRows { source in
            canvas.withUnsafeMutableRows { out in
                for y in 0..<rect.height { (out[rect.y + y] + rect.x * 3).update(from: source[y], count: source.rowBytes) }
            }
        }
    }
}
