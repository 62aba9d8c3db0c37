import Batches
import Foundation
import Testing
@testable import HotFolders

/// `duplicates: "skip"`'s index of finished photos (reference: Duplicates): plain values, then
/// the real thing over reports written to a folder.
struct FinishedPhotosTests {
    static func hash(_ n: Int) -> String { String(repeating: String(format: "%02x", n), count: 32) }

    @Test func theFirstBatchIsThePlaceAndAForgottenBatchHandsItOn() {
        var index = FinishedIndex()
        index.update(present: ["20261201-100000-aaaa", "20261202-100000-bbbb"], read: [
            "20261202-100000-bbbb": [(Self.hash(1), "again.jpg"), (Self.hash(2), "b.jpg")],
            "20261201-100000-aaaa": [(Self.hash(1), "a.jpg"), ("not a hash", "x.jpg")],
        ])
        #expect(index.place(of: Self.hash(1)) == .init(batch: "20261201-100000-aaaa", source: "a.jpg"))
        #expect(index.place(of: Self.hash(2)) == .init(batch: "20261202-100000-bbbb", source: "b.jpg"))
        #expect(index.place(of: Self.hash(3)) == nil && index.place(of: "") == nil)
        // Upper-case hex is the same hash.
        #expect(index.place(of: Self.hash(2).uppercased())?.source == "b.jpg")
        // The first batch removed (keep.out): the photo's place is the later batch.
        index.update(present: ["20261202-100000-bbbb"], read: [:])
        #expect(index.place(of: Self.hash(1)) == .init(batch: "20261202-100000-bbbb", source: "again.jpg"))
        index.update(present: [], read: [:])
        #expect(index.place(of: Self.hash(2)) == nil && index.batches.isEmpty)
    }

    @Test func theIndexIsOutAsItIsNow() throws {
        let layout = HotFolderLayout(root: TemporaryFolder.path("finished-photos"))
        try layout.create()
        func publish(_ batch: String, _ items: [(String, Report.ItemStatus, Int)]) throws {
            let report = Report(batch: batch, inbox: "shop", template: .init(name: "t", sha256: "00"), started: "", finished: "",
                                items: items.enumerated().map { i, photo in
                                    var item = Report.Item(index: i + 1, source: photo.0, status: photo.1)
                                    item.sha256 = Self.hash(photo.2)
                                    return item
                                })
            try FileManager.default.createDirectory(atPath: layout.out + "/" + batch, withIntermediateDirectories: true)
            _ = try ReportWriter.write(report, toFolder: layout.out + "/" + batch)
        }
        let photos = FinishedPhotos(layout: layout)
        photos.refresh()
        #expect(photos.place(of: Self.hash(1)) == nil)
        try publish("20261201-100000-aaaa", [("a.jpg", .ok, 1), ("bad.jpg", .failed, 2), ("dup.jpg", .duplicate, 3)])
        photos.refresh()
        #expect(photos.place(of: Self.hash(1))?.batch == "20261201-100000-aaaa")
        // Only finished photos count: a failed one is finished when dropped again.
        #expect(photos.place(of: Self.hash(2)) == nil && photos.place(of: Self.hash(3)) == nil)
        try FileManager.default.removeItem(atPath: layout.out + "/20261201-100000-aaaa")
        photos.refresh()
        #expect(photos.place(of: Self.hash(1)) == nil)
    }
}
