import Foundation
internal import CHeif
import Pixels

/// Reads HEIF/HEIC and AVIF files with libheif (primary image only).
///
/// libheif applies the file's `irot`/`imir`/`clap` while decoding, so `info.width` and
/// `info.height` are the upright size and `info.orientation` is 1; `declaredOrientation`
/// repeats the EXIF Orientation tag when the file carries one (for the report only: it is
/// already applied by the container transforms, as phones write both).
public final class HEIFDecoder: PhotoDecoder {
    /// What the header says.
    public let info: SourceInfo
    /// libheif decodes at full size only.
    public let scales: [Int] = [8]

    private let context: HEIFContext
    private let handle: HEIFHandle
    /// The file ends before its image data (`damaged: warn`): libheif was given zeros for the
    /// rest, and every decode says so.
    private let truncation: Damage?
    /// The same file with 0xFF bytes where the data is missing, decoded once more to find where
    /// the picture stops being its own (`greyOut`); nil for a whole file.
    private let otherPadding: [UInt8]?

    /// What the last decode found damaged and went on past (`damaged: warn`).
    public private(set) var damage: Damage?

    /// Parses the container and the primary image's properties; no pixel is decoded.
    /// - Parameters:
    ///   - bytes: the whole file (libheif keeps its own copy).
    ///   - limits: `maxPixels` is checked against the primary image's size before decoding.
    /// - Throws: `PhotoError` `empty-file`, `too-large`, `corrupt-image` (libheif's message).
    public init(bytes: [UInt8], limits: DecodeLimits) throws(PhotoError) {
        guard !bytes.isEmpty else { throw PhotoError(.emptyFile, "the HEIF file is empty") }
        let boxes = HEIFBoxes(bytes)
        var bytes = bytes
        var other: [UInt8]?
        truncation = try boxes.cut.map { cut throws(PhotoError) in
            let damage = try limits.accept(Self.damage(cut, size: bytes.count))
            // libheif refuses data that lies past the end: it reads zeros there instead, and
            // decodes the picture as far as the data goes.
            guard cut.needed <= limits.maxFileBytes else {
                throw PhotoError(.corruptImage, damage.words + " (and the file claims \(cut.needed) bytes, over maxFileBytes)")
            }
            if cut.missingBytes > 0 { other = bytes + [UInt8](repeating: 0xFF, count: cut.needed - bytes.count) }
            bytes += [UInt8](repeating: 0, count: cut.needed - bytes.count)
            return damage
        }
        otherPadding = other
        let context = try HEIFContext()
        self.context = context
        // libheif refuses a side over its limit (32768 by default) while reading the
        // container: raise it to what maxPixels allows, so a wide panorama within the limit
        // reads, and a side over it is refused here (too-large) before any allocation.
        heif_context_set_maximum_image_size_limit(context.pointer, Int32(min(max(limits.maxPixels, 0), Int(Int32.max) - 1) + 1))
        let error = bytes.withUnsafeBytes { heif_context_read_from_memory(context.pointer, $0.baseAddress, $0.count, nil) }
        if error.subcode == heif_suberror_Security_limit_exceeded,
           let detail = error.message.map({ String(cString: $0) }), detail.lowercased().contains("image size") {
            throw PhotoError(.tooLarge, "HEIF header: \(detail.trimmingCharacters(in: .whitespacesAndNewlines)), "
                             + "over the limit of \(DecodeLimits.words(limits.maxPixels)) (maxPixels)")
        }
        try heifCheck(error, "HEIF container could not be read")
        // libheif decodes tiles (iPhone grids) on several threads.
        heif_context_set_max_decoding_threads(context.pointer, Int32(max(1, ProcessInfo.processInfo.activeProcessorCount)))
        var primary: OpaquePointer?
        try heifCheck(heif_context_get_primary_image_handle(context.pointer, &primary), "HEIF has no primary image")
        guard let primary else { throw PhotoError(.corruptImage, "HEIF has no primary image") }
        handle = HEIFHandle(primary)

        // The handle's size already has irot/clap applied: the size decode delivers.
        let width = Int(heif_image_handle_get_width(primary))
        let height = Int(heif_image_handle_get_height(primary))
        guard width > 0, height > 0 else {
            throw PhotoError(.corruptImage, "HEIF primary image has no size (\(width)×\(height))")
        }
        try HEIFDecoder.checkSize(width: width, height: height, format: "HEIF", what: "HEIF header", limits: limits)
        try HEIFDecoder.checkCanvas(boxes, limits: limits)
        let mime = bytes.withUnsafeBufferPointer { heif_get_file_mime_type($0.baseAddress, Int32(min($0.count, 4096))) }
        let format: ImageFormat = mime.map { String(cString: $0) } == "image/avif" ? .avif : .heic
        let exif = try HEIFDecoder.exif(primary)
        var info = SourceInfo(format: format, width: width, height: height, orientation: 1,
                              declaredOrientation: exif.flatMap { Exif.orientation($0) } ?? 1,
                              hasAlpha: heif_image_handle_has_alpha_channel(primary) != 0,
                              icc: try HEIFDecoder.icc(primary), exif: exif)
        info.xmp = try HEIFDecoder.xmp(primary)
        self.info = info
    }

