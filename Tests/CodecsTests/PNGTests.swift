import Testing
@testable import Codecs
import Pixels

/// Decodes every row into a buffer.
func decodeAll(_ decoder: any PhotoDecoder, channels: Int) throws -> Image {
    var y = 0
    let out = try Image(width: decoder.info.width, height: decoder.info.height, channels: channels) { rows in
        try decoder.decode(eighths: 8, channels: channels, limits: DecodeLimits()) { row in
            rows[y].update(from: row, count: rows.rowBytes)
            y += 1
        }
    }
    #expect(y == out.height)
    return out
}

/// A gradient with a distinct value in every pixel of a small image.
func gradient(width: Int, height: Int, channels: Int) -> Image {
    Image(width: width, height: height, channels: channels) { rows in
        for y in 0..<height {
            for x in 0..<width {
                let p = rows[y] + x * channels
                p[0] = UInt8((x * 255) / max(width - 1, 1))
                p[1] = UInt8((y * 255) / max(height - 1, 1))
                p[2] = UInt8((x + y) & 0xff)
                if channels == 4 { p[3] = UInt8((x * 7 + y * 3) & 0xff) }
            }
        }
    }
}

/// The pixels as one array, row after row.
func bytes(of image: Image) -> [UInt8] {
    image.withUnsafeRows { Array(UnsafeBufferPointer(start: $0.base, count: $0.byteCount)) }
}

func samePixels(_ a: Image, _ b: Image) -> Bool {
    a.width == b.width && a.height == b.height && a.channels == b.channels && bytes(of: a) == bytes(of: b)
}

/// Raw PNG bytes in a layout our encoder does not make (grey, palette, 16-bit, interlaced).
func rawPNG(_ bytes: [UInt8], width: Int, height: Int, rowBytes: Int, colorType: Int32, bitDepth: Int32,
            interlaced: Bool = false, palette: [UInt8]? = nil, trns: [UInt8]? = nil) throws -> [UInt8] {
    try bytes.withUnsafeBufferPointer { p throws(PhotoError) in
        try PNGEncoder.encodeRaw(pixels: p.baseAddress!, width: width, height: height, rowBytes: rowBytes,
                                 colorType: colorType, bitDepth: bitDepth, interlaced: interlaced,
                                 palette: palette, trns: trns)
    }
}

@Suite struct PNGTests {
    @Test(arguments: [3, 4])
    func roundTrip(channels: Int) throws {
        let image = gradient(width: 37, height: 23, channels: channels)
        let png = try encodeImage(image, options: EncodeOptions(format: .png))
        let decoder = try PNGDecoder(bytes: png, limits: DecodeLimits())
        #expect(decoder.info.format == .png)
        #expect(decoder.info.width == 37 && decoder.info.height == 23)
        #expect(decoder.info.hasAlpha == (channels == 4))
        #expect(decoder.scales == [8])
        #expect(samePixels(try decodeAll(decoder, channels: channels), image))
    }

    @Test func opaqueAsRGBAGetsFullAlpha() throws {
        let image = gradient(width: 5, height: 4, channels: 3)
        let png = try encodeImage(image, options: EncodeOptions(format: .png))
        let rgba = try decodeAll(try PNGDecoder(bytes: png, limits: DecodeLimits()), channels: 4)
        #expect(rgba.pixel(3, 2) == image.pixel(3, 2) + [255])
    }

    @Test func alphaAsRGBIsCompositedOverWhite() throws {
        let pixels: [[UInt8]] = [[0, 0, 0, 0], [0, 0, 0, 255], [200, 100, 0, 128]]
        let image = Image(width: 3, height: 1, channels: 4) { rows in
            for x in 0..<3 { for c in 0..<4 { rows[0][x * 4 + c] = pixels[x][c] } }
        }
        let png = try encodeImage(image, options: EncodeOptions(format: .png))
        let rgb = try decodeAll(try PNGDecoder(bytes: png, limits: DecodeLimits()), channels: 3)
        #expect(rgb.pixel(0, 0) == [255, 255, 255])
        #expect(rgb.pixel(1, 0) == [0, 0, 0])
        // 200·128/255 + 255·127/255 = 100.4 + 127 ≈ 227; 100 → 50.2 + 127 ≈ 177; 0 → 127.
        #expect(rgb.pixel(2, 0) == [227, 177, 127])
    }

