import Codecs
import Foundation
import Pixels
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

    private let texts = SmallCache<RenderedText>()
    private let shadows = SmallCache<(mask: CoverageMask, padding: Int)>()
    private let logos = SmallCache<Image>()

    /// Marks with nothing to draw (a template without `text`, `logo` and `tile`).
    public static let none = MarkAssets(textSetter: nil, tileSetter: nil, logo: nil)

    /// - Parameters:
    ///   - textSetter: the text mark's fonts.
    ///   - tileSetter: the tiled mark's fonts.
    ///   - logo: the decoded logo, RGBA.
    public init(textSetter: Typesetter?, tileSetter: Typesetter?, logo: Image?) {
        precondition(logo.map { $0.channels == 4 } ?? true, "the logo must be RGBA")
        self.textSetter = textSetter
        self.tileSetter = tileSetter
        self.logo = logo
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
        var logo: Image?
        if let mark = template.logo {
            logo = try decodeLogo(path: mark.file.hasPrefix("/") ? mark.file : template.directory + "/" + mark.file)
        }
        return MarkAssets(textSetter: text, tileSetter: tile, logo: logo)
    }

    /// Reads a logo PNG whole, as RGBA.
    static func decodeLogo(path: String) throws(PhotoError) -> Image {
        let bytes: [UInt8]
        do {
            bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw PhotoError(.ioError, "logo file \(path): cannot be read (\(error.localizedDescription))")
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
                    try decoder.decode(denominator: 1, channels: 4, limits: DecodeLimits()) { row in
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

    /// The blurred shadow of a rendered text (cached per size and blur).
    func shadow(of text: RenderedText, key: String, sigma: Double) -> (mask: CoverageMask, padding: Int) {
        shadows.value(for: "\(key)|\(text.capHeight.bitPattern)|\(sigma.bitPattern)") {
            gaussianBlurred(text.mask, sigma: sigma)
        }
    }

    /// The logo resampled to `size` with Lanczos-3 on premultiplied pixels (cached per size).
    func scaledLogo(_ size: OutputPlan.Size) -> Image? {
        guard let logo else { return nil }
        return logos.value(for: "\(size.width)x\(size.height)") {
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