    /// A file cut short, in words: where it ends and how much of the image data is missing.
    /// - Throws: `corrupt-image` when none of the image data is in the file.
    static func damage(_ cut: HEIFBoxes.Cut, size: Int) throws(PhotoError) -> Damage {
        var reason = "HEIF data ends early at byte \(size) of \(cut.needed)"
        if let tiles = cut.tiles {
            reason += " (\(tiles.missing) of its \(tiles.of) tiles lack data)"
        } else if cut.imageBytes > 0 && cut.missingBytes > 0 {
            let percent = max(1, Int((Double(cut.missingBytes) / Double(cut.imageBytes) * 100).rounded()))
            reason += " (\(percent) % of the image data is missing)"
        }
        guard cut.missingBytes < cut.imageBytes || cut.imageBytes == 0 else {
            throw PhotoError(.corruptImage, reason + ": none of the picture is in the file")
        }
        // Only what follows the picture is missing (metadata): the pixels are whole.
        return Damage(reason: reason, effect: cut.missingBytes == 0 ? .leftOut : .wrong, fromRow: nil, height: 0)
    }

    /// The most pixels a HEIF image may have here (2^28, 268 MP): libheif 1.15 computes plane
    /// offsets in 32-bit ints (up to 8 bytes a pixel), which wrap past it whatever maxPixels allows.
    static let largestImage = 1 << 28

    /// A size libheif is about to decode: within `limits` and within what libheif 1.15 addresses.
    /// - Parameters:
    ///   - format: how `limits` names the image in its errors.
    ///   - what: what said the size, for the error past libheif's limit.
    /// - Throws: `PhotoError` `too-large`.
    static func checkSize(width: Int, height: Int, format: String, what: String, limits: DecodeLimits) throws(PhotoError) {
        try limits.checkPixels(width: width, height: height, format: format)
        guard width * height <= largestImage else {
            throw PhotoError(.tooLarge, "\(what) says \(width)×\(height) = \(DecodeLimits.words(width * height)), "
                             + "over the \(DecodeLimits.words(largestImage)) libheif decodes safely")
        }
    }

    /// A grid or overlay decodes to the canvas its own data declares, while the size checked
    /// above is the primary image's `ispe`: the two must agree, up to a quarter turn, and its
    /// inputs must be coded images (HEIFBoxes says why).
    /// - Throws: `PhotoError` `too-large` (canvas over the limits), `corrupt-image` (canvas and
    ///   `ispe` disagree, or a derived image made of derived images).
    static func checkCanvas(_ boxes: HEIFBoxes, limits: DecodeLimits) throws(PhotoError) {
        if boxes.nestedDerivation {
            throw PhotoError(.corruptImage, "HEIF file has a grid or overlay made of other grids or overlays, or of itself: "
                             + "not a photo a camera writes, and libheif cannot decode it safely")
        }
        guard let canvas = boxes.derivedCanvas else { return }
        let kind = boxes.primaryType ?? "derived image"
        try checkSize(width: canvas.width, height: canvas.height, format: "HEIF \(kind)", what: "HEIF \(kind)", limits: limits)
        // libheif writes the `ispe` of a rotated grid turned (as shown), the grid as stored:
        // the sides may be swapped, the size may not differ.
        if let extent = boxes.primaryExtent, extent != canvas, extent != (canvas.height, canvas.width) {
            throw PhotoError(.corruptImage, "HEIF \(kind) says its canvas is \(canvas.width)×\(canvas.height), "
                             + "its image extent (ispe) says \(extent.width)×\(extent.height)")
        }
    }

