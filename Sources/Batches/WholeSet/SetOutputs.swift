import Codecs
import Finishing
import Foundation
import System
import Pixels

/// The batch's own outputs, made after every photo is finished and before `report.json` (reference:
/// Stitch, Colour card, `report.html`): the stitched story, the colour card and `report.html`.
public struct SetOutputs: Sendable {
    public var template: Template
    public var limits: BatchLimits
    /// Draws the template's marks on each stitched part (when `stitch.marks` is on); nil:
    /// parts carry no marks.
    public var marks: CanvasMarks?
    /// Writes the hex codes on the colour card; nil: the bands under the swatches stay blank
    /// (the codes are in the report).
    public var labeler: SwatchLabeler?

    /// The batch outputs of a batch run by `runner`: its marks (already prepared for the
    /// photos) on the stitched parts, and the hex codes on the colour card.
    public init(runner: BatchRunner) {
        self.init(template: runner.template, limits: runner.limits)
        if runner.template.colorCard {
            do {
                labeler = try WholeSetMarks.swatchLabels()
            } catch {
                unlabelled = "colour card: the hex codes are not written under the swatches (\(error)); "
                    + "they are in the report"
            }
        }
        // Marks that could not be prepared failed every photo, with their reason: a story of
        // no photos needs none.
        if case .success(let assets) = runner.finisher.marks { markAssets = assets }
    }

    /// Why the colour card has no labels (`labeler` nil though the card is asked for), for
    /// the report's warnings.
    var unlabelled: String?

    /// The batch's prepared marks: the parts get the template's marks, their variables filled
    /// in for the batch (a part shows many photos: `{batch}` and `{count}` have values, the
    /// photo's own facts are left empty).
    var markAssets: MarkAssets?

    public init(template: Template, limits: BatchLimits, marks: CanvasMarks? = nil, labeler: SwatchLabeler? = nil) {
        self.template = template
        self.limits = limits
        self.marks = marks
        self.labeler = labeler
    }

    /// Makes the stitched parts and the colour card the template asks for and returns the
    /// report with its batch-level `outputs` and `warnings` (`ReportWriter` writes the page and
    /// the JSON once the batch is filed).
    /// Nothing here fails the batch: a whole-set output that cannot be made is a warning.
    /// - Parameters:
    ///   - report: the batch's report, every item done.
    ///   - sources: the batch's sources, in the report's order.
    ///   - folder: the batch folder.
    public func make(_ report: Report, sources: [BatchRunner.Source], folder: String) -> Report {
        precondition(report.items.count == sources.count, "one source per report item")
        var report = report
        var warnings = report.warnings ?? []
        if let stitch = template.stitch {
            var marks = self.marks
            if let assets = markAssets {
                var facts = PhotoFacts(batch: report.batch, count: report.items.count)
                facts.shareURL = report.link
                let (filled, _, missing) = template.filled(with: facts, metadata: false)
                marks = WholeSetMarks.canvas(template: filled, assets: assets)
                if stitch.marks { warnings += missing.map { "stitched story: \($0)" } }
            }
            switch story(stitch, marks: marks, report: report, sources: sources, folder: folder, warnings: &warnings) {
            case .success(let outputs): report.outputs += outputs
            case .failure(let reason): warnings.append(reason.message)
            }
        }
        if template.colorCard {
            switch colorCard(report: report, folder: folder) {
            case .success(let output):
                report.outputs += output.map { [$0] } ?? []
                if output != nil, let unlabelled { warnings.append(unlabelled) }
            case .failure(let reason): warnings.append(reason.message)
            }
        }
        report.warnings = warnings.isEmpty ? nil : warnings
        return report
    }

    /// Why a whole-set output was not made, in words for the report.
    struct Reason: Error {
        var message: String
    }

