import Finishing
import Foundation
import System
import QR

/// `report.html`: the batch for a person (reference: `report.html`). One self-contained page beside
/// `report.json`: thumbnails from `thumbs/` in batch order, each photo's status, outputs,
/// warnings and error in words, the summary counts and the batch's own outputs. No script,
/// no network, no server: it opens from disk, and its CSS reflows to one column on a phone.
public enum ReportHTML {
    /// The page for `report`. Every link is relative to the batch folder.
    public static func render(_ r: Report) -> String {
        var h = """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(e("Batch \(r.batch) · \(ReportText.statusWords(r.status))"))</title>
        <style>\(css)</style>
        </head>
        <body>

        """
        h += header(r)
        if let link = r.link { h += share(link) }
        if let approval = r.approval {
            h += "<section class=\"approval\"><h2>Approval</h2><p>\(e(ReportText.approvalLine(approval)))</p>"
            if let note = approval.note { h += "<blockquote>\(e(note).replacingOccurrences(of: "\n", with: "<br>"))</blockquote>" }
            h += "</section>\n"
        }
        if let warnings = r.warnings, !warnings.isEmpty {
            h += "<section class=\"batch-warnings\"><h2>About the batch</h2><ul>"
            for w in warnings { h += "<li>\(e(w))</li>" }
            h += "</ul></section>\n"
        }
        if !r.outputs.isEmpty { h += batchOutputs(r) }
        if let deliveries = r.deliveries, !deliveries.isEmpty {
            h += "<section class=\"deliveries\"><h2>Deliveries</h2><ul>\n"
            for d in deliveries { h += "<li class=\"\(e(d.status))\">\(e(ReportText.deliveryLine(d)))</li>\n" }
            h += "</ul></section>\n"
        }
        h += "<h2>Photos, in batch order</h2>\n<ol class=\"items\">\n"
        for item in r.items { h += self.item(item, approval: r.approval) }
        h += "</ol>\n"
        if let ignored = r.ignored, !ignored.isEmpty {
            h += "<section class=\"ignored\"><h2>Not photos (kept with the originals)</h2><ul>\n"
            for i in ignored {
                h += "<li>\(e(i.source)) <span class=\"dim\">\(e(i.reason))\(i.original.map { " · " + e($0) } ?? "")</span></li>\n"
            }
            h += "</ul></section>\n"
        }
        h += "<footer>PhotoFinish · template \(e(r.template.name)) · sha256 \(e(String(r.template.sha256.prefix(12))))</footer>\n"
        h += "</body>\n</html>\n"
        return h
    }

    private static func header(_ r: Report) -> String {
        let c = r.counts
        let interrupted = r.items.filter { $0.status == .interrupted }.count
        var counts = "<li><b>\(c.items)</b> photo\(c.items == 1 ? "" : "s")</li>"
            + "<li class=\"ok\"><b>\(c.ok)</b> finished</li>"
            + "<li class=\"failed\"><b>\(c.failed)</b> failed</li>"
        if interrupted > 0 { counts += "<li class=\"interrupted\"><b>\(interrupted)</b> not done</li>" }
        if let d = c.duplicates { counts += "<li class=\"duplicate\"><b>\(d)</b> duplicate\(d == 1 ? "" : "s")</li>" }
        if c.skippedOutputs > 0 {
            counts += "<li><b>\(c.skippedOutputs)</b> crop\(c.skippedOutputs == 1 ? "" : "s") skipped</li>"
        }
        // With harmonize, a line of its own (none without: the page as it always was).
        let light = r.harmonize.map { "\n<p class=\"when\">\(e(LightWords.summary($0)))</p>" } ?? ""
        return """
        <header>
        <h1>Batch \(e(r.batch))</h1>
        <p class="status \(r.status.rawValue)">\(e(ReportText.statusWords(r.status)))</p>
        <ul class="counts">\(counts)</ul>
        <p class="when">Template <b>\(e(r.template.name))</b>\(r.inbox.map { " · hot folder <b>\(e($0))</b>" } ?? "")
        · started \(e(HumanTime.words(isoUTC: r.started))) · finished \(e(HumanTime.words(isoUTC: r.finished)))</p>\(light)
        </header>

        """
    }

    /// The link for the client and its QR code (dark on white in either colour scheme: a
    /// scanner needs it so), to show on a screen or print.
    private static func share(_ link: String) -> String {
        let code = (try? QRCode(link)).map { "<div class=\"qr\">\($0.svg())</div>" } ?? ""
        return "<section class=\"share\"><h2>For the client</h2>\(code)<p><a href=\"\(e(link))\">\(e(link))</a></p>"
            + "<p class=\"dim\">Scan the code or open the link: the finished photos, to see and download"
            + " without a login.</p></section>\n"
    }

