import Codecs

extension Template {
    /// This template with the variables of its marks, credit and metadata filled in from one
    /// photo's facts (`text.text`, `tile.text`, `qr.text`, `output.credit`, `metadata`; the metadata's
    /// `=CODE=`s replaced too, their own variables filled first), the credit to write into its outputs, and one
    /// warning per variable the photo has no value for (it is left empty; `{uploader}` is
    /// left empty without a warning: most photos are not uploaded through the console; a QR code missing
    /// one is left out, said: a code holding half a link opens nothing).
    /// - Parameter metadata: false to leave `metadata` as written (an output that carries none).
    public func filled(with facts: PhotoFacts,
                       metadata: Bool = true) -> (template: Template, credit: Codecs.Credit, warnings: [String]) {
        let values = facts.values
        var filled = self
        var missing: [(variable: String, key: String)] = []
        func fill(_ text: String?, _ key: String) -> String? {
            guard let text else { return nil }
            let (rendered, empty) = Variables.render(text, values)
            missing += empty.filter { $0 != "uploader" }.map { ($0, key) }
            return rendered
        }
        if let text = filled.text?.text { filled.text?.text = fill(text, "text.text") ?? text }
        if let text = filled.tile?.text { filled.tile?.text = fill(text, "tile.text") ?? text }
        var qrLeftOut: String?
        if let qr = filled.qr {
            let (rendered, empty) = Variables.render(qr.text, values)
            if let first = empty.first {
                qrLeftOut = "qr mark left out: {\(first)} has no value: \(Self.why(first))"
                filled.qr = nil
            } else {
                filled.qr?.text = rendered
            }
        }
        let given = output.credit
        let credit = Codecs.Credit(creator: fill(given?.creator, "output.credit.creator"),
                            copyright: fill(given?.copyright, "output.credit.copyright"),
                            credit: fill(given?.credit, "output.credit.credit"))
        if metadata, let written = self.metadata {
            filled.metadata = written.filled { text, key in fill(text, "metadata." + key) }
        }
        var warnings: [String] = []
        for variable in missing.map(\.variable).reduce(into: [String](), { if !$0.contains($1) { $0.append($1) } }) {
            let keys = missing.filter { $0.variable == variable }.map(\.key).joined(separator: ", ")
            warnings.append("{\(variable)} left empty in \(keys): \(Self.why(variable))")
        }
        if let qrLeftOut { warnings.append(qrLeftOut) }
        return (filled, credit, warnings)
    }

    /// Why a variable has no value, in words.
    private static func why(_ variable: String) -> String {
        switch variable {
        case "date", "time", "year": "the photo has no capture date (EXIF DateTimeOriginal)"
        case "camera": "the photo names no camera (EXIF Make, Model)"
        case "lens": "the photo names no lens (EXIF LensModel)"
        case "hotFolder": "the photo was not taken from a hot folder (photofinish run)"
        case "shareURL": "there is no share link here (a hot folder's batches have one when web.publicURL is set; photofinish run makes none)"
        default: "it has no value here"
        }
    }
}

extension Template.MetadataTemplate {
    /// The texts as written into one photo's outputs: each `=CODE=` is replaced through the
    /// codes file, its variables filled first (`render`, given a piece of text and its key),
    /// and so is the text around it. A text left empty is not written; keywords are written
    /// once each. The codes no longer apply (`codes` is nil) and `unknownCodes` lists those left
    /// as written.
    func filled(_ render: (String, String) -> String?) -> Template.MetadataTemplate {
        var out = Template.MetadataTemplate()
        var unknown: [String] = []
        func text(_ value: String?, _ key: String) -> String? {
            guard let value else { return nil }
            let (replaced, notFound) = CodeReplacements.replace(in: value, with: codes) { render(String($0), key) ?? "" }
            for code in notFound where !unknown.contains(code) { unknown.append(code) }
            let trimmed = replaced.trimmingSpaces
            return trimmed.isEmpty ? nil : trimmed
        }
        let given = texts
        out.texts.title = text(given.title, "title")
        out.texts.caption = text(given.caption, "caption")
        for (index, keyword) in given.keywords.enumerated() {
            if let written = text(keyword, "keywords[\(index)]"), !out.texts.keywords.contains(written) {
                out.texts.keywords.append(written)
            }
        }
        out.texts.creator = text(given.creator, "creator")
        out.texts.copyright = text(given.copyright, "copyright")
        out.texts.usageTerms = text(given.usageTerms, "usageTerms")
        out.texts.city = text(given.city, "city")
        out.texts.country = text(given.country, "country")
        out.texts.event = text(given.event, "event")
        out.unknownCodes = unknown
        return out
    }
}
