import Codecs
import Pixels

/// One output of one photo, made band by band: the recipe's steps, in order, on each band of
/// upright rows as it comes (docs/architecture.md, "A photo's recipe"). Every output of every
/// photo goes this one way.
///
/// 1. rows in: the decoder's rows resampled to the output's size (`resizer`), or a JPEG's
///    YCbCr planes (`planes`), or a subject crop's window of its band (`feed`);
/// 2. orient: `UprightRows` (or `UprightPlanes`) hands the rows on upright, a band at a time
///    (a photo stored turned is built upright once, then handed on band by band);
/// 3. preview: the whole photo's output shrinks its clean rows into the preview (`PhotoPreview`;
///    a line that holds its output shrinks its stored rows, as they come in);
/// 4. flatten: RGBA over the background, for a format without alpha;
/// 5. colour: the conversion into the output's colour space (`OutputSettings.transform`);
/// 6. sharpen (whole);
/// 7. marks: planned before the first row, or from the clean photo when they are "auto"
///    (whole); drawn on each band;
/// 8. frame and encode (`FramedWriter`): encoded again at lower qualities until the file fits
///    `maxBytes` (whole).
///
/// A step marked whole needs every pixel at once (`WholeSteps`). A line with such a step
/// keeps its bands after step 5, once converted, until the decode is over and the subject is
/// known; then steps 6 to 8 run on them as one band of the whole height. A line without one
/// never holds more than a few bands (unless the photo must be turned).
///
/// Every decision (sizes, mark places, colour transform, metadata: `OutputSettings`) is made
/// before the first row. Not thread-safe: one line belongs to one decode.
final class OutputLine: BandSink {
    /// The steps that need the whole output at once.
    struct WholeSteps: OptionSet {
        let rawValue: Int

        /// Sharpening after a downscale (the blur reaches across bands).
        static let sharpen = WholeSteps(rawValue: 1 << 0)
        /// Marks chosen from the photo's pixels: `color: "auto"`, `position: "auto"`, a logo's
        /// `onDark` file.
        static let marksFromPixels = WholeSteps(rawValue: 1 << 1)
        /// A file that must fit `output.maxBytes` (it may be encoded again at a lower quality).
        static let fitToMaxBytes = WholeSteps(rawValue: 1 << 2)

        init(rawValue: Int) { self.rawValue = rawValue }

        /// The whole steps of an output of `plan` made with `template`.
        init(of plan: OutputPlan, template: Template, assets: MarkAssets) {
            self = []
            if PhotoFinisher.sharpening(plan, amount: template.output.sharpen) != nil { insert(.sharpen) }
            if MarkPainter(template: template, assets: assets).needsPixels { insert(.marksFromPixels) }
            if template.output.maxBytes != nil { insert(.fitToMaxBytes) }
        }
    }

    /// Where a line's rows come from.
    enum Input {
        /// The decoder's rows (at the decode's scale), the output's part of them resampled to
        /// its size.
        case decoded
        /// A JPEG's YCbCr planes, at full scale (the whole photo, turned: `PhotoFinisher.planarChroma`).
        case planes(lumaRowsPerChromaRow: Int)
        /// Rows of the output's stored size, handed in by `feed` (a subject crop's window of
        /// its band).
        case fed
    }

    let plan: OutputPlan
    /// Takes the decoder's rows (`.decoded`); nil otherwise.
    let resizer: StreamingResizer?
    /// Takes the JPEG's planes (`.planes`): held at 1.5 bytes a pixel instead of 3.
    let planes: UprightPlanes?

    private let settings: OutputSettings
    private let template: Template
    private let assets: MarkAssets
    private let scale: DecodeScale
    private let whole: WholeSteps
    /// Turns stored rows upright (`.decoded`, `.fed`).
    private let upright: UprightRows?
    /// Shrinks the upright, clean rows into the photo's preview (this line's output is the
    /// whole photo and streams: `PhotoPlan.PreviewSource.output`).
    private let preview: StreamingResizer?
    /// A band flattened over the background, when the format has no alpha.
    private let flat: BandBuffer?
    /// The marks, planned before the first row unless they are chosen from the pixels.
    private var marks: MarkPlan?
    /// The output, flattened and converted, kept until the whole steps run; nil when the line
    /// has none.
    private let held: CanvasRows?
    /// The frame and the encoder, when the line streams: made before the first row.
    private let writer: FramedWriter?
    /// Rows per band (`UprightRows.rowsPerBand`).
    private let bandRows: Int
    /// The first thing that went wrong while bands were handed on (the rest is skipped).
    private var failure: PhotoError?

