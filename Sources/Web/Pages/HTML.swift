import Batches
import Foundation
import System

/// HTML text, made by the pages: everything that comes from a person or a file (names, folder
/// names, messages) goes through `escape`, so a file called `<script>alert(1)</script>.jpg` is
/// shown as those characters, never run; and the Content-Security-Policy forbids inline
/// script in any case.
enum HTML {
    /// `&`, `<`, `>`, `"` and `'` as entities (as report.html escapes them).
    static func escape(_ text: String) -> String { ReportHTML.e(text) }

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
    /// top bar with the user and a logout button, and `body`.
    static func page(title: String, user: String?, csrf: String?, body: String) -> String {
        var bar = "<header class=\"bar\"><a class=\"brand\" href=\"/\">PhotoFinish</a>"
        if let user {
            bar += "<form class=\"logout\" method=\"post\" action=\"/logout\">"
                + "<input type=\"hidden\" name=\"csrf\" value=\"\(escape(csrf ?? ""))\">"
                + "<span class=\"who\">\(escape(user))</span> <button type=\"submit\">Log out</button></form>"
        }
        bar += "</header>"
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
            <body>
            \(bar)
            <main>
            \(body)
            </main>
            </body>
            </html>

            """
    }

    /// A time as the page shows it: UTC text, which the script turns into the reader's own
    /// time and "3 min ago".
    static func time(_ iso: String) -> String {
        let shown = iso.count >= 16 ? iso.prefix(10) + " " + iso.dropFirst(11).prefix(5) + " UTC" : Substring(iso)
        return "<time datetime=\"\(escape(iso))\">\(escape(String(shown)))</time>"
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
