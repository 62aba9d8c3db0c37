import Codecs
import System

/// What a batch's files are, as a memory card or a real folder holds them (reference: What a card
/// holds): the photos (each one file finished, with the other files of the same photo as
/// its `alternates` and its sidecars), and the files that are no photo at all, `ignored`.
///
/// Pure: decided from each file's name and what its first bytes are (`sniff`), so the same
/// files always give the same photos in the same order (a resumed batch finds its items
/// where the journal left them).
///
/// - A **sidecar** (`.xmp`, `.aae`, `.thm`, `.pp3`, `.dop`, whatever it holds: a `.thm` is a
///   small JPEG) goes with the photo of its stem (`IMG_1.xmp` and `IMG_1.CR2.xmp` with
///   `IMG_1`); it is ignored with the reason `sidecar of <photo>`, or `sidecar (no photo
///   IMG_1 in the batch)`.
/// - **A pair**: readable images and camera raws sharing a stem (case-insensitive) in one
///   folder, as on a card, are one photo: the best rendered file is finished — HEIC, AVIF,
///   JPEG, WebP, PNG, in that order — the others are its `alternates`; a raw alone is a photo
///   of its own (finished from its embedded preview where it has one). One file per format
///   joins a pair: a second JPEG of the same stem (`IMG_1.jpg`, `IMG_1.JPG`) is a photo of
///   its own. Files of different folders (`photofinish run a/X.heic b/X.jpg`) are never
///   paired, and a sidecar goes only with a photo of its own folder.
/// - **A picture PhotoFinish cannot read** (GIF, TIFF, BMP…), an empty or unreadable file,
///   and a file named like a photo whose content is none (a `.jpg` of garbage) are photos
///   that fail, each alone: never ignored silently.
/// - **Anything else** (text, PDF, XML, video, audio, archives, unknown bytes under another
///   name) is ignored, its reason naming what it is (`text, not a photo`).
public struct BatchContents: Sendable, Equatable {
    /// The photos, in the order of the files finished (their `main` files' batch order).
    public var photos: [Photo]
    /// The files that are no photo, in batch order.
    public var ignored: [Ignored]

    /// One photo: indexes into the batch's file list.
    public struct Photo: Sendable, Equatable {
        /// The file finished.
        public var main: Int
        /// The other files of the same photo (a RAW beside its JPEG), in batch order.
        public var alternates: [Int]
        /// Its sidecars, in batch order (also listed under `ignored`).
        public var sidecars: [Int]

        /// Every file of the photo: main, alternates, sidecars.
        public var files: [Int] { [main] + alternates + sidecars }
    }

    /// A file that is no photo.
    public struct Ignored: Sendable, Equatable {
        /// Index into the batch's file list.
        public var file: Int
        /// Why, for a person (`sidecar of IMG_1.CR2`, `text, not a photo`).
        public var reason: String
        /// The photo (index into `photos`) a sidecar goes with.
        public var photo: Int?
    }

    /// Every file a photo of its own, none ignored: a batch whose grouping is not wanted.
    public static func onePhotoPerFile(_ count: Int) -> BatchContents {
        BatchContents(photos: (0..<count).map { Photo(main: $0, alternates: [], sidecars: []) }, ignored: [])
    }

    /// The photo (index into `photos`) a file belongs to: as its main file, an alternate or a
    /// sidecar; nil for an ignored file that is no sidecar.
    public func photo(ofFile file: Int) -> Int? {
        photos.firstIndex { $0.files.contains(file) }
    }

    /// Extensions of sidecar files: they go with the photo of their stem.
    static let sidecarExtensions: Set<String> = ["xmp", "aae", "thm", "pp3", "dop"]
    /// Extensions that say "a picture": a file so named is never ignored, whatever it holds.
    static let pictureExtensions: Set<String> = [
        "jpg", "jpeg", "jpe", "jfif", "png", "heic", "heif", "hif", "avif", "webp", "gif", "tif", "tiff", "bmp",
        "psd", "jxl", "jp2", "dng", "cr2", "cr3", "crw", "nef", "nrw", "arw", "srf", "sr2", "orf", "rw2", "raf",
        "pef", "srw", "x3f", "3fr", "iiq", "mef", "mos", "erf", "kdc", "dcr", "rwl", "raw",
    ]

    /// The rank of a file in a pair (lower is finished first); nil: it joins no pair.
    static func rank(_ kind: SniffResult?) -> Int? {
        switch kind {
        case .image(.heic): 0
        case .image(.avif): 1
        case .image(.jpeg): 2
        case .image(.webp): 3
        case .image(.png): 4
        case .cameraRaw: 5
        default: nil
        }
    }