    /// Every part of the story, or why there is none. A photo that failed is left out (the
    /// parts' `leftOut` and a batch warning name it); a batch that was stopped has no story
    /// (its order is the point). Each part is written as soon as it is encoded (memory stays
    /// at one canvas); if a photo cannot be read again while stitching, the parts already
    /// written are removed before the report exists.
    func story(_ stitch: Template.Stitch, marks: CanvasMarks?, report: Report, sources: [BatchRunner.Source],
               folder: String, warnings: inout [String]) -> Result<[Report.BatchOutput], Reason> {
        if let stopper = report.items.first(where: { $0.status == .interrupted }) {
            return .failure(Reason(message: "no stitched story: the batch was stopped before photo \(stopper.index) "
                                   + "(\(stopper.source)) was finished"))
        }
        let shown = report.items.indices.filter { report.items[$0].status == .ok }
        let leftOut = report.items.filter { $0.status != .ok }
        for item in leftOut {
            warnings.append("stitched story: photo \(item.index) (\(item.source)) left out: it could not be finished"
                            + (item.error.map { " (\($0.code): \($0.message))" } ?? ""))
        }
        guard !shown.isEmpty else {
            return .failure(Reason(message: report.items.isEmpty ? "no stitched story: the batch is empty"
                                   : "no stitched story: no photo of the batch could be finished"))
        }
        let sizes = shown.map { i -> OutputPlan.Size in
            let s = report.items[i].size ?? [1, 1]
            return OutputPlan.Size(s[0], s[1])
        }
        let plan: StitchPlan
        do throws(StitchPlanError) {
            plan = try StitchPlan.make(upright: sizes, stitch: stitch)
        } catch {
            return .failure(Reason(message: "no stitched story: \(error.description)"))
        }
        let stitcher = Stitcher(stitch: stitch, quality: template.output.quality, marks: marks)
        // A photo finished with its damage said (`damaged: "warn"`) is stitched as it was finished.
        var deadline = DecodeLimits(maxPixels: limits.maxPixels, maxFileBytes: limits.maxFileBytes, damaged: template.damaged)
        deadline.deadline = .now + limits.itemTimeout * sources.count
        var written: [Report.BatchOutput] = []
        func removeWritten() { for part in written { unlink(folder + "/" + part.file) } }
        for (number, part) in plan.parts.enumerated() {
            let name = Stitcher.fileName(batch: report.batch, part: number + 1, of: plan.parts.count)
            do throws(StitchError) {
                let canvas = try stitcher.render(part, width: plan.width, read: { i throws(PhotoError) in
                    try SourceFile.read(sources[shown[i]].path, maxBytes: limits.maxFileBytes)
                }, limits: deadline)
                do throws(PhotoError) {
                    let bytes = try stitcher.encode(canvas)
                    do {
                        try AtomicFile.write(bytes, to: folder + "/" + name)
                    } catch {
                        throw PhotoError(.ioError, error.description)
                    }
                } catch {
                    throw StitchError(photo: nil, error: error)
                }
                written.append(Report.BatchOutput(file: name, size: [canvas.width, canvas.height],
                                                  items: part.placements.map { shown[$0.photo] + 1 },
                                                  leftOut: leftOut.map(\.index)))
            } catch {
                removeWritten()
                let who = error.photo.map { "photo \(shown[$0] + 1) (\(sources[shown[$0]].name)) could not be read again" }
                    ?? "part \(number + 1) could not be finished"
                return .failure(Reason(message: "no stitched story: \(who): \(error.error.code.rawValue): \(error.error.message)"))
            }
        }
        return .success(written)
    }

    /// The colour card of every photo that has a colour, in batch order (nil: none has).
    func colorCard(report: Report, folder: String) -> Result<Report.BatchOutput?, Reason> {
        let shown = report.items.filter { $0.color.flatMap(Self.lab) != nil }
        let swatches = shown.compactMap { item in item.color.flatMap(Self.lab).map { (item.index, $0) } }
        guard !swatches.isEmpty else { return .success(nil) }
        // With `harmonize`, each photo's middle grey as shot and as finished.
        let lights = template.harmonize != nil
        let greys: [(before: Lab, after: Lab)?] = lights ? shown.map { item in
            item.outputs?.first?.applied.harmonize.flatMap { record in record.after.map { (record.before.grey, $0.grey) } }
        } : []
        let card = ColorCard.layout(count: swatches.count, lights: lights)
        let name = "\(report.batch)-color-card.png"
        do {
            let image = try card.render(swatches.map(\.1), greys: greys, labeler: labeler)
            try AtomicFile.write(try encodeImage(image, options: EncodeOptions(format: .png, icc: ICC.sRGB)),
                                 to: folder + "/" + name)
        } catch {
            return .failure(Reason(message: "no colour card: \(error)"))
        }
        return .success(Report.BatchOutput(file: name, size: [card.width, card.height], items: swatches.map(\.0)))
    }

    /// `#rrggbb` back to Lab.
    static func lab(_ hex: String) -> Lab? {
        guard hex.count == 7, hex.hasPrefix("#"), let v = UInt32(hex.dropFirst(), radix: 16) else { return nil }
        return Lab(srgb: UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff))
    }
}