    @Test func grey8() throws {
        let grey: [UInt8] = (0..<12).map { UInt8($0 * 20) }
        let png = try rawPNG(grey, width: 4, height: 3, rowBytes: 4, colorType: 0, bitDepth: 8)
        let decoder = try PNGDecoder(bytes: png, limits: DecodeLimits())
        #expect(!decoder.info.hasAlpha)
        let rgb = try decodeAll(decoder, channels: 3)
        #expect(rgb.pixel(1, 2) == [180, 180, 180])
    }

    @Test func greyAlpha() throws {
        let ga: [UInt8] = [10, 255, 50, 0]
        let png = try rawPNG(ga, width: 2, height: 1, rowBytes: 4, colorType: 4, bitDepth: 8)
        let decoder = try PNGDecoder(bytes: png, limits: DecodeLimits())
        #expect(decoder.info.hasAlpha)
        let rgba = try decodeAll(decoder, channels: 4)
        #expect(rgba.pixel(0, 0) == [10, 10, 10, 255])
        #expect(rgba.pixel(1, 0) == [50, 50, 50, 0])
    }

    @Test func paletteWithTransparency() throws {
        // 4-bit palette indices, two pixels per byte: 0 1 / 2 1.
        let indices: [UInt8] = [0x01, 0x21]
        let palette: [UInt8] = [255, 0, 0, 0, 255, 0, 0, 0, 255]
        let png = try rawPNG(indices, width: 2, height: 2, rowBytes: 1, colorType: 3, bitDepth: 4,
                             palette: palette, trns: [255, 0])
        let decoder = try PNGDecoder(bytes: png, limits: DecodeLimits())
        #expect(decoder.info.hasAlpha)
        let rgba = try decodeAll(decoder, channels: 4)
        #expect(rgba.pixel(0, 0) == [255, 0, 0, 255])
        #expect(rgba.pixel(1, 0) == [0, 255, 0, 0])
        #expect(rgba.pixel(0, 1) == [0, 0, 255, 255])  // no tRNS entry: opaque
        let rgb = try decodeAll(decoder, channels: 3)
        #expect(rgb.pixel(1, 1) == [255, 255, 255])     // transparent green over white
    }

    @Test func sixteenBitIsStrippedToEight() throws {
        // RGB16 big-endian: (0x1234, 0xABCD, 0xFF00).
        let px: [UInt8] = [0x12, 0x34, 0xAB, 0xCD, 0xFF, 0x00]
        let png = try rawPNG(px, width: 1, height: 1, rowBytes: 6, colorType: 2, bitDepth: 16)
        let rgb = try decodeAll(try PNGDecoder(bytes: png, limits: DecodeLimits()), channels: 3)
        #expect(rgb.pixel(0, 0) == [0x12, 0xAB, 0xFF])
    }

    @Test func interlacedDecodesWhole() throws {
        let image = gradient(width: 19, height: 13, channels: 3)
        let png = try rawPNG(bytes(of: image), width: 19, height: 13, rowBytes: image.rowBytes, colorType: 2,
                             bitDepth: 8, interlaced: true)
        let decoder = try PNGDecoder(bytes: png, limits: DecodeLimits())
        #expect(samePixels(try decodeAll(decoder, channels: 3), image))
    }

