import Codecs
import Pixels

/// A photo decoded once, each output's pixels resampled and held before any step of its line,
/// until its batch's light is known (reference: `harmonize`). Its preview is the photo as it
/// came: the batch measures its light there, then `PhotoFinisher.finish(held:)` corrects the
/// held pixels on their way into the lines and makes the outputs — one decode where a look
/// first would decode the photo twice.
///
/// Not thread-safe: it is handed from the task that decoded it to the one that finishes it,
/// and finished once.
public final class HeldPhoto: @unchecked Sendable {
    /// The photo as it came, upright, at the preview's size (`PhotoFinisher.previewLongSide`).
    public let preview: Image
    /// The facts its recipes were filled with: it is finished from the hold only with the same.
    public let facts: PhotoFacts
    /// The bytes its pixels hold (its outputs' and its preview's).
    public let byteCount: Int
    /// What the decode left; nil once finished.
    fileprivate var decoded: PhotoFinisher.Decoded?
    fileprivate let limits: DecodeLimits

    fileprivate init(decoded: PhotoFinisher.Decoded, preview: Image, facts: PhotoFacts, limits: DecodeLimits) {
        self.decoded = decoded
        self.preview = preview
        self.facts = facts
        self.limits = limits
        byteCount = decoded.bands.reduce(preview.byteCount) { $0 + ($1?.byteCount ?? 0) }
    }

    /// The bytes a photo of `template` would hold, from its header alone (its outputs' sizes
    /// at 3 or 4 bytes a pixel and the preview).
    public static func byteCount(of decoder: any PhotoDecoder, template: Template) -> Int {
        let info = decoder.info
        let channels = info.hasAlpha ? 4 : 3
        let orientation = PhotoFinisher.orientationToApply(info)
        let stored = OutputPlan.Size(info.width, info.height)
        let outputs = template.recipes.flatMap { Layout.plan(stored: stored, orientation: orientation, template: $0.recipe).outputs }
        let preview = PhotoFinisher.previewPlan(stored: stored, orientation: orientation).stored
        return outputs.reduce(preview.width * preview.height * channels) { $0 + $1.stored.width * $1.stored.height * channels }
    }
}

extension PhotoFinisher {
    /// Decodes a photo once and holds its outputs' pixels (`HeldPhoto`), its lines not started.
    /// - Parameters:
    ///   - bytes: the whole source file.
    ///   - limits: `maxPixels` and the decode's deadline.
    ///   - facts: its name and place in the batch, as `finish` takes them.
    /// - Throws: `PhotoError` with the report's code.
    public func hold(bytes: consuming [UInt8], limits: DecodeLimits, facts: PhotoFacts = PhotoFacts()) throws(PhotoError) -> HeldPhoto {
        try hold(decoder: try openDecoder(bytes: bytes, limits: limits), limits: limits, facts: facts)
    }

    /// `hold`, from a decoder opened on the file (nothing decoded yet).
    public func hold(decoder: any PhotoDecoder, limits: DecodeLimits, facts: PhotoFacts = PhotoFacts()) throws(PhotoError) -> HeldPhoto {
        let assets = try marks.get()
        var limits = limits
        limits.damaged = template.damaged
        let decoded = try decode([], limits: limits, facts: facts, assets: assets, curve: nil,
                                 open: { _, _ throws(PhotoError) in decoder }, held: true)
        return HeldPhoto(decoded: decoded, preview: decoded.preview.finish(), facts: facts, limits: limits)
    }

    /// Finishes a held photo: its pixels corrected by `light` as they go into its lines, then
    /// every step `finish(bytes:)` takes. Its preview is corrected alike.
    /// - Parameter deadline: the item's deadline for what is left to do.
    /// - Throws: `PhotoError` with the report's code.
    public func finish(held: HeldPhoto, light: LightCorrection?, deadline: ContinuousClock.Instant? = nil) throws(PhotoError) -> FinishedPhoto {
        guard var decoded = held.decoded else { preconditionFailure("a held photo is finished once") }
        held.decoded = nil
        let assets = try marks.get()
        var limits = held.limits
        if let deadline { limits.deadline = deadline }
        let curve = light.flatMap { $0.isNone ? nil : LightCurve($0) }
        var preview = held.preview
        if let curve {
            preview = Image(width: preview.width, height: preview.height, channels: preview.channels) { rows in
                held.preview.withUnsafeRows { from in
                    for y in 0..<rows.height { rows[y].update(from: from[y], count: rows.rowBytes) }
                }
                curve.apply(to: rows)
            }
        }
        return try complete(&decoded, preview: preview, limits: limits, assets: assets, curve: curve)
    }
}