    private static func batchOutputs(_ r: Report) -> String {
        var h = "<section class=\"set\"><h2>The batch as a whole</h2><ul>\n"
        for o in r.outputs {
            var shows = o.items.map { " · photos \($0.map(String.init).joined(separator: ", "))" } ?? ""
            if let left = o.leftOut, !left.isEmpty { shows += " (left out: \(left.map(String.init).joined(separator: ", ")))" }
            h += "<li><a href=\"\(url(o.file))\">\(e(o.file))</a> <span class=\"dim\">\(size(o.size))\(shows)</span></li>\n"
        }
        return h + "</ul></section>\n"
    }

    private static func item(_ i: Report.Item, approval: Report.ApprovalRecord?) -> String {
        let statusText = switch i.status {
        case .ok: "finished"
        case .failed: "failed"
        case .interrupted: "not done: the batch was stopped first"
        case .duplicate: i.duplicateOf.map { "duplicate of \($0.source), finished in batch \($0.batch)" } ?? "duplicate"
        }
        var h = "<li class=\"item \(i.status.rawValue)\" id=\"item-\(i.index)\">\n"
        if let thumb = i.thumbnail {
            h += thumbnail(thumb, item: i)
        } else {
            h += "<div class=\"nothumb\" aria-hidden=\"true\">\(i.status == .failed ? "✗" : "–")</div>\n"
        }
        h += "<div class=\"body\">\n<p class=\"name\"><span class=\"n\">\(i.index).</span> \(e(i.source))</p>\n"
        h += "<p class=\"badge \(i.status.rawValue)\">\(e(statusText))</p>"
        if let approval, let name = Report.photoName(i) {
            h += approval.approved.contains(name) ? " <p class=\"badge approved\">approved</p>" : " <p class=\"badge rejected\">not approved</p>"
        }
        h += "\n"
        var facts: [String] = []
        if let s = i.size { facts.append(size(s)) }
        if let f = i.format { facts.append(e(f.uppercased())) }
        if let o = i.orientation, o != 1 { facts.append("orientation \(o)") }
        if let ms = i.ms { facts.append("\(ms) ms") }
        if !facts.isEmpty { h += "<p class=\"dim\">\(facts.joined(separator: " · "))</p>\n" }
        if let color = i.color {
            h += "<p class=\"color\"><span class=\"chip\" style=\"background:\(e(color))\"></span> \(e(color))</p>\n"
        }
        if let error = i.error {
            h += "<p class=\"error\"><b>\(e(errorWords(error.code)))</b> \(e(error.message))"
                + " <span class=\"code\">(\(e(error.code)))</span></p>\n"
        }
        if let outputs = i.outputs, !outputs.isEmpty {
            h += "<ul class=\"outputs\">"
            for o in outputs {
                let placed = o.applied.crop?.focus.map { " · " + focusWords($0) } ?? ""
                h += "<li><a href=\"\(url(o.file))\">\(e(o.file))</a> <span class=\"dim\">\(size(o.size)), "
                    + "\(e(ByteCount.words(o.bytes)))\(e(placed))</span></li>"
            }
            h += "</ul>\n"
        }
        h += texts(i.outputs ?? [])
        if let light = i.outputs?.first?.applied.harmonize { h += "<p class=\"dim\">Light: \(e(LightWords.correction(light)))</p>\n" }
        for s in i.skipped ?? [] { h += "<p class=\"skipped\">Skipped \(e(s.ratio)): \(e(s.reason))</p>\n" }
        for w in i.warnings ?? [] { h += "<p class=\"warning\">Warning: \(e(w))</p>\n" }
        if let original = i.original { h += "<p class=\"dim\">Original: \(e(original))</p>\n" }
        if let alternates = i.alternates, !alternates.isEmpty {
            h += "<p class=\"dim\">Filed with it: \(alternates.map(e).joined(separator: ", "))</p>\n"
        }
        return h + "</div>\n</li>\n"
    }

