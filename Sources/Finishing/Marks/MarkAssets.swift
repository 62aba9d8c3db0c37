import Codecs
import Foundation
import Pixels
import QR
import System
import Synchronization
import Typesetting

/// What the template's marks need before any photo: the fonts (found and opened once) and
/// the logo (read and decoded once per batch, not once per photo), plus caches of what was
/// drawn for one size, because a batch from one camera asks for the same sizes again and
/// again. Built once with the `PhotoFinisher` and shared by every worker.
public final class MarkAssets: Sendable {
    /// Sets the `text` mark, when there is one.
    public let textSetter: Typesetter?
    /// Sets the `tile` mark (in the text mark's font, or DejaVu Sans Bold).
    public let tileSetter: Typesetter?
    /// The logo file's pixels: RGBA, straight alpha, as decoded.
    public let logo: Image?
    /// The `onDark` logo's pixels (used where the photo under the logo is dark), RGBA.
    public let logoOnDark: Image?

    private let texts = SmallCache<RenderedText>()
    private let shadows = SmallCache<(mask: CoverageMask, padding: Int)>()
    private let logos = SmallCache<Image>()
    private let rims = SmallCache<CoverageMask>()
    private let luminances = SmallCache<[(luminance: Double, weight: Double)]>()
    private let qrCodes = SmallCache<Result<QRCode, QRCode.Refused>>()
    private let qrImages = SmallCache<Image>()

    /// Marks with nothing to draw (a template without `text`, `logo` and `tile`).
    public static let none = MarkAssets(textSetter: nil, tileSetter: nil, logo: nil)

    /// - Parameters:
    ///   - textSetter: the text mark's fonts.
    ///   - tileSetter: the tiled mark's fonts.
    ///   - logo: the decoded logo, RGBA.
    ///   - onDark: the decoded `onDark` logo, RGBA.
    public init(textSetter: Typesetter?, tileSetter: Typesetter?, logo: Image?, onDark: Image? = nil) {
        precondition(logo.map { $0.channels == 4 } ?? true, "the logo must be RGBA")
        precondition(onDark.map { $0.channels == 4 } ?? true, "the onDark logo must be RGBA")
        self.textSetter = textSetter
        self.tileSetter = tileSetter
        self.logo = logo
        self.logoOnDark = onDark
    }

    /// Opens the fonts and decodes the logo the template names.
    /// - Throws: `PhotoError` (`io-error`) naming the logo file or font and what is wrong
    ///   with it; every photo of the batch then fails with this message.
    public static func load(for template: Template) throws(PhotoError) -> MarkAssets {
        let defaultFont = Template.TextMark(text: "").font
        var text: Typesetter?
        var tile: Typesetter?
        do throws(TypesetError) {
            if let mark = template.text { text = try Typesetter(pattern: mark.font) }
            if template.tile != nil {
                let pattern = template.text?.font ?? defaultFont
                tile = pattern == text?.pattern ? text : try Typesetter(pattern: pattern)
            }
        } catch {
            throw PhotoError(.ioError, "text mark: \(error.description)")
        }
        var logo: Image?, onDark: Image?
        func path(_ file: String) -> String { file.hasPrefix("/") ? file : template.directory + "/" + file }
        if let mark = template.logo {
            logo = try decodeLogo(path: path(mark.file))
            if let file = mark.onDark { onDark = try decodeLogo(path: path(file)) }
        }
        return MarkAssets(textSetter: text, tileSetter: tile, logo: logo, onDark: onDark)
    }

    /// Reads a logo PNG whole, as RGBA.
    static func decodeLogo(path: String) throws(PhotoError) -> Image {
        let bytes: [UInt8]
        do throws(SystemError) {
            guard let read = try Files.contents(of: path) else { throw SystemError("open", path, errno: ENOENT) }
            bytes = read
        } catch {
            throw PhotoError(.ioError, "logo file \(path): cannot be read (\(error.reason))")
        }
        do throws(PhotoError) {
            let decoder = try openDecoder(bytes: bytes, limits: DecodeLimits())
            let info = decoder.info
            guard info.format == .png else {
                throw PhotoError(.unsupportedFormat, "is a \(info.format.rawValue.uppercased()), not a PNG")
            }
            var image = Canvas(width: info.width, height: info.height, channels: 4)
            var y = 0
            do {
                try image.withUnsafeMutableRows { rows in
                    try decoder.decode(eighths: 8, channels: 4, limits: DecodeLimits()) { row in
                        guard y < rows.height else { return }
                        rows[y].update(from: row, count: rows.rowBytes)
                        y += 1
                    }
                }
            } catch let error as PhotoError {
                throw error
            } catch {
                throw PhotoError(.corruptImage, "\(error)")
            }
            guard y == image.height else { throw PhotoError(.corruptImage, "its data ends early") }
            return image.finished()
        } catch {
            throw PhotoError(.ioError, "logo file \(path): \(error.message) (a logo must be a PNG, ideally with alpha)")
        }
    }

