import Pixels

/// Where one output comes from and how big it ends up: pure geometry, decided from the
/// header alone (reference, Templates, the order of operations: orient → crop → resize).
public struct OutputPlan: Sendable, Equatable {
    /// The crop this output is for, or nil for the whole photo.
    public var crop: Template.Crop?
    /// The crop rectangle in upright source pixels (the whole photo when `crop` is nil).
    public var uprightCrop: PixelRect
    /// The same rectangle in stored source pixels (before orientation).
    public var storedCrop: PixelRect
    /// The finished size, upright, before any frame.
    public var upright: Size
    /// The size the resampler produces, in stored orientation (upright turned back).
    public var stored: Size
    /// Where the crop goes: around the subject or centred (`.center` for the whole photo).
    public var focus: Template.CropFocus = .center

    /// A width and a height in pixels.
    public struct Size: Sendable, Equatable, CustomStringConvertible {
        public var width: Int
        public var height: Int
        public init(_ width: Int, _ height: Int) { self.width = width; self.height = height }
        public var description: String { "\(width)×\(height)" }
        public var swapped: Size { Size(height, width) }
    }
}

/// A crop that `skipIfCutOver` ruled out.
public struct SkippedCrop: Sendable, Equatable {
    public var crop: Template.Crop
    /// The fraction of the photo the crop would have cut away.
    public var cutFraction: Double
    /// The variant whose crop it was (nil: the template's own).
    public var variant: String? = nil
}

/// The geometry of every output of one photo.
public enum Layout {
    /// True when an EXIF orientation swaps width and height.
    public static func swapsAxes(_ orientation: Int) -> Bool { (5...8).contains(orientation) }

    /// The centred aspect-fill crop of `ratio` inside a `size` photo, and the fraction of the
    /// photo it cuts away.
    public static func centredCrop(of size: OutputPlan.Size, ratioWidth rw: Int, ratioHeight rh: Int)
        -> (rect: PixelRect, cut: Double) {
        precondition(rw > 0 && rh > 0)
        var w = size.width, h = size.height
        // Compare w/h with rw/rh in integers to avoid rounding a perfect fit away.
        if w * rh > h * rw {
            w = max(1, min(size.width, Int((Double(h) * Double(rw) / Double(rh)).rounded())))
        } else if w * rh < h * rw {
            h = max(1, min(size.height, Int((Double(w) * Double(rh) / Double(rw)).rounded())))
        }
        let rect = PixelRect(x: (size.width - w) / 2, y: (size.height - h) / 2, width: w, height: h)
        let cut = 1 - Double(w * h) / Double(size.width * size.height)
        return (rect, cut)
    }

    /// The size `resize` asks for, from a `size` source. Never upscales; keeps the aspect
    /// ratio (each side rounded from one common factor).
    public static func resized(_ size: OutputPlan.Size, by resize: Template.Resize?) -> OutputPlan.Size {
        guard let resize else { return size }
        let factor: Double
        switch resize {
        case .longSide(let n): factor = Double(n) / Double(max(size.width, size.height))
        case .shortSide(let n): factor = Double(n) / Double(min(size.width, size.height))
        case .fit(let w, let h): factor = min(Double(w) / Double(size.width), Double(h) / Double(size.height))
        }
        guard factor < 1 else { return size }
        return OutputPlan.Size(max(1, Int((Double(size.width) * factor).rounded())),
                               max(1, Int((Double(size.height) * factor).rounded())))
    }

