import Codecs
import Finishing
import Foundation
import System

/// The order inside a batch (SPEC §2): `name` (natural sort), `arrival` (modification time,
/// then name) or `captured` (EXIF DateTimeOriginal, then name; photos without one last).
public enum BatchOrder {
    /// `paths` (text or bytes) sorted by `order`.
    public static func sorted<Path: FilePathRepresentable>(_ paths: [Path], by order: Template.Order) -> [Path] {
        let name = { (p: Path) in p.filePath.lastComponent?.readable ?? p.filePath.description }
        let byName = { (a: Path, b: Path) in NaturalOrder.less(name(a), name(b)) }
        switch order {
        case .name:
            return paths.sorted(by: byName)
        case .arrival:
            let keyed = paths.map { ($0, modificationTime($0.filePath)) }
            return keyed.sorted { $0.1 != $1.1 ? $0.1 < $1.1 : byName($0.0, $1.0) }.map(\.0)
        case .captured:
            let keyed = paths.map { ($0, capturedTime($0.filePath)) }
            return keyed.sorted { a, b in
                switch (a.1, b.1) {
                case let (x?, y?) where x != y: return x < y
                case (_?, nil): return true
                case (nil, _?): return false
                default: return byName(a.0, b.0)
                }
            }.map(\.0)
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
