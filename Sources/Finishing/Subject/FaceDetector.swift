internal import CFaces
import Pixels

/// Faces in a photo, found by dlib's HOG frontal face detector (through `CFaces`): upright
/// faces looking at the camera or turned up to about 45 degrees, tilted a little, of any
/// skin tone; not profiles, backs of heads or animals. Made once per process (its filters are
/// compiled in: a third of a millisecond) and shared by every worker: the search reads the
/// detector and changes nothing.
public final class FaceDetector: Sendable {
    /// The one detector (made on first use), or why it could not be made.
    public static let shared = Result { () throws(FaceDetectionError) in try FaceDetector() }

    /// Owned here alone: freed in `deinit`, read (never changed) by `pf_faces_find`, which
    /// is safe from many threads at once.
    private nonisolated(unsafe) let detector: OpaquePointer

    /// The short side of the grey image searched. The detector's smallest face
    /// (`smallestFace`, about 70 px) is a tenth of it: 12 of the 12 test faces, where 560 px
    /// (an eighth) found 11, for 11–13 ms of CPU per 12 MP photo under load, within the 15 ms
    /// goal; a twentieth would take 1,400 px and 4 times the CPU (bench/RESULTS.md, "Faces").
    public static let searchShortSide = 720
    /// The search image's long side at most: a 4:3 or 3:2 photo is searched at 720 (960 or
    /// 1,080 long), a wider one smaller (16:9 at 1,120 × 630, a panorama at 1,120 long), so a
    /// wide photo costs no more than a 3:2 one (at 1,440 a 16:9 photo would be searched at
    /// 1,280 × 720, a third more pixels than a 4:3 one: about 17 ms, over the 15 ms goal).
    public static let searchLongSide = 1120

    /// The smallest face box found, in pixels of the searched image.
    public static var smallestFace: Int { Int(pf_faces_smallest()) }

    private init() throws(FaceDetectionError) {
        var message = [CChar](repeating: 0, count: 256)
        guard let made = pf_faces_new(&message, message.count) else {
            throw FaceDetectionError(message: "dlib's face detector could not be made: " + Self.text(message))
        }
        detector = made
    }

    deinit { pf_faces_free(detector) }

    /// The faces in `image`, strongest first.
    /// - Parameters:
    ///   - image: the upright photo, RGB or RGBA (alpha ignored), any size: it is resampled to
    ///     `shortSide` (enlarged when smaller) and made grey.
    ///   - shortSide: the search's short side (its long side at most in proportion to
    ///     `searchLongSide`): faces from a tenth of it up. Smaller is cheaper and finds only the
    ///     larger faces (the ones a photo's colour depends on: `harmonize` searches at 300).
    /// - Returns: each face's box as fractions of `image`, as the detector drew it (brows to
    ///   chin, ear to ear: grow it for hair before keeping it whole); none for an image too
    ///   small or plain to show one.
    /// - Throws: `FaceDetectionError` when dlib fails (out of memory).
    public func faces(in image: Image, shortSide: Int = searchShortSide) throws(FaceDetectionError) -> [FocusBox] {
        guard image.width >= 2, image.height >= 2 else { return [] }
        return try faces(inSearch: Self.searchImage(image, shortSide: shortSide))
    }

    /// The faces in a grey search image, as fractions of it.
    private func faces(inSearch search: (grey: [UInt8], width: Int, height: Int)) throws(FaceDetectionError)
        -> [FocusBox] {
        var found = [pf_face](repeating: pf_face(), count: 64)
        var message = [CChar](repeating: 0, count: 256)
        let count = search.grey.withUnsafeBufferPointer { pixels in
            pf_faces_find(detector, pixels.baseAddress, Int32(search.width), Int32(search.height), search.width,
                          &found, Int32(found.count), &message, message.count)
        }
        guard count >= 0 else { throw FaceDetectionError(message: Self.text(message)) }
        let w = Double(search.width), h = Double(search.height)
        return found.prefix(Int(min(count, Int32(found.count)))).map {
            FocusBox(x: Double($0.x) / w, y: Double($0.y) / h, width: Double($0.width) / w, height: Double($0.height) / h)
        }
    }

