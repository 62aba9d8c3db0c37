import Codecs
import Pixels

/// One output of one photo, finished while the source is still being decoded: the
/// resampler's rows are turned upright (`UprightRows`: a band at a time when the photo is
/// upright, built whole once when it must be turned), and each upright band is flattened,
/// converted, marked, framed and handed to the encoder at once. A photo finished at full
/// resolution is never whole in memory unless it has to be turned.
///
/// Everything a band needs (sizes, mark places, colour transform, metadata: `OutputSettings`) is decided from
/// the header before the first row. Not thread-safe: one line belongs to one decode.
final class OutputLine: BandSink {
    let plan: OutputPlan
    /// Takes the decoder's rows (crop and resize to the plan's stored size); nil when the
    /// decoder's planes go to `planes` instead.
    let resizer: StreamingResizer?
    /// Takes a JPEG's YCbCr planes, when the output is the whole photo at full resolution,
    /// turned (`OutputLine.init`'s `planes`): held at 1.5 bytes a pixel instead of 3.
    let planes: UprightPlanes?
    /// What the report will say about this output, decided before the first row.
    let applied: Applied
    /// Warnings about this output (the marks').
    let warnings: [String]
    let fileExtension: String
    /// The finished size, frame included.
    let size: OutputPlan.Size

    private let upright: UprightRows?
    private let writer: any ImageWriter
    private let marks: MarkPlan
    private let transform: ColorTransform?
    /// The colour RGBA is flattened over (formats without alpha), or nil to keep alpha.
    private let background: [UInt8]?
    private let flat: BandBuffer?
    private let border: Int
    private let borderColor: [UInt8]
    private let framedRows: BandBuffer?
    /// Shrinks the upright, unmarked rows into the photo's preview, when this output is the
    /// one the preview comes from.
    private let preview: StreamingResizer?
    /// The first thing that went wrong while bands were handed on (the rest is skipped).
    private var failure: PhotoError?
    private var rowsWritten = 0

    /// Prepares the output: every decision is made here, before any row.
    /// - Parameters:
    ///   - source: the size of the rows the decoder delivers (after DCT scaling).
    ///   - crop: the plan's crop in those rows.
    ///   - channels: 3 or 4, as decoded.
    ///   - preview: the preview's size when this output's rows make it (upright, never larger
    ///     than the output).
    ///   - planes: the JPEG's luma rows per chroma row when its planes are decoded into this
    ///     line (`PhotoFinisher.planarChroma`), nil for rows.
    init(plan: OutputPlan, source: OutputPlan.Size, crop: PixelRect, channels: Int, info: SourceInfo,
         orientation: Int, scale: Int, template: Template, assets: MarkAssets, credit: Credit,
         preview previewSize: OutputPlan.Size?, planes lumaRowsPerChromaRow: Int? = nil) throws(PhotoError) {
        self.plan = plan
        let settings = OutputSettings(template: template, plan: plan, info: info, orientation: orientation,
                                      channels: channels, credit: credit)
        fileExtension = settings.format.fileExtension
        let width = plan.upright.width, height = plan.upright.height
        background = settings.background
        transform = settings.transform
        border = settings.border
        borderColor = settings.borderColor
        size = settings.size

        // Marks go on the upright, resized photo in its output colour space, before the frame.
        marks = MarkPainter(template: template, assets: assets).plan(width: width, height: height,
                                                                     icc: settings.marksProfile)
        warnings = marks.result.warnings
        writer = try makeWriter(width: size.width, height: size.height, channels: settings.channels,
                                options: settings.options)
        applied = settings.applied(plan: plan, scale: scale, sharpen: nil, marks: marks.result, quality: nil)

        preview = previewSize.map {
            StreamingResizer(sourceWidth: width, sourceHeight: height,
                             crop: PixelRect(x: 0, y: 0, width: width, height: height),
                             targetWidth: $0.width, targetHeight: $0.height, channels: channels, shrinkFirst: true)
        }
        let bands = UprightRows.rowsPerBand(rowBytes: width * channels, height: height)
        flat = background == nil ? nil : BandBuffer(width: width, rows: bands, channels: 3)
        framedRows = border > 0 ? BandBuffer(width: size.width, rows: bands, channels: settings.channels) : nil
        // The upright writer hands its bands to this line, which does not exist yet: a relay
        // stands in and is pointed here once every property is set.
        let relay = BandRelay()
        if let lumaRowsPerChromaRow {
            planes = UprightPlanes(storedWidth: plan.stored.width, storedHeight: plan.stored.height,
                                   lumaRowsPerChromaRow: lumaRowsPerChromaRow, exif: orientation, into: relay)
            upright = nil
            resizer = nil
        } else {
            let rows = UprightRows(storedWidth: plan.stored.width, storedHeight: plan.stored.height, channels: channels,
                                   exif: orientation, into: relay)
            upright = rows
            planes = nil
            resizer = StreamingResizer(sourceWidth: source.width, sourceHeight: source.height, crop: crop,
                                       targetWidth: plan.stored.width, targetHeight: plan.stored.height,
                                       channels: channels, into: rows)
        }
        relay.target = self
    }

