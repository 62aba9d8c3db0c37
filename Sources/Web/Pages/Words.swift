import Batches
import Foundation

/// What the console says to a person behind a shop's counter: why a photo failed in plain
/// words (the report's code and message stay beside them, for whoever fixes it), what each
/// output is, how far a batch is. One place for the words, so every page says them alike.
enum Words {
    /// Why a photo failed, for the person who brought it, from the report's error code.
    static func reason(code: String?) -> String {
        switch code {
        case "unsupported-format": "This file is not a photo PhotoFinish can read."
        case "camera-raw": "This is a camera RAW file, which PhotoFinish does not convert: send the JPEG or HEIC of it instead."
        case "corrupt-image": "The photo is damaged: part of it is missing or broken. Copy it from the camera or phone again."
        case "too-large": "The photo is larger than this hot folder takes."
        case "empty-file": "The file is empty: the copy or upload did not finish. Send it again."
        case "io-error": "The file could not be read or written (a disk or network problem). Try again."
        case "timeout": "The photo took too long to finish. Try again; if it happens again, tell your administrator."
        case "duplicate": "The same photo was finished before."
        case "interrupted": "It was not finished: PhotoFinish stopped. Try again."
        default: "It could not be finished."
        }
    }

    /// What an output is, in a word or two: its variant and crop ("thumb", "4:5", "thumb 1:1"),
    /// or "photo" for the plain one.
    static func output(_ output: Report.Output) -> String {
        let parts = [output.variant, output.applied.crop?.ratio].compactMap { $0 }
        return parts.isEmpty ? "photo" : parts.joined(separator: " ")
    }

    /// What one of the batch's own outputs is: "story 1 of 3", "story", "colour card".
    static func setOutput(_ file: String) -> String {
        let lower = file.lowercased()
        if lower.contains("-color-card.") || lower.contains("-colour-card.") { return "colour card" }
        if let range = lower.range(of: "-story-") {
            let rest = lower[range.upperBound...].split(separator: ".").first.map(String.init) ?? ""
            let parts = rest.split(separator: "-")
            if parts.count == 3, parts[1] == "of" { return "story \(parts[0]) of \(parts[2])" }
        }
        if lower.contains("-story.") { return "story" }
        return file
    }

    /// "1 photo", "6 photos".
    static func photos(_ n: Int) -> String { HTML.count(n, "photo") }
}
