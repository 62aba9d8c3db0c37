import Batches
import Foundation
import QR
import Sharing
import System

/// The pages a client sees at `/s/TOKEN/` (reference: Share links, QR codes), as HTML text made
/// from plain values. They work on a phone without script: the photos side by side in a strip
/// that snaps photo by photo (a swipe, or the *Next* link), each to download, the set as a ZIP,
/// and the approval as a plain form. Every name is escaped; the only style is the page's own,
/// allowed by its hash in the Content-Security-Policy; nothing else of the server is linked.
enum SharePages {
    /// One photo of the set: its first output, shown large, and its other outputs (crops,
    /// variants) to download.
    struct Photo: Sendable, Equatable {
        /// The file shown, and the name the client approves it by.
        var name: String
        var size: [Int]
        var bytes: Int
        var others: [String] = []
    }

    /// What the page offers about approval.
    enum Approving: Sendable, Equatable {
        /// Nothing (the hot folder asks for no approval, or the owner approves).
        case none
        /// The form: a box on each photo, a note, a button.
        case open
        /// Sent already: what was chosen.
        case done(Approval)
    }

    /// The gallery.
    /// - Parameters:
    ///   - photos: the finished photos, in batch order.
    ///   - extras: the batch's own outputs (a stitched story, the colour card).
    ///   - expires: when the link ends.
    ///   - form: the `csrf` value of the page's forms.
    ///   - link: the link itself, for its QR code ("open on another device").
    ///   - notice: a sentence above the photos (the approval just received).
    static func gallery(photos: [Photo], extras: [String], zipBytes: Int?, expires: Date, approving: Approving,
                        form: String, link: String, notice: String? = nil) -> String {
        let count = photos.count == 1 ? "1 photo" : "\(photos.count) photos"
        var h = "<header><h1>Your photos</h1><p class=\"dim\">\(count) · this link works until \(e(HumanTime.words(expires)))</p>"
        h += "<p class=\"actions\"><a class=\"button\" href=\"batch.zip\" download>Download all"
            + (zipBytes.map { " <span class=\"dim\">(ZIP, \(e(ByteCount.words($0))))</span>" } ?? "") + "</a></p>"
        if let notice { h += "<p class=\"notice\" role=\"status\">\(e(notice))</p>" }
        if case .done(let approval) = approving {
            h += "<p class=\"notice\">You approved \(approval.approved.count) of \(count) on \(e(HumanTime.words(approval.at))). Thank you.</p>"
        }
        h += "</header>\n<main class=\"strip\">\n"
        for (index, photo) in photos.enumerated() {
            let n = index + 1
            let file = url(photo.name)
            let dimensions = photo.size.count == 2 ? " width=\"\(photo.size[0])\" height=\"\(photo.size[1])\"" : ""
            h += "<figure class=\"slide\" id=\"p\(n)\"><img src=\"\(file)\" alt=\"\(e(photo.name)), \(n) of \(photos.count)\"\(dimensions)"
                + (n > 2 ? " loading=\"lazy\"" : "") + " decoding=\"async\">"
            h += "<figcaption><span class=\"n\">\(n) / \(photos.count)</span> <span class=\"name\">\(e(photo.name))</span>"
            h += " <a href=\"\(file)\" download>Download</a>"
            for other in photo.others { h += " <a href=\"\(url(other))\" download class=\"dim\">\(e(other))</a>" }
            switch approving {
            case .none: break
            case .open:
                h += "<label class=\"choose\"><input type=\"checkbox\" name=\"approve\" value=\"\(e(photo.name))\" form=\"approval\"> Approve</label>"
            case .done(let approval):
                h += approval.approved.contains(photo.name) ? " <b class=\"ok\">approved</b>" : " <b class=\"no\">not approved</b>"
            }
            if n > 1 { h += " <a class=\"step\" href=\"#p\(n - 1)\" aria-label=\"Previous photo\">‹ Back</a>" }
            if n < photos.count { h += " <a class=\"step\" href=\"#p\(n + 1)\" aria-label=\"Next photo\">Next ›</a>" }
            h += "</figcaption></figure>\n"
        }
        h += "</main>\n"
        if !extras.isEmpty {
            h += "<section><h2>Also</h2><ul>" + extras.map { "<li><a href=\"\(url($0))\" download>\(e($0))</a></li>" }.joined() + "</ul></section>\n"
        }
        if approving == .open {
            h += """
                <form id="approval" class="approval" method="post" action="approve">
                <h2>Your choice</h2>
                <p>Tick <b>Approve</b> on each photo you want, add a note if you like, and send.</p>
                <input type="hidden" name="csrf" value="\(e(form))">
                <label for="note">Note <span class="dim">(optional)</span></label>
                <textarea id="note" name="note" rows="3" maxlength="\(Approval.noteLimit)"></textarea>
                <button type="submit">Send my choice</button>
                </form>

                """
        }
        if let code = try? QRCode(link) {
            h += "<footer><div class=\"qr\">\(code.svg())</div><p class=\"dim\">Open these photos on another device: scan this code.</p></footer>\n"
        }
        return page(title: "Your photos", body: h)
    }

