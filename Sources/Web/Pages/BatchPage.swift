import Batches
import Foundation
import System

/// A published batch as a gallery (pure: made from its report and its files): what a person
/// recognises it by (when, the first photo, how many), the failed photos first — each with why
/// in plain words, its original to download and a button to try it again — then every photo's
/// thumbnail linking to its outputs, then the batch's own outputs (story, colour card), the
/// downloads and actions, and all its files for whoever wants them.
///
/// The page is made of sections in order (`sections`): more (a panel to share the batch, its
/// approval state) go in among them without changing the others.
struct BatchPage {
    var viewer: Viewer
    var inbox: String
    var id: String
    var report: Report
    var files: [BatchFiles.Entry]
    /// The batch this one runs again, and the batches that run it again (newest first).
    var redoes: BatchCatalog.Summary?
    var redoneBy: [BatchCatalog.Summary]
    /// What the batch's photos ZIP and the whole folder weigh.
    var photoBytes: Int64
    /// An action's outcome, said at the top.
    var message: Pages.Message?
    /// Its share links and approval (`SharePanel`), after the actions.
    var share: String = ""

    var label: BatchLabel { BatchLabel(started: report.started, first: report.items.first?.source, count: report.counts.items) }

    /// The files of the ZIP of photos: every output of every photo, and the batch's own outputs.
    static func photoFiles(_ report: Report) -> Set<String> {
        Set(report.items.flatMap { ($0.outputs ?? []).map(\.file) } + report.outputs.map(\.file))
    }

    var html: String {
        HTML.page(title: label.when() + " · " + inbox, viewer: viewer, body: sections.joined())
    }

    var sections: [String] { [head, actions, share, failures, gallery, setOutputs, allFiles] }

    private var head: String {
        var out = "<p class=\"crumbs\"><a href=\"/\">Hot folders</a> › <a href=\"\(Paths.folder(inbox))\">\(HTML.escape(inbox))</a></p>\n"
        out += message?.html ?? ""
        let c = report.counts
        out += "<header class=\"batch-head\">\n<h1>\(HTML.time(report.started))</h1>\n"
        out += "<p class=\"sub\">\(HTML.escape(label.photos)) · \(HTML.escape(Words.photos(c.items))) · "
            + Pages.badge(BatchCatalog.Summary(id: id, status: report.status.rawValue, items: c.items, ok: c.ok, failed: c.failed,
                                                started: report.started, finished: report.finished, thumbnails: [], sources: []))
            + "</p>\n"
        out += "<p class=\"dim\">Finished \(HTML.time(report.finished, ago: true)) · batch \(HTML.escape(id)) · template “\(HTML.escape(report.template.name))”</p>\n"
        if let redoes {
            out += "<p class=\"dim\">Runs <a href=\"\(Paths.batch(inbox, redoes.id))\">the batch of \(HTML.time(redoes.started))</a> again.</p>\n"
        } else if let other = report.redoes {
            out += "<p class=\"dim\">Runs the batch of \(HTML.escape(BatchLabel.when(id: other))) again (no longer kept).</p>\n"
        }
        for later in redoneBy {
            out += "<p class=\"note\">Finished again in <a href=\"\(Paths.batch(inbox, later.id))\">the batch of \(HTML.time(later.started))</a> "
                + Pages.badge(later) + " (\(HTML.escape(Words.photos(later.items))))</p>\n"
        }
        return out + "</header>\n"
    }

    private var csrf: String { "<input type=\"hidden\" name=\"csrf\" value=\"\(HTML.escape(viewer.csrf))\">" }

    private var actions: String {
        var out = "<div class=\"actions\">"
        if photoBytes > 0 {
            out += "<a class=\"button\" href=\"\(Paths.zip(inbox, id))\" download>Download the photos (ZIP, \(HTML.bytes(photoBytes)))</a>"
        }
        out += "<a class=\"button plain\" href=\"\(Paths.zip(inbox, id, report: true))\" download>ZIP with the report</a>"
        if files.contains(where: { $0.path.map(\.bytes) == [Array("report.html".utf8)] }) {
            out += "<a class=\"button plain\" href=\"\(Paths.batchFile(inbox, id, [FileName("report.html")]))\">Open the report</a>"
        }
        out += "<form method=\"post\" action=\"\(Paths.action(inbox, id, .redo))\">\(csrf)"
            + "<button class=\"plain\" type=\"submit\">Finish again with the current template</button></form>"
        if viewer.admin {
            out += "<form method=\"post\" action=\"\(Paths.action(inbox, id, .delete))\" "
                + "data-confirm=\"Delete this batch: its photos, its report and its originals? This cannot be undone.\">\(csrf)"
                + "<button class=\"danger\" type=\"submit\">Delete the batch</button></form>"
        }
        return out + "</div>\n"
    }

    private var failed: [Report.Item] { report.items.filter { $0.status != .ok } }

