import Testing
@testable import Codecs

@Suite("EXIF metadata")
struct ExifTests {
    let date = "2024:06:01 12:34:56"

    @Test("summary reads orientation, capture time and GPS")
    func summary() throws {
        let block = try #require(Exif.make(orientation: 6, dateTimeOriginal: date, gpsLatitude: (52, 31, 12)))
        let summary = Exif.summary(block)
        #expect(summary == ExifSummary(orientation: 6, dateTimeOriginal: date, hasGPS: true))
        #expect(Exif.orientation(block) == 6)
        // The same block behind its "Exif\0\0" header reads the same.
        #expect(Exif.summary([0x45, 0x78, 0x69, 0x66, 0, 0] + block) == summary)
    }

    @Test("orientation counts only 1...8", arguments: [0, 1, 5, 8, 9, 255])
    func orientationRange(value: Int) throws {
        let block = try #require(Exif.make(orientation: value))
        #expect(Exif.orientation(block) == ((1...8).contains(value) ? value : nil))
    }

    @Test("strip-location removes GPS, keeps DateTimeOriginal, fixes orientation, size and thumbnail")
    func stripLocation() throws {
        let thumbnail: [UInt8] = [0xFF, 0xD8, 0xFF, 0xD9] + Array(repeating: 7, count: 500)
        let block = try #require(Exif.make(orientation: 8, dateTimeOriginal: date, gpsLatitude: (52, 31, 12),
                                           thumbnail: thumbnail))
        #expect(Exif.thumbnailSize(block) == thumbnail.count)
        let (out, removed) = Exif.rewrite(block, policy: .stripLocation, width: 70_000, height: 1200)
        #expect(removed == ["GPS"])
        let rewritten = try #require(out)
        #expect(!rewritten.starts(with: Array("Exif".utf8)))
        let summary = Exif.summary(rewritten)
        #expect(summary.hasGPS == false)
        #expect(summary.dateTimeOriginal == date)
        #expect(summary.orientation == 1)
        #expect(Exif.thumbnailSize(rewritten) == 0)
        let document = try #require(ExifDocument(rewritten))
        #expect(document.pixelDimensions.x == 70_000)
        #expect(document.pixelDimensions.y == 1200)
    }

    @Test("keep keeps GPS and still fixes orientation")
    func keep() throws {
        let block = try #require(Exif.make(orientation: 3, dateTimeOriginal: date, gpsLatitude: (1, 2, 3)))
        let (out, removed) = Exif.rewrite(block, policy: .keep, width: 10, height: 20)
        #expect(removed.isEmpty)
        let summary = Exif.summary(try #require(out))
        #expect(summary == ExifSummary(orientation: 1, dateTimeOriginal: date, hasGPS: true))
    }

    @Test("strip-location on a block without GPS removes nothing")
    func noGPS() throws {
        let block = try #require(Exif.make(orientation: 1, dateTimeOriginal: date))
        let (out, removed) = Exif.rewrite(block, policy: .stripLocation, width: 10, height: 20)
        #expect(removed.isEmpty)
        #expect(Exif.summary(try #require(out)).dateTimeOriginal == date)
    }

    @Test("strip-all writes nothing")
    func stripAll() throws {
        let block = try #require(Exif.make(orientation: 6))
        let (out, removed) = Exif.rewrite(block, policy: .stripAll, width: 1, height: 1)
        #expect(out == nil)
        #expect(removed == ["EXIF"])
    }

    @Test("an unreadable block is dropped and said so", arguments: [
        [UInt8](), [0x00, 0x01], Array("this is not exif at all, just words".utf8),
        [0x49, 0x49, 0x2A, 0x00, 0xFF, 0xFF, 0xFF, 0x7F, 0, 0, 0, 0],
    ])
    func unreadable(block: [UInt8]) {
        let (out, removed) = Exif.rewrite(block, policy: .keep, width: 1, height: 1)
        #expect(out == nil)
        #expect(removed == ["EXIF (unreadable)"])
        #expect(Exif.summary(block) == ExifSummary())
    }

    @Test("the rewritten block goes into a JPEG and comes back")
    func intoJPEG() throws {
        let block = try #require(Exif.make(orientation: 6, dateTimeOriginal: date, gpsLatitude: (52, 31, 12)))
        let (out, _) = Exif.rewrite(block, policy: .stripLocation, width: 24, height: 32)
        let bytes = try encodeImage(gradient(width: 24, height: 32),
                                           options: EncodeOptions(format: .jpeg, exif: out))
        let decoder = try JPEGDecoder(bytes: bytes, limits: DecodeLimits())
        #expect(decoder.info.orientation == 1)
        let summary = Exif.summary(try #require(decoder.info.exif))
        #expect(summary.dateTimeOriginal == date)
        #expect(summary.hasGPS == false)
    }
}

