import Configuration
import Foundation
import JSON5
import Notifications
import Testing

/// `web.publicURL`, `approve`, `notify` and `shareExpires`: read, defaulted per hot folder,
/// and refused with a reason.
@Suite struct ShareConfigTests {
    @Test func keysAreReadAndAHotFolderKeepsItsOwn() throws {
        let config = try Config.parse(text: """
            {
              web: { publicURL: "https://photos.example.com/studio/" },
              approve: "owner", shareExpires: "7d",
              notify: [ "mailto:studio@example.org" ],
              inboxes: [
                { name: "shop", root: "/srv/shop", template: "shop" },
                { name: "client", root: "/srv/client", template: "shop", approve: "client", shareExpires: "14d",
                  notify: [ { webhook: "https://hooks.example.org/pf", secret: "hook" },
                            { mailto: "anna@example.org", events: ["approved", "failed"] } ] },
              ],
            }
            """, file: "pf.json5")
        #expect(config.publicURL == "https://photos.example.com/studio")
        let shop = config.inboxes[0].sharing, client = config.inboxes[1].sharing
        #expect(shop.approve == .owner && shop.shareExpires == .seconds(7 * 86_400))
        #expect(shop.notify == [NotifyTarget(.mail("studio@example.org"))])
        #expect(client.approve == .client && client.shareExpires == .seconds(14 * 86_400))
        #expect(client.notify == [NotifyTarget(.webhook(url: "https://hooks.example.org/pf", secret: "hook")),
                                  NotifyTarget(.mail("anna@example.org"), events: [.approved, .failed])])
        let plain = try Config.parse(text: #"{ inboxes: [ { name: "a", root: "/a", template: "t" } ] }"#, file: "pf.json5")
        #expect(plain.publicURL == nil && plain.inboxes[0].sharing == ShareSettings())
        #expect(ShareSettings().approve == .none && ShareSettings().shareExpires == .seconds(30 * 86_400))
    }

    @Test(arguments: [
        (#"web: { publicURL: "photos.example.com" }"#, "web.publicURL: must be the address clients reach"),
        (#"web: { publicURL: "https://example.com/?a=1" }"#, "web.publicURL: must be"),
        (#"approve: "client!""#, "approve"),
        (#"notify: "mailto:a@example.org""#, "notify: must be a list"),
        (#"notify: [ "a@example.org" ]"#, "notify[0]: must be \"mailto:ADDR\""),
        (#"notify: [ "mailto:nobody" ]"#, "notify[0]: must be one mail address"),
        (#"notify: [ "mailto:a@example.org\r\nBcc: b@example.org" ]"#, "must be one mail address"),
        (#"notify: [ { webhook: "ftp://example.org/" } ]"#, "notify[0].webhook: must be an http:// or https:// URL"),
        (#"notify: [ { webhook: "https://example.org/", secret: "s", events: ["finish"] } ]"#, "notify[0].events[0]"),
        (#"notify: [ { webhook: "https://example.org/", secrets: "s" } ]"#, "secrets"),
        (#"notify: [ { secret: "s" } ]"#, "needs webhook: URL"),
        (#"shareExpires: "400d""#, "shareExpires: must be a duration"),
    ])
    func mistakesAreNamed(_ line: String, _ expected: String) {
        let errors = configTestErrors("{ \(line), inboxes: [ { name: \"a\", root: \"/a\", template: \"t\" } ] }")
        #expect(errors.contains { $0.description.contains(expected) }, "\(errors.map(\.description))")
    }
}
