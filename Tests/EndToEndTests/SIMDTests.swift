import Codecs
import Foundation
import Pixels
import Testing

/// The resampler's inner loops come in an SSE2 and an AVX2 build, chosen at run time
/// (`ResampleKernels`): the binary with `PHOTOFINISH_SIMD=sse2` writes the same bytes as with the
/// CPU's choice, on photos of every path (upright and turned JPEGs, an RGBA PNG, crops, marks,
/// the report's thumbnails).
@Suite struct SIMDTests {
    /// A textured test picture: gradients, a hard-edged block and per-pixel noise, so every
    /// tap of the filter matters.
    static func textured(width: Int, height: Int, channels: Int) -> Image {
        var seed: UInt32 = 2024
        var canvas = Canvas(width: width, height: height, channels: channels)
        canvas.withUnsafeMutableRows { rows in
            for y in 0..<height {
                for x in 0..<width {
                    seed = seed &* 1_664_525 &+ 1_013_904_223
                    let noise = Int(seed >> 27)
                    let inBlock = x > width / 3 && x < width / 2 && y > height / 4 && y < height / 2
                    let p = rows[y] + x * channels
                    p[0] = inBlock ? 250 : UInt8((x * 255 / width + noise) % 256)
                    p[1] = inBlock ? 10 : UInt8((y * 255 / height + noise / 2) % 256)
                    p[2] = UInt8(((x ^ y) & 0x3F) * 3 + noise % 8)
                    if channels == 4 { p[3] = UInt8((x * 3 + y) % 256) }
                }
            }
        }
        return canvas.finished()
    }

    @Test func sse2AndTheCPUsChoiceWriteTheSameFiles() throws {
        guard ResampleKernels.cpuHasAVX2 else {
            print("skipped: this CPU has no AVX2, so both runs would use SSE2")
            return
        }
        let dir = try Harness.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        let logo = Self.textured(width: 300, height: 100, channels: 4)
        try Harness.write(try encodeImage(logo, options: EncodeOptions(format: .png)), to: dir + "/logo.png")
        try Harness.write("""
            { version: 1, resize: { longSide: 701 },
              text: { text: "© SIMD 2026", capHeight: 0.04, position: "bottom-right", shadow: { opacity: 0.4 } },
              logo: { file: "logo.png", width: 0.2, position: "top-left", opacity: 0.8 },
              output: { format: "jpeg", quality: 90 },
              variants: [ { name: "sq", resize: { longSide: 333 }, crops: ["1:1"] },
                          { name: "png", resize: { longSide: 250 }, output: { format: "png" } } ] }
            """, to: dir + "/t.json5")
        let upright = Self.textured(width: 1203, height: 905, channels: 3)
        try Harness.write(try Harness.jpeg(upright: upright), to: dir + "/in/a_upright.jpg")
        try Harness.write(try Harness.jpeg(upright: upright, orientation: 6), to: dir + "/in/b_turned.jpg")
        try Harness.write(try encodeImage(Self.textured(width: 998, height: 1401, channels: 3),
                                          options: EncodeOptions(format: .jpeg, quality: 85)),
                          to: dir + "/in/c_portrait.jpg")
        try Harness.write(try encodeImage(Self.textured(width: 640, height: 481, channels: 4),
                                          options: EncodeOptions(format: .png)), to: dir + "/in/d_alpha.png")
        var outputs: [[String: [UInt8]]] = []
        for simd in ["sse2", ""] {
            let out = dir + "/out-" + (simd.isEmpty ? "cpu" : simd)
            let r = try Harness.run(["run", "--template", dir + "/t.json5", "--out", out, dir + "/in"],
                                    extraEnvironment: ["PHOTOFINISH_SIMD": simd])
            #expect(r.status == 0, "\(r.stderr)")
            let batch = try Harness.batchFolder(in: out)
            var files: [String: [UInt8]] = [:]
            for name in try FileManager.default.subpathsOfDirectory(atPath: batch)
            where name.hasSuffix(".jpg") || name.hasSuffix(".png") {
                files[name] = try Harness.read(batch + "/" + name)
            }
            outputs.append(files)
        }
        // every photo's output, square crop and PNG, and its thumbnail
        #expect(outputs[0].count == 16, "\(outputs[0].keys.sorted())")
        #expect(outputs[0].keys.sorted() == outputs[1].keys.sorted())
        for (name, bytes) in outputs[0] {
            let same = outputs[1][name] == bytes  // compared first: a failed #expect on megabytes is slow
            #expect(same, "\(name) differs between SSE2 and AVX2")
        }
    }
}
