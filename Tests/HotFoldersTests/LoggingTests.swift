import HotFolders
import Synchronization
import Testing

/// Every line a person reads names its hot folder, batch and file (STYLE.md: the folder's
/// name leads the sentence), once, from the fields.
struct LoggingTests {
    @Test(arguments: [
        ("claimed batch of 2 photos", ["INBOX": "shop"], "shop: claimed batch of 2 photos"),
        ("finished 2 of 2", ["INBOX": "shop", "BATCH": "20261129-164500-3f2a"], "shop 20261129-164500-3f2a: finished 2 of 2"),
        ("empty-file: the file is empty (0 bytes)", ["INBOX": "shop", "BATCH": "20261129-164500-3f2a", "FILE": "IMG_1.jpg"],
         "shop 20261129-164500-3f2a: IMG_1.jpg: empty-file: the file is empty (0 bytes)"),
        // What the message says already is not said twice.
        ("resuming batch 20261129-164500-3f2a (3 photos)", ["INBOX": "shop", "BATCH": "20261129-164500-3f2a"],
         "shop: resuming batch 20261129-164500-3f2a (3 photos)"),
        ("x.jpg cannot be taken from drop/", ["INBOX": "shop", "FILE": "x.jpg"], "shop: x.jpg cannot be taken from drop/"),
        ("shop: already named", ["INBOX": "shop"], "shop: already named"),
        ("swept stale .new-x from .work/", ["FILE": "a.jpg"], "a.jpg: swept stale .new-x from .work/"),
        ("ready: watching shop (/srv/shop/drop)", [:], "ready: watching shop (/srv/shop/drop)"),
        // An inbox called like the start of the message is still named.
        ("no longer watching /srv/no", ["INBOX": "no"], "no: no longer watching /srv/no"),
    ])
    func theTextLeadsWithItsContext(message: String, fields: [String: String], text: String) {
        #expect(Logger.text(message, fields) == text)
    }

    @Test func aLoggerWithFieldsAddsThemToEveryLine() {
        let lines = Mutex<[(String, [String: String])]>([])
        let base = Logger { _, text, fields in lines.withLock { $0.append((text, fields)) } }
        let folder = base.with(["INBOX": "shop"])
        folder.warning("drop/ went away")
        folder.info("claimed", ["BATCH": "20261129-164500-3f2a"])
        folder.with(["INBOX": "web"]).notice("moved")
        let got = lines.withLock { $0 }
        #expect(got.map(\.0) == ["shop: drop/ went away", "shop 20261129-164500-3f2a: claimed", "web: moved"])
        #expect(got[1].1 == ["INBOX": "shop", "BATCH": "20261129-164500-3f2a"])
        #expect(got[2].1 == ["INBOX": "web"])
    }
}