    /// The metadata template's texts as written into the photo's outputs (`applied.metadata`):
    /// once when every output has the same, else per output that has its own (a variant's).
    private static func texts(_ outputs: [Report.Output]) -> String {
        var records: [(record: Applied.MetadataRecord, files: [String])] = []
        for o in outputs {
            guard let record = o.applied.metadata else { continue }
            if let k = records.firstIndex(where: { $0.record == record }) {
                records[k].files.append(o.file)
            } else {
                records.append((record, [o.file]))
            }
        }
        var h = ""
        for (record, files) in records {
            let fields = [("Title", record.title), ("Caption", record.caption), ("Keywords", record.keywords?.joined(separator: ", ")),
                          ("Creator", record.creator), ("Copyright", record.copyright), ("Usage terms", record.usageTerms),
                          ("City", record.city), ("Country", record.country), ("Event", record.event)]
                .compactMap { name, text in text.map { (name, $0) } }
            h += "<div class=\"texts\">"
            if records.count > 1 || files.count < outputs.count { h += "<p class=\"dim\">Texts of \(files.map(e).joined(separator: ", ")):</p>" }
            h += fields.isEmpty ? "<p class=\"dim\">No text written.</p>"
                : "<dl>" + fields.map { "<dt>\($0.0)</dt><dd>\(e($0.1))</dd>" }.joined() + "</dl>"
            if let codes = record.unknownCodes {
                h += "<p class=\"warning\">Not in the codes file, left as written: \(e(codes.joined(separator: " ")))</p>"
            }
            h += "</div>\n"
        }
        return h
    }

    /// Stroke colours of the crop boxes, one per ratio in output order (bright, with a dark
    /// edge under each line, so a box shows on light and dark photos alike).
    static let cropColours = ["#ffd60a", "#2ee6d6", "#ff5fa2", "#8ab4ff", "#b4f05a"]

    /// The thumbnail; with crops, an inline SVG drawing each crop's box and ratio over it, and
    /// the faces they were placed on (in the photo's own pixels, so the boxes of `applied.crop`
    /// and the item's `faces` go on as they are).
    private static func thumbnail(_ thumb: String, item i: Report.Item) -> String {
        let crops = (i.outputs ?? []).compactMap(\.applied.crop)
        guard let size = i.size, size.count == 2, size[0] > 0, size[1] > 0, !crops.isEmpty else {
            return "<img src=\"\(url(thumb))\" alt=\"\(e(i.source))\" loading=\"lazy\">\n"
        }
        let (w, h) = (size[0], size[1])
        let font = max(1, min(w, h) / 14)
        var svg = "<svg class=\"thumb\" viewBox=\"0 0 \(w) \(h)\" role=\"img\" "
            + "aria-label=\"\(e(i.source)) with its crops \(e(crops.map(\.ratio).joined(separator: ", ")))\">"
            + "<image href=\"\(url(thumb))\" width=\"\(w)\" height=\"\(h)\" preserveAspectRatio=\"none\"/>"
        for (k, crop) in crops.enumerated() where crop.box.count == 4 {
            let colour = cropColours[k % cropColours.count]
            let (x, y, bw, bh) = (crop.box[0], crop.box[1], crop.box[2], crop.box[3])
            let rect = "x=\"\(x)\" y=\"\(y)\" width=\"\(bw)\" height=\"\(bh)\""
            svg += "<g class=\"crop\" data-ratio=\"\(e(crop.ratio))\"><title>\(e(crop.ratio)) crop"
                + "\(crop.focus.map { " (\(e($0)))" } ?? "") · \(x), \(y), \(bw) × \(bh)</title>"
                + "<rect \(rect) class=\"edge\"/><rect \(rect) stroke=\"\(colour)\"/>"
                + "<text x=\"\(x + font / 3)\" y=\"\(y + font + k * font)\" font-size=\"\(font)\" fill=\"\(colour)\">"
                + "\(e(crop.ratio))</text></g>"
        }
        // The faces the crops were placed on (the item's `faces`), dashed white.
        for face in i.faces ?? [] where face.count == 4 {
            let rect = "x=\"\(face[0])\" y=\"\(face[1])\" width=\"\(face[2])\" height=\"\(face[3])\""
            svg += "<g class=\"face\"><title>face · \(face[0]), \(face[1]), \(face[2]) × \(face[3])</title>"
                + "<rect \(rect) class=\"edge\"/><rect \(rect) class=\"face\" stroke=\"#ffffff\"/></g>"
        }
        return svg + "</svg>\n"
    }

    /// What placed a crop (`applied.crop.focus`), in words.
    static func focusWords(_ focus: String) -> String {
        switch focus {
        case "subject": "placed on the subject"
        case "faces": "placed on the faces"
        case "xmp-region": "placed on the file's region"
        case "center": "centred"
        default: focus
        }
    }

    /// The report's error codes (reference: The report) in words; the message after them says the
    /// details.
    static func errorWords(_ code: String) -> String {
        switch code {
        case "unsupported-format": "Not a photo format PhotoFinish reads."
        case "camera-raw": "A camera raw file: not developed."
        case "corrupt-image": "The file is damaged or cut short."
        case "too-large": "Too large to finish safely."
        case "empty-file": "The file is empty."
        case "io-error": "The file could not be read or written."
        case "timeout": "It took too long."
        default: "Could not be finished."
        }
    }

