import Codecs

extension Template {
    /// This template with the variables of its marks and credit filled in from one photo's
    /// facts (`text.text`, `tile.text`, `output.credit`), the credit to write into its
    /// outputs, and one warning per variable the photo has no value for (it is left empty).
    public func filled(with facts: PhotoFacts) -> (template: Template, credit: Codecs.Credit, warnings: [String]) {
        let values = facts.values
        var filled = self
        var missing: [(variable: String, key: String)] = []
        func fill(_ text: String?, _ key: String) -> String? {
            guard let text else { return nil }
            let (rendered, empty) = Variables.render(text, values)
            missing += empty.map { ($0, key) }
            return rendered
        }
        if let text = filled.text?.text { filled.text?.text = fill(text, "text.text") ?? text }
        if let text = filled.tile?.text { filled.tile?.text = fill(text, "tile.text") ?? text }
        let given = output.credit
        let credit = Codecs.Credit(creator: fill(given?.creator, "output.credit.creator"),
                            copyright: fill(given?.copyright, "output.credit.copyright"),
                            credit: fill(given?.credit, "output.credit.credit"))
        var warnings: [String] = []
        for variable in missing.map(\.variable).reduce(into: [String](), { if !$0.contains($1) { $0.append($1) } }) {
            let keys = missing.filter { $0.variable == variable }.map(\.key).joined(separator: ", ")
            warnings.append("{\(variable)} left empty in \(keys): \(Self.why(variable))")
        }
        return (filled, credit, warnings)
    }

    /// Why a variable has no value, in words.
    private static func why(_ variable: String) -> String {
        switch variable {
        case "date", "time", "year": "the photo has no capture date (EXIF DateTimeOriginal)"
        case "camera": "the photo names no camera (EXIF Make, Model)"
        case "lens": "the photo names no lens (EXIF LensModel)"
        default: "it has no value here"
        }
    }
}