    /// Decodes the primary image (transforms applied, HDR reduced to 8 bits), then hands
    /// out its rows. Asking 3 channels from an image with alpha composites it over white.
    /// A file cut short is damage (`DecodeLimits.accept`): under `damaged: warn` libheif decodes
    /// what is there, the part past the cut is grey (`greyOut`) and `damage` says where.
    /// - Parameters:
    ///   - eighths: must be 8 (full size).
    ///   - channels: 3 or 4.
    ///   - limits: the deadline is checked before decoding and between rows.
    ///   - row: receives `width * channels` bytes per row.
    /// - Throws: `PhotoError` `corrupt-image` (libheif's message), `timeout`, or what `row` throws.
    public func decode(eighths: Int, channels: Int, limits: DecodeLimits,
                       row: (UnsafePointer<UInt8>) throws -> Void) throws {
        precondition(eighths == 8, "HEIF decodes at full size only")
        precondition(channels == 3 || channels == 4, "channels must be 3 or 4")
        try limits.checkDeadline()
        let rgba = channels == 4 || info.hasAlpha
        damage = nil
        let truncated = try truncation.map(limits.accept)
        let image = try Self.decodePrimary(handle, rgba: rgba, failing: truncated)
        var stride: Int32 = 0
        guard let plane = heif_image_get_plane(image.pointer, heif_channel_interleaved, &stride) else {
            throw PhotoError(.corruptImage, "HEIF decoder returned no pixels")
        }
        let width = Int(heif_image_get_width(image.pointer, heif_channel_interleaved))
        let height = Int(heif_image_get_height(image.pointer, heif_channel_interleaved))
        guard width == info.width, height == info.height else {
            throw PhotoError(.corruptImage, "HEIF decoded to \(width)×\(height), header said \(info.width)×\(info.height)")
        }
        if let truncated, let otherPadding {
            damage = try Self.greyOut(truncated, in: plane, stride: Int(stride), width: width, height: height, rgba: rgba,
                                      comparedWith: otherPadding)
        } else {
            damage = truncated
        }
        try handOutRows(plane, stride: Int(stride), width: width, height: height, rgba: rgba,
                        channels: channels, limits: limits, row: row)
    }

    /// The primary image's first thumbnail (an iPhone's 240 × 320), decoded as opaque RGB with
    /// its transforms applied (upright, like the primary), or nil when the file has none or it
    /// does not decode. A look at the photo for what needs no detail (its light: `harmonize`).
    public func thumbnail() -> Image? {
        var id: heif_item_id = 0
        guard heif_image_handle_get_list_of_thumbnail_IDs(handle.pointer, &id, 1) > 0 else { return nil }
        var small: OpaquePointer?
        guard heif_image_handle_get_thumbnail(handle.pointer, id, &small).code == heif_error_Ok, let small else { return nil }
        let thumbnail = HEIFHandle(small)
        guard let image = try? Self.decodePrimary(thumbnail, rgba: false, failing: nil) else { return nil }
        var stride: Int32 = 0
        guard let plane = heif_image_get_plane_readonly(image.pointer, heif_channel_interleaved, &stride) else { return nil }
        let width = Int(heif_image_get_width(image.pointer, heif_channel_interleaved))
        let height = Int(heif_image_get_height(image.pointer, heif_channel_interleaved))
        guard width > 0, height > 0 else { return nil }
        var canvas = Canvas(width: width, height: height, channels: 3)
        canvas.withUnsafeMutableRows { rows in
            for y in 0..<height { rows[y].update(from: plane + y * Int(stride), count: rows.rowBytes) }
        }
        return canvas.finished()
    }