    /// The password page.
    /// - Parameters:
    ///   - refused: a wrong password was just given.
    ///   - wait: seconds before another try is taken (too many wrong ones), or nil.
    static func password(refused: Bool, wait: Int?, form: String) -> String {
        var h = "<header><h1>Your photos</h1><p>These photos are protected: enter the password you were given.</p></header>\n"
        if let wait {
            h += "<p class=\"error\" role=\"alert\">Too many wrong passwords: try again in \(wait) second\(wait == 1 ? "" : "s").</p>\n"
        } else if refused {
            h += "<p class=\"error\" role=\"alert\">That password is not right.</p>\n"
        }
        h += """
            <form class="password" method="post" action="./">
            <input type="hidden" name="csrf" value="\(e(form))">
            <label for="password">Password</label>
            <input id="password" name="password" type="password" autocomplete="current-password" required autofocus>
            <button type="submit">Show the photos</button>
            </form>

            """
        return page(title: "Your photos", body: h)
    }

    /// A link that has ended (410), or one that never was (404): the same few words for any
    /// guess, so a guesser learns nothing.
    static func ended(_ words: String) -> String {
        page(title: "Photos", body: "<header><h1>Photos</h1><p>\(e(words))</p>"
             + "<p class=\"dim\">Ask whoever sent you the link for a new one.</p></header>\n")
    }

    /// A request the page cannot take (a stale form, too many requests).
    static func refused(_ words: String) -> String {
        page(title: "Photos", body: "<header><h1>Photos</h1><p class=\"error\" role=\"alert\">\(e(words))</p>"
             + "<p><a href=\"./\">Back to the photos</a></p></header>\n")
    }

    /// What a link that was never made answers.
    static let notFoundWords = "There are no photos at this address. Check that the link was copied whole."

    /// The headers every share page goes with: its own Content-Security-Policy (nothing but
    /// its style, its photos and forms to itself), no referrer (the token is in the address),
    /// never cached by a shared cache, never indexed, never framed.
    static let headers: [(String, String)] = [
        ("Content-Security-Policy", contentSecurityPolicy),
        ("Referrer-Policy", "no-referrer"),
        ("X-Robots-Tag", "noindex, nofollow"),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Cache-Control", "private, no-store"),
    ]

    static let contentSecurityPolicy = "default-src 'none'; style-src '\(styleHash)'; img-src 'self'; form-action 'self'; "
        + "base-uri 'none'; frame-ancestors 'none'"

    /// `sha256-…` of the page's style, as CSP writes it.
    static let styleHash: String = {
        let hex = Array(SHA256.hex(of: Array(css.utf8)).utf8)
        let bytes = stride(from: 0, to: hex.count, by: 2).map { UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
        return "sha256-" + Data(bytes).base64EncodedString()
    }()

    private static func page(title: String, body: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <meta name="robots" content="noindex, nofollow">
        <title>\(e(title))</title>
        <style>\(css)</style>
        </head>
        <body>
        \(body)</body>
        </html>

        """
    }

    private static func e(_ text: String) -> String { MarkupText.escaped(text) }

    /// A file of the set as a link relative to the page (`IMG_1.jpg`, percent-encoded).
    private static func url(_ name: String) -> String { ReportHTML.url(name) }

    static let css = """
        :root{color-scheme:light dark;--fg:#1d1d1f;--bg:#f4f4f5;--card:#fff;--dim:#6e6e73;--accent:#0b5cc4;--ok:#1a7f37;--bad:#b42318}
        @media (prefers-color-scheme:dark){:root{--fg:#f2f2f2;--bg:#111113;--card:#1f1f22;--dim:#a1a1a6;--accent:#6ea8ff;--ok:#4ac26b;--bad:#ff6b6b}}
        *{box-sizing:border-box}html{-webkit-text-size-adjust:100%}
        body{margin:0;font:16px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg)}
        header,section,form,footer{max-width:48rem;margin:0 auto;padding:.8rem 1rem}
        h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.15rem;margin:.6rem 0}
        a{color:var(--accent)}.dim{color:var(--dim)}.ok{color:var(--ok)}.no,.error{color:var(--bad)}
        .notice{background:var(--card);border-left:4px solid var(--ok);padding:.4rem .8rem}
        .button,button{display:inline-block;font:inherit;font-weight:600;color:#fff;background:var(--accent);border:0;border-radius:.6rem;
        padding:.6rem 1.1rem;text-decoration:none;cursor:pointer}.button .dim{color:#e8eefc}
        .strip{display:flex;overflow-x:auto;scroll-snap-type:x mandatory;scroll-behavior:smooth;gap:0;-webkit-overflow-scrolling:touch}
        .slide{flex:0 0 100%;scroll-snap-align:center;margin:0;padding:0 .5rem;display:flex;flex-direction:column;align-items:center}
        .slide img{display:block;max-width:100%;max-height:78vh;width:auto;height:auto;object-fit:contain;background:var(--card)}
        figcaption{max-width:48rem;width:100%;padding:.5rem 0;display:flex;flex-wrap:wrap;gap:.3rem .9rem;align-items:center;overflow-wrap:anywhere}
        .n{color:var(--dim)}.name{font-weight:600}.step{margin-left:auto}
        .choose{display:inline-flex;gap:.3rem;align-items:center;font-weight:600}.choose input{width:1.3rem;height:1.3rem}
        label{display:block;margin:.5rem 0 .2rem}.choose{display:inline-flex}
        textarea,input[type=password]{width:100%;font:inherit;padding:.5rem;border:1px solid var(--dim);border-radius:.4rem;background:var(--card);color:var(--fg)}
        form button{margin-top:.7rem}
        .qr{width:8rem;background:#fff;padding:0;border-radius:.3rem}.qr svg{display:block;width:100%;height:auto}
        """
}
