import Finishing
import Foundation

/// `harmonize` in words, for `report.html` and `photofinish report`.
enum LightWords {
    /// What was done to one photo: "warmer, 0.4 EV brighter", "left as it was".
    static func correction(_ record: Applied.HarmonizeRecord) -> String {
        var words: [String] = []
        let g = record.gains
        let warmth = log(g[0] / g[2]), tint = log(g[1] / (g[0] * g[2]).squareRoot())
        if abs(warmth) >= 0.03 { words.append(warmth > 0 ? "warmer" : "cooler") }
        if abs(tint) >= 0.03 { words.append(tint > 0 ? "greener" : "more magenta") }
        if abs(record.exposure) >= 0.05 {
            words.append(String(format: "%.1f EV %@", abs(record.exposure), record.exposure > 0 ? "brighter" : "darker"))
        }
        let done = words.isEmpty ? "left as it was" : words.joined(separator: ", ")
        return done + (record.again.map { " (\($0))" } ?? "")
    }

    /// What the batch was brought toward and how far apart its photos were, before and after.
    static func summary(_ light: Report.HarmonizeSummary) -> String {
        let toward = light.reference == "median" ? "the batch's median light" : light.reference
        let s = light.spread
        return String(format: "Harmonized toward %@: white points ΔE %.1f → %.1f apart, exposures %.2f → %.2f EV",
                      toward, s.before.white, s.after.white, s.before.exposure, s.after.exposure)
    }
}
