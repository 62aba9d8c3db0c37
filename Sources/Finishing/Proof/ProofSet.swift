import Codecs
import Foundation
import Pixels

/// The proof's set for `harmonize` (reference: `photofinish proof`): one street scene shot under
/// five lights, finished as shot and as the template harmonizes it, so the sheet shows what
/// the key does to a set before any batch is run.
enum ProofSet {
    /// The five shots: warm to cool, under- to over-exposed.
    static let lights: [(kelvin: Double, ev: Double)] = [(3400, 0.6), (4300, -0.8), (5200, 0), (6300, 0.9), (7400, -0.5)]

    /// One finished shot: its first output and the words under it.
    struct Tile {
        var image: Image
        var caption: String
    }

    /// The set as shot and as harmonized (tiles of the template's first output), or why not.
    /// - Parameters:
    ///   - shrink: divides the shots' size (1,600 × 1,200), as `SamplePhotos.proofSet`.
    ///   - tile: the decoded tile of an output.
    /// - Throws: `PhotoError` from finishing a shot.
    static func rows(_ finisher: PhotoFinisher, shrink: Int, maxPixels: Int,
                     tile: (FinishedOutput) throws(PhotoError) -> Image) throws(PhotoError) -> (before: [Tile], after: [Tile]) {
        guard let settings = finisher.template.harmonize else { return ([], []) }
        let scene = SampleSet.street(width: max(64, 1600 / max(1, shrink)), height: max(48, 1200 / max(1, shrink)))
        let limits = DecodeLimits(maxPixels: maxPixels)
        var shots: [[UInt8]] = [], looks: [PhotoLook.Look] = []
        for light in lights {
            let bytes = try encodeImage(SampleSet.shot(scene, kelvin: light.kelvin, ev: light.ev),
                                        options: EncodeOptions(format: .jpeg, quality: 92))
            shots.append(bytes)
            looks.append(try PhotoLook.take(bytes: bytes, limits: limits))
        }
        // The batch's part, as a batch does it (`SetLight` in Batches): the median light, or the
        // named shot's when the name is one of the five.
        let names = lights.map { "\(Int($0.kelvin)) K.jpg" }
        var reference = LightEstimate.median(looks.map(\.light))
        if case .file(let name) = settings.reference, let named = names.firstIndex(of: name) { reference = looks[named].light }
        var before: [Tile] = [], after: [Tile] = []
        for (i, (bytes, look)) in zip(shots, looks).enumerated() {
            let facts = PhotoFacts(filename: names[i], batch: "proof", index: i + 1, count: shots.count)
            let correction = LightCorrection.toward(reference, from: look.light, strength: settings.strength,
                                                    whiteBalance: settings.whiteBalance, exposure: settings.exposure)
            let shot = String(format: "%d K, %+.1f EV", Int(lights[i].kelvin), lights[i].ev)
            if let output = try finisher.finish(bytes: bytes, limits: limits, facts: facts).outputs.first {
                before.append(Tile(image: try tile(output), caption: shot + " · as shot"))
            }
            if let output = try finisher.finish(bytes: bytes, limits: limits, facts: facts, light: correction).outputs.first {
                let g = correction.gains
                after.append(Tile(image: try tile(output),
                                  caption: String(format: "gains %.2f %.2f %.2f · %+.2f EV", g[0], g[1], g[2], correction.exposure)))
            }
        }
        return (before, after)
    }
}