    /// The grey image `image` is searched as: resampled to `searchSize` and made grey.
    static func searchImage(_ image: Image, shortSide: Int = searchShortSide) -> (grey: [UInt8], width: Int, height: Int) {
        let size = Self.searchSize(width: image.width, height: image.height, shortSide: shortSide)
        return (Self.grey(resized(image, width: size.width, height: size.height)), size.width, size.height)
    }

    /// The most memory a search of a photo `width` × `height` upright holds at once (what
    /// `faces(inStored:)` holds beside the photo): up to four RGBA copies at the search size
    /// on the way to grey (shrunk, turned, flattened, resampled), the grey image, and the
    /// detector's copy, pyramid and features (`pf_faces_working_bytes`; measured with
    /// valgrind's massif at 2/3 of it: bench/RESULTS.md, "Faces").
    public static func workingBytes(width: Int, height: Int) -> Int {
        let size = searchSize(width: max(1, width), height: max(1, height))
        return 4 * 4 * size.width * size.height + size.width * size.height
            + Int(pf_faces_working_bytes(Int32(size.width), Int32(size.height)))
    }

    /// The faces in a whole photo as stored (a subject crop's band), as fractions of the
    /// upright photo.
    /// - Parameters:
    ///   - stored: the photo in stored orientation, RGB or RGBA (flattened over white).
    ///   - orientation: its EXIF orientation, turned upright before the search.
    /// - Throws: `FaceDetectionError` when dlib fails.
    public func faces(inStored stored: PixelRows, orientation: Int) throws(FaceDetectionError) -> [FocusBox] {
        guard stored.width >= 2, stored.height >= 2 else { return [] }
        return try faces(inSearch: Self.searchImage(stored: stored, orientation: orientation))
    }

    /// The grey image a photo as stored is searched as: resampled to `searchSize` in its
    /// stored orientation, flattened over white, made grey, and only then turned upright (a
    /// third of the bytes an RGB turn moves; the same pixels as turning first).
    static func searchImage(stored: PixelRows, orientation: Int) -> (grey: [UInt8], width: Int, height: Int) {
        let turned = Layout.swapsAxes(orientation)
        let upright = turned ? (width: stored.height, height: stored.width) : (width: stored.width, height: stored.height)
        let size = Self.searchSize(width: upright.width, height: upright.height)
        let small = flattened(resized(stored, width: turned ? size.height : size.width,
                                      height: turned ? size.width : size.height, shrinkFirst: true),
                              over: [255, 255, 255]).finished()
        let grey = Orientation.upright(grey: Self.grey(small), width: small.width, height: small.height, exif: orientation)
        return (grey, size.width, size.height)
    }

    /// The size an image of `width` × `height` is searched at: its short side `shortSide`
    /// (`searchShortSide` unless said), its long side at most `searchLongSide` (in proportion).
    static func searchSize(width: Int, height: Int, shortSide: Int = searchShortSide) -> (width: Int, height: Int) {
        let short = Double(min(width, height)), long = Double(max(width, height))
        let longest = Double(searchLongSide) * Double(shortSide) / Double(searchShortSide)
        let scale = min(Double(shortSide) / short, longest / long)
        return (max(1, Int((Double(width) * scale).rounded())), max(1, Int((Double(height) * scale).rounded())))
    }

    /// Rec. 601 luma of an RGB or RGBA image, row by row.
    static func grey(_ image: Image) -> [UInt8] {
        image.withUnsafeRows { rows in
            var grey = [UInt8](repeating: 0, count: rows.width * rows.height)
            let channels = rows.channels
            for y in 0..<rows.height {
                let row = rows[y]
                for x in 0..<rows.width {
                    let p = row + x * channels
                    let value = channels >= 3 ? (299 * Int(p[0]) + 587 * Int(p[1]) + 114 * Int(p[2]) + 500) / 1000 : Int(p[0])
                    grey[y * rows.width + x] = UInt8(value)
                }
            }
            return grey
        }
    }

    private static func text(_ message: [CChar]) -> String {
        String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The face detector failed (it could not be made, or ran out of memory): the photo is
/// finished all the same, its crops placed without faces, and the report warns.
public struct FaceDetectionError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
