/// Why text could not be set, in words an admin can act on.
public enum TypesetError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No usable font for the template's pattern.
    case noFont(String)
    /// FreeType or HarfBuzz refused a font file.
    case badFont(String)

    public var description: String {
        switch self {
        case .noFont(let message), .badFont(let message): message
        }
    }
}
