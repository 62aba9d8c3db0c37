import Codecs
import Pixels

extension PhotoFinisher {
    /// The most memory finishing a photo holds at once, from its header alone (the `memoryBudget`'s
    /// cost of a photo: reference, Config): the decoder's own working memory plus what each output's
    /// line holds on the way, summed as if every line were at its largest at the same moment (an
    /// upper bound of what `PixelMeter` measures). It prices the plan `finish` carries out
    /// (`PhotoPlan`), so the two cannot disagree.
    ///
    /// - A line that streams and needs no turn holds a few bands (`UprightRows`): a 48 MP
    ///   photo at full resolution costs a few MB, not its 146 MB frame.
    /// - A line turned a quarter or upside down holds its upright frame; a JPEG turned at full
    ///   resolution holds its YCbCr planes instead: 1.5 bytes a pixel for 4:2:0, 2 for 4:2:2.
    /// - A line with whole steps (`OutputLine.WholeSteps`) holds its upright frame, and as
    ///   much again for what those steps work with (the sharpening's luma and blur; a turned
    ///   photo's upright frame, handed to the held copy band by band), and its bands.
    /// - A subject crop placed after the decode holds the whole photo at its scale (its band,
    ///   shared by the crops of that scale) and its own line, and, while the face detector
    ///   searches the band, the detector's working memory (`FaceDetector.workingBytes`, a few
    ///   MB: the search is at most 1,120 × 720).
    /// - The preview and the file's bytes are small or counted by the caller.
    public func memoryCost(of decoder: any PhotoDecoder) -> Int {
        // Each term at most 2^52 bytes (more than any machine has), so sums never overflow.
        let most = 1 << 52
        // Without its marks no photo is finished: each fails with their reason before its
        // decode, holding only the decoder the caller opened.
        guard case .success(let assets) = marks else { return min(decoder.workingBytes, most) }
        let plan = PhotoPlan(template: template, decoder: decoder, facts: PhotoFacts(), assets: assets)
        let channels = plan.channels
        let streamsRows = plan.orientation == 1 || plan.orientation == 2
        func bytes(_ size: OutputPlan.Size, _ channels: Int) -> Int {
            min(DecodeLimits.byteCount(width: size.width, height: size.height, channels: channels) ?? most, most)
        }
        var total = min(decoder.workingBytes, most)
        for band in plan.bands { total += bytes(band.upright, channels) }
        for output in plan.outputs {
            let recipe = plan.recipes[output.recipe].finisher.template
            let border = OutputSettings.border(recipe.frame, photo: output.plan.upright)
            let framed = OutputPlan.Size(output.plan.upright.width + 2 * border, output.plan.upright.height + 2 * border)
            let bandRows = UprightRows.rowsPerBand(rowBytes: framed.width * channels, height: framed.height)
            // A band, its flattened and framed copies, the resampler's ring.
            let streaming = min(4 * bandRows * framed.width * channels, most)
            if output.band != nil {
                total += 2 * bytes(framed, channels)
            } else if output.whole.isEmpty {
                let held = plan.planar.map { bytes(output.plan.upright, 1) + 2 * bytes(output.plan.upright, 1) / (2 * $0) }
                    ?? bytes(output.plan.upright, channels)
                total += streaming + (streamsRows ? 0 : held)
            } else {
                total += streaming + bytes(output.plan.upright, channels) + bytes(framed, channels)
            }
        }
        // Faces are looked for once, in the largest band (`PhotoFinisher.searchSubject`).
        if !plan.bands.isEmpty { total += FaceDetector.workingBytes(width: plan.upright.width, height: plan.upright.height) }
        let preview = Layout.resized(plan.upright, by: .longSide(Self.previewLongSide))
        return min(total + 2 * bytes(preview, 4), most)
    }
}
