internal import CQREncode
import Foundation

/// A QR code symbol (ISO/IEC 18004) for a text: which of its modules are dark. libqrencode
/// makes the symbol; its modules are copied out here at once and the library's object freed,
/// so a `QRCode` is a plain value (reference: Share links, QR codes).
///
/// The symbol alone has no margin: every drawing of it (`svg`, `image`, the `qr` mark) keeps
/// the light quiet zone of `quietZone` modules around it, which scanners need to find it.
public struct QRCode: Sendable, Equatable {
    /// The text the symbol holds.
    public let text: String
    /// Modules per side, without the quiet zone: 21 for version 1, 4 more for each version up to
    /// 177 for version 40.
    public let size: Int
    /// The symbol's version, 1…40 (the smallest that holds the text at `level`).
    public let version: Int
    public let level: Level
    /// Row by row, `size` × `size`: true where the module is dark.
    private let dark: [Bool]

    /// The light margin the standard asks for around a symbol, in modules.
    public static let quietZone = 4

    /// How much of the symbol may be lost (a scratch, a mark over it) and still be read back.
    public enum Level: String, Sendable, CaseIterable {
        /// About 7 %.
        case low
        /// About 15 %: what phones' cameras and a print need (the default).
        case medium
        /// About 25 %.
        case quartile
        /// About 30 %.
        case high
    }

    /// Why a text cannot be a QR code.
    public struct Refused: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// The symbol for `text`, in the smallest version that holds it at `level`; libqrencode
    /// switches between its numeric, alphanumeric and byte modes along the text (case kept).
    /// - Throws: `Refused` for an empty text, one holding a NUL, or one longer than a version
    ///   40 symbol holds at `level` (2,331 bytes at `medium`).
    public init(_ text: String, level: Level = .medium) throws(Refused) {
        guard !text.isEmpty else { throw Refused(description: "a QR code needs a text to hold") }
        guard !text.utf8.contains(0) else { throw Refused(description: "a QR code's text cannot hold a NUL byte") }
        let ecLevel: QRecLevel = switch level {
        case .low: QR_ECLEVEL_L
        case .medium: QR_ECLEVEL_M
        case .quartile: QR_ECLEVEL_Q
        case .high: QR_ECLEVEL_H
        }
        errno = 0
        guard let symbol = QRcode_encodeString(text, 0, ecLevel, QR_MODE_8, 1) else {
            let reason = errno == ERANGE
                ? "the text is too long for a QR code (\(text.utf8.count) bytes; at most about 2,300 at level \(level.rawValue))"
                : "libqrencode cannot encode it (\(String(cString: strerror(errno))))"
            throw Refused(description: reason)
        }
        defer { QRcode_free(symbol) }
        let width = Int(symbol.pointee.width)
        // Bit 0 of each byte is the module's colour (1: dark); the other bits say what the
        // module is for (finder, timing, data), which a drawing does not need.
        dark = (0..<width * width).map { symbol.pointee.data[$0] & 1 == 1 }
        size = width
        version = Int(symbol.pointee.version)
        self.text = text
        self.level = level
    }

    /// Whether the module at column `x`, row `y` is dark. Outside the symbol (the quiet zone,
    /// negative or too large coordinates) every module is light.
    public func isDark(_ x: Int, _ y: Int) -> Bool {
        x >= 0 && y >= 0 && x < size && y < size && dark[y * size + x]
    }

    /// Modules per side with the quiet zone on every side.
    public var sizeWithQuietZone: Int { size + 2 * Self.quietZone }

    /// The dark modules of row `y` as runs: the first column and the length of each.
    func darkRuns(row y: Int) -> [(x: Int, length: Int)] {
        var runs: [(x: Int, length: Int)] = []
        var x = 0
        while x < size {
            guard isDark(x, y) else { x += 1; continue }
            let start = x
            while x < size && isDark(x, y) { x += 1 }
            runs.append((start, x - start))
        }
        return runs
    }
}
