import Batches
import System

/// The name an uploaded file lands under in `drop/` (pure: tested with plain bytes).
///
/// The browser's name is cleaned, never trusted: only what follows the last `/` or `\` is
/// kept (`../../x.jpg` lands as `x.jpg`), control characters go (C0, C1, DEL, and in a UTF-8
/// name the bidirectional controls and line separators: `ControlCharacters`), leading dots and spaces go
/// (no hidden files), and the name is cut to 255 bytes at a character, keeping its extension.
/// The bytes are otherwise kept as sent: UTF-8 and Latin-1 names alike. A name the hot folder
/// never takes (`x.tmp`, `~$x.docx`, `Thumbs.db`) is refused rather than left in drop/ for ever.
enum UploadNames {
    enum Outcome: Equatable {
        case name(FileName)
        /// Refused, and why (one sentence).
        case refused(String)
        /// Nothing to upload (a form sent with no file chosen).
        case empty
    }

    static func clean(_ sent: [UInt8]) -> Outcome {
        // HTML's multipart form encoding writes `"` as %22 (and CR, LF as %0D, %0A).
        var bytes = replacing(sent, Array("%22".utf8), with: [UInt8(ascii: "\"")])
        bytes = replacing(bytes, Array("%0D".utf8), with: [])
        bytes = replacing(bytes, Array("%0A".utf8), with: [])
        if let slash = bytes.lastIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\") }) {
            bytes = Array(bytes[(slash + 1)...])
        }
        bytes.removeAll { $0 < 0x20 || $0 == 0x7F }
        if let text = String(validating: bytes, as: UTF8.self), text.unicodeScalars.contains(where: ControlCharacters.contains) {
            var kept = String.UnicodeScalarView()
            kept.append(contentsOf: text.unicodeScalars.filter { !ControlCharacters.contains($0) })
            bytes = Array(String(kept).utf8)
        }
        while let first = bytes.first, first == UInt8(ascii: ".") || first == UInt8(ascii: " ") { bytes.removeFirst() }
        while let last = bytes.last, last == UInt8(ascii: " ") { bytes.removeLast() }
        guard !bytes.isEmpty else { return sent.isEmpty ? .empty : .refused("the name has nothing left once cleaned") }
        bytes = shortened(bytes, to: FileName.maxLength)
        guard let name = FileName(bytes: bytes) else { return .refused("not a file name") }
        if IgnoreRules.ignores(name.readable) {
            return .refused("hot folders never take files named like this (hidden, temporary, partial or system files)")
        }
        return .name(name)
    }

    /// The `n`th name to try when `name` is taken in drop/: `IMG_1 (2).jpg`, `IMG_1 (3).jpg`…
    static func alternative(_ name: FileName, _ n: Int) -> FileName {
        let bytes = name.bytes
        let dot = bytes.lastIndex(of: UInt8(ascii: ".")).flatMap { $0 > 0 ? $0 : nil } ?? bytes.endIndex
        let tag = Array(" (\(n))".utf8)
        let ext = Array(bytes[dot...])
        let stem = FileName.prefix(of: bytes[..<dot], maxCount: max(1, FileName.maxLength - tag.count - ext.count))
        return FileName(bytes: stem + tag + ext)!
    }

    /// Cut to `limit` bytes at a character, the extension (at most 16 bytes) kept.
    private static func shortened(_ bytes: [UInt8], to limit: Int) -> [UInt8] {
        guard bytes.count > limit else { return bytes }
        let dot = bytes.lastIndex(of: UInt8(ascii: ".")).flatMap { bytes.count - $0 <= 16 && $0 > 0 ? $0 : nil } ?? bytes.endIndex
        let ext = Array(bytes[dot...])
        return FileName.prefix(of: bytes[..<dot], maxCount: limit - ext.count) + ext
    }

    private static func replacing(_ bytes: [UInt8], _ pattern: [UInt8], with replacement: [UInt8]) -> [UInt8] {
        guard bytes.count >= pattern.count else { return bytes }
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            if i + pattern.count <= bytes.count,
               bytes[i..<(i + pattern.count)].elementsEqual(pattern, by: { a, b in
                   a == b || (b >= 0x41 && b <= 0x46 && a == b + 32)  // %0a as well as %0A
               }) {
                out += replacement
                i += pattern.count
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return out
    }
}