    /// Prepares the output: every decision is made here, before any row.
    /// - Parameters:
    ///   - plan: the output's geometry (a subject crop's, placed).
    ///   - photo: the photo's plan (its header, orientation, decode scale).
    ///   - recipe: the product's recipe, variables filled in.
    ///   - whole: the steps that need it whole (`WholeSteps(of:template:assets:)`).
    ///   - preview: the photo's preview when this line feeds it (its output is the whole
    ///     photo): its upright or its stored rows, as the preview takes them.
    /// - Throws: `PhotoError` when the encoder cannot be started.
    init(plan: OutputPlan, photo: PhotoPlan, recipe: PhotoFinisher.Recipe, whole: WholeSteps, assets: MarkAssets,
         input: Input, preview: PhotoPreview?) throws(PhotoError) {
        let template = recipe.finisher.template
        let channels = photo.channels, orientation = photo.orientation
        self.plan = plan
        self.template = template
        self.assets = assets
        scale = photo.scale
        self.whole = whole
        settings = OutputSettings(template: template, plan: plan, info: photo.info, orientation: orientation,
                                  channels: channels, credit: recipe.credit)
        let width = plan.upright.width, height = plan.upright.height
        bandRows = UprightRows.rowsPerBand(rowBytes: width * channels, height: height)
        flat = settings.background == nil ? nil : BandBuffer(width: width, rows: bandRows, channels: 3)
        if whole.contains(.marksFromPixels) {
            marks = nil
        } else {
            // Marks go on the upright, resized photo in its output colour space, before the frame.
            marks = MarkPainter(template: template, assets: assets).plan(width: width, height: height,
                                                                        icc: settings.marksProfile)
        }
        if whole.isEmpty {
            held = nil
            writer = try FramedWriter(settings: settings, options: settings.options, bandRows: bandRows)
        } else {
            held = CanvasRows(width: width, height: height, channels: settings.channels)
            writer = nil
        }
        self.preview = preview?.takesUprightRows == true ? preview?.resizer : nil
        // The upright writer hands its bands to this line, which does not exist yet: a relay
        // stands in and is pointed here once every property is set.
        let relay = BandRelay()
        switch input {
        case .planes(let lumaRowsPerChromaRow):
            planes = UprightPlanes(storedWidth: plan.stored.width, storedHeight: plan.stored.height,
                                   lumaRowsPerChromaRow: lumaRowsPerChromaRow, exif: orientation, into: relay)
            upright = nil
            resizer = nil
        case .decoded:
            let rows = UprightRows(storedWidth: plan.stored.width, storedHeight: plan.stored.height, channels: channels,
                                   exif: orientation, into: relay)
            upright = rows
            planes = nil
            // A preview that takes stored rows has them as they pass.
            let sink = preview.map { $0.takesUprightRows ? rows : $0.tee(into: rows) } ?? rows
            resizer = PhotoFinisher.resizer(for: plan, stored: photo.stored, scale: photo.scale, channels: channels,
                                            into: sink)
        case .fed:
            upright = UprightRows(storedWidth: plan.stored.width, storedHeight: plan.stored.height, channels: channels,
                                  exif: orientation, into: relay)
            planes = nil
            resizer = nil
        }
        relay.target = self
    }

    /// Hands in the stored rows of `rect` in `rows` (`.fed`): a subject crop's window of its
    /// band, or an output's own pixels held (`PhotoFinisher.hold`).
    /// - Parameter curve: the batch's correction (`harmonize`), made on each row as it is
    ///   handed in, when the band was held uncorrected.
    func feed(_ rows: PixelRows, rect: PixelRect, curve: LightCurve? = nil) {
        guard let upright else { preconditionFailure("rows fed to a line that reads the decoder") }
        precondition(rect.width == plan.stored.width && rect.height == plan.stored.height, "window of another size")
        let bytes = rect.width * rows.channels
        for y in 0..<rect.height {
            let row = upright.rowBuffer(y), from = rows[rect.y + y] + rect.x * rows.channels
            if let curve {
                curve.apply(from: from, to: row, width: rect.width, channels: rows.channels)
            } else {
                row.update(from: from, count: bytes)
            }
            upright.rowWritten(y)
        }
    }

