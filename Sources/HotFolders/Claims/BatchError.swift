import Foundation
import System

/// A file of the batch's own that is there but not as the daemon wrote it: no system call
/// failed (there is no `errno` to give), the file is wrong. It names the file, says what is
/// wrong with it and what brings the batch back.
public struct BatchDataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong: a stable code.
    public enum Problem: String, Sendable {
        /// `.work/<id>/manifest.json` does not decode.
        case manifest
        /// The template stored in the manifest at the claim no longer validates (a logo or
        /// font it names was removed).
        case template
        /// `out/<id>/report.json` of a published batch is missing or does not decode.
        case report
    }

    public var problem: Problem
    /// The file, as a path (names escaped as `FileName.escaped`).
    public var file: String
    /// What is wrong with it, in words ("not valid JSON", the template's own error).
    public var reason: String

    public init(_ problem: Problem, file: String, reason: String) {
        self.problem = problem
        self.file = file
        self.reason = reason
    }

    /// "cannot decode /srv/hot/.work/…/manifest.json: …; remove it and the batch is rolled back …".
    public var description: String {
        // The decoder's and the template's words end in a full stop; the advice follows.
        var reason = Substring(reason)
        while let last = reason.last, last == "." || last.isWhitespace { reason = reason.dropLast() }
        return switch problem {
        case .manifest:
            "cannot decode \(file): \(reason); remove it and the batch is rolled back (its files in src/ go back to drop/)"
        case .template:
            "cannot use the template stored with the batch in \(file) (\(reason)); restore what it names and the batch resumes"
        case .report:
            "cannot read the report \(file): \(reason); restore it and the batch's cleanup resumes"
        }
    }

    /// A `JSONDecoder` error in a few words: what is wrong, and where ("items[2].bytes: …").
    static func reason(decoding error: any Error) -> String {
        func at(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? "." + $0.stringValue }.joined()
            return path.isEmpty ? "" : String(path.drop { $0 == "." }) + ": "
        }
        switch error {
        case DecodingError.dataCorrupted(let context):
            return at(context) + context.debugDescription
        case DecodingError.keyNotFound(let key, let context):
            return at(context) + "\"\(key.stringValue)\" is missing"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return at(context) + context.debugDescription
        default:
            return "\(error)"
        }
    }
}

/// Why a step of a batch itself could not be done: a system call failed (`SystemError`: a full
/// disk, the share gone, permissions), or a file of the batch is wrong (`BatchDataError`).
/// Either way the batch stays in `.work/` and recovery tries it again.
public enum BatchError: Error, Sendable, Equatable, CustomStringConvertible {
    case system(SystemError)
    case data(BatchDataError)

    public var description: String {
        switch self {
        case .system(let error): error.description
        case .data(let error): error.description
        }
    }

    /// Runs `body`, its `SystemError` thrown as `.system` (typed throws do not convert).
    @inline(__always)
    public static func wrap<T>(_ body: () throws(SystemError) -> T) throws(BatchError) -> T {
        do {
            return try body()
        } catch {
            throw .system(error)
        }
    }
}
