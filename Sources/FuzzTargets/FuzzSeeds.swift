import Codecs
import Foundation
import Pixels
import System

/// The seed corpus: small files of every kind the targets read, made with the product's own
/// encoders as the tests make their fixtures (EXIF with orientation and GPS, ICC profiles,
/// alpha, progressive scans, HEIF rotation), plus the example templates and config. Written
/// by `photofinish-fuzz seed DIR` (scripts/fuzz-seeds adds what only ImageMagick makes: grey,
/// CMYK, palette, 16-bit, interlaced, restart markers).
public enum FuzzSeeds {
    /// A picture with a distinct value in most pixels and a corner of every colour.
    static func picture(width: Int, height: Int, channels: Int) -> Image {
        Image(width: width, height: height, channels: channels) { rows in
            for y in 0..<height {
                let row = rows[y]
                for x in 0..<width {
                    row[x * channels] = UInt8(x * 255 / max(width - 1, 1))
                    row[x * channels + 1] = UInt8(y * 255 / max(height - 1, 1))
                    row[x * channels + 2] = UInt8((x * 7 + y * 13) & 0xFF)
                    if channels == 4 { row[x * channels + 3] = UInt8(x < width / 2 ? 255 : (y * 255) / max(height - 1, 1)) }
                }
            }
        }
    }

    static let exif = ExifBuilder(orientation: 6, make: "Fuzz Camera", model: "F-1",
                                  dateTimeOriginal: "2026:11:29 15:04:05", gps: (52.52, 13.4)).bytes()

    /// An XMP packet as photo managers write it: creator, rights, a city, one face region.
    static let xmp = Array("""
        <x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>
        <rdf:Description rdf:about='' xmlns:dc='http://purl.org/dc/elements/1.1/'
          xmlns:photoshop='http://ns.adobe.com/photoshop/1.0/'
          xmlns:mwg-rs='http://www.metadataworkinggroup.com/schemas/regions/'
          xmlns:stArea='http://ns.adobe.com/xmp/sType/Area#' xmlns:stDim='http://ns.adobe.com/xap/1.0/sType/Dimensions#'
          photoshop:City='Berlin'>
        <dc:creator><rdf:Seq><rdf:li>Jane Doe</rdf:li></rdf:Seq></dc:creator>
        <dc:rights><rdf:Alt><rdf:li xml:lang='x-default'>© 2026 Jane Doe</rdf:li></rdf:Alt></dc:rights>
        <mwg-rs:Regions rdf:parseType='Resource'>
          <mwg-rs:AppliedToDimensions stDim:w='48' stDim:h='32' stDim:unit='pixel'/>
          <mwg-rs:RegionList><rdf:Bag><rdf:li><rdf:Description mwg-rs:Type='Face'>
            <mwg-rs:Area stArea:x='0.25' stArea:y='0.5' stArea:w='0.1' stArea:h='0.2' stArea:unit='normalized'/>
          </rdf:Description></rdf:li></rdf:Bag></mwg-rs:RegionList>
        </mwg-rs:Regions>
        </rdf:Description></rdf:RDF></x:xmpmeta>
        """.utf8)

    /// IPTC as a news desk writes it: a byline, a city, a copyright notice.
    static let iptc = IPTC(datasets: [IPTC.Dataset(1, 90, [0x1B, 0x25, 0x47]),
                                      IPTC.Dataset(2, 80, text: "Jane Doe"), IPTC.Dataset(2, 90, text: "Berlin"),
                                      IPTC.Dataset(2, 116, text: "© 2026 Jane Doe")])

