import Foundation
import Testing
import Codecs
import Pixels

/// Tiny sources the encoder cannot make (it writes RGB only), made with ImageMagick:
/// `convert -size 16x16 xc:'rgb(200,60,30)' -colorspace CMYK -quality 95` (Adobe, inverted
/// CMYK) and `convert -size 16x16 gradient:white-black -colorspace Gray -quality 95`.
private let cmyk16 = Array(Data(base64Encoded: "/9j/7gAOQWRvYmUAZAAAAAAC/9sAQwACAQEBAQECAQEBAgICAgIEAwICAgIFBAQDBAYFBgYGBQYGBgcJCAYHCQcGBggLCAkKCgoKCgYICwwLCgwJCgoK/9sAQwECAgICAgIFAwMFCgcGBwoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoK/8AAFAgAEAAQBAERAAIRAQMRAQQRAP/EABYAAQEBAAAAAAAAAAAAAAAAAAADCf/EABQQAQAAAAAAAAAAAAAAAAAAAAD/xAAWAQEBAQAAAAAAAAAAAAAAAAAACAn/xAAUEQEAAAAAAAAAAAAAAAAAAAAA/9oADgQBAAIRAxEEAAA/AKLIZHtIAAAAH//Z")!)
private let grey16 = Array(Data(base64Encoded: "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAIBAQEBAQIBAQECAgICAgQDAgICAgUEBAMEBgUGBgYFBgYGBwkIBgcJBwYGCAsICQoKCgoKBggLDAsKDAkKCgr/wAALCAAQABABAREA/8QAFgABAQEAAAAAAAAAAAAAAAAAAAkK/8QAFxAAAwEAAAAAAAAAAAAAAAAAABlmo//aAAgBAQAAPwChzNqDUM2oNTO+zag1DNqDU//Z")!)

@Suite("JPEG colour spaces")
struct JPEGColourSpaceTests {
    @Test("Adobe CMYK comes out as the RGB it was made from", arguments: [3, 4])
    func cmyk(channels: Int) throws {
        let decoder = try JPEGDecoder(bytes: cmyk16, limits: DecodeLimits())
        #expect(decoder.info.width == 16 && decoder.info.height == 16)
        let out = try decodeAll(decoder, channels: channels)
        let p = out.pixel(8, 8)
        #expect(abs(Int(p[0]) - 200) <= 3 && abs(Int(p[1]) - 60) <= 3 && abs(Int(p[2]) - 30) <= 3)
        if channels == 4 { #expect(p[3] == 255) }
    }

    @Test("greyscale comes out as RGB with equal channels, white at the top", arguments: [8, 5, 4])
    func grey(eighths: Int) throws {
        let decoder = try JPEGDecoder(bytes: grey16, limits: DecodeLimits())
        let out = try decodeAll(decoder, eighths: eighths)
        for y in 0..<out.height {
            for x in 0..<out.width {
                let p = out.pixel(x, y)
                #expect(p[0] == p[1] && p[1] == p[2])
            }
        }
        #expect(out.pixel(0, 0)[0] > 230)
        #expect(out.pixel(0, out.height - 1)[0] < 25)
    }
}