    /// Plans every output of a photo: one per crop ratio (or one of the whole photo when the
    /// template has no crops), with the crops that the skip rule rules out.
    /// - Parameters:
    ///   - stored: the source size as stored (full scale).
    ///   - orientation: the EXIF orientation still to apply (1–8).
    ///   - template: the resize and crops.
    public static func plan(stored: OutputPlan.Size, orientation: Int, template: Template)
        -> (outputs: [OutputPlan], skipped: [SkippedCrop]) {
        let upright = swapsAxes(orientation) ? stored.swapped : stored
        var outputs: [OutputPlan] = []
        var skipped: [SkippedCrop] = []
        let crops: [Template.Crop?] = template.crops.isEmpty ? [nil] : template.crops
        for crop in crops {
            var rect = PixelRect(x: 0, y: 0, width: upright.width, height: upright.height)
            if let crop {
                let (r, cut) = centredCrop(of: upright, ratioWidth: crop.width, ratioHeight: crop.height)
                if let limit = crop.skipIfCutOver, cut > limit {
                    skipped.append(SkippedCrop(crop: crop, cutFraction: cut))
                    continue
                }
                rect = r
            }
            let target = resized(OutputPlan.Size(rect.width, rect.height), by: template.resize)
            let storedRect = Orientation.storedRect(forUpright: rect, storedWidth: stored.width,
                                                    storedHeight: stored.height, exif: orientation)
            outputs.append(OutputPlan(crop: crop, uprightCrop: rect, storedCrop: storedRect, upright: target,
                                      stored: swapsAxes(orientation) ? target.swapped : target,
                                      focus: crop.map { $0.focus ?? template.cropFocus } ?? .center))
        }
        return (outputs, skipped)
    }

    /// The whole photo at the scale of a subject crop's output, or nil when the crop needs no
    /// placing (centred, or the photo already has the crop's shape). A subject crop streams
    /// into this band and is cut from it once the decode has shown where the subject is: the
    /// crop slides along one axis only, so the band is the window's length on the other axis.
    public static func band(for plan: OutputPlan, upright: OutputPlan.Size) -> OutputPlan.Size? {
        guard plan.crop != nil, plan.focus == .subject else { return nil }
        let c = plan.uprightCrop
        if c.width < upright.width {
            let scale = Double(plan.upright.height) / Double(c.height)
            return .init(max(plan.upright.width, Int((Double(upright.width) * scale).rounded())), plan.upright.height)
        }
        if c.height < upright.height {
            let scale = Double(plan.upright.width) / Double(c.width)
            return .init(plan.upright.width, max(plan.upright.height, Int((Double(upright.height) * scale).rounded())))
        }
        return nil
    }

    /// A plan reading the whole photo into a `size` image (upright size given): a band, or
    /// the preview.
    public static func wholePhoto(stored: OutputPlan.Size, orientation: Int, size: OutputPlan.Size) -> OutputPlan {
        let upright = swapsAxes(orientation) ? stored.swapped : stored
        return OutputPlan(crop: nil, uprightCrop: PixelRect(x: 0, y: 0, width: upright.width, height: upright.height),
                          storedCrop: PixelRect(x: 0, y: 0, width: stored.width, height: stored.height),
                          upright: size, stored: swapsAxes(orientation) ? size.swapped : size)
    }

    /// The plan with its crop moved so its top-left corner is at `origin` (upright source
    /// pixels, kept inside the photo).
    public static func placed(_ plan: OutputPlan, at origin: (x: Int, y: Int), stored: OutputPlan.Size,
                              orientation: Int) -> OutputPlan {
        let upright = swapsAxes(orientation) ? stored.swapped : stored
        var result = plan
        result.uprightCrop.x = min(upright.width - plan.uprightCrop.width, max(0, origin.x))
        result.uprightCrop.y = min(upright.height - plan.uprightCrop.height, max(0, origin.y))
        result.storedCrop = Orientation.storedRect(forUpright: result.uprightCrop, storedWidth: stored.width,
                                                   storedHeight: stored.height, exif: orientation)
        return result
    }

    /// Where a placed crop's output lies in its band, in upright band pixels: the output's
    /// size, at the crop's position scaled to the band (kept inside it).
    public static func window(of plan: OutputPlan, inBand band: OutputPlan.Size, upright: OutputPlan.Size) -> PixelRect {
        let x = Int((Double(plan.uprightCrop.x) * Double(band.width) / Double(upright.width)).rounded())
        let y = Int((Double(plan.uprightCrop.y) * Double(band.height) / Double(upright.height)).rounded())
        return PixelRect(x: min(band.width - plan.upright.width, max(0, x)),
                         y: min(band.height - plan.upright.height, max(0, y)),
                         width: plan.upright.width, height: plan.upright.height)
    }

