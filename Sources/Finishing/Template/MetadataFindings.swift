import JSON5

/// What a template's `metadata` will not write as the admin may expect (reference: Metadata
/// templates): said by `photofinish check`, and the place (`location`) also once in each batch's
/// report. Never an error: the template works, and writes what it can.
public struct MetadataFinding: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// `city` or `country` under a policy that strips location: not written.
        case location
        /// A `=CODE=` written in the template that the codes file does not have (or no codes file).
        case code
    }

    public var kind: Kind
    /// The key it is about (`metadata.city`, `variants[1].output.metadata`).
    public var path: [KeyPathComponent]
    public var message: String

    /// "metadata.city: not written: …".
    public var words: String { "\(path.rendered): \(message)" }
}

extension Template {
    /// Every `MetadataFinding` of this template and its variants, each once.
    public var metadataFindings: [MetadataFinding] {
        var findings: [MetadataFinding] = []
        for (index, (variant, recipe)) in recipes.enumerated() {
            guard let metadata = recipe.metadata else { continue }
            let base: [KeyPathComponent] = variant == nil ? [] : [.key("variants"), .index(index - 1)]
            // A variant with the template's own metadata and policy was told about there.
            let inherited = variant != nil && metadata == self.metadata && recipe.output.metadata == output.metadata
            let place = [("city", metadata.texts.city), ("country", metadata.texts.country)].filter { $0.1 != nil }.map(\.0)
            if recipe.output.metadata != .keep && !inherited && !place.isEmpty {
                let policy = "\"\(recipe.output.metadata.rawValue)\""
                let what = place.joined(separator: " and "), them = place.count == 1 ? "it" : "them"
                if variant == nil || metadata != self.metadata {
                    findings.append(MetadataFinding(
                        kind: .location, path: base + [.key("metadata")] + (place.count == 1 ? [.key(place[0])] : []),
                        message: (place.count == 1 ? "not written" : "\(what) are not written")
                            + "\(variant.map { " into the \($0) variant's outputs" } ?? ""): "
                            + "output.metadata \(policy) strips where a photo was, the template's words too"
                            + (recipe.output.metadata == .stripLocation ? " (strip-location is the default)" : "")
                            + "; set output.metadata: \"keep\" to write \(them)"))
                } else {
                    findings.append(MetadataFinding(
                        kind: .location, path: base + [.key("output"), .key("metadata")],
                        message: "\(policy) strips where a photo was: metadata.\(place.joined(separator: " and metadata.")) "
                            + "\(place.count == 1 ? "is" : "are") not written into the \(variant ?? "") variant's outputs (\"keep\" writes \(them))"))
                }
            }
            guard !inherited && (variant == nil || metadata != self.metadata) else { continue }
            for (key, text) in metadata.keyed {
                for code in CodeReplacements.replace(in: text, with: metadata.codes).unknown
                where !code.contains("{") && !code.contains("}") {
                    let message = metadata.codes.map {
                        "\(code) is not in the codes file \($0.file): it is written as it is"
                    } ?? "\(code) looks like a code, but no codes file is named (metadata.codes): it is written as it is"
                    findings.append(MetadataFinding(kind: .code, path: base + [.key("metadata")] + Self.keyPath(key),
                                                    message: message))
                }
            }
        }
        return findings
    }

    /// `keywords[2]` as key path components.
    private static func keyPath(_ key: String) -> [KeyPathComponent] {
        guard let open = key.firstIndex(of: "["), let index = Int(key[key.index(after: open)...].dropLast()) else {
            return [.key(key)]
        }
        return [.key(String(key[..<open])), .index(index)]
    }
}