    /// Decodes a primary image (transforms applied, HDR reduced to 8 bits) as interleaved RGB(A).
    /// - Parameter failing: the file's damage, for the words when libheif cannot decode it.
    private static func decodePrimary(_ handle: HEIFHandle, rgba: Bool, failing: Damage?) throws(PhotoError) -> HEIFImage {
        guard let options = heif_decoding_options_alloc() else {
            throw PhotoError(.ioError, "libheif: out of memory for decoding options")
        }
        defer { heif_decoding_options_free(options) }
        options.pointee.convert_hdr_to_8bit = 1
        var decoded: OpaquePointer?
        try heifCheck(heif_decode_image(handle.pointer, &decoded, heif_colorspace_RGB,
                                        rgba ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB, options),
                      failing.map { "\($0.reason): libheif cannot decode what is left" } ?? "HEIF image could not be decoded")
        guard let decoded else { throw PhotoError(.corruptImage, "HEIF image could not be decoded") }
        return HEIFImage(decoded)
    }

    /// Where a file cut short stops being its own picture: the pixels decoded from the data
    /// are the same whatever stands in for the missing bytes, the rest is the decoder's
    /// guesswork. So the file is decoded a second time with 0xFF for the missing bytes (the
    /// first had zeros); the band around where the two differ (`band`) — the bottom rows, or
    /// a side when the picture is turned — is made grey, and the damage says which.
    /// - Parameter other: the file with 0xFF bytes where the data is missing.
    /// - Returns: the damage with its extent; unchanged when nothing of the picture differs.
    private static func greyOut(_ damage: Damage, in plane: UnsafeMutablePointer<UInt8>, stride: Int, width: Int,
                                height: Int, rgba: Bool, comparedWith other: [UInt8]) throws(PhotoError) -> Damage {
        let context = try HEIFContext()
        try heifCheck(other.withUnsafeBytes { heif_context_read_from_memory(context.pointer, $0.baseAddress, $0.count, nil) },
                      "HEIF container could not be read")
        var primary: OpaquePointer?
        try heifCheck(heif_context_get_primary_image_handle(context.pointer, &primary), "HEIF has no primary image")
        guard let primary else { throw PhotoError(.corruptImage, "HEIF has no primary image") }
        let image = try decodePrimary(HEIFHandle(primary), rgba: rgba, failing: damage)
        var otherStride: Int32 = 0
        guard let otherPlane = heif_image_get_plane_readonly(image.pointer, heif_channel_interleaved, &otherStride),
              heif_image_get_width(image.pointer, heif_channel_interleaved) == width,
              heif_image_get_height(image.pointer, heif_channel_interleaved) == height else { return damage }
        let pixel = rgba ? 4 : 3
        // The box around every pixel that differs.
        var top = height, bottom = -1, left = width, right = -1
        for y in 0..<height {
            let a = plane + y * stride, b = otherPlane + y * Int(otherStride)
            guard memcmp(a, b, width * pixel) != 0 else { continue }
            top = min(top, y)
            bottom = y
            for x in 0..<width where memcmp(a + x * pixel, b + x * pixel, pixel) != 0 {
                left = min(left, x)
                right = max(right, x)
            }
        }
        guard bottom >= 0 else { return damage }
        let band = Self.band(around: (top, bottom, left, right), width: width, height: height)
        // Grey where the picture is the decoder's guess (opaque: a transparent hole would hide it).
        let grey: [UInt8] = rgba ? [128, 128, 128, 255] : [128, 128, 128]
        for y in band.rows {
            for x in band.columns { (plane + y * stride + x * pixel).update(from: grey, count: pixel) }
        }
        let (from, lines, orientation) = band.side
        return Damage(reason: damage.reason, effect: .missing, fromRow: from, height: lines, orientation: orientation)
    }