    /// The text mark set at `capHeight` (cached per size).
    func text(_ words: String, setter: Typesetter, capHeight: Double) -> RenderedText {
        texts.value(for: "\(ObjectIdentifier(setter).hashValue)|\(capHeight.bitPattern)|\(words)") {
            setter.render(words, capHeight: capHeight)
        }
    }

    /// The text's outline rim: its mask grown by `radius` pixels (cached per size).
    func rim(of text: RenderedText, key: String, radius: Int) -> CoverageMask {
        rims.value(for: "\(key)|\(text.capHeight.bitPattern)|\(radius)") { dilated(text.mask, radius: radius) }
    }

    /// A logo's WCAG luminances in 64 bins, each with the alpha it carries (what a person
    /// sees of it), made once per batch.
    func luminances(ofLogo onDark: Bool) -> [(luminance: Double, weight: Double)] {
        guard let logo = onDark ? logoOnDark : logo else { return [] }
        return luminances.value(for: onDark ? "onDark" : "file") {
            var sums = [Double](repeating: 0, count: 64), weights = [Double](repeating: 0, count: 64)
            logo.withUnsafeRows { rows in
                for y in 0..<rows.height {
                    let row = rows[y]
                    for x in 0..<rows.width {
                        let p = row + x * 4, a = Double(p[3])
                        guard a > 0 else { continue }
                        let l = MarkChoice.luminance(p[0], p[1], p[2]), bin = min(63, Int(l * 64))
                        sums[bin] += a * l
                        weights[bin] += a
                    }
                }
            }
            return (0..<64).filter { weights[$0] > 0 }.map { (sums[$0] / weights[$0], weights[$0]) }
        }
    }

    /// The blurred shadow of a rendered text (cached per size and blur).
    func shadow(of text: RenderedText, key: String, sigma: Double) -> (mask: CoverageMask, padding: Int) {
        shadows.value(for: "\(key)|\(text.capHeight.bitPattern)|\(sigma.bitPattern)") {
            gaussianBlurred(text.mask, sigma: sigma)
        }
    }

    /// The QR code of `text` (cached per text: a batch's photos share one link).
    func qrCode(_ text: String, level: QRCode.Level) -> Result<QRCode, QRCode.Refused> {
        qrCodes.value(for: "\(level.rawValue)|\(text)") {
            do throws(QRCode.Refused) { return .success(try QRCode(text, level: level)) } catch { return .failure(error) }
        }
    }

    /// The QR code drawn at `pixelsPerModule`, RGBA (cached per code, size and colours).
    func qrImage(_ code: QRCode, pixelsPerModule: Int, dark: [UInt8], light: [UInt8]) -> Image {
        qrImages.value(for: "\(code.level.rawValue)|\(pixelsPerModule)|\(dark)|\(light)|\(code.text)") {
            code.image(pixelsPerModule: pixelsPerModule, dark: dark, light: light)
        }
    }

    /// The logo resampled to `size` with Lanczos-3 on premultiplied pixels (cached per size).
    func scaledLogo(_ size: OutputPlan.Size, onDark: Bool = false) -> Image? {
        guard let logo = onDark ? logoOnDark : logo else { return nil }
        return logos.value(for: "\(size.width)x\(size.height)\(onDark ? "d" : "")") {
            resized(logo, width: size.width, height: size.height)
        }
    }
}

/// A few recently made values by key, shared between workers. Values are made outside the
/// lock (two workers may make the same one at once; the second simply wins); the cache is
/// emptied when it holds `limit` values, which a batch of mixed sizes reaches rarely.
final class SmallCache<Value: Sendable>: Sendable {
    private let values = Mutex<[String: Value]>([:])
    private let limit = 32

    func value(for key: String, make: () -> Value) -> Value {
        if let hit = values.withLock({ $0[key] }) { return hit }
        let made = make()
        values.withLock {
            if $0.count >= limit { $0.removeAll() }
            $0[key] = made
        }
        return made
    }
}
