/// A whole image held as bands of rows (at least 1 MiB each, `UprightRows.rowsPerBand`):
/// each band's storage is made when one of its rows is first written and freed once the band
/// has been handed on, so an image built whole and then written band by band shrinks as it
/// goes. Used by the writers that must hold a turned photo whole (`UprightRows`,
/// `UprightPlanes`).
///
/// Not thread-safe: one image belongs to one writer.
final class BandedImage {
    /// Bytes per row, rows in all, rows per band (the last band may be shorter).
    let rowBytes: Int
    let height: Int
    let bandRows: Int
    private var bands: [PixelStorage?]

    init(rowBytes: Int, height: Int, bandRows: Int) {
        self.rowBytes = rowBytes
        self.height = height
        self.bandRows = bandRows
        bands = Array(repeating: nil, count: (height + bandRows - 1) / bandRows)
    }

    /// How many bands.
    var count: Int { bands.count }

    /// The first row of band `index`, and how many rows it has.
    func rows(ofBand index: Int) -> (top: Int, count: Int) {
        (index * bandRows, min(bandRows, height - index * bandRows))
    }

    /// The storage of band `index`, made on first use.
    func band(_ index: Int) -> PixelStorage {
        if let made = bands[index] { return made }
        let made = PixelStorage(byteCount: rows(ofBand: index).count * rowBytes)
        bands[index] = made
        return made
    }

    /// Row `y` (its band made on first use).
    func row(_ y: Int) -> UnsafeMutablePointer<UInt8> {
        let index = y / bandRows
        return band(index).base + (y - index * bandRows) * rowBytes
    }

    /// Band `index` let go: its storage (nil when none of its rows was ever written), freed
    /// once the caller is done with it.
    func release(_ index: Int) -> PixelStorage? {
        defer { bands[index] = nil }
        return bands[index]
    }
}
