import Finishing

/// The batch's own words about its metadata template (reference: Metadata templates), said once
/// in the report's `warnings` however many photos they touch: the place the policy keeps out,
/// and each `=CODE=` the codes file does not have, with the photos it was left as written in.
enum MetadataWarnings {
    static func batch(template: Template, items: [Report.Item]) -> [String] {
        guard template.recipes.contains(where: { $0.recipe.metadata != nil }) else { return [] }
        var warnings = template.metadataFindings.filter { $0.kind == .location }.map(\.words)
        var photos: [(code: String, items: [Int])] = []
        for item in items {
            var codes: [String] = []
            for code in (item.outputs ?? []).flatMap({ $0.applied.metadata?.unknownCodes ?? [] }) where !codes.contains(code) {
                codes.append(code)
            }
            for code in codes {
                if let at = photos.firstIndex(where: { $0.code == code }) {
                    photos[at].items.append(item.index)
                } else {
                    photos.append((code, [item.index]))
                }
            }
        }
        let files = template.recipes.compactMap { $0.recipe.metadata?.codes?.file }
        let file = files.first.map { "the codes file \($0)" }
        for (code, items) in photos {
            let shown = items.sorted().prefix(10).map(String.init).joined(separator: ", ")
                + (items.count > 10 ? " and \(items.count - 10) more" : "")
            warnings.append("metadata code \(code) is not in \(file ?? "any codes file (the template names none: metadata.codes)"): "
                            + "left as written in photo\(items.count == 1 ? "" : "s") \(shown)")
        }
        return warnings
    }
}
