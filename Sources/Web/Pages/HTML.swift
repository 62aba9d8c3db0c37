import Batches
import Foundation
import System

/// HTML text, made by the pages: everything that comes from a person or a file (names, folder
/// names, messages) goes through `escape`, so a file called `<script>alert(1)</script>.jpg` is
/// shown as those characters, never run; and the Content-Security-Policy forbids inline
/// script in any case.
enum HTML {
    /// `&`, `<`, `>`, `"` and `'` as entities (as report.html escapes them).
    static func escape(_ text: String) -> String { MarkupText.escaped(text) }

    /// A file name for people (UTF-8 as is, other bytes as `\xHH`), escaped.
    static func escape(_ name: FileName) -> String { escape(name.escaped) }

    /// The policy of every console page: scripts, styles and images from the console only,
    /// no inline script or style, no frames, forms post only here.
    static let contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        + "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    /// The policy of a batch's files (report.html has its own inline style, never a script).
    static let filesContentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
        + "form-action 'none'; base-uri 'none'; frame-ancestors 'self'"

    /// A whole page: the head (viewport for phones, the stylesheet, the script, deferred), a
    /// top bar with the console's parts and the user's logout, `body`, and for an
    /// administrator the warnings at its foot. The body carries the assets' version (a tab
    /// that outlives an upgrade is told to reload).
    static func page(title: String, viewer: Viewer?, body: String) -> String {
        var bar = "<header class=\"bar\"><a class=\"brand\" href=\"/\">PhotoFinish</a>"
        if let viewer {
            bar += "<nav><a href=\"/\">Hot folders</a>"
                + (viewer.admin ? "<a href=\"/users\">Logins</a>" : "")
                + "<a href=\"/account\">\(escape(viewer.name))</a></nav>"
                + "<form class=\"logout\" method=\"post\" action=\"/logout\">"
                + "<input type=\"hidden\" name=\"csrf\" value=\"\(escape(viewer.csrf))\">"
                + "<button type=\"submit\">Log out</button></form>"
        }
        bar += "</header>"
        var foot = ""
        if let viewer, !viewer.warnings.isEmpty {
            foot = "<footer class=\"warnings\" role=\"note\"><strong>For administrators</strong><ul>"
                + viewer.warnings.map { "<li>\(escape($0))</li>" }.joined() + "</ul></footer>\n"
        }
        return """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(title)) · PhotoFinish</title>
            <link rel="stylesheet" href="/static/console.css?v=\(Assets.version)">
            <script src="/static/console.js?v=\(Assets.version)" defer></script>
            </head>
            <body data-version="\(Assets.version)">
            \(bar)
            <div id="notice" class="notice" role="alert" hidden></div>
            <main>
            \(body)
            </main>
            \(foot)</body>
            </html>

            """
    }

    /// A time as the page shows it: in this machine's local time ("Tue 5 Dec, 14:32"), which
    /// the script says again in the reader's own time zone (and as "3 min ago" for `ago`).
    static func time(_ iso: String, ago: Bool = false) -> String {
        let shown = HumanTime.date(isoUTC: iso).map { BatchLabel.local($0) } ?? iso
        return "<time datetime=\"\(escape(iso))\"\(ago ? " data-ago" : "")>\(escape(shown))</time>"
    }

    /// `12.3 MB`, `840 kB`, `512 B`.
    static func bytes(_ n: Int64) -> String {
        if n >= 1_000_000_000 { return String(format: "%.1f GB", Double(n) / 1e9) }
        if n >= 1_000_000 { return String(format: "%.1f MB", Double(n) / 1e6) }
        if n >= 1_000 { return String(format: "%.0f kB", Double(n) / 1e3) }
        return "\(n) B"
    }

    /// `1 photo`, `3 photos`.
    static func count(_ n: Int, _ one: String, _ many: String? = nil) -> String {
        "\(n) " + (n == 1 ? one : many ?? one + "s")
    }
}
