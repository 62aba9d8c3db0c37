import Foundation
import System

/// The console's pages, as HTML text (pure: made from plain values; tested without a server).
/// Plain HTML that works without script and reads on a 390 px phone; the parts marked
/// `data-live` are refreshed by the script every 2 s.
enum Pages {
    /// Who is looking: their name and their session's form token.
    struct Viewer {
        var user: String
        var csrf: String
    }

    static func login(error: String?, name: String, csrf: String, next: String) -> String {
        let message = error.map { "<p class=\"error\" role=\"alert\">\(HTML.escape($0))</p>" } ?? ""
        return HTML.page(title: "Log in", user: nil, csrf: nil, body: """
            <form class="login" method="post" action="/login">
            <h1>Log in</h1>
            \(message)
            <input type="hidden" name="csrf" value="\(HTML.escape(csrf))">
            <input type="hidden" name="next" value="\(HTML.escape(next))">
            <label for="user">User</label>
            <input id="user" name="user" autocomplete="username" autocapitalize="none" required value="\(HTML.escape(name))">
            <label for="password">Password</label>
            <input id="password" name="password" type="password" autocomplete="current-password" required>
            <button type="submit">Log in</button>
            </form>
            """)
    }

    static func dashboard(_ viewer: Viewer, folders: [ConsoleFolder], running: Bool) -> String {
        var body = "<h1>Hot folders</h1>\n"
        if !running { body += "<p class=\"error\">The service is stopping: uploads wait in drop/ for its next start.</p>\n" }
        if folders.isEmpty {
            body += "<p>No hot folder for \(HTML.escape(viewer.user)) yet: an administrator names them with <code>photofinish user add \(HTML.escape(viewer.user)) --inbox NAME</code>.</p>"
        }
        body += "<ul id=\"folders\" class=\"cards\" data-live>\n"
        for folder in folders {
            body += "<li class=\"card\">\n<h2><a href=\"\(Paths.folder(folder.name))\">\(HTML.escape(folder.name))</a></h2>\n"
            body += stateLine(folder) + lastLine(folder) + notes(folder)
            body += "</li>\n"
        }
        body += "</ul>\n"
        return HTML.page(title: "Hot folders", user: viewer.user, csrf: viewer.csrf, body: body)
    }

    static func folder(_ viewer: Viewer, _ folder: ConsoleFolder, batches: [BatchCatalog.Summary], more: Bool,
                       maxFileBytes: Int, accept: String, hasProof: Bool) -> String {
        var body = "<p><a href=\"/\">← All hot folders</a></p>\n<h1>\(HTML.escape(folder.name))</h1>\n"
        body += "<div id=\"state\" data-live>\(stateLine(folder))\(notes(folder))</div>\n"
        body += """
            <form class="upload" method="post" action="\(Paths.upload(folder.name))" enctype="multipart/form-data" \
            data-max-bytes="\(maxFileBytes)" data-max-text="\(HTML.escape(Upload.limitWords(maxFileBytes)))">
            <input type="hidden" name="csrf" value="\(HTML.escape(viewer.csrf))">
            <label for="photos"><strong>Upload photos</strong> <span class="dim">up to \(HTML.escape(Upload.limitWords(maxFileBytes))) each</span></label>
            <input id="photos" type="file" name="photos" multiple accept="\(HTML.escape(accept))">
            <button type="submit">Upload</button>
            <ul class="files"></ul>
            </form>

            """
        body += "<h2>Batches</h2>\n<ul id=\"batches\" class=\"batches\" data-live>\n"
        if batches.isEmpty { body += "<li class=\"dim\">No batch yet: photos uploaded or dropped here are finished as one batch once they stop arriving.</li>\n" }
        for b in batches {
            body += "<li class=\"card\"><a href=\"\(Paths.batch(folder.name, b.id))\">\(HTML.escape(b.id))</a> "
                + "<span class=\"state \(HTML.escape(b.status))\">\(HTML.escape(b.status))</span>\n"
                + "<p class=\"dim\">\(b.ok) of \(HTML.count(b.items, "photo")) finished"
                + (b.failed > 0 ? ", \(b.failed) failed" : "") + " · \(HTML.time(b.finished))"
                + (b.redoes.map { " · runs \(HTML.escape($0)) again" } ?? "") + "</p>\n"
            if !b.thumbnails.isEmpty {
                body += "<div class=\"thumbs\">" + b.thumbnails.map {
                    "<img src=\"\(Paths.batchFile(folder.name, b.id, $0))\" alt=\"\" loading=\"lazy\" width=\"64\" height=\"64\">"
                }.joined() + "</div>\n"
            }
            body += "</li>\n"
        }
        if more, let last = batches.last {
            body += "<li><a href=\"\(Paths.folder(folder.name))?before=\(Paths.encode(last.id))\">Older batches…</a></li>\n"
        }
        body += "</ul>\n"
        if hasProof {
            body += """
                <section class="proof"><h2>Template <q>\(HTML.escape(folder.template))</q></h2>
                <p class="dim">What the template does to six sample photos (its proof sheet):</p>
                <a href="\(Paths.proof(folder.name))"><img src="\(Paths.proof(folder.name))" alt="proof sheet of the template \(HTML.escape(folder.template))" loading="lazy"></a></section>

                """
        } else {
            body += "<h2>Template <q>\(HTML.escape(folder.template))</q></h2><p class=\"dim\">Its proof sheet is being made.</p>\n"
        }
        return HTML.page(title: folder.name, user: viewer.user, csrf: viewer.csrf, body: body)
    }