    /// Sorts a batch's files into photos and ignored files.
    /// - Parameters:
    ///   - names: each file's name (as valid UTF-8), in batch order.
    ///   - kinds: what each file's first bytes are, or nil when it could not be read.
    ///   - folders: the folder each file is in (files pair only within one); nil: all in one
    ///     (a hot folder's batch).
    public static func sort(names: [String], kinds: [SniffResult?], folders: [FilePath]? = nil) -> BatchContents {
        precondition(names.count == kinds.count, "one kind per name")
        precondition(folders == nil || folders?.count == names.count, "one folder per name")
        let folder = { (i: Int) in folders?[i] ?? FilePath("") }
        var sidecars: [Int] = [], others: [(Int, String)] = []
        var pairable: [Int] = [], alone: [Int] = []
        for (i, (name, kind)) in zip(names, kinds).enumerated() {
            let ext = Self.extension(of: name)
            if sidecarExtensions.contains(ext) {
                sidecars.append(i)
            } else if let kind, !kind.isPicture, !pictureExtensions.contains(ext) {
                others.append((i, kind == .empty ? "empty file, not a photo" : "\(Self.what(kind)), not a photo"))
            } else if rank(kind) != nil {
                pairable.append(i)
            } else {
                alone.append(i)
            }
        }
        // Pairs: per folder and stem, one file of each format, the best rendered one finished.
        var photos: [Photo] = alone.map { Photo(main: $0, alternates: [], sidecars: []) }
        struct Key: Hashable { var folder: FilePath; var stem: String }
        var byStem: [Key: [Int]] = [:], stems: [Key] = []
        for i in pairable {
            let stem = Key(folder: folder(i), stem: Self.stem(of: names[i]).lowercased())
            if byStem[stem] == nil { stems.append(stem) }
            byStem[stem, default: []].append(i)
        }
        for stem in stems {
            var left = byStem[stem]!
            while !left.isEmpty {
                var taken: [Int] = [], formats: [SniffResult] = []
                for i in left {
                    // One file per format: every camera raw counts as one format.
                    var format = kinds[i]!
                    if case .cameraRaw = format { format = .cameraRaw("") }
                    if !formats.contains(format) { formats.append(format); taken.append(i) }
                }
                left.removeAll { taken.contains($0) }
                let main = taken.min { (rank(kinds[$0])!, $0) < (rank(kinds[$1])!, $1) }!
                photos.append(Photo(main: main, alternates: taken.filter { $0 != main }, sidecars: []))
            }
        }
        photos.sort { $0.main < $1.main }
        // Sidecars: with the photo of their folder that has their stem (the one whose file they
        // name, if any).
        var ignored = others.map { Ignored(file: $0.0, reason: $0.1, photo: nil) }
        for i in sidecars {
            let (stem, photo) = Self.photoStem(ofSidecar: names[i])
            let candidates = photos.indices.filter { p in
                photos[p].files.contains { folder($0) == folder(i) && Self.stem(of: names[$0]).lowercased() == stem.lowercased() }
            }
            let exact = candidates.first { p in photos[p].files.contains { names[$0] == photo } }
            let named = candidates.first { p in photos[p].files.contains { names[$0].lowercased() == photo?.lowercased() } }
            if let p = exact ?? named ?? candidates.first {
                photos[p].sidecars.append(i)
                ignored.append(Ignored(file: i, reason: "sidecar of \(names[photos[p].main])", photo: p))
            } else {
                ignored.append(Ignored(file: i, reason: "sidecar (no photo \(stem) in the batch)", photo: nil))
            }
        }
        ignored.sort { $0.file < $1.file }
        return BatchContents(photos: photos, ignored: ignored)
    }

    /// A file's extension, lower-cased ("" when it has none).
    static func `extension`(of name: String) -> String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return name[name.index(after: dot)...].lowercased()
    }

    /// The name without its extension.
    static func stem(of name: String) -> String {
        let ext = Self.extension(of: name)
        return ext.isEmpty ? name : String(name.dropLast(ext.count + 1))
    }

    /// The stem of the photo a sidecar goes with, and the photo's name when the sidecar
    /// names it (`IMG_1.CR2.xmp`: `IMG_1`, `IMG_1.CR2`; `IMG_1.xmp`: `IMG_1`, nil).
    static func photoStem(ofSidecar name: String) -> (stem: String, photo: String?) {
        let bare = stem(of: name)
        return pictureExtensions.contains(Self.extension(of: bare)) ? (stem(of: bare), bare) : (bare, nil)
    }

    /// What a file that is no picture is, in words.
    static func what(_ kind: SniffResult) -> String {
        switch kind {
        case .unsupported(let name) where name.hasPrefix("unknown"): "unknown content"
        case .unsupported(let name): name
        case .image(let format): format.rawValue
        case .cameraRaw(let name): name
        case .empty: "empty file"
        }
    }
}
