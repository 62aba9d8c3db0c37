internal import CFreeType
internal import CHarfBuzz
import Foundation
import Pixels

/// Sets text in a font named by a fontconfig pattern: shaped with HarfBuzz (kerning,
/// ligatures), rasterised with FreeType into an 8-bit coverage mask, sized by the height
/// of its capitals. Characters the font lacks are drawn from the next installed font that
/// has them (fontconfig's fallback order), so "© 灵感图像大师" renders when a CJK font is
/// installed.
///
/// Built once per batch and shared by every worker: FreeType faces are not thread-safe,
/// so `render` holds a lock (setting a mark's text takes a millisecond or two).
public final class Typesetter: @unchecked Sendable {
    // @unchecked: every mutable field and every FreeType/HarfBuzz object is used under `lock`.
    /// The pattern as the template wrote it.
    public let pattern: String
    /// The font fontconfig chose for the pattern.
    public let primary: FontFile

    private let lock = NSLock()
    private let library: FT_Library
    /// [0] is the primary face; fallbacks are appended as characters need them.
    private var faces: [Face]
    /// fontconfig's sorted fallback list, fetched the first time a character is missing.
    private var chain: [(file: FontFile, has: (UInt32) -> Bool)]?
    /// Which face draws a character the primary lacks (−1: none has it).
    private var fallbackFor: [UInt32: Int] = [:]

    /// Finds and opens the font for `pattern`.
    /// - Parameter pattern: a fontconfig pattern ("DejaVu Sans:bold", "Noto Serif:italic").
    /// - Throws: `TypesetError` when no font matches or the matched file cannot be opened.
    public init(pattern: String) throws(TypesetError) {
        self.pattern = pattern
        var library: FT_Library?
        guard FT_Init_FreeType(&library) == 0, let library else { throw .badFont("FreeType cannot start") }
        self.library = library
        do {
            let file = try FontLookup.match(pattern)
            primary = file
            faces = [try Face(library: library, file: file)]
        } catch {
            FT_Done_FreeType(library)
            throw error
        }
    }

    deinit {
        faces.removeAll()  // every FT_Face goes before its library
        FT_Done_FreeType(library)
    }

    /// Words for the report when fontconfig had to substitute: the pattern names a family
    /// that is not installed (`"Helvetica Neue:bold"` on a machine without it), so another
    /// font was chosen. Nil when the family matched, or the pattern names a generic family
    /// (`sans-serif`, `serif`, `monospace`) or none.
    public var substitution: String? {
        let family = pattern.split(separator: ":", maxSplits: 1).first.map(String.init)?
            .split(separator: ",").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        let generic = ["", "sans-serif", "sans", "serif", "monospace", "mono", "system-ui", "cursive", "fantasy"]
        guard !generic.contains(family.lowercased()), family.lowercased() != primary.family.lowercased() else { return nil }
        return "font \"\(family)\" is not installed; fontconfig chose \(primary.family) instead"
    }

    /// The primary font's capital height as a fraction of its em: the ratio between the
    /// `capHeight` asked of `render` and the em size it sets.
    public var capHeightPerEm: Double {
        lock.lock(); defer { lock.unlock() }
        return faces[0].capHeightUnits / faces[0].unitsPerEm
    }

    /// Sets `text` with its capitals `capHeight` pixels tall.
    /// - Parameters:
    ///   - text: one line (a line break is drawn as whatever the font has for it).
    ///   - capHeight: the primary font's cap height in pixels (fractional sizes are exact:
    ///     outlines are not hinted).
    /// - Returns: the coverage mask, tight around the ink, and its metrics.
    public func render(_ text: String, capHeight: Double) -> RenderedText {
        precondition(capHeight > 0, "cap height must be positive")
        lock.lock(); defer { lock.unlock() }
        let em = capHeight * faces[0].unitsPerEm / faces[0].capHeightUnits
        var glyphs: [GlyphBitmap] = []
        var pen = 0.0
        var used: [String] = []
        var missing: [Unicode.Scalar] = []
        for run in runs(text, missing: &missing) {
            let face = faces[run.face]
            if !used.contains(face.file.family) { used.append(face.file.family) }
            // Size in 26.6 points at 72 dpi: pixels per em, to 1/64 px.
            FT_Set_Char_Size(face.ft, 0, FT_F26Dot6((em * 64).rounded()), 72, 72)
            let scale = em / face.unitsPerEm
            for shaped in shape(run.text, face: face) {
                let x = pen + Double(shaped.xOffset) * scale
                let y = -Double(shaped.yOffset) * scale
                if let bitmap = rasterise(face, glyph: shaped.glyph, x: x, y: y) { glyphs.append(bitmap) }
                pen += Double(shaped.xAdvance) * scale
            }
        }
        return RenderedText(glyphs: glyphs, capHeight: capHeight, em: em, advance: pen, fonts: used,
                            missing: missing)
    }

    // MARK: runs of one face

    private struct Run {
        var face: Int
        var text: String
    }

    /// Splits text into runs that one face draws. Spaces, joiners, combining marks and
    /// variation selectors stay with the run they are in, so shaping sees them together.
    private func runs(_ text: String, missing: inout [Unicode.Scalar]) -> [Run] {
        var result: [Run] = []
        for scalar in text.unicodeScalars {
            let current = result.last?.face ?? 0
            var face: Int
            if faces[0].glyph(scalar.value) != 0 {
                face = 0
            } else if Typesetter.followsNeighbour(scalar) {
                face = current
            } else if let fallback = fallbackFace(for: scalar.value) {
                face = fallback
            } else {
                face = 0
                if !missing.contains(scalar) { missing.append(scalar) }
            }
            // A space between two runs of a fallback face stays in the fallback run.
            if face == 0 && current != 0 && scalar.properties.isWhitespace && faces[current].glyph(scalar.value) != 0 {
                face = current
            }
            if let last = result.indices.last, result[last].face == face {
                result[last].text.unicodeScalars.append(scalar)
            } else {
                result.append(Run(face: face, text: String(scalar)))
            }
        }
        return result
    }