    /// After the last row: hands on what the orientation held (a turned photo), so every band
    /// has passed the steps that stream.
    func endOfRows() {
        upright?.finish()
        planes?.finish()
    }

    /// Runs the whole steps, if any, and ends the file.
    /// - Parameters:
    ///   - subject: the subject's box as fractions of this output, which "auto" marks keep off.
    ///   - warnings: the photo's warnings; the marks' are added (once each), then the encoder's.
    /// - Returns: the encoded output.
    /// - Throws: `PhotoError` from the encoder.
    func finish(subject: FocusBox?, warnings: inout [String]) throws(PhotoError) -> FinishedOutput {
        if let failure { throw failure }
        var sharpened: Applied.SharpenRecord?, quality: Int?
        let bytes: [UInt8]
        if let held {
            // The whole steps, on the output as one band of its whole height.
            var image = held.take()
            if whole.contains(.sharpen) {
                sharpened = PhotoFinisher.sharpen(&image, plan: plan, amount: template.output.sharpen)
            }
            let marks = self.marks ?? image.withUnsafeRows { clean in
                MarkPainter(template: template, assets: assets).plan(width: clean.width, height: clean.height,
                                                                     icc: settings.marksProfile, clean: clean,
                                                                     subject: subject)
            }
            self.marks = marks
            image.withUnsafeMutableRows { marks.draw(onto: $0, top: 0) }
            add(marks.result.warnings, to: &warnings)
            let output = settings, bandRows = bandRows
            (bytes, quality) = try image.finished().withUnsafeRows { rows throws(PhotoError) in
                try Self.encode(options: output.options, maxBytes: template.output.maxBytes, warnings: &warnings) {
                    options throws(PhotoError) in
                    let writer = try FramedWriter(settings: output, options: options, bandRows: bandRows)
                    try writer.write(rows)
                    return try writer.finish()
                }
            }
        } else {
            guard let writer, let marks else { preconditionFailure("a streaming line without its writer or marks") }
            bytes = try writer.finish()
            add(marks.result.warnings, to: &warnings)
        }
        guard let marks else { preconditionFailure("finished before the marks were planned") }
        return FinishedOutput(cropLabel: plan.crop?.label, bytes: bytes, fileExtension: settings.format.fileExtension,
                              size: settings.size,
                              applied: settings.applied(plan: plan, scale: scale, sharpen: sharpened, marks: marks.result,
                                                        quality: quality))
    }

    private func add(_ new: [String], to warnings: inout [String]) {
        for warning in new where !warnings.contains(warning) { warnings.append(warning) }
    }

    // MARK: - BandSink

    /// Steps 3 to 5 on one upright band, then either kept (the line holds its output) or
    /// marked and written.
    func take(_ band: MutablePixelRows, top: Int) {
        guard failure == nil else { return }
        if let preview {
            for y in 0..<band.height { preview.push(UnsafePointer(band[y])) }
        }
        var rows = band
        if let background = settings.background, let flat {
            rows = flat.rows(band.height)
            for y in 0..<band.height { flattenRow(band[y], into: rows[y], width: band.width, over: background) }
        }
        settings.transform?.apply(to: rows)
        if let held {
            for y in 0..<rows.height { held.rowBuffer(top + y).update(from: rows[y], count: rows.rowBytes) }
            return
        }
        guard let marks, let writer else { preconditionFailure("a streaming line without its writer or marks") }
        marks.draw(onto: rows, top: top)
        do throws(PhotoError) {
            try writer.write(rows.readOnly)
        } catch {
            failure = error
        }
    }

    // MARK: - Encoding

    /// The lowest quality `maxBytes` goes down to: below it JPEG blocks show at any size.
    static let minQuality = 20

