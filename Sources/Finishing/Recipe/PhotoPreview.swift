import Pixels

/// The photo's preview: the whole photo shrunk to `PhotoFinisher.previewLongSide` (never
/// enlarged), upright, flattened over white: the report's thumbnail, the colour card's sample
/// and the image the subject search reads. It costs no decode of its own: it shrinks rows that
/// pass on their way somewhere else, before anything is drawn on them, so it shows the photo
/// as it came. Where they come from is the plan's choice (`PhotoPlan.PreviewSource`), and
/// this is the one place that makes the preview from them (docs/architecture.md, "A photo's
/// recipe").
///
/// Not thread-safe: one preview belongs to one decode.
final class PhotoPreview {
    /// Takes the rows, shrinking them into the preview's stored size (BoxShrink first).
    let resizer: StreamingResizer
    /// The EXIF orientation still to apply to the shrunk rows (1 when they come upright).
    private let orientation: Int
    /// True when it takes the upright rows of the line it comes from (that line streams), false
    /// for stored rows (through `tee`).
    let takesUprightRows: Bool

    /// A preview of rows of `rows`' size (`crop` of them), shrunk to `size` in the rows' own
    /// orientation, then turned by `orientation`.
    private init(rows: OutputPlan.Size, crop: PixelRect? = nil, size: OutputPlan.Size, channels: Int, orientation: Int,
                 upright: Bool = false) {
        resizer = StreamingResizer(sourceWidth: rows.width, sourceHeight: rows.height,
                                   crop: crop ?? PixelRect(x: 0, y: 0, width: rows.width, height: rows.height),
                                   targetWidth: size.width, targetHeight: size.height, channels: channels,
                                   shrinkFirst: true)
        self.orientation = orientation
        takesUprightRows = upright
    }

    /// The preview the plan asks for, sized for the rows it will be fed:
    /// - the whole photo's output, when its line streams: its upright rows, to the photo's
    ///   preview size;
    /// - the whole photo's output when its line holds it whole, or the smallest band: its
    ///   stored rows, to the preview size of those rows, turned upright after;
    /// - otherwise the decoder's rows, to the photo's preview size, turned upright after.
    convenience init(for plan: PhotoPlan) {
        let previewPlan = PhotoFinisher.previewPlan(stored: plan.stored, orientation: plan.orientation)
        func ofStored(_ size: OutputPlan.Size) -> (OutputPlan.Size, OutputPlan.Size) {
            (size, Layout.resized(size, by: .longSide(PhotoFinisher.previewLongSide)))
        }
        switch plan.preview {
        case .output(let index, upright: true):
            self.init(rows: plan.outputs[index].plan.upright, size: previewPlan.upright, channels: plan.channels,
                      orientation: 1, upright: true)
        case .output(let index, upright: false):
            let (rows, size) = ofStored(plan.outputs[index].plan.stored)
            self.init(rows: rows, size: size, channels: plan.channels, orientation: plan.orientation)
        case .band(let index):
            let (rows, size) = ofStored(plan.bands[index].stored)
            self.init(rows: rows, size: size, channels: plan.channels, orientation: plan.orientation)
        case .decode:
            self.init(rows: plan.scale.size,
                      crop: Layout.scaledCrop(previewPlan.storedCrop, from: plan.stored, to: plan.scale.size),
                      size: previewPlan.stored, channels: plan.channels, orientation: plan.orientation)
        }
    }

    /// Once every row is in: the preview, upright and opaque.
    func finish() -> Image {
        flattened(Orientation.apply(resizer.finish(), exif: orientation), over: [255, 255, 255]).finished()
    }

    /// A row sink that hands each row on to `sink` and shrinks it into this preview as it
    /// passes (the stored rows of the output or band the preview comes from).
    func tee(into sink: RowSink) -> RowSink {
        PreviewTee(sink: sink, preview: resizer)
    }
}

/// Rows on their way to another sink, pushed into the preview's resampler as each is written.
private final class PreviewTee: RowSink {
    private let sink: RowSink
    private let preview: StreamingResizer
    /// The row being written (the sink's own buffer, read before the sink is told).
    private var row: UnsafeMutablePointer<UInt8>?

    init(sink: RowSink, preview: StreamingResizer) {
        self.sink = sink
        self.preview = preview
    }

    func rowBuffer(_ y: Int) -> UnsafeMutablePointer<UInt8> {
        let buffer = sink.rowBuffer(y)
        row = buffer
        return buffer
    }

    func rowWritten(_ y: Int) {
        guard let row else { preconditionFailure("row \(y) written before its buffer was asked for") }
        preview.push(UnsafePointer(row))
        sink.rowWritten(y)
    }
}