    /// A box of the upright photo (fractions) as fractions of one output (its crop), clipped
    /// to it; nil when none of it is in the output.
    public static func box(_ box: FocusBox, in plan: OutputPlan, upright: OutputPlan.Size) -> FocusBox? {
        let c = plan.uprightCrop
        let x0 = (box.x * Double(upright.width) - Double(c.x)) / Double(c.width)
        let y0 = (box.y * Double(upright.height) - Double(c.y)) / Double(c.height)
        let x1 = (box.maxX * Double(upright.width) - Double(c.x)) / Double(c.width)
        let y1 = (box.maxY * Double(upright.height) - Double(c.y)) / Double(c.height)
        let cx0 = max(0, x0), cy0 = max(0, y0), cx1 = min(1, x1), cy1 = min(1, y1)
        guard cx1 > cx0, cy1 > cy0 else { return nil }
        return FocusBox(x: cx0, y: cy0, width: cx1 - cx0, height: cy1 - cy0)
    }

    /// The smallest decode scale, in eighths of the full size, whose decoded image still covers
    /// every output at its target size (so the resampler only ever shrinks), or 8 (full size).
    /// 3/8 is never chosen (`skippedEighths`): 1/2 is taken instead.
    /// - Parameters:
    ///   - stored: full-scale stored size.
    ///   - outputs: the planned outputs.
    ///   - scales: what the decoder offers, in eighths (a JPEG: 1…8).
    ///   - scaledSize: the decoder's size at a scale.
    public static func decodeEighths(stored: OutputPlan.Size, outputs: [OutputPlan], scales: [Int],
                                     scaledSize: (Int) -> OutputPlan.Size) -> Int {
        scales.filter { !skippedEighths.contains($0) }.sorted().first { eighths in
            let scaled = scaledSize(eighths)
            return outputs.allSatisfy { plan in
                let r = scaledCrop(plan.storedCrop, from: stored, to: scaled)
                return r.width >= plan.stored.width && r.height >= plan.stored.height
            }
        } ?? 8
    }

    /// Scales a JPEG decodes at but the finishing path does not use. Resized to the sizes it would
    /// be chosen for (1.0–1.5 × below it), a 3/8 decode of fine periodic detail (stripes of a
    /// 6-pixel period) ends 3–5 dB PSNR further from the ideal Lanczos than a 1/2 decode does;
    /// 5/8, 3/4 and 7/8 stay at least as close as the full decode they replace, within 0.1 dB
    /// (docs/reference.md, Decode scale).
    static let skippedEighths: Set<Int> = [3]

    /// A decode scale as the report writes it: eighths/8 in lowest terms ("1/1", "5/8", "3/4").
    public static func scaleLabel(eighths: Int) -> String {
        var divisor = 8
        while divisor > 1 && !(eighths % divisor == 0 && 8 % divisor == 0) { divisor /= 2 }
        return "\(eighths / divisor)/\(8 / divisor)"
    }

    /// A rectangle in full-scale stored pixels mapped onto a scaled decode, clamped to it.
    public static func scaledCrop(_ rect: PixelRect, from full: OutputPlan.Size, to scaled: OutputPlan.Size) -> PixelRect {
        if full == scaled { return rect }
        let sx = Double(scaled.width) / Double(full.width)
        let sy = Double(scaled.height) / Double(full.height)
        let x0 = Int((Double(rect.x) * sx).rounded()), y0 = Int((Double(rect.y) * sy).rounded())
        let x1 = min(scaled.width, Int((Double(rect.x + rect.width) * sx).rounded()))
        let y1 = min(scaled.height, Int((Double(rect.y + rect.height) * sy).rounded()))
        return PixelRect(x: x0, y: y0, width: max(1, x1 - x0), height: max(1, y1 - y0))
    }
}
