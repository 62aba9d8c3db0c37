internal import CFreeType
internal import CHarfBuzz

/// One font face, open twice: in FreeType (outlines, rasterising) and in HarfBuzz
/// (shaping: kerning, ligatures, marks), both from the same file. Owns both; freed in
/// `deinit`. Not thread-safe: a `Typesetter` uses its faces under its lock.
final class Face {
    let file: FontFile
    let ft: FT_Face
    /// hb_font_t, at the face's own scale (positions come back in font units).
    let hb: OpaquePointer
    let unitsPerEm: Double
    /// The capitals' height in font units: OS/2 `sCapHeight` when the font records it,
    /// else measured from the outline of 'H', else 70 % of the ascender.
    let capHeightUnits: Double

    init(library: FT_Library, file: FontFile) throws(TypesetError) {
        var face: FT_Face?
        let status = FT_New_Face(library, file.path, FT_Long(file.index), &face)
        guard status == 0, let face else {
            throw .badFont("font file \(file.path): FreeType cannot open it (error \(status))")
        }
        guard (face.pointee.face_flags & FT_Long(FT_FACE_FLAG_SCALABLE)) != 0, face.pointee.units_per_EM > 0 else {
            FT_Done_Face(face)
            throw .badFont("font file \(file.path): a bitmap font cannot be scaled to the photo; choose an outline (TrueType/OpenType) font")
        }
        let blob = hb_blob_create_from_file(file.path)
        defer { hb_blob_destroy(blob) }
        let hbFace = hb_face_create(blob, UInt32(file.index))
        defer { hb_face_destroy(hbFace) }
        guard hb_blob_get_length(blob) > 0, let font = hb_font_create(hbFace) else {
            FT_Done_Face(face)
            throw .badFont("font file \(file.path): HarfBuzz cannot read it")
        }
        self.file = file
        self.ft = face
        self.hb = font
        self.unitsPerEm = Double(face.pointee.units_per_EM)
        self.capHeightUnits = Face.capHeight(face)
    }

    deinit {
        hb_font_destroy(hb)
        FT_Done_Face(ft)
    }

    /// The glyph for a character, or 0 (`.notdef`) when the face has none.
    func glyph(_ scalar: UInt32) -> UInt32 { FT_Get_Char_Index(ft, FT_ULong(scalar)) }

    private static func capHeight(_ face: FT_Face) -> Double {
        if let table = FT_Get_Sfnt_Table(face, FT_SFNT_OS2) {
            let os2 = table.assumingMemoryBound(to: TT_OS2.self).pointee
            // sCapHeight exists from OS/2 version 2 on.
            if os2.version >= 2 && os2.version != 0xFFFF && os2.sCapHeight > 0 { return Double(os2.sCapHeight) }
        }
        if FT_Load_Char(face, 0x48, LoadFlags.noScale) == 0, let slot = face.pointee.glyph {
            var box = FT_BBox()
            FT_Outline_Get_CBox(&slot.pointee.outline, &box)
            if box.yMax > 0 { return Double(box.yMax) }
        }
        return max(1, Double(face.pointee.ascender) * 0.7)
    }
}

/// FreeType's FT_LOAD_* flags, spelled out (the C macros are expressions Swift does not import).
enum LoadFlags {
    /// FT_LOAD_NO_SCALE: outlines in font units.
    static let noScale: Int32 = 1 << 0
    /// FT_LOAD_NO_HINTING: outlines scaled exactly, so sizes are linear (a 37.3 px cap
    /// height is 37.3 px, not snapped to the grid).
    static let noHinting: Int32 = 1 << 1
    /// FT_LOAD_NO_BITMAP: never an embedded bitmap strike; always the outline.
    static let noBitmap: Int32 = 1 << 3
}
