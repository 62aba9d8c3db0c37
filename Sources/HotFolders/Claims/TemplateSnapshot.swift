import Finishing
import JSON5
import System

/// The template a batch was claimed with, kept in its manifest so a batch resumed after a
/// crash (or a reload that changed the template) is finished the way it started: one batch,
/// one template.
public struct TemplateSnapshot: Codable, Sendable, Equatable {
    public var name: String
    public var sha256: String
    /// The template file's folder (logo paths are relative to it).
    public var directory: String
    /// The template's text; `nil` for the built-in default.
    public var text: String?
    /// The template file's path (`Template.file`, for the report); nil for the built-in default
    /// (and in manifests written before it was kept).
    public var file: String?
    /// The codes files the template read (`metadata.codes`), by the name it gives them, as
    /// they were when it was loaded: edited afterwards, they take effect at the next reload,
    /// like the template. Nil when it reads none (and in manifests written before they were kept).
    public var codes: [String: String]?

    /// The built-in default template (`watch` without `--template`).
    public static let builtIn = TemplateSnapshot(name: Template.builtInDefault.name,
                                                 sha256: Template.builtInDefault.sha256, directory: ".", text: nil)

    /// Reads the template file at `path` and validates it.
    /// - Throws: `JSON5Errors` naming file, line and key.
    public static func load(path: String) throws(JSON5Errors) -> (TemplateSnapshot, Template) {
        let template = try TemplateLoader.load(path: path)
        func failure(_ reason: String) -> JSON5Errors {
            JSON5Errors(errors: [JSON5Error(file: path, line: nil, keyPath: "", message: "cannot read: \(reason)")])
        }
        let read: String?
        do {
            read = try Files.text(of: path)
        } catch {
            throw failure(error.reason)
        }
        guard let text = read else { throw failure("it is gone, or its bytes are not UTF-8 text") }
        var snapshot = TemplateSnapshot(name: template.name, sha256: template.sha256, directory: template.directory, text: text,
                                        file: template.file)
        let codes = template.codesFiles
        snapshot.codes = codes.isEmpty ? nil : codes
        return (snapshot, template)
    }

    /// The template this snapshot describes.
    /// - Throws: `JSON5Errors` (only if the stored text no longer validates, e.g. its logo is gone).
    public func template() throws(JSON5Errors) -> Template {
        guard let text else { return .builtInDefault }
        var t = try TemplateLoader.parse(text: text, file: "\(directory)/\(name).json5 (as claimed)", name: name,
                                         directory: directory, files: codes)
        t.sha256 = sha256
        t.file = file
        return t
    }
}
