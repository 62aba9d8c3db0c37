import Batches
import Configuration
import Foundation
import QR
import Service
import Sharing
import System

/// The console's part of a batch's sharing (reference: Share links, QR codes; Approval), as
/// HTML made from plain values: the batch's links — each with its state, password, openings,
/// its QR code and a button to end it —, a form to make one, and the approval: what was
/// chosen, or (`approve: "owner"`) a box per photo for the studio to approve.
struct SharePanel {
    struct Link: Sendable, Equatable {
        var share: Share
        /// The whole link (nil when the folder's key is gone).
        var link: String?
        var openings: [Opening]
    }

    /// Where the panel's forms go (the console's routes).
    struct Actions: Sendable, Equatable {
        var share: String
        var revoke: String
        var approve: String
    }

    var links: [Link]
    var approve: ApproveMode
    var approval: Approval?
    /// The batch's photos by the names an approval uses.
    var photos: [String]
    var csrf: String
    var actions: Actions
    /// Whether `web.publicURL` is set (links without it are paths only: said).
    var hasPublicURL: Bool
    /// The hot folder's `shareExpires`, the form's default.
    var expires: Duration
    var now: Date

    /// The batch's links as a `share list` shows them: from its store, the newest last.
    /// - Throws: `ShareError` when the store cannot be read.
    static func links(batch: String, store: ShareStore, publicURL: String?) throws(ShareError) -> [Link] {
        let key = try store.key()
        return try store.all().filter { $0.batch == batch }.map { share throws(ShareError) in
            let text = key.flatMap { k in share.token.map { $0.text(key: k) } }
            return Link(share: share, link: text.map { ShareGate.link(publicURL: publicURL, token: $0) },
                        openings: try store.openings(of: share.name))
        }
    }

    var html: String {
        var h = "<section class=\"share\" id=\"share\"><h2>Share with the client</h2>\n"
        if !hasPublicURL {
            h += "<p class=\"note\">Set <code>web.publicURL</code> in the config (the address clients reach this console at): until then links are paths only and photos carry no QR code.</p>\n"
        }
        let working = links.filter { $0.share.revoked == nil && $0.share.expires > now }
        for link in links.reversed() {
            h += item(link)
        }
        if links.isEmpty { h += "<p class=\"dim\">No link yet.</p>\n" }
        let days = max(1, Int(expires.components.seconds / 86_400))
        h += """
            <form class="share-new" method="post" action="\(e(actions.share))">
            <input type="hidden" name="csrf" value="\(e(csrf))">
            <label>Ends in <input name="expires" value="\(days)d" size="5" pattern="[0-9]+[smhd]" title="a duration: 7d, 48h"></label>
            <label>Password <span class="dim">(optional, 8 characters or more)</span> <input name="password" type="password" autocomplete="new-password" minlength="8"></label>
            <button type="submit">\(working.isEmpty ? "Make a link" : "Make another link")</button>
            </form>

            """
        h += approvalPart
        return h + "</section>\n"
    }

    private func item(_ link: Link) -> String {
        let share = link.share
        var state: String
        if let revoked = share.revoked {
            state = "withdrawn \(e(HumanTime.words(revoked.at))) by \(e(revoked.by))"
        } else if share.expires <= now {
            state = "ended \(e(HumanTime.words(share.expires)))"
        } else {
            state = "works until \(e(HumanTime.words(share.expires)))"
        }
        if share.password != nil { state += " · password" }
        let opened = link.openings.filter { $0.what == .opened }
        state += " · opened " + (opened.count == 1 ? "once" : "\(opened.count) times")
        if let last = link.openings.last { state += ", last \(e(HumanTime.words(last.at))) from \(e(last.address))" }
        let live = share.revoked == nil && share.expires > now
        var h = "<div class=\"share-link\(live ? "" : " ended")\">"
        if let text = link.link {
            h += live ? "<p><a href=\"\(e(text))\" rel=\"noreferrer\">\(e(text))</a></p>" : "<p class=\"dim\"><s>\(e(text))</s></p>"
            if live, let code = try? QRCode(text) { h += "<div class=\"qr\">\(code.svg())</div>" }
        }
        h += "<p class=\"dim\">\(state)</p>"
        if live {
            h += "<form method=\"post\" action=\"\(e(actions.revoke))\"><input type=\"hidden\" name=\"csrf\" value=\"\(e(csrf))\">"
                + "<input type=\"hidden\" name=\"share\" value=\"\(e(share.name))\"><button class=\"plain\" type=\"submit\">End this link</button></form>"
        }
        return h + "</div>\n"
    }

    private var approvalPart: String {
        switch (approve, approval) {
        case (.none, nil):
            return ""
        case (_, let approval?):
            var h = "<h3>Approved</h3><p>\(e(approval.by == Approval.client ? "The client" : approval.by)) approved "
                + "\(approval.approved.count) of \(photos.count) photos \(e(HumanTime.words(approval.at))).</p>"
            if !approval.approved.isEmpty { h += "<p>Approved: \(approval.approved.map(e).joined(separator: ", "))</p>" }
            if !approval.rejected.isEmpty { h += "<p class=\"dim\">Not approved: \(approval.rejected.map(e).joined(separator: ", "))</p>" }
            if let note = approval.note { h += "<blockquote>\(e(note))</blockquote>" }
            return h + "\n"
        case (.client, nil):
            return "<h3>Held for approval</h3><p>Waits for the client to choose on the link's page.</p>\n"
        case (.owner, nil):
            var h = "<h3>Held for approval</h3><form class=\"approve\" method=\"post\" action=\"\(e(actions.approve))\">"
                + "<input type=\"hidden\" name=\"csrf\" value=\"\(e(csrf))\"><p>Tick the photos to deliver:</p><ul>"
            for photo in photos {
                h += "<li><label><input type=\"checkbox\" name=\"approve\" value=\"\(e(photo))\" checked> \(e(photo))</label></li>"
            }
            return h + "</ul><label>Note <textarea name=\"note\" rows=\"2\" maxlength=\"\(Approval.noteLimit)\"></textarea></label>"
                + "<button type=\"submit\">Approve</button></form>\n"
        }
    }

    private func e(_ text: String) -> String { MarkupText.escaped(text) }
}
