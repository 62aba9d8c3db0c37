import Foundation
import Sharing
import System
import Testing
@testable import Web

/// The client's pages as text: escaped names, no script, the style its CSP allows by hash, the
/// approval form only when asked for.
@Suite struct SharePagesTests {
    let photos = [SharePages.Photo(name: "IMG_1.jpg", size: [2048, 1536], bytes: 900_000, others: ["IMG_1-4x5.jpg"]),
                  SharePages.Photo(name: "<img src=x onerror=alert(1)>.jpg", size: [1536, 2048], bytes: 800_000),
                  SharePages.Photo(name: "café #2?.jpg", size: [2048, 2048], bytes: 1_000_000)]
    let link = "https://photos.example.com/s/q3K9w_Zb0xT-4nQeLrA8VgHcYpUu1sDf2kMj6oNiEa7tPyBvCx5lWzRh0gFd3s9/"
    let expires = Date(timeIntervalSince1970: 1_790_000_000)

    @Test func theGalleryEscapesNamesAndRunsNoScript() {
        let html = SharePages.gallery(photos: photos, extras: ["20261129-150405-3f2a-story-1-of-1.jpg"], zipBytes: 2_700_000,
                                      expires: expires, approving: .none, form: "f", link: link)
        #expect(!html.lowercased().contains("<script") && !html.contains("<img src=x") && !html.contains(" style="))
        #expect(html.contains("&lt;img src=x onerror=alert(1)&gt;.jpg"))
        #expect(html.contains("href=\"caf%C3%A9%20%232%3F.jpg\" download"))
        #expect(html.contains("id=\"p1\"") && html.contains("href=\"#p2\"") && html.contains("href=\"#p3\"") && !html.contains("href=\"#p4\""))
        #expect(html.contains("href=\"batch.zip\" download") && html.contains("href=\"IMG_1-4x5.jpg\" download"))
        #expect(!html.contains("<form"))
        #expect(html.contains("<svg") && html.contains("aria-label=\"QR code: \(link)\""))
        // Nothing of the console: no absolute link to the server.
        #expect(!html.contains("href=\"/") && !html.contains("src=\"/"))
        // The page's one style is the one its policy allows.
        let style = html.components(separatedBy: "<style>")[1].components(separatedBy: "</style>")[0]
        #expect(style == SharePages.css)
        #expect(SharePages.contentSecurityPolicy.contains("style-src '\(SharePages.styleHash)'"))
        #expect(SharePages.styleHash.hasPrefix("sha256-") && SharePages.styleHash.count == 51)
    }

    @Test func theApprovalFormAndWhatWasChosen() {
        let open = SharePages.gallery(photos: photos, extras: [], zipBytes: nil, expires: expires, approving: .open,
                                      form: "token\"x", link: link)
        #expect(open.contains("<form id=\"approval\" class=\"approval\" method=\"post\" action=\"approve\">"))
        #expect(open.contains("name=\"csrf\" value=\"token&quot;x\""))
        #expect(open.components(separatedBy: "name=\"approve\"").count == 4)
        #expect(open.contains("value=\"&lt;img src=x onerror=alert(1)&gt;.jpg\" form=\"approval\""))
        let approval = Approval(by: "client", at: expires, approved: ["IMG_1.jpg"], rejected: [photos[1].name, photos[2].name], note: "ok")
        let done = SharePages.gallery(photos: photos, extras: [], zipBytes: nil, expires: expires, approving: .done(approval),
                                      form: "f", link: link)
        #expect(!done.contains("<form") && done.contains("You approved 1 of 3 photos"))
        #expect(done.components(separatedBy: "not approved").count == 3)
    }

    @Test func thePasswordAndEndedPages() {
        let asked = SharePages.password(refused: false, wait: nil, form: "f")
        #expect(asked.contains("type=\"password\"") && !asked.contains("not right"))
        #expect(SharePages.password(refused: true, wait: nil, form: "f").contains("That password is not right."))
        #expect(SharePages.password(refused: true, wait: 4, form: "f").contains("try again in 4 seconds"))
        let gone = SharePages.ended(ShareGate.Gone.revoked(expires).words)
        #expect(gone.contains("This link has been withdrawn.") && !gone.contains("<form"))
    }
}

