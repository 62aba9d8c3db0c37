/// Why one photo could not be finished: a stable code (the report's `error.code`: reference, The
/// report) and a message a person can act on.
public struct PhotoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The report's error codes.
    public enum Code: String, Sendable, Codable, CaseIterable {
        /// Not a format PhotoFinish reads; the message names what was found.
        case unsupportedFormat = "unsupported-format"
        /// A camera raw file (DNG, CR2, CR3, NEF, ARW, RAF, ORF, RW2, …): not converted.
        case cameraRaw = "camera-raw"
        /// The file says it is an image but its data is broken or ends early.
        case corruptImage = "corrupt-image"
        /// Over `maxPixels` or `maxFileBytes`, found from the header before decoding.
        case tooLarge = "too-large"
        /// Zero bytes.
        case emptyFile = "empty-file"
        /// Reading or writing a file failed.
        case ioError = "io-error"
        /// The photo took longer than `itemTimeout`.
        case timeout = "timeout"
    }

    /// The stable code.
    public let code: Code
    /// What happened, in words.
    public let message: String

    /// - Parameters:
    ///   - code: the report's code.
    ///   - message: what happened, for a person.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