    static func batch(_ viewer: Viewer, inbox: String, _ b: BatchCatalog.Summary?, id: String, files: [BatchFiles.Entry]) -> String {
        var body = "<p><a href=\"\(Paths.folder(inbox))\">← \(HTML.escape(inbox))</a></p>\n<h1>Batch \(HTML.escape(id))</h1>\n"
        if let b {
            body += "<p><span class=\"state \(HTML.escape(b.status))\">\(HTML.escape(b.status))</span> "
                + "\(b.ok) of \(HTML.count(b.items, "photo")) finished" + (b.failed > 0 ? ", \(b.failed) failed" : "")
                + "</p>\n<p class=\"dim\">Started \(HTML.time(b.started)), finished \(HTML.time(b.finished))</p>\n"
        }
        let total = files.reduce(Int64(0)) { $0 + $1.size }
        body += "<div class=\"actions\">"
        if files.contains(where: { $0.path.map(\.bytes) == [Array("report.html".utf8)] }) {
            body += "<a class=\"button\" href=\"\(Paths.batchFile(inbox, id, [FileName("report.html")]))\">Open the report</a>"
        }
        body += "<a class=\"button plain\" href=\"\(Paths.zip(inbox, id))\" download>Download all (ZIP, \(HTML.bytes(total)))</a></div>\n"
        body += "<h2>Files</h2>\n<table class=\"list\">\n"
        for f in files {
            let shown = f.path.map(\.escaped).joined(separator: "/")
            body += "<tr><td><a href=\"\(Paths.batchFile(inbox, id, f.path))\">\(HTML.escape(shown))</a></td><td class=\"size\">\(HTML.bytes(f.size))</td></tr>\n"
        }
        body += "</table>\n"
        return HTML.page(title: "Batch \(id)", user: viewer.user, csrf: viewer.csrf, body: body)
    }

    static func uploaded(_ viewer: Viewer, inbox: String, _ upload: Upload) -> String {
        var body = "<p><a href=\"\(Paths.folder(inbox))\">← \(HTML.escape(inbox))</a></p>\n<h1>Upload</h1>\n"
        if let note = upload.note { body += "<p class=\"error\">\(HTML.escape(note))</p>\n" }
        if !upload.accepted.isEmpty {
            body += "<h2>Accepted</h2>\n<ul class=\"files\">\n" + upload.accepted.map {
                "<li class=\"accepted\">\(HTML.escape($0.sent)) <span class=\"dim\">→ drop/\(HTML.escape($0.name)) (\(HTML.bytes($0.bytes)))</span></li>\n"
            }.joined() + "</ul>\n<p>They are finished as one batch once no more arrive: see <a href=\"\(Paths.folder(inbox))\">\(HTML.escape(inbox))</a>.</p>\n"
        }
        if !upload.refused.isEmpty {
            body += "<h2>Refused</h2>\n<ul class=\"files\">\n" + upload.refused.map {
                "<li class=\"refused\">\(HTML.escape($0.sent)) <span class=\"dim\">— \(HTML.escape($0.reason))</span></li>\n"
            }.joined() + "</ul>\n"
        }
        return HTML.page(title: "Upload", user: viewer.user, csrf: viewer.csrf, body: body)
    }

