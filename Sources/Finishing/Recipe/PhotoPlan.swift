import Codecs
import Pixels

/// Everything one photo's recipe decides from the header, before a pixel is decoded
/// (docs/architecture.md, "A photo's recipe"): each product's recipe with its variables filled
/// in, every output's geometry, where its rows come from and which of its steps need it whole,
/// the bands subject crops are cut from, where the preview comes from, and the scale of the
/// one decode. `PhotoFinisher.finish` carries it out; `memoryCost` prices it.
struct PhotoPlan {
    /// One output of one product.
    struct Output {
        /// The product (index into `recipes`) it is made with.
        var recipe: Int
        var plan: OutputPlan
        /// The steps that make its line hold it whole (`OutputLine.WholeSteps`).
        var whole: OutputLine.WholeSteps = []
        /// The band (index into `bands`) a subject crop is cut from once the subject is known;
        /// nil when its rows come straight from the decode.
        var band: Int?
        /// True when its band is its own pixels, held until the batch's light is known
        /// (`held`): its line is fed the whole band.
        var ownBand = false
    }

    /// Where the preview's rows come from (see `PhotoPreview`).
    enum PreviewSource: Equatable {
        /// The whole photo's output (index into `outputs`): its upright rows when its line
        /// streams, its stored rows when the line holds it whole.
        case output(Int, upright: Bool)
        /// The smallest band (index into `bands`), when no output is the whole photo.
        case band(Int)
        /// A resampler of its own on the decoder's rows, when there is neither.
        case decode
    }

    let info: SourceInfo
    /// The EXIF orientation still to apply.
    let orientation: Int
    /// The full-scale size as stored, and upright.
    let stored: OutputPlan.Size
    let upright: OutputPlan.Size
    /// 3, or 4 when the source has alpha.
    let channels: Int
    /// The facts the variables were filled from (the EXIF's added).
    let facts: PhotoFacts
    let recipes: [PhotoFinisher.Recipe]
    /// Every product's outputs, in the template's order (the names are given in it).
    let outputs: [Output]
    let skipped: [SkippedCrop]
    /// The subject the file's MWG regions name (subject crops are placed on it already), or
    /// nil: searched for after the decode when `needsSubject`.
    let regions: Subject?
    /// The whole photo at each subject crop's scale, shared by the crops of one scale.
    let bands: [OutputPlan]
    let preview: PreviewSource
    /// The scale of the one decode.
    let scale: DecodeScale
    /// The JPEG's luma rows per chroma row when the one output is fed the file's YCbCr planes
    /// (`PhotoFinisher.planarChroma`), nil for rows.
    let planar: Int?
    /// True when a crop must be placed or a mark must keep off the subject, and the file
    /// names no regions: the subject is searched for once the preview is whole.
    let needsSubject: Bool
    /// The variables' warnings (a value the photo lacks).
    let warnings: [String]
    /// True when every output's pixels are held once resampled, before any step of its line
    /// (`PhotoFinisher.hold`: `harmonize` corrects them once the batch's light is known).
    let held: Bool

