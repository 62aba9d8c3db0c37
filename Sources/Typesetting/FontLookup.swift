internal import CFontconfig

/// A font file found by fontconfig: the file, the face inside it, and its family name.
public struct FontFile: Sendable, Equatable, CustomStringConvertible {
    /// The font file's path.
    public var path: String
    /// The face's index inside the file (collections such as `.ttc` hold several).
    public var index: Int
    /// The family name, for messages ("DejaVu Sans").
    public var family: String

    public var description: String { "\(family) (\(path))" }
}

/// Finding fonts with fontconfig: the pattern a template names ("DejaVu Sans:bold"), and
/// fonts that hold a character the first one lacks.
enum FontLookup {
    /// fontconfig's configuration, loaded once per process (`FcInit` is idempotent and
    /// thread-safe; the pattern calls below only read the configuration).
    private static let ready: Bool = FcInit() != 0

    /// The best installed font for `pattern`, as fontconfig chooses it (its aliases and
    /// substitutions included, the way every desktop application resolves a font name).
    /// - Throws: `TypesetError.noFont` when fontconfig knows no font at all, or the
    ///   pattern cannot be parsed.
    static func match(_ pattern: String) throws(TypesetError) -> FontFile {
        guard ready else { throw .noFont("fontconfig could not load its configuration") }
        guard let parsed = FcNameParse(pattern) else {
            throw .noFont("font \"\(pattern)\": not a fontconfig pattern (write it like \"DejaVu Sans:bold\")")
        }
        defer { FcPatternDestroy(parsed) }
        FcConfigSubstitute(nil, parsed, FcMatchPattern)
        FcDefaultSubstitute(parsed)
        var result = FcResultNoMatch
        guard let found = FcFontMatch(nil, parsed, &result), result == FcResultMatch else {
            throw .noFont("font \"\(pattern)\": no installed font matches (is fontconfig set up? try `fc-match \"\(pattern)\"`)")
        }
        defer { FcPatternDestroy(found) }
        guard let file = fontFile(found) else {
            throw .noFont("font \"\(pattern)\": fontconfig matched a font with no file")
        }
        return file
    }

    /// The fonts fontconfig would try for `pattern`, best first, with the characters each
    /// holds: the fallback chain for glyphs the first font lacks.
    static func fallbacks(_ pattern: String) -> [(file: FontFile, has: (UInt32) -> Bool)] {
        guard ready, let parsed = FcNameParse(pattern) else { return [] }
        defer { FcPatternDestroy(parsed) }
        FcConfigSubstitute(nil, parsed, FcMatchPattern)
        FcDefaultSubstitute(parsed)
        var result = FcResultNoMatch
        guard let set = FcFontSort(nil, parsed, FcFalse, nil, &result) else { return [] }
        defer { FcFontSetDestroy(set) }
        var chain: [(file: FontFile, has: (UInt32) -> Bool)] = []
        let count = Int(set.pointee.nfont)
        for i in 0..<count {
            guard let font = set.pointee.fonts[i], let file = fontFile(font) else { continue }
            var charset: OpaquePointer?
            guard FcPatternGetCharSet(font, "charset", 0, &charset) == FcResultMatch, let charset,
                  let copy = FcCharSetCopy(charset) else { continue }
            let owned = CharSet(copy)
            chain.append((file, { owned.has($0) }))
        }
        return chain
    }

    private static func fontFile(_ font: OpaquePointer) -> FontFile? {
        var path: UnsafeMutablePointer<FcChar8>?
        guard FcPatternGetString(font, "file", 0, &path) == FcResultMatch, let path else { return nil }
        var index: Int32 = 0
        if FcPatternGetInteger(font, "index", 0, &index) != FcResultMatch { index = 0 }
        var family: UnsafeMutablePointer<FcChar8>?
        let name = FcPatternGetString(font, "family", 0, &family) == FcResultMatch && family != nil
            ? String(cString: family!) : "unnamed font"
        return FontFile(path: String(cString: path), index: Int(index), family: name)
    }
}

/// One owner for a fontconfig character set (reference counted by fontconfig).
private final class CharSet: @unchecked Sendable {
    // @unchecked: only read after creation; FcCharSetHasChar does not modify the set.
    private let set: OpaquePointer
    init(_ set: OpaquePointer) { self.set = set }
    deinit { FcCharSetDestroy(set) }
    func has(_ scalar: UInt32) -> Bool { FcCharSetHasChar(set, scalar) != 0 }
}