    static func error(_ viewer: Viewer?, title: String, message: String) -> String {
        HTML.page(title: title, user: viewer?.user, csrf: viewer?.csrf,
                  body: "<h1>\(HTML.escape(title))</h1>\n<p>\(HTML.escape(message))</p>\n<p><a href=\"/\">Back to the hot folders</a></p>\n")
    }

    /// "processing 23 of 80", "refused: …", "idle", with its badge and a progress bar.
    static func stateLine(_ f: ConsoleFolder) -> String {
        var out = ""
        switch f.state {
        case .refused(let why, let fix):
            out += "<p><span class=\"state refused\">refused</span> \(HTML.escape(why))</p>\n"
            if !fix.isEmpty {
                out += "<p class=\"dim\">To fix it:</p>\n<ul class=\"fix\">"
                    + fix.map { "<li><code>\(HTML.escape($0))</code></li>" }.joined() + "</ul>\n"
            }
        case .lowSpace(let why):
            out += "<p><span class=\"state unavailable\">low on space</span> \(HTML.escape(why))</p>\n"
        case .unavailable(let since, let error):
            out += "<p><span class=\"state unavailable\">share unavailable</span> \(HTML.escape(error))"
                + (since.map { " · since \(HTML.time($0))" } ?? "") + "</p>\n"
        case .stopped:
            out += "<p><span class=\"state stopped\">stopped</span></p>\n"
        case .starting:
            out += "<p><span class=\"state stopped\">starting</span></p>\n"
        case .watching:
            if let p = f.processing {
                out += "<p><span class=\"state processing\">processing \(p.done) of \(p.total)</span></p>\n"
                    + "<progress max=\"\(max(1, p.total))\" value=\"\(p.done)\">\(p.done) of \(p.total)</progress>\n"
            } else {
                out += "<p><span class=\"state \(f.waiting > 0 ? "watching" : "idle")\">\(f.waiting > 0 ? "watching" : "idle")</span></p>\n"
            }
        }
        var counts: [String] = []
        if f.queued > 0 { counts.append(HTML.count(f.queued, "batch", "batches") + " queued") }
        if f.waiting > 0 { counts.append(HTML.count(f.waiting, "file") + " pending") }
        if !counts.isEmpty { out += "<p class=\"dim\">\(counts.joined(separator: " · "))</p>\n" }
        return out
    }

    private static func lastLine(_ f: ConsoleFolder) -> String {
        guard let last = f.last else { return "<p class=\"dim\">No batch yet</p>\n" }
        return "<p>Last batch: <a href=\"\(Paths.batch(f.name, last.batch))\">\(HTML.escape(last.batch))</a> "
            + "<span class=\"state \(HTML.escape(last.status))\">\(HTML.escape(last.status))</span></p>\n"
            + "<p class=\"dim\">\(last.ok) of \(HTML.count(last.items, "photo")) finished"
            + (last.failed > 0 ? ", \(last.failed) failed" : "") + " · \(HTML.time(last.finished))</p>\n"
    }

    private static func notes(_ f: ConsoleFolder) -> String {
        guard !f.notes.isEmpty else { return "" }
        return "<details class=\"notes\"><summary>\(HTML.count(f.notes.count, "file")) in drop/ not taken</summary><ul>"
            + f.notes.prefix(20).map { "<li>\(HTML.escape($0))</li>" }.joined() + "</ul></details>\n"
    }
}