    /// Encodes an output with `pass`; with `maxBytes`, a lossy format's quality is lowered
    /// until the file fits (a binary search down to `minQuality`), and a file that cannot fit
    /// is warned about.
    /// - Parameter pass: encodes the whole output with the options it is given.
    /// - Returns: the file and the quality used when it is not the template's (nil: as asked).
    static func encode(options: EncodeOptions, maxBytes: Int?, warnings: inout [String],
                       pass: (EncodeOptions) throws(PhotoError) -> [UInt8]) throws(PhotoError) -> (bytes: [UInt8], quality: Int?) {
        let first = try pass(options)
        guard let maxBytes, first.count > maxBytes else { return (first, nil) }
        func over(_ bytes: [UInt8]) -> String {
            "\(bytes.count) bytes, over output.maxBytes (\(maxBytes))"
        }
        guard options.format != .png else {
            warnings.append("PNG output of \(over(first)): PNG is lossless, so its quality cannot be lowered; "
                            + "resize smaller or write a lossy format")
            return (first, nil)
        }
        var low = minQuality, high = options.quality - 1
        var best: (bytes: [UInt8], quality: Int)?
        while low <= high {
            let quality = (low + high) / 2
            var attempt = options
            attempt.quality = quality
            let bytes = try pass(attempt)
            if bytes.count <= maxBytes {
                best = (bytes, quality)
                low = quality + 1
            } else {
                high = quality - 1
            }
        }
        if let best { return best }
        var floor = options
        floor.quality = minQuality
        let smallest = try pass(floor)
        warnings.append("output of \(over(smallest)) even at quality \(minQuality): resize smaller")
        return (smallest, minQuality)
    }
}

/// Step 8: the frame and the encoder. The marked photo's rows go in (any number at a time),
/// framed on their way (the border's rows before the first and after the last, its columns
/// beside each), and the file comes out.
final class FramedWriter {
    private let writer: any ImageWriter
    private let border: Int
    private let color: [UInt8]
    /// Rows framed on their way to the encoder, reused; nil without a frame.
    private let framed: BandBuffer?
    private var started = false

    /// Starts the file (metadata and header first).
    /// - Parameters:
    ///   - options: the encoder's settings (the template's, or a lower quality).
    ///   - bandRows: the most rows framed at a time.
    /// - Throws: `PhotoError` when the encoder cannot be started.
    init(settings: OutputSettings, options: EncodeOptions, bandRows: Int) throws(PhotoError) {
        writer = try makeWriter(width: settings.size.width, height: settings.size.height, channels: settings.channels,
                                options: options)
        border = settings.border
        color = settings.borderColor
        framed = border > 0 ? BandBuffer(width: settings.size.width, rows: bandRows, channels: settings.channels) : nil
    }

    /// Writes the next rows of the photo, top to bottom.
    /// - Throws: `PhotoError` from the encoder.
    func write(_ rows: PixelRows) throws(PhotoError) {
        guard let framed else { return try writer.write(rows) }
        if !started {
            started = true
            try writeBorder()
        }
        let side = border * rows.channels
        var top = 0
        while top < rows.height {
            let count = min(framed.capacity, rows.height - top)
            let out = framed.rows(count)
            for y in 0..<count {
                let d = out[y]
                fill(d, count: border)
                (d + side).update(from: rows[top + y], count: rows.rowBytes)
                fill(d + side + rows.rowBytes, count: border)
            }
            try writer.write(out.readOnly)
            top += count
        }
    }

    /// Ends the file after the last row (the frame's bottom first).
    /// - Returns: the file's bytes.
    /// - Throws: `PhotoError` from the encoder.
    func finish() throws(PhotoError) -> [UInt8] {
        if framed != nil {
            if !started { try writeBorder() }
            try writeBorder()
        }
        return try writer.finish()
    }

    /// `border` rows of the frame's colour (its top or bottom).
    private func writeBorder() throws(PhotoError) {
        guard let framed else { return }
        var left = border
        while left > 0 {
            let count = min(left, framed.capacity)
            let out = framed.rows(count)
            for y in 0..<count { fill(out[y], count: out.width) }
            try writer.write(out.readOnly)
            left -= count
        }
    }

    private func fill(_ pixels: UnsafeMutablePointer<UInt8>, count: Int) {
        let c = color.count
        for x in 0..<count { for k in 0..<c { pixels[x * c + k] = color[k] } }
    }
}

/// Hands bands on to a line made after the writer that feeds it (breaks the cycle of
/// initialisation, and the reference cycle: the line owns the writer, the relay only points
/// back).
private final class BandRelay: BandSink {
    weak var target: OutputLine?

    func take(_ band: MutablePixelRows, top: Int) {
        target?.take(band, top: top)
    }
}