    /// Plans a photo from its decoder's header.
    /// - Parameters:
    ///   - facts: its name and place in the batch (the EXIF facts are read here).
    ///   - assets: the marks' fonts and logo (whether a mark reads the pixels).
    ///   - held: every output not cut from a subject band is given a band of its own pixels,
    ///     held until its line is fed (`PhotoFinisher.hold`).
    init(template: Template, decoder: any PhotoDecoder, facts: PhotoFacts, assets: MarkAssets, held: Bool = false) {
        let info = decoder.info
        self.held = held
        self.info = info
        orientation = PhotoFinisher.orientationToApply(info)
        stored = OutputPlan.Size(info.width, info.height)
        upright = Layout.swapsAxes(orientation) ? stored.swapped : stored
        channels = info.hasAlpha ? 4 : 3
        var facts = facts
        if let exif = info.exif {
            let summary = Exif.summary(exif)
            facts.captured = summary.dateTimeOriginal
            facts.make = summary.make
            facts.model = summary.model
            facts.lens = summary.lens
        }
        self.facts = facts
        // Each product's recipe (the template's, each variant's), variables filled in.
        var warnings: [String] = []
        let recipes = template.recipes.map { variant, recipe in
            let (filled, credit, missing) = recipe.filled(with: facts)
            for warning in missing where !warnings.contains(warning) { warnings.append(warning) }
            return PhotoFinisher.Recipe(variant: variant, finisher: PhotoFinisher(template: filled, marks: assets),
                                        credit: credit)
        }
        self.recipes = recipes
        self.warnings = warnings
        var outputs: [Output] = [], skipped: [SkippedCrop] = []
        for (index, (variant, recipe)) in template.recipes.enumerated() {
            let planned = Layout.plan(stored: stored, orientation: orientation, template: recipe)
            outputs += planned.outputs.map {
                Output(recipe: index, plan: $0,
                       whole: OutputLine.WholeSteps(of: $0, template: recipes[index].finisher.template, assets: assets))
            }
            skipped += planned.skipped.map { var s = $0; s.variant = variant; return s }
        }
        self.skipped = skipped
        // Regions the file names are known from its header: subject crops are placed on them
        // now and stream like any crop. Otherwise each streams into a band (the whole photo at
        // its scale) and is placed after the decode, once the subject is found.
        regions = PhotoFinisher.regionSubject(info, orientation: orientation)
        var bands: [OutputPlan] = []
        for index in outputs.indices where outputs[index].plan.crop != nil && outputs[index].plan.focus == .subject {
            let plan = outputs[index].plan
            if let regions {
                let crop = plan.uprightCrop
                outputs[index].plan = Layout.placed(plan, at: CropPlacement.place(window: .init(crop.width, crop.height),
                                                                                   in: upright, subject: regions),
                                                    stored: stored, orientation: orientation)
            } else if let size = Layout.band(for: plan, upright: upright) {
                if let band = bands.firstIndex(where: { $0.upright == size }) {
                    outputs[index].band = band
                } else {
                    outputs[index].band = bands.count
                    bands.append(Layout.wholePhoto(stored: stored, orientation: orientation, size: size))
                }
            }
        }
        // Held: the other outputs' own pixels, resampled as their lines would and kept.
        for index in outputs.indices where held && outputs[index].band == nil {
            outputs[index].band = bands.count
            outputs[index].ownBand = true
            bands.append(outputs[index].plan)
        }
        self.outputs = outputs
        self.bands = bands
        // The preview (report thumbnail, colour card sample, subject analysis) costs no second
        // decode: the first whole-photo output shrinks its rows into it before anything is
        // drawn, or the smallest band, or it rides along the decode as one more resampler.
        if let whole = outputs.firstIndex(where: { $0.plan.crop == nil && $0.band == nil }) {
            preview = .output(whole, upright: outputs[whole].whole.isEmpty)
        } else if let band = bands.indices.filter({ bands[$0].crop == nil }).min(by: {
            bands[$0].upright.width * bands[$0].upright.height < bands[$1].upright.width * bands[$1].upright.height
        }) {
            preview = .band(band)
        } else {
            preview = .decode
        }
        let previewPlan = PhotoFinisher.previewPlan(stored: stored, orientation: orientation)
        scale = DecodeScale(decoder, serving: outputs.map(\.plan) + bands + (preview == .decode ? [previewPlan] : []))
        planar = outputs.count == 1 && outputs[0].whole.isEmpty
            ? PhotoFinisher.planarChroma(decoder, template: template, plans: [outputs[0].plan], orientation: orientation) : nil
        needsSubject = regions == nil && (outputs.contains { $0.band != nil && !$0.ownBand } || template.recipes.contains {
            $0.recipe.text?.autoPositions != nil || $0.recipe.logo?.autoPositions != nil
        })
    }

    /// The order outputs are finished in: the whole photo's first (its warnings lead the
    /// photo's), then the others in the template's order.
    var order: [Int] {
        guard case .output(let whole, _) = preview else { return Array(outputs.indices) }
        return [whole] + outputs.indices.filter { $0 != whole }
    }

    /// The largest band a subject crop is cut from, where faces are looked for.
    var largestBand: Int? {
        let subjectBands = Set(outputs.filter { !$0.ownBand }.compactMap(\.band))
        return subjectBands.max { bands[$0].upright.width * bands[$0].upright.height < bands[$1].upright.width * bands[$1].upright.height }
    }

    /// Where the rows of an output that is not cut from a band come from: the JPEG's planes,
    /// or the decoder's rows.
    var input: OutputLine.Input {
        planar.map { .planes(lumaRowsPerChromaRow: $0) } ?? .decoded
    }
}

/// The scale a photo is decoded at: the smallest scale, in eighths of the full size (any M/8
/// for a JPEG but 3/8, `Layout.decodeEighths`; 8/8 for the others), that still serves every
/// output at its size, so the resamplers only ever shrink.
struct DecodeScale {
    /// The scale, in eighths of the full size (8: full size).
    let eighths: Int
    /// The size the decoder delivers at it, in stored orientation.
    let size: OutputPlan.Size

    /// The smallest scale `decoder` offers that serves every plan.
    init(_ decoder: any PhotoDecoder, serving plans: [OutputPlan]) {
        let stored = OutputPlan.Size(decoder.info.width, decoder.info.height)
        eighths = Layout.decodeEighths(
            stored: stored, outputs: plans, scales: decoder.scales,
            scaledSize: { e in let s = decoder.scaledSize(eighths: e); return .init(s.width, s.height) })
        let scaled = decoder.scaledSize(eighths: eighths)
        size = OutputPlan.Size(scaled.width, scaled.height)
    }

    /// What the report says of it (`applied.decodeScale`: "1/1", "5/8", "1/2"…).
    var label: String { Layout.scaleLabel(eighths: eighths) }
}
