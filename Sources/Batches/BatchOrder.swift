import Codecs
import Finishing
import Foundation
import System

/// The order inside a batch (reference: From arrival to batch): `name` (natural sort), `arrival`
/// (modification time, then name) or `captured` (EXIF DateTimeOriginal, then name; photos without
/// one last).
public enum BatchOrder {
    /// `paths` (text or bytes) sorted by `order`.
    public static func sorted<Path: FilePathRepresentable>(_ paths: [Path], by order: Template.Order) -> [Path] {
        // Each name made readable once, not at each comparison (a batch of 500: 9,000 of them).
        let names = paths.map { $0.filePath.lastComponent?.readable ?? $0.filePath.description }
        let byName = { (a: Int, b: Int) in NaturalOrder.less(names[a], names[b]) }
        let indices = Array(paths.indices)
        switch order {
        case .name:
            return indices.sorted(by: byName).map { paths[$0] }
        case .arrival:
            let times = paths.map { modificationTime($0.filePath) }
            return indices.sorted { times[$0] != times[$1] ? times[$0] < times[$1] : byName($0, $1) }.map { paths[$0] }
        case .captured:
            let times = paths.map { capturedTime($0.filePath) }
            return indices.sorted { a, b in
                switch (times[a], times[b]) {
                case let (x?, y?) where x != y: return x < y
                case (_?, nil): return true
                case (nil, _?): return false
                default: return byName(a, b)
                }
            }.map { paths[$0] }
        }
    }

    static func modificationTime(_ path: FilePath) -> Double {
        (try? Files.status(path))?.modified ?? 0
    }

    /// "YYYY:MM:DD HH:MM:SS" sorts as text; nil when the file has none or cannot be read.
    static func capturedTime(_ path: FilePath) -> String? {
        guard let bytes = try? SourceFile.read(path, maxBytes: 512 << 20),
              let decoder = try? openDecoder(bytes: bytes, limits: DecodeLimits()),
              let exif = decoder.info.exif else { return nil }
        return Exif.summary(exif).dateTimeOriginal
    }
}