    /// After the decode: hands on what was held whole (a turned photo), ends the file.
    /// - Returns: the encoded output and, when this output makes it, the preview.
    /// - Throws: `PhotoError` from the encoder.
    func finish() throws(PhotoError) -> (output: FinishedOutput, preview: Image?) {
        upright?.finish()
        planes?.finish()
        if let failure { throw failure }
        if border > 0 { try writeBorder(rows: border) }
        let bytes = try writer.finish()
        let shrunk = preview.map { flattened($0.finish(), over: [255, 255, 255]).finished() }
        return (FinishedOutput(cropLabel: plan.crop?.label, bytes: bytes, fileExtension: fileExtension,
                               size: size, applied: applied), shrunk)
    }

    // MARK: - BandSink

    func take(_ band: MutablePixelRows, top: Int) {
        guard failure == nil else { return }
        do throws(PhotoError) {
            if let preview {
                for y in 0..<band.height { preview.push(UnsafePointer(band[y])) }
            }
            var rows = band
            if let background, let flat {
                rows = flat.rows(band.height)
                for y in 0..<band.height { flattenRow(band[y], into: rows[y], width: band.width, over: background) }
            }
            transform?.apply(to: rows)
            marks.draw(onto: rows, top: top)
            if border > 0 {
                if top == 0 { try writeBorder(rows: border) }
                try writeFramed(rows)
            } else {
                try writer.write(rows.readOnly)
            }
        } catch {
            failure = error
        }
    }

    /// The band inside the frame's left and right borders.
    private func writeFramed(_ rows: MutablePixelRows) throws(PhotoError) {
        guard let framedRows else { return }
        let out = framedRows.rows(rows.height)
        let side = border * rows.channels
        for y in 0..<rows.height {
            let d = out[y]
            fill(d, count: border)
            (d + side).update(from: rows[y], count: rows.rowBytes)
            fill(d + side + rows.rowBytes, count: border)
        }
        try writer.write(out.readOnly)
    }

    /// `rows` rows of border colour (the frame's top or bottom).
    private func writeBorder(rows: Int) throws(PhotoError) {
        guard let framedRows else { return }
        var left = rows
        while left > 0 {
            let count = min(left, framedRows.capacity)
            let out = framedRows.rows(count)
            for y in 0..<count { fill(out[y], count: out.width) }
            try writer.write(out.readOnly)
            left -= count
        }
    }

    private func fill(_ pixels: UnsafeMutablePointer<UInt8>, count: Int) {
        let c = borderColor.count
        for x in 0..<count { for k in 0..<c { pixels[x * c + k] = borderColor[k] } }
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