/// The share pages' rate per address, with plain instants.
@Suite struct RequestRateTests {
    @Test func aBurstThenTheRefillPace() {
        var rate = RequestRate(burst: 3, perSecond: 2)
        let t0 = ContinuousClock.now
        for _ in 0..<3 { #expect(rate.take("192.0.2.1", now: t0) == nil) }
        // Empty: half a second for the next token; another address is not held back.
        #expect(rate.take("192.0.2.1", now: t0) == .milliseconds(500))
        #expect(rate.take("192.0.2.2", now: t0) == nil)
        #expect(rate.take("192.0.2.1", now: t0 + .milliseconds(500)) == nil)
        #expect(rate.take("192.0.2.1", now: t0 + .milliseconds(500)) != nil)
        // Never more than the burst saved up.
        for _ in 0..<3 { #expect(rate.take("192.0.2.1", now: t0 + .seconds(3600)) == nil) }
        #expect(rate.take("192.0.2.1", now: t0 + .seconds(3600)) != nil)
    }

    @Test func theTableIsBounded() {
        var rate = RequestRate(burst: 2, perSecond: 1, limit: 100)
        let t0 = ContinuousClock.now
        for n in 0..<100 { _ = rate.take("10.0.0.\(n)", now: t0) }
        // Past the limit, those whose buckets are full again are forgotten.
        _ = rate.take("10.0.1.1", now: t0 + .seconds(10))
        #expect(rate.buckets.count == 1)
    }
}

/// The console's share panel of a batch, from plain values.
@Suite struct SharePanelTests {
    let now = Date(timeIntervalSince1970: 1_790_000_000)
    let actions = SharePanel.Actions(share: "/inbox/shop/batch/B/share", revoke: "/inbox/shop/batch/B/revoke", approve: "/inbox/shop/batch/B/approve")

    func share(_ days: Double, password: Bool = false, revoked: Bool = false) -> Share {
        var share = Share(token: ShareToken.random(expires: now + days * 86_400), batch: "20261129-150405-3f2a", created: now - 3600,
                          by: "anna", password: password ? "$y$hash" : nil)
        if revoked { share.revoked = Share.Revocation(at: now - 60, by: "boss") }
        return share
    }

    @Test func linksTheirStateAndTheirQRCode() throws {
        let live = SharePanel.Link(share: share(7, password: true), link: "https://photos.example.com/s/AAAA/",
                                   openings: [Opening(at: now - 10, what: .opened, address: "192.0.2.7"),
                                              Opening(at: now - 5, what: .opened, address: "<b>x</b>")])
        let ended = SharePanel.Link(share: share(7, revoked: true), link: "https://photos.example.com/s/BBBB/", openings: [])
        let panel = SharePanel(links: [ended, live], approve: .client, approval: nil, photos: ["IMG_1.jpg"], csrf: "c\"srf",
                               actions: actions, hasPublicURL: true, expires: .seconds(30 * 86_400), now: now)
        let html = panel.html
        #expect(html.contains("href=\"https://photos.example.com/s/AAAA/\"") && html.contains("<svg"))
        #expect(html.contains("password · opened 2 times") && html.contains("from &lt;b&gt;x&lt;/b&gt;"))
        #expect(html.contains("<s>https://photos.example.com/s/BBBB/</s>") && html.contains("withdrawn"))
        // One button to end the live link; the form token escaped.
        #expect(html.components(separatedBy: "End this link").count == 2)
        #expect(html.contains("value=\"c&quot;srf\"") && !html.contains("c\"srf"))
        #expect(html.contains("value=\"30d\"") && html.contains("Make another link"))
        #expect(html.contains("Waits for the client") && !html.contains("name=\"approve\""))
        #expect(!html.contains("web.publicURL"))
    }

    @Test func theOwnerApprovesHereAndWhatWasChosenIsSaid() {
        var panel = SharePanel(links: [], approve: .owner, approval: nil, photos: ["IMG_1.jpg", "a&b.jpg"], csrf: "t",
                               actions: actions, hasPublicURL: false, expires: .seconds(7 * 86_400), now: now)
        #expect(panel.html.contains("action=\"/inbox/shop/batch/B/approve\"") && panel.html.contains("value=\"a&amp;b.jpg\" checked"))
        #expect(panel.html.contains("web.publicURL") && panel.html.contains("Make a link"))
        panel.approval = Approval(by: "boss", at: now, approved: ["IMG_1.jpg"], rejected: ["a&b.jpg"], note: "<i>ok</i>")
        #expect(panel.html.contains("boss approved 1 of 2 photos") && panel.html.contains("&lt;i&gt;ok&lt;/i&gt;"))
        #expect(!panel.html.contains("name=\"approve\""))
    }
}
