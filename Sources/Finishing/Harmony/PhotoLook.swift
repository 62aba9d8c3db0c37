import Codecs
import Pixels

/// A photo's light, measured before it is finished (reference: `harmonize`): the batch must know
/// every photo's light to fix its reference before it corrects any. The look is the cheapest
/// faithful small picture of the photo — the thumbnail the camera or phone embedded (EXIF's, or
/// a HEIF's thumbnail image) when its shape is the photo's, else a decode at the smallest scale
/// the format offers (a JPEG at 1/8) — with the larger faces found on it, their skin left out of
/// the white point.
public enum PhotoLook {
    /// What one look found.
    public struct Look: Sendable {
        /// The photo's light as it came.
        public var light: LightEstimate
        /// The faces found, as fractions of the upright photo (their skin says nothing of the
        /// light's colour).
        public var faces: [FocusBox]
        /// What was looked at: "preview" (the photo's own decode, held: `HeldPhoto`),
        /// "thumbnail" or "decode 1/8".
        public var source: String
    }

    /// An embedded thumbnail is used from this long side up (most cameras write 160 × 120).
    static let smallestThumbnail = 120
    /// An embedded thumbnail's shape may differ from the photo's by this much (cameras that pad
    /// a 3:2 photo's 4:3 thumbnail with black bands are refused: the bands are not the photo).
    static let shapeTolerance = 0.04
    /// The face search on a look: short side 300, faces from about a quarter of the photo's
    /// short side — the faces large enough to move a photo's colour statistics (about 3 ms).
    static let faceSearch = 300
    /// A face the search finds is at least its smallest box (about 70 px of the 300: 4 % of a
    /// 4:3 look, 3.6 % of a 3:2 one), a third of it skin or more. A look with fewer of its pixels
    /// skin-coloured (`LightEstimate.skinColouredShare`) has no such face, and is not searched:
    /// a street at dusk, a blue pool, a purple flower bed keep their 3 ms.
    public static let skinForAFace = 0.01

    /// Looks at a photo.
    /// - Parameters:
    ///   - bytes: the whole file.
    ///   - limits: `maxPixels` and the deadline, as for finishing it.
    /// - Returns: the photo's light, its faces, and what was looked at.
    /// - Throws: `PhotoError` with the report's code, when the file cannot be read.
    public static func take(bytes: [UInt8], limits: DecodeLimits) throws(PhotoError) -> Look {
        let decoder = try openDecoder(bytes: bytes, limits: limits)
        let orientation = PhotoFinisher.orientationToApply(decoder.info)
        let (image, source) = try picture(decoder, orientation: orientation, limits: limits)
        let faces = faces(in: image)
        return Look(light: measure(image, faces: faces), faces: faces, source: source)
    }

    /// Looks at the preview of a photo decoded to be finished (`HeldPhoto`): no decode of its own.
    public static func take(preview: Image) -> Look {
        let faces = faces(in: preview)
        return Look(light: measure(preview, faces: faces), faces: faces, source: "preview")
    }

    /// The larger faces on a look (`faceSearch`), strongest first; none without skin-coloured
    /// pixels enough for one (`skinForAFace`), or when the detector fails (the white point is
    /// then measured on every pixel, skin too).
    public static func faces(in image: Image) -> [FocusBox] {
        guard image.withUnsafeRows({ LightEstimate.skinColouredShare($0) }) >= skinForAFace else { return [] }
        return (try? FaceDetector.shared.get().faces(in: image, shortSide: faceSearch)) ?? []
    }

    /// The light of an upright picture of a photo, the skin of `faces` left out of its white.
    public static func measure(_ image: Image, faces: [FocusBox]) -> LightEstimate {
        let skin = faces.map { skinBox($0).pixels(width: image.width, height: image.height) }
        return image.withUnsafeRows { LightEstimate.measure($0, excluding: skin) }
    }

    /// A face box grown to the skin around it: the detector's box runs from the brows to the
    /// chin, ear to ear; the forehead and the neck are skin too.
    static func skinBox(_ face: FocusBox) -> FocusBox {
        let x = max(0, face.x - 0.15 * face.width), y = max(0, face.y - 0.25 * face.height)
        return FocusBox(x: x, y: y, width: min(1, face.x + 1.15 * face.width) - x,
                        height: min(1, face.y + 1.25 * face.height) - y)
    }

    /// The small upright picture looked at, and what it is.
    static func picture(_ decoder: any PhotoDecoder, orientation: Int,
                        limits: DecodeLimits) throws(PhotoError) -> (Image, String) {
        let info = decoder.info
        if let thumbnail = embedded(decoder, orientation: orientation) { return (thumbnail, "thumbnail") }
        let stored = OutputPlan.Size(info.width, info.height)
        let plan = PhotoFinisher.previewPlan(stored: stored, orientation: orientation)
        let (scale, resizers) = try PhotoFinisher.resample(decoder, into: [plan], limits: limits)
        return (Orientation.apply(resizers[0].finish(), exif: orientation).finished(), "decode \(scale.label)")
    }

    /// The embedded thumbnail, upright, when there is one of the photo's shape.
    static func embedded(_ decoder: any PhotoDecoder, orientation: Int) -> Image? {
        let info = decoder.info
        var picture: Image?
        if let heif = decoder as? HEIFDecoder {
            picture = heif.thumbnail()  // upright already, like the primary image
        } else if let exif = info.exif, let jpeg = Exif.thumbnail(exif) {
            picture = decodeWhole(jpeg).map { Orientation.apply($0, exif: orientation) }
        }
        guard let picture, max(picture.width, picture.height) >= smallestThumbnail else { return nil }
        let upright = Layout.swapsAxes(orientation) ? (info.height, info.width) : (info.width, info.height)
        let want = Double(upright.0) / Double(upright.1), have = Double(picture.width) / Double(picture.height)
        return abs(have - want) <= shapeTolerance * want ? picture : nil
    }

    /// A small JPEG decoded whole as RGB, or nil when it does not decode (the look falls back
    /// to the photo itself, so why does not matter here).
    static func decodeWhole(_ jpeg: [UInt8]) -> Image? {
        guard let decoder = try? JPEGDecoder(bytes: jpeg, limits: DecodeLimits(maxPixels: 1 << 20)) else { return nil }
        let width = decoder.info.width, height = decoder.info.height
        var canvas = Canvas(width: width, height: height, channels: 3)
        var y = 0
        let whole: Bool = canvas.withUnsafeMutableRows { rows in
            do {
                try decoder.decode(eighths: 8, channels: 3, limits: DecodeLimits(maxPixels: 1 << 20)) { row in
                    guard y < height else { return }
                    rows[y].update(from: row, count: rows.rowBytes)
                    y += 1
                }
                return y == height
            } catch {
                return false
            }
        }
        return whole ? canvas.finished() : nil
    }
}