    private static func size(_ s: [Int]) -> String { s.map(String.init).joined(separator: " × ") }

    /// Text made safe for HTML (`MarkupText`, the one escape of every page and drawing).
    static func e(_ s: String) -> String { MarkupText.escaped(s) }

    /// A relative link to a file in the batch folder: each path segment percent-encoded (a
    /// name with `#`, `?` or spaces still opens), then made safe for an attribute.
    public static func url(_ path: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "#?;:")
        let encoded = path.split(separator: "/", omittingEmptySubsequences: false).map {
            String($0).addingPercentEncoding(withAllowedCharacters: allowed) ?? String($0)
        }.joined(separator: "/")
        return e(encoded)
    }

    private static let css = """
    :root{color-scheme:light dark;--fg:#1d1d1f;--bg:#fafafa;--card:#fff;--dim:#6e6e73;--line:#e0e0e0;\
    --ok:#1a7f37;--bad:#c62828;--warn:#9a6700}
    @media (prefers-color-scheme:dark){:root{--fg:#f2f2f2;--bg:#161617;--card:#232325;--dim:#a1a1a6;\
    --line:#3a3a3c;--ok:#4ac26b;--bad:#ff6b6b;--warn:#e3b341}}
    *{box-sizing:border-box}
    body{margin:0 auto;max-width:72rem;padding:1rem;font:16px/1.45 system-ui,-apple-system,"DejaVu Sans",sans-serif;\
    color:var(--fg);background:var(--bg);overflow-wrap:anywhere}
    h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
    a{color:inherit}
    .status{font-weight:600;margin:.2rem 0}.status.complete{color:var(--ok)}.status.partial,.status.interrupted{color:var(--warn)}\
    .status.failed{color:var(--bad)}
    .counts{list-style:none;padding:0;margin:.5rem 0;display:flex;flex-wrap:wrap;gap:.5rem}
    .counts li{background:var(--card);border:1px solid var(--line);border-radius:.5rem;padding:.3rem .7rem}
    .counts .ok b{color:var(--ok)}.counts .failed b{color:var(--bad)}
    .dim,.when,footer{color:var(--dim);font-size:.9rem}
    .batch-warnings{border-left:4px solid var(--warn);background:var(--card);padding:.3rem 1rem}
    .items{list-style:none;padding:0;display:grid;gap:1rem;grid-template-columns:repeat(auto-fill,minmax(17rem,1fr))}
    .item{background:var(--card);border:1px solid var(--line);border-radius:.75rem;overflow:hidden}
    .item.failed{border-color:var(--bad)}
    .item img,.nothumb,.thumb{display:block;width:100%;height:12rem;object-fit:contain;background:var(--line)}
    .thumb rect{fill:none;stroke-width:2.5px;vector-effect:non-scaling-stroke}.thumb rect.edge{stroke:#000;stroke-width:5px;opacity:.6}.thumb rect.face{stroke-dasharray:6 4}
    .thumb text{font-family:system-ui,"DejaVu Sans",sans-serif;font-weight:700;paint-order:stroke;stroke:#000;stroke-width:3px;vector-effect:non-scaling-stroke}
    .nothumb{display:flex;align-items:center;justify-content:center;font-size:3rem;color:var(--bad)}
    .body{padding:.6rem .8rem}.body p{margin:.25rem 0}
    .name{font-weight:600}.n{color:var(--dim)}
    .badge{display:inline-block;font-size:.85rem;border-radius:1rem;padding:0 .6rem;color:#fff}
    .badge.ok,.badge.approved{background:var(--ok)}.badge.failed{background:var(--bad)}.badge.interrupted,.badge.rejected{background:var(--warn)}
    .share{display:flex;flex-wrap:wrap;align-items:center;gap:.3rem 1rem}.share h2{flex-basis:100%}
    .qr{width:10rem;background:#fff;border-radius:.3rem}.qr svg{display:block;width:100%;height:auto}
    .approval blockquote{margin:.4rem 0;padding:.3rem .8rem;border-left:4px solid var(--line);background:var(--card)}
    .error{color:var(--bad)}.warning,.skipped{color:var(--warn)}.code{color:var(--dim)}
    .outputs{padding-left:1.1rem;margin:.3rem 0}
    .texts dl{display:grid;grid-template-columns:auto 1fr;gap:0 .6rem;margin:.3rem 0;font-size:.9rem}\
    .texts dt{color:var(--dim)}.texts dd{margin:0;white-space:pre-line}
    .chip{display:inline-block;width:1em;height:1em;border-radius:.2em;vertical-align:-.15em;border:1px solid var(--line)}
    @media (max-width:40rem){body{padding:.6rem}.items{grid-template-columns:1fr}}
    """
}