    /// What of a picture a file cut short leaves to guesswork, from the box around the pixels
    /// two decodes disagree on: HEVC and AV1 decode blocks in rows, so past the cut everything
    /// is guesswork — a band along the side the stored bottom is turned to. Some guessed
    /// pixels come out the same in both decodes, whatever the threads (measured with libheif
    /// 1.15 and libde265: a 128×96 photo cut at 70 %, its bottom-right 64×32 block alike in up
    /// to 8 of 40 decodes under load), so the box may fall short of that band:
    /// the band is the smallest one along a side the box reaches that holds it all.
    /// - Returns: the rows and columns to grey, and how the damage names them: the first line
    ///   affected counted from the far side, the lines across, and the orientation that
    ///   brings the stored bottom to that side; nil for the first when the box reaches no side.
    static func band(around box: (top: Int, bottom: Int, left: Int, right: Int), width: Int, height: Int)
        -> (rows: ClosedRange<Int>, columns: ClosedRange<Int>, side: (from: Int?, lines: Int, orientation: Int)) {
        let (top, bottom, left, right) = box
        // Each side the box reaches, as (area, rows, columns, side); the first of equals wins.
        var bands: [(Int, ClosedRange<Int>, ClosedRange<Int>, (Int?, Int, Int))] = []
        if bottom == height - 1 { bands.append(((height - top) * width, top...bottom, 0...(width - 1), (top, height, 1))) }
        if top == 0 { bands.append(((bottom + 1) * width, 0...bottom, 0...(width - 1), (height - 1 - bottom, height, 3))) }
        if right == width - 1 { bands.append(((width - left) * height, 0...(height - 1), left...right, (left, width, 8))) }
        if left == 0 { bands.append(((right + 1) * height, 0...(height - 1), 0...right, (width - 1 - right, width, 6))) }
        guard let smallest = bands.min(by: { $0.0 < $1.0 }) else { return (top...bottom, left...right, (nil, height, 1)) }
        return (smallest.1, smallest.2, smallest.3)
    }

    /// The EXIF block from the TIFF header on: libheif's block starts with a 4-byte
    /// big-endian offset to the TIFF header, which is skipped here.
    private static func exif(_ handle: OpaquePointer) throws(PhotoError) -> [UInt8]? {
        var id: heif_item_id = 0
        guard heif_image_handle_get_list_of_metadata_block_IDs(handle, "Exif", &id, 1) > 0 else { return nil }
        let size = heif_image_handle_get_metadata_size(handle, id)
        guard size > 4 else { return nil }
        var block = [UInt8](repeating: 0, count: size)
        try heifCheck(block.withUnsafeMutableBytes { heif_image_handle_get_metadata(handle, id, $0.baseAddress) },
                      "HEIF EXIF block could not be read")
        let offset = Int(block[0]) << 24 | Int(block[1]) << 16 | Int(block[2]) << 8 | Int(block[3])
        guard 4 + offset < size else { return nil }
        return Array(block[(4 + offset)...])
    }

    /// The XMP packet: the `mime` metadata item of type `application/rdf+xml`.
    private static func xmp(_ handle: OpaquePointer) throws(PhotoError) -> [UInt8]? {
        let count = Int(heif_image_handle_get_number_of_metadata_blocks(handle, "mime"))
        guard count > 0 else { return nil }
        var ids = [heif_item_id](repeating: 0, count: count)
        let got = Int(heif_image_handle_get_list_of_metadata_block_IDs(handle, "mime", &ids, Int32(count)))
        for id in ids.prefix(got) {
            guard let type = heif_image_handle_get_metadata_content_type(handle, id),
                  String(cString: type) == "application/rdf+xml" else { continue }
            let size = heif_image_handle_get_metadata_size(handle, id)
            guard size > 0 else { continue }
            var packet = [UInt8](repeating: 0, count: size)
            try heifCheck(packet.withUnsafeMutableBytes { heif_image_handle_get_metadata(handle, id, $0.baseAddress) },
                          "HEIF XMP item could not be read")
            return packet
        }
        return nil
    }

    /// The raw ICC profile (`prof` or `rICC`); nil for nclx-only files.
    private static func icc(_ handle: OpaquePointer) throws(PhotoError) -> [UInt8]? {
        let type = heif_image_handle_get_color_profile_type(handle)
        guard type == heif_color_profile_type_prof || type == heif_color_profile_type_rICC else { return nil }
        let size = heif_image_handle_get_raw_color_profile_size(handle)
        guard size > 0 else { return nil }
        var profile = [UInt8](repeating: 0, count: size)
        try heifCheck(profile.withUnsafeMutableBytes { heif_image_handle_get_raw_color_profile(handle, $0.baseAddress) },
                      "HEIF colour profile could not be read")
        return profile
    }
}
