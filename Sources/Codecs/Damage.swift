/// What to do with a photo whose data turns out damaged while it is decoded (the template key
/// `damaged`: reference, Damaged files).
public enum DamagePolicy: String, Sendable, CaseIterable {
    /// The photo fails as `corrupt-image` at the first damage found: a studio must not deliver a
    /// grey band or a shifted strip without knowing it (the default).
    case fail
    /// What can be decoded is finished (missing rows grey, as the libraries fill them) and the
    /// photo's warnings say what is damaged.
    case warn
}

/// What was wrong with a file's data, found while its pixels were decoded: the library's words,
/// how the picture suffers and where, so a person reads "JPEG data ends early at byte 40960:
/// the bottom 312 of 2736 rows are missing".
///
/// Decoders collect it per decode (libjpeg's warnings, libpng's CRC and truncation errors, a
/// HEIF or WebP file cut short) and hand it to `DecodeLimits.accept`, which throws it (policy
/// `fail`, or nothing of the picture is left) or lets the decode go on (`warn`).
public struct Damage: Sendable, Equatable, CustomStringConvertible {
    /// How the picture suffers.
    public enum Effect: Sendable, Equatable, Comparable {
        /// Part of the file is damaged but not the pixels: a chunk left out (a colour profile,
        /// metadata).
        case leftOut
        /// A progressive file's later scans are missing: the picture is there with less detail.
        case blurred
        /// The pixels may be wrong (corrupt data: grey blocks, shifted strips, wrong colours).
        case wrong
        /// The data is not in the file: those rows are grey.
        case missing
    }

    /// The first problem, in the library's words (or ours: "JPEG data ends early at byte 40960").
    public var reason: String
    /// The worst effect found.
    public var effect: Effect
    /// The first stored row (at full size, top to bottom as the file stores them) from which on
    /// the picture suffers; nil when the library does not say where.
    public var fromRow: Int?
    /// The picture's stored height, at full size.
    public var height: Int
    /// How many problems the library reported (a damaged JPEG can raise thousands).
    public var count: Int
    /// The EXIF orientation the stored rows are turned with, so the words name the side a person
    /// sees ("the left 312 columns" of a photo stored sideways).
    public var orientation: Int

    /// - Parameters:
    ///   - reason: the first problem, in words.
    ///   - effect: how the picture suffers.
    ///   - fromRow: the first stored row affected (full size), nil when not known.
    ///   - height: the stored height (full size).
    ///   - count: the problems reported.
    ///   - orientation: the EXIF orientation still to apply to the stored rows (1–8).
    public init(reason: String, effect: Effect, fromRow: Int?, height: Int, count: Int = 1, orientation: Int = 1) {
        self.reason = reason
        self.effect = effect
        self.fromRow = fromRow.map { min(max(0, $0), height) }
        self.height = height
        self.count = max(1, count)
        self.orientation = orientation
    }

    /// True when nothing of the picture is left to finish: every row is missing.
    public var leavesNothing: Bool { effect == .missing && (fromRow ?? 1) == 0 }

    /// What is damaged, in words: the reason, how many more problems, and what the picture
    /// shows ("…: the bottom 312 of 2736 rows are missing").
    public var words: String {
        var text = reason
        if count > 1 { text += " (and \(Self.thousands(count - 1)) more)" }
        return text + ": " + extent
    }

    /// The photo's warning under `damaged: "warn"`.
    public var warning: String { Self.warningPrefix + words }

    /// How a damage warning starts, in a report's `warnings`.
    public static let warningPrefix = "damaged: "

    /// The photo's failure under `damaged: "fail"`: the first problem and what it does to the
    /// picture (the decode stopped there, so the count of problems would be a part of it).
    public var error: PhotoError { PhotoError(.corruptImage, reason + ": " + extent) }

    public var description: String { words }

    /// What the picture shows, where.
    private var extent: String {
        guard let fromRow, fromRow < height else {
            switch effect {
            case .leftOut: return "that part of the file was left out"
            case .blurred: return "the photo lacks detail"
            case .wrong: return "the pixels may be wrong"
            case .missing: return "part of the picture is missing (grey)"
            }
        }
        let affected = height - fromRow
        let side = Self.side(ofStoredBottom: orientation)
        let lines = side == "top" || side == "bottom" ? "rows" : "columns"
        let place = fromRow == 0 ? "all \(Self.thousands(height)) \(lines)"
            : "the \(side) \(Self.thousands(affected)) of \(Self.thousands(height)) \(lines)"
        switch effect {
        case .leftOut: return "that part of the file was left out"
        case .blurred: return "\(place) lack detail (later scans are missing)"
        case .wrong: return "\(place) may be wrong (grey blocks, shifted strips, wrong colours)"
        case .missing: return "\(place) \(affected == 1 ? "is" : "are") missing (grey)"
        }
    }

    /// The side a person sees the stored picture's bottom rows on, once it is turned upright
    /// by EXIF `orientation`.
    static func side(ofStoredBottom orientation: Int) -> String {
        switch orientation {
        case 3, 4: "top"
        case 5, 8: "right"
        case 6, 7: "left"
        default: "bottom"
        }
    }

    /// A count of five digits or more with its thousands set apart by a space, as people
    /// write it ("17 267", "2736").
    static func thousands(_ n: Int) -> String {
        let digits = String(n)
        guard digits.count > 4 else { return digits }
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out += " " }
            out.append(c)
        }
        return out
    }
}

extension DecodeLimits {
    /// Lets a decode go on past `damage` (policy `warn`) or stops it.
    /// - Returns: the damage, to keep for the photo's warning.
    /// - Throws: `damage.error` (`corrupt-image`) under policy `fail`, or when nothing of the
    ///   picture is left whatever the policy.
    public func accept(_ damage: Damage) throws(PhotoError) -> Damage {
        if damaged == .fail || damage.leavesNothing { throw damage.error }
        return damage
    }
}