    private var failures: String {
        let failed = failed
        guard !failed.isEmpty else { return "" }
        var out = "<section class=\"failures\">\n<h2>\(failed.count == 1 ? "1 photo" : "\(failed.count) photos") could not be finished</h2>\n<ul class=\"cards\">\n"
        for item in failed {
            let code = item.status == .interrupted ? "interrupted" : item.error?.code
            let name = Self.filedName(item)
            out += "<li class=\"card failure\"><p class=\"name\">\(HTML.escape(item.source))</p>"
                + "<p>\(HTML.escape(Words.reason(code: code)))</p>"
                + (item.error.map { "<details><summary>Details</summary><p class=\"dim\"><code>\(HTML.escape($0.code))</code> \(HTML.escape($0.message))</p></details>" } ?? "")
                + "<div class=\"actions\">"
            if let name {
                out += "<a class=\"button plain\" href=\"\(Paths.original(inbox, id, name))\">Download the original</a>"
                out += "<form method=\"post\" action=\"\(Paths.action(inbox, id, .retry))\">\(csrf)"
                    + "<input type=\"hidden\" name=\"photo\" value=\"\(HTML.escape(item.source))\">"
                    + "<button type=\"submit\">Try again</button></form>"
            } else {
                out += "<span class=\"dim\">Its original is no longer kept.</span>"
            }
            out += "</div></li>\n"
        }
        return out + "</ul>\n</section>\n"
    }

    /// The name a source was filed under (`failed/<id>/NAME`, `originals/<id>/NAME`), from
    /// the report's `original` (the source name is escaped where it is not UTF-8).
    static func filedName(_ item: Report.Item) -> FileName? {
        guard let original = item.original, let last = original.split(separator: "/").last else { return nil }
        return FileName(String(last))
    }

    private var gallery: String {
        let done = report.items.filter { $0.status == .ok }
        guard !done.isEmpty else { return "" }
        var out = "<section class=\"gallery\">\n<h2>\(HTML.escape(Words.photos(done.count)))</h2>\n<ul class=\"grid\">\n"
        for item in done {
            let outputs = item.outputs ?? []
            let main = outputs.first.flatMap { BatchFiles.path($0.file) }
            let thumb = item.thumbnail.flatMap(BatchFiles.path)
            out += "<li class=\"tile\">"
            if let main {
                out += "<a class=\"picture\" href=\"\(Paths.batchFile(inbox, id, main))\">"
                    + (thumb.map { "<img src=\"\(Paths.batchFile(inbox, id, $0))\" alt=\"\(HTML.escape(item.source))\" loading=\"lazy\">" } ?? "")
                    + "</a>"
            }
            out += "<p class=\"name\" title=\"\(HTML.escape(item.source))\">\(HTML.escape(item.source))</p>"
            if outputs.count > 1 {
                out += "<p class=\"outs\">" + outputs.compactMap { o in
                    BatchFiles.path(o.file).map { "<a href=\"\(Paths.batchFile(inbox, id, $0))\">\(HTML.escape(Words.output(o)))</a>" }
                }.joined(separator: " ") + "</p>"
            }
            if let warnings = item.warnings, !warnings.isEmpty {
                out += "<p class=\"warn\" title=\"\(HTML.escape(warnings.joined(separator: "\n")))\">\(warnings.count == 1 ? "1 note" : "\(warnings.count) notes")</p>"
            }
            out += "</li>\n"
        }
        return out + "</ul>\n</section>\n"
    }

    private var setOutputs: String {
        guard !report.outputs.isEmpty else { return "" }
        var out = "<section class=\"gallery set\">\n<h2>Made from the whole batch</h2>\n<ul class=\"grid\">\n"
        for output in report.outputs {
            guard let path = BatchFiles.path(output.file) else { continue }
            out += "<li class=\"tile\"><a class=\"picture tall\" href=\"\(Paths.batchFile(inbox, id, path))\">"
                + "<img src=\"\(Paths.batchFile(inbox, id, path))\" alt=\"\(HTML.escape(Words.setOutput(output.file)))\" loading=\"lazy\"></a>"
                + "<p class=\"name\">\(HTML.escape(Words.setOutput(output.file)))</p></li>\n"
        }
        return out + "</ul>\n</section>\n"
    }

    private var allFiles: String {
        let total = files.reduce(Int64(0)) { $0 + $1.size }
        var out = "<details class=\"files-list card\"><summary>All \(files.count) files (\(HTML.bytes(total)))</summary>\n<table class=\"list\">\n"
        for f in files {
            let shown = f.path.map(\.escaped).joined(separator: "/")
            out += "<tr><td><a href=\"\(Paths.batchFile(inbox, id, f.path))\">\(HTML.escape(shown))</a></td><td class=\"size\">\(HTML.bytes(f.size))</td></tr>\n"
        }
        return out + "</table>\n</details>\n"
    }
}