    /// Every seed, by target: (file name, bytes).
    public static func all() throws(PhotoError) -> [FuzzTarget: [(String, [UInt8])]] {
        let rgb = picture(width: 48, height: 32, channels: 3)
        let rgba = picture(width: 24, height: 40, channels: 4)
        let tall = picture(width: 8, height: 120, channels: 3)
        let plainExif = ExifBuilder(orientation: 1).bytes()
        let jpegs: [(String, [UInt8])] = [
            ("baseline.jpg", try JPEGEncoder.encode(rgb, options: EncodeOptions(format: .jpeg, quality: 70))),
            ("exif-icc.jpg", try JPEGEncoder.encode(rgb, options: EncodeOptions(format: .jpeg, quality: 50, icc: ICC.sRGB, exif: exif))),
            ("progressive.jpg", try JPEGEncoder.encode(rgb, options: EncodeOptions(format: .jpeg, quality: 60, progressive: true, exif: plainExif))),
            ("tall.jpg", try JPEGEncoder.encode(tall, options: EncodeOptions(format: .jpeg, quality: 40))),
        ]
        let pngs: [(String, [UInt8])] = [
            ("rgb.png", try PNGEncoder.encode(rgb, options: EncodeOptions(format: .png))),
            ("rgba-icc-exif.png", try PNGEncoder.encode(rgba, options: EncodeOptions(format: .png, icc: ICC.sRGB, exif: exif))),
            ("tall.png", try PNGEncoder.encode(tall, options: EncodeOptions(format: .png))),
        ]
        let heifs: [(String, [UInt8])] = [
            ("exif-icc.heic", try HEIFEncoder.encode(rgb, options: EncodeOptions(format: .heic, quality: 30, icc: ICC.sRGB, exif: exif))),
            ("alpha.heic", try HEIFEncoder.encode(rgba, options: EncodeOptions(format: .heic, quality: 30))),
            ("plain.avif", try HEIFEncoder.encode(rgb, options: EncodeOptions(format: .avif, quality: 30, exif: plainExif))),
        ]
        var withXMP = EncodeOptions(format: .webp, quality: 30)
        withXMP.xmp = xmp
        var jpegWithAll = EncodeOptions(format: .jpeg, quality: 50, exif: plainExif)
        (jpegWithAll.xmp, jpegWithAll.iptc) = (xmp, iptc.iim())
        let webps: [(String, [UInt8])] = [
            ("lossy-exif-icc.webp", try WebPEncoder.encode(rgb, options: EncodeOptions(format: .webp, quality: 40, icc: ICC.sRGB, exif: exif))),
            ("alpha.webp", try WebPEncoder.encode(rgba, options: EncodeOptions(format: .webp, quality: 40))),
            ("xmp.webp", try WebPEncoder.encode(tall, options: withXMP)),
        ]
        let tiffLike = ExifBuilder(make: "NIKON CORPORATION", model: "D850").bytes()
        let metadata: [(String, [UInt8])] = [
            ("exif-gps.bin", exif), ("exif-plain.bin", plainExif), ("raw-nikon.tif", tiffLike),
            ("exif-prefixed.bin", Array("Exif\0\0".utf8) + exif), ("srgb.icc", ICC.sRGB),
            ("regions.xmp", xmp), ("credit.iim", iptc.iim()), ("photoshop.8bim", iptc.photoshopBlock()),
            ("baseline.jpg", jpegs[1].1), ("rgba.png", pngs[1].1), ("image.heic", heifs[0].1),
            ("xmp-iptc.jpg", try JPEGEncoder.encode(rgb, options: jpegWithAll)),
        ]
        let finish: [(String, [UInt8])] = [jpegs[1], jpegs[3], pngs[1], heifs[1], heifs[2], webps[0]]
        return [.jpeg: jpegs, .png: pngs, .heif: heifs, .webp: webps, .metadata: metadata, .finish: finish]
    }

    /// Writes every seed under `folder/<target>/` (the template seeds are the example files
    /// in etc/photofinish, copied by scripts/fuzz-seeds).
    /// - Returns: how many files were written.
    public static func write(to folder: String) throws -> Int {
        var count = 0
        for (target, files) in try all() {
            let directory = folder + "/" + target.rawValue
            try Files.makeDirectories(directory, permissions: 0o777)
            for (name, bytes) in files {
                try Files.write(bytes, to: directory + "/" + name)
                count += 1
            }
        }
        return count
    }
}
