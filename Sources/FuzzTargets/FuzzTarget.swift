import Codecs
import Configuration
import Finishing
import Foundation
import JSON5
import Pixels

/// The fuzz targets (`scripts/fuzz`): each takes any bytes and must end either normally or
/// with the product's own error for bad input (`PhotoError` for photos, `JSON5Errors`
/// for templates and configs). A trap, a crash, a hang or a sanitizer report is a finding;
/// so is a broken promise a target checks (a decoder that reports success but delivered
/// fewer rows than its header said).
///
/// The same code runs under libFuzzer (`photofinish-fuzz` built with
/// `--sanitize=fuzzer,address`), in the replay tool (the plain build of `photofinish-fuzz`)
/// and in the test suite, which replays every checked-in seed and every crash file found.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// `JPEGDecoder`: header (size, EXIF, ICC), then rows at one of its scales, 1/8 to 8/8.
    case jpeg
    /// `PNGDecoder`: header, `iCCP`, `eXIf` before or after the data, rows.
    case png
    /// `HEIFDecoder` (HEIC and AVIF): container, primary image, EXIF and ICC, rows.
    case heif
    /// `WebPDecoder` (libwebp's demuxer and decoder): chunks, EXIF, ICC, XMP, rows.
    case webp
    /// Sniffing by content, the TIFF walk behind it, EXIF reading and rewriting, ICC
    /// profile names and colour transforms, XMP packets (exempi) with their MWG regions,
    /// IPTC IIM and Photoshop blocks.
    case metadata
    /// One photo's whole recipe (`PhotoFinisher.finish`): sniff, decode at the planned
    /// scale, crops, resize, orientation, colour, text mark, frame, EXIF rewrite, encode.
    case finish
    /// Templates and configs from text (`TemplateLoader.parse`, `Config.parse`), errors
    /// and all.
    case template

    /// The limits every photo target decodes under: the config's defaults (150 MP, 512 MiB),
    /// with an item deadline so a slow input ends as `timeout`, as in the daemon (2 s rather
    /// than the daemon's 120 s, so the fuzzer moves on; libFuzzer's own -timeout, 30 s in
    /// scripts/fuzz, catches work the deadline does not stop).
    static func limits() -> DecodeLimits {
        DecodeLimits(deadline: .now + .seconds(2))
    }

    /// Runs one input through the target.
    public func run(_ bytes: [UInt8]) {
        switch self {
        case .jpeg: Self.decode(bytes) { bytes, limits throws(PhotoError) in try JPEGDecoder(bytes: bytes, limits: limits) }
        case .png: Self.decode(bytes) { bytes, limits throws(PhotoError) in try PNGDecoder(bytes: bytes, limits: limits) }
        case .heif: Self.decode(bytes) { bytes, limits throws(PhotoError) in try HEIFDecoder(bytes: bytes, limits: limits) }
        case .webp: Self.decode(bytes) { bytes, limits throws(PhotoError) in try WebPDecoder(bytes: bytes, limits: limits) }
        case .metadata: Self.metadata(bytes)
        case .finish: Self.finish(bytes)
        case .template: Self.template(bytes)
        }
    }

    /// Opens a decoder and decodes every row at one scale and channel count, chosen from
    /// the input's length so the fuzzer reaches every combination.
    static func decode(_ bytes: [UInt8], open: ([UInt8], DecodeLimits) throws(PhotoError) -> any PhotoDecoder) {
        let limits = limits()
        do throws(PhotoError) {
            let decoder = try open(bytes, limits)
            let info = decoder.info
            check(info.width > 0 && info.height > 0, "opened with an empty size \(info.width)×\(info.height)")
            check(DecodeLimits.byteCount(width: info.width, height: info.height, channels: 1).map { $0 <= limits.maxPixels } ?? false,
                  "opened \(info.width)×\(info.height), over maxPixels")
            _ = info.exif.map(Exif.summary)
            _ = info.icc.map(ICC.description)
            let scales = decoder.scales
            let eighths = scales[bytes.count % scales.count]
            let channels = (bytes.count / scales.count) % 2 == 0 ? 3 : 4
            let size = decoder.scaledSize(eighths: eighths)
            var rows = 0
            var sum: UInt8 = 0
            let last = size.width * channels - 1
            do {
                try decoder.decode(eighths: eighths, channels: channels, limits: limits) { row in
                    // Touch both ends of the row: a short buffer shows up under the address
                    // sanitizer (the whole row would cost more than the decode at -Onone).
                    sum &+= row[0] &+ row[last]
                    rows += 1
                }
            } catch let error as PhotoError {
                throw error
            } catch {
                check(false, "decode threw \(error), not a PhotoError")
            }
            check(rows == size.height, "decoded \(rows) rows of \(size.height) without an error (sum \(sum))")
        } catch {
            _ = error.description
        }
    }

    /// Sniff, EXIF and ICC on the same bytes: each reads what it can and never traps.
    static func metadata(_ bytes: [UInt8]) {
        _ = sniff(bytes).error?.description
        let summary = Exif.summary(bytes)
        if let orientation = summary.orientation { check((1...8).contains(orientation), "orientation \(orientation)") }
        _ = Exif.orientation(bytes)
        let width = 1 + bytes.count % 5000, height = 1 + bytes.count % 3000
        // Texts written over what is kept on odd lengths: the in-place edit's appended IFD0.
        let edits = bytes.count % 2 == 1 ? Exif.Edits(artist: "Zoë", copyright: "© 2026", description: String(repeating: "x", count: bytes.count % 97)) : Exif.Edits()
        for policy in MetadataPolicy.allCases {
            let (rewritten, _) = Exif.rewrite(bytes, policy: policy, width: width, height: height, edits: edits)
            // A rewritten block is read back: what the outputs carry must be readable.
            if let rewritten {
                check(Exif.orientation(rewritten) == nil || Exif.orientation(rewritten) == 1,
                      "a rewritten block keeps orientation \(Exif.orientation(rewritten) ?? 0)")
            }
        }
        _ = ICC.description(bytes)
        _ = ICC.isSRGB(bytes)
        if let packet = XMPPacket(bytes) {
            // A packet read is written and read again: what the outputs carry must parse.
            if let regions = packet.regions {
                for orientation in [1, 6] { _ = regions.upright(stored: (width, height), orientation: orientation) }
            }
            check(XMPPacket(packet.serialized()) != nil, "a serialized packet does not parse again")
        }
        if let iptc = IPTC(iim: bytes) {
            check(IPTC(iim: iptc.iim()) != nil, "written IIM does not parse again")
            _ = IPTC.iim(fromPhotoshop: iptc.photoshopBlock())
        }
        _ = IPTC.iim(fromPhotoshop: bytes).flatMap { IPTC(iim: $0) }
        if let transform = ColorTransform.toSRGB(from: bytes, channels: 3 + bytes.count % 2) {
            var canvas = Canvas(width: 7, height: 3, channels: transform.channels, fill: .init(repeating: 200, count: transform.channels))
            transform.apply(to: &canvas)
        }
    }

    /// The template the `finish` target applies: every step of the recipe at small sizes.
    static let finisher: PhotoFinisher = {
        let text = """
        {
          version: 1,
          resize: { longSide: 96 },
          crops: ["1:1", { ratio: "16:9", skipIfCutOver: 0.9 }, "1:3"],
          frame: { width: 0.04, color: "#203040" },
          text: { text: "© Fuzz {stem}", capHeight: 0.08, position: "bottom-right",
                  shadow: { opacity: 0.4, blur: 0.01, offset: 0.005 } },
          tile: { text: "PROOF", size: 0.1, opacity: 0.3 },
          output: { format: "png", metadata: "keep", color: "srgb" },
        }
        """
        do {
            return PhotoFinisher(template: try TemplateLoader.parse(text: text, file: "fuzz.json5", name: "fuzz", directory: "/"))
        } catch {
            preconditionFailure("the fuzz template does not load: \(error)")
        }
    }()

    /// The same photo at full resolution, one output: the ways a whole photo streams (rows,
    /// or a turned JPEG's YCbCr planes).
    static let fullResolution: PhotoFinisher = {
        let text = """
        {
          version: 1,
          frame: { width: 0.04, color: "#203040" },
          text: { text: "© Fuzz", capHeight: 0.08, position: "bottom-right" },
          output: { format: "jpeg", quality: 80, metadata: "strip-all" },
        }
        """
        do {
            return PhotoFinisher(template: try TemplateLoader.parse(text: text, file: "full.json5", name: "full", directory: "/"))
        } catch {
            preconditionFailure("the full-resolution fuzz template does not load: \(error)")
        }
    }()

    /// One photo through the whole recipe, then at full resolution.
    static func finish(_ bytes: [UInt8]) {
        // At full resolution, only what decodes fast: a header may declare anything.
        var small = limits()
        small.maxPixels = 1 << 22
        for (recipe, limits) in [(finisher, limits()), (fullResolution, small)] {
            do throws(PhotoError) {
                let finished = try recipe.finish(bytes: bytes, limits: limits)
                for output in finished.outputs {
                    check(!output.bytes.isEmpty, "an empty output (crop \(output.cropLabel ?? "none"))")
                }
            } catch {
                _ = error.description
            }
        }
    }

    /// Template and config text: valid or a list of errors naming file, line and key.
    static func template(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        do throws(JSON5Errors) {
            _ = try TemplateLoader.parse(text: text, file: "fuzz.json5", name: "fuzz", directory: "/nonexistent")
        } catch {
            check(!error.errors.isEmpty, "a template refused with no error")
            _ = error.description
        }
        do throws(JSON5Errors) {
            _ = try Config.parse(text: text, file: "fuzz.json5")
        } catch {
            check(!error.errors.isEmpty, "a config refused with no error")
            _ = error.description
        }
    }

    /// A promise a target keeps for every input; broken, it stops the process (a finding).
    static func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
        if !condition() { fatalError("fuzz target broke a promise: \(message())") }
    }
}
