@testable import Batches
import Codecs
import Testing

/// What a memory card holds, sorted into photos, pairs, sidecars and ignored files (pure).
@Suite struct BatchContentsTests {
    typealias Photo = BatchContents.Photo

    func sort(_ files: [(String, SniffResult?)]) -> BatchContents {
        BatchContents.sort(names: files.map(\.0), kinds: files.map(\.1))
    }

    @Test func aCardSortsIntoPhotosPairsSidecarsAndIgnoredFiles() {
        let contents = sort([
            ("IMG_0001.CR2", .cameraRaw("CR2")),       // 0
            ("IMG_0001.JPG", .image(.jpeg)),           // 1
            ("IMG_0001.xmp", .unsupported("XML")),     // 2
            ("IMG_0002.HEIC", .image(.heic)),          // 3
            ("IMG_0002.JPG", .image(.jpeg)),           // 4
            ("IMG_0002.AAE", .unsupported("XML")),     // 5
            ("IMG_0003.dng", .cameraRaw("DNG")),       // 6
            ("IMG_0003.dng.xmp", .unsupported("XML")), // 7
            ("LICENSE", .unsupported("text")),         // 8
            ("notes.txt", .unsupported("text")),       // 9
            ("broken.jpg", .image(.jpeg)),             // 10
            ("garbage.jpg", .unsupported("unknown (first bytes 0x0000)")),  // 11
            ("anim.gif", .unsupported("GIF")),         // 12
            ("clip.mp4", .unsupported("MP4 video")),   // 13
            ("empty.txt", .empty),                     // 14
            ("empty.jpg", .empty),                     // 15
            ("unreadable.dat", nil),                   // 16
            ("IMG_0004.THM", .image(.jpeg)),           // 17: a THM is a small JPEG, still a sidecar
        ])
        #expect(contents.photos == [
            Photo(main: 1, alternates: [0], sidecars: [2]),
            Photo(main: 3, alternates: [4], sidecars: [5]),
            Photo(main: 6, alternates: [], sidecars: [7]),
            Photo(main: 10, alternates: [], sidecars: []),
            Photo(main: 11, alternates: [], sidecars: []),
            Photo(main: 12, alternates: [], sidecars: []),
            Photo(main: 15, alternates: [], sidecars: []),
            Photo(main: 16, alternates: [], sidecars: []),
        ])
        #expect(contents.ignored.map(\.file) == [2, 5, 7, 8, 9, 13, 14, 17])
        #expect(contents.ignored.map(\.reason) == [
            "sidecar of IMG_0001.JPG", "sidecar of IMG_0002.HEIC", "sidecar of IMG_0003.dng",
            "text, not a photo", "text, not a photo", "MP4 video, not a photo", "empty file, not a photo",
            "sidecar (no photo IMG_0004 in the batch)",
        ])
        #expect(contents.ignored.map(\.photo) == [0, 1, 2, nil, nil, nil, nil, nil])
        #expect(contents.photo(ofFile: 0) == 0 && contents.photo(ofFile: 7) == 2 && contents.photo(ofFile: 8) == nil)
    }

    @Test("files pair only within one folder, as on a card; a sidecar goes with a photo of its folder")
    func pairsOnlyWithinOneFolder() {
        let names = ["HMD_Nokia_8.3_5G.heif", "HMD_Nokia_8.3_5G.jpg", "IMG_1.heic", "IMG_1.jpg", "IMG_1.xmp", "IMG_2.xmp"]
        let kinds: [SniffResult?] = [.image(.heic), .image(.jpeg), .image(.heic), .image(.jpeg), .unsupported("XML"),
                                     .unsupported("XML")]
        let contents = BatchContents.sort(names: names, kinds: kinds,
                                          folders: ["heic/mobile", "jpg/mobile", "card", "card", "elsewhere", "card"])
        #expect(contents.photos == [
            Photo(main: 0, alternates: [], sidecars: []),  // two photos: a ski lift and a harbour
            Photo(main: 1, alternates: [], sidecars: []),
            Photo(main: 2, alternates: [3], sidecars: []),  // one photo: the HEIC is finished
        ])
        #expect(contents.ignored.map(\.reason) == ["sidecar (no photo IMG_1 in the batch)", "sidecar (no photo IMG_2 in the batch)"])
        // Without folders (a hot folder's batch), all files are in one.
        #expect(BatchContents.sort(names: names, kinds: kinds).photos.count == 2)
    }

    @Test func theBestRenderedFileIsFinishedAndOneFilePerFormatJoinsAPair() {
        // HEIC before JPEG before PNG; stems match case-insensitively.
        let three = sort([("a.png", .image(.png)), ("A.jpg", .image(.jpeg)), ("a.heic", .image(.heic))])
        #expect(three.photos == [Photo(main: 2, alternates: [0, 1], sidecars: [])])
        // Two JPEGs of one stem are two photos; the RAW pairs with the first.
        let twins = sort([("b.JPG", .image(.jpeg)), ("b.NEF", .cameraRaw("NEF")), ("b.jpg", .image(.jpeg))])
        #expect(twins.photos == [Photo(main: 0, alternates: [1], sidecars: []), Photo(main: 2, alternates: [], sidecars: [])])
        // Photos keep the batch order of the files finished.
        let order = sort([("z.cr2", .cameraRaw("CR2")), ("a.jpg", .image(.jpeg)), ("z.jpg", .image(.jpeg))])
        #expect(order.photos.map(\.main) == [1, 2])
        // A sidecar that names its photo goes with that one.
        let named = sort([("c.jpg", .image(.jpeg)), ("c.JPG", .image(.jpeg)), ("c.JPG.xmp", .unsupported("XML"))])
        #expect(named.photos.map(\.sidecars) == [[], [2]])
    }

    @Test(arguments: [
        (SniffResult.unsupported("GIF"), true), (.unsupported("TIFF"), true), (.unsupported("SVG"), true),
        (.cameraRaw("DNG"), true), (.image(.webp), true),
        (.unsupported("text"), false), (.unsupported("PDF"), false), (.unsupported("XML"), false),
        (.unsupported("ZIP"), false), (.empty, false),
    ])
    func picturesAreToldFromTheRest(kind: SniffResult, picture: Bool) {
        #expect(kind.isPicture == picture)
    }
}