    private static func followsNeighbour(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark, .format, .control: return true
        default: return (0xFE00...0xFE0F).contains(scalar.value)
        }
    }

    /// The face (loaded on first use) of the first fallback font that has the character.
    private func fallbackFace(for scalar: UInt32) -> Int? {
        if let known = fallbackFor[scalar] { return known < 0 ? nil : known }
        if chain == nil { chain = FontLookup.fallbacks(pattern) }
        var found = -1
        for candidate in chain ?? [] where candidate.has(scalar) {
            if let loaded = faces.firstIndex(where: { $0.file.path == candidate.file.path && $0.file.index == candidate.file.index }) {
                if faces[loaded].glyph(scalar) != 0 { found = loaded; break }
                continue
            }
            // A font that fails to open is skipped: the next one may do.
            guard let face = try? Face(library: library, file: candidate.file), face.glyph(scalar) != 0 else { continue }
            faces.append(face)
            found = faces.count - 1
            break
        }
        fallbackFor[scalar] = found
        return found < 0 ? nil : found
    }

    // MARK: shaping and rasterising

    private struct Shaped {
        var glyph: UInt32
        var xAdvance: Int32, xOffset: Int32, yOffset: Int32
    }

    /// HarfBuzz shaping with the font's default features (kerning included), in font units.
    private func shape(_ text: String, face: Face) -> [Shaped] {
        guard let buffer = hb_buffer_create() else { return [] }
        defer { hb_buffer_destroy(buffer) }
        text.withCString { hb_buffer_add_utf8(buffer, $0, -1, 0, -1) }
        hb_buffer_guess_segment_properties(buffer)
        hb_shape(face.hb, buffer, nil, 0)
        var count: UInt32 = 0
        guard let infos = hb_buffer_get_glyph_infos(buffer, &count),
              let positions = hb_buffer_get_glyph_positions(buffer, &count) else { return [] }
        return (0..<Int(count)).map { i in
            Shaped(glyph: infos[i].codepoint, xAdvance: positions[i].x_advance,
                   xOffset: positions[i].x_offset, yOffset: positions[i].y_offset)
        }
    }

    /// One glyph's coverage, drawn at a fractional pen position (x right, y down from the
    /// baseline), so spacing is exactly what the shaper asked for.
    private func rasterise(_ face: Face, glyph: UInt32, x: Double, y: Double) -> GlyphBitmap? {
        guard FT_Load_Glyph(face.ft, glyph, LoadFlags.noHinting | LoadFlags.noBitmap) == 0,
              let slot = face.ft.pointee.glyph, slot.pointee.format == FT_GLYPH_FORMAT_OUTLINE else { return nil }
        let ix = x.rounded(.down), iy = y.rounded(.down)
        FT_Outline_Translate(&slot.pointee.outline, FT_Pos(((x - ix) * 64).rounded()), FT_Pos((-(y - iy) * 64).rounded()))
        // The outline's exact extent (26.6, y up from the pen's whole-pixel position): the
        // ink box a person sees, finer than the pixels the antialiasing touches.
        var outline = FT_BBox()
        FT_Outline_Get_BBox(&slot.pointee.outline, &outline)
        guard FT_Render_Glyph(slot, FT_RENDER_MODE_NORMAL) == 0 else { return nil }
        let bitmap = slot.pointee.bitmap
        let width = Int(bitmap.width), rows = Int(bitmap.rows), pitch = Int(bitmap.pitch)
        guard width > 0, rows > 0, let buffer = bitmap.buffer else { return nil }
        var pixels = [UInt8](repeating: 0, count: width * rows)
        for r in 0..<rows {
            // A negative pitch means bottom-up rows; index from the first row either way.
            let source = pitch >= 0 ? buffer + r * pitch : buffer + (rows - 1 - r) * (-pitch)
            for c in 0..<width { pixels[r * width + c] = source[c] }
        }
        return GlyphBitmap(left: Int(ix) + Int(slot.pointee.bitmap_left), top: Int(iy) - Int(slot.pointee.bitmap_top),
                           width: width, height: rows, pixels: pixels,
                           ink: InkBox(left: ix + Double(outline.xMin) / 64, top: iy - Double(outline.yMax) / 64,
                                       right: ix + Double(outline.xMax) / 64, bottom: iy - Double(outline.yMin) / 64))
    }
}

/// One rasterised glyph, placed relative to the pen's start on the baseline (y down).
struct GlyphBitmap {
    var left: Int, top: Int, width: Int, height: Int
    var pixels: [UInt8]
    /// The outline's exact extent, relative to the pen's start on the baseline (y down).
    var ink: InkBox
}

extension Typesetter {
    /// The first installed font (in fontconfig's order for `pattern`) that has `scalar`, or
    /// nil when none does: for messages, and for tests that need a second script installed.
    public static func installedFont(covering scalar: Unicode.Scalar, pattern: String = "sans-serif") -> FontFile? {
        FontLookup.fallbacks(pattern).first { $0.has(scalar.value) }?.file
    }
}
