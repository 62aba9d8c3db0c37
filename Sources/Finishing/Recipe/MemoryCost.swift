import Codecs
import Pixels

extension PhotoFinisher {
    /// The most memory finishing a photo holds at once, from its header alone (the `memoryBudget`'s
    /// cost of a photo: reference, Config): the decoder's own working memory plus what each output
    /// holds on the way, summed as if every output were at its largest at the same moment (an upper
    /// bound of what `PixelMeter` measures).
    ///
    /// - An output that streams and needs no turn holds a few bands (`UprightRows`): a
    ///   48 MP photo at full resolution costs a few MB, not its 146 MB frame.
    /// - An output turned a quarter or upside down, or finished whole (sharpened, `maxBytes`,
    ///   marks that read the pixels), holds its upright frame; finished whole, a second
    ///   copy on the way (orientation, frame). A JPEG turned at full resolution holds its
    ///   YCbCr planes instead: 1.5 bytes a pixel for 4:2:0, 2 for 4:2:2.
    /// - A subject crop placed after the decode holds the whole photo at its scale, and,
    ///   while the face detector searches it, the detector's working memory
    ///   (`FaceDetector.workingBytes`, a few MB: the search is at most 1,120 × 720).
    /// - The preview and the file's bytes are small or counted by the caller.
    public func memoryCost(of decoder: any PhotoDecoder) -> Int {
        let info = decoder.info
        let orientation = Self.orientationToApply(info)
        let stored = OutputPlan.Size(info.width, info.height)
        let upright = Layout.swapsAxes(orientation) ? stored.swapped : stored
        let channels = info.hasAlpha ? 4 : 3
        let streamsRows = orientation == 1 || orientation == 2
        let assets = try? marks.get()
        let regions = Self.regionSubject(info, orientation: orientation) != nil
        // Each term at most 2^52 bytes (more than any machine has), so sums never overflow.
        let most = 1 << 52
        func bytes(_ size: OutputPlan.Size, _ channels: Int) -> Int {
            min(DecodeLimits.byteCount(width: size.width, height: size.height, channels: channels) ?? most, most)
        }
        var total = min(decoder.workingBytes, most)
        var bands: [OutputPlan.Size] = []
        let plans = template.recipes.flatMap { _, recipe in
            Layout.plan(stored: stored, orientation: orientation, template: recipe).outputs.map { (recipe, $0) }
        }
        // A turned photo whose JPEG planes are held instead of RGB (see `planarChroma`).
        let planar = Self.planarChroma(decoder, template: template, plans: plans.map(\.1), orientation: orientation)
        for (recipe, plan) in plans {
            let border = OutputSettings.border(recipe.frame, photo: plan.upright)
            let framed = OutputPlan.Size(plan.upright.width + 2 * border, plan.upright.height + 2 * border)
            let bandRows = UprightRows.rowsPerBand(rowBytes: framed.width * channels, height: framed.height)
            // A band, its flattened and framed copies, the resampler's ring.
            let streaming = min(4 * bandRows * framed.width * channels, most)
            if !regions, let band = Layout.band(for: plan, upright: upright) {
                if !bands.contains(band) { bands.append(band); total += bytes(band, channels) }
                total += 2 * bytes(framed, channels)
            } else if Self.streams(plan, template: recipe), assets.map({ !MarkPainter(template: recipe, assets: $0).needsPixels }) ?? true {
                let held = planar.map { bytes(plan.upright, 1) + 2 * bytes(plan.upright, 1) / (2 * $0) }
                    ?? bytes(plan.upright, channels)
                total += streaming + (streamsRows ? 0 : held)
            } else {
                total += bytes(plan.upright, channels) + bytes(framed, channels)
            }
        }
        // Faces are looked for once, in the largest band (PhotoFinisher.finish's findSubject).
        if !bands.isEmpty { total += FaceDetector.workingBytes(width: upright.width, height: upright.height) }
        let preview = Layout.resized(upright, by: .longSide(Self.previewLongSide))
        return min(total + 2 * bytes(preview, 4), most)
    }
}