    @Test func iccAndExifRoundTrip() throws {
        let icc = ICC.sRGB
        // A minimal little-endian TIFF header with an empty IFD0.
        let exif: [UInt8] = [0x49, 0x49, 0x2A, 0x00, 0x08, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        let png = try encodeImage(gradient(width: 4, height: 4, channels: 3),
                                        options: EncodeOptions(format: .png, icc: icc, exif: exif))
        let decoder = try PNGDecoder(bytes: png, limits: DecodeLimits())
        #expect(decoder.info.icc == icc)
        #expect(decoder.info.exif == exif)
        #expect(decoder.info.orientation == 1)
    }

    @Test func exifOrientationIsReadBeforeAndAfterImageData() throws {
        let exif = exifWithOrientation(6)
        let early = try encodeImage(gradient(width: 4, height: 2, channels: 3),
                                          options: EncodeOptions(format: .png, exif: exif))
        let decoder = try PNGDecoder(bytes: early, limits: DecodeLimits())
        #expect(decoder.info.exif == exif)
        #expect(decoder.info.orientation == 6 && decoder.info.declaredOrientation == 6)

        // eXIf after IDAT (allowed by the PNG spec; libpng only reports it after the pixels).
        var late = try encodeImage(gradient(width: 4, height: 2, channels: 3),
                                         options: EncodeOptions(format: .png))
        let chunk = Array("eXIf".utf8) + exifWithOrientation(8)
        late.insert(contentsOf: bigEndian(UInt32(chunk.count - 4)) + chunk + bigEndian(crc32(chunk)),
                    at: late.count - 12)
        let lateDecoder = try PNGDecoder(bytes: late, limits: DecodeLimits())
        #expect(lateDecoder.info.exif == exifWithOrientation(8))
        #expect(lateDecoder.info.orientation == 8)
        #expect(try decodeAll(lateDecoder, channels: 3).height == 2)
    }

    @Test func headerBombIsTooLargeBeforeDecoding() throws {
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        let side: [UInt8] = [0x00, 0x01, 0x86, 0xA0]  // 100000
        let ihdr: [UInt8] = Array("IHDR".utf8) + side + side + [8, 2, 0, 0, 0]
        png += [0, 0, 0, 13] + ihdr + bigEndian(crc32(ihdr))
        #expect {
            _ = try PNGDecoder(bytes: png, limits: DecodeLimits())
        } throws: { error in
            let e = error as? PhotoError
            return e?.code == .tooLarge
                && e?.message == "PNG header says 100000×100000 = 10000 MP, over the limit of 150 MP (maxPixels)"
        }
        // The same header with a damaged CRC is a broken file, not a large one.
        png[png.count - 1] ^= 0xFF
        #expect {
            _ = try PNGDecoder(bytes: png, limits: DecodeLimits())
        } throws: { error in
            (error as? PhotoError)?.code == .corruptImage
        }
    }

    @Test func truncatedIsCorrupt() throws {
        let png = try encodeImage(gradient(width: 64, height: 64, channels: 3),
                                        options: EncodeOptions(format: .png))
        let cut = Array(png.prefix(png.count / 2))
        let decoder = try PNGDecoder(bytes: cut, limits: DecodeLimits())  // header is intact
        #expect {
            _ = try decodeAll(decoder, channels: 3)
        } throws: { error in
            let e = error as? PhotoError
            return e?.code == .corruptImage && e?.message.contains("ends early") == true
        }
    }

    @Test func brokenCRCIsCorrupt() throws {
        var png = try encodeImage(gradient(width: 8, height: 8, channels: 3),
                                        options: EncodeOptions(format: .png))
        png[30] ^= 0xFF  // IHDR's CRC no longer matches its data
        #expect {
            _ = try PNGDecoder(bytes: png, limits: DecodeLimits())
        } throws: { error in
            (error as? PhotoError)?.code == .corruptImage
        }
    }
}

func bigEndian(_ v: UInt32) -> [UInt8] {
    [UInt8(v >> 24), UInt8((v >> 16) & 0xff), UInt8((v >> 8) & 0xff), UInt8(v & 0xff)]
}

func crc32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for b in bytes {
        crc ^= UInt32(b)
        for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 1 ? 0xEDB8_8320 : 0) }
    }
    return ~crc
}
