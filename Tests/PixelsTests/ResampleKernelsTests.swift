import Foundation
@testable import Pixels
import Testing

/// The resampler's two builds of its inner loops (SSE2, AVX2: `ResampleKernels`) give the same
/// bytes, and the choice between them follows the CPU and `PHOTOFINISH_SIMD`.
@Suite struct ResampleKernelsTests {
    /// Sizes that reach every branch of the kernels: rows shorter than a vector block and
    /// just over it, odd widths (the last pixel, the overlapping last block), odd and even row
    /// counts (a lone last row), upscales, tiny sources (odd tap counts), crops, the preview's
    /// box shrink.
    static let cases: [(channels: Int, w: Int, h: Int, tw: Int, th: Int)] = [
        (3, 4032, 64, 2048, 33), (3, 1203, 905, 613, 461), (3, 1201, 903, 480, 360), (3, 97, 61, 40, 25),
        (3, 40, 25, 97, 61), (3, 33, 17, 5, 16), (3, 17, 9, 11, 4), (3, 300, 200, 31, 17), (3, 7, 5, 3, 2),
        (3, 5, 5, 1, 1), (3, 9, 7, 40, 3), (4, 1203, 905, 613, 461), (4, 97, 61, 40, 25), (4, 40, 25, 131, 77),
        (4, 33, 17, 5, 16), (4, 7, 5, 3, 2), (3, 640, 480, 640, 240), (3, 640, 480, 320, 480),
        // the preview's box shrink at factors 2 and 16, narrower blocks at the right and bottom edges
        (3, 1999, 1001, 480, 240), (3, 2047, 1535, 60, 45),
    ]

    @Test(arguments: cases)
    func sse2AndAVX2GiveTheSameBytes(channels: Int, w: Int, h: Int, tw: Int, th: Int) throws {
        guard ResampleKernels.cpuHasAVX2 else {
            print("skipped: this CPU has no AVX2, only the SSE2 build runs here")
            return
        }
        let image = channels == 3
            ? naturalImage(width: w, height: h, channels: 3)
            : naturalImage(width: w, height: h, channels: 4) { x, y in UInt8((x * 7 + y * 3) % 256) }
        for shrinkFirst in [false, true] {
            let sse2 = resized(image, width: tw, height: th, shrinkFirst: shrinkFirst, kernels: .sse2)
            let avx2 = resized(image, width: tw, height: th, shrinkFirst: shrinkFirst, kernels: .avx2)
            try expectSameBytes(sse2, avx2, "\(channels)×\(w)×\(h) → \(tw)×\(th), shrinkFirst \(shrinkFirst)")
        }
    }

    /// Hard black-and-white edges overshoot between the passes (Int16 ring values below 0 and
    /// above 255 · 2⁶): both builds saturate them the same way.
    @Test(arguments: [(71, 44, 31, 17), (71, 44, 160, 100), (1001, 67, 500, 33)])
    func hardEdgesGiveTheSameBytes(w: Int, h: Int, tw: Int, th: Int) throws {
        guard ResampleKernels.cpuHasAVX2 else {
            print("skipped: this CPU has no AVX2, only the SSE2 build runs here")
            return
        }
        let image = makeImage(width: w, height: h, channels: 3) { x, y in
            (x / 3 + y / 3) % 2 == 0 ? [0, 255, 0] : [255, 0, 255]
        }
        try expectSameBytes(resized(image, width: tw, height: th, kernels: .sse2),
                            resized(image, width: tw, height: th, kernels: .avx2), "\(w)×\(h) → \(tw)×\(th)")
    }

    /// A crop streamed row by row, stopping at completion, as the decoder feeds it.
    @Test(arguments: [3, 4])
    func streamedCropsGiveTheSameBytes(channels: Int) throws {
        guard ResampleKernels.cpuHasAVX2 else {
            print("skipped: this CPU has no AVX2, only the SSE2 build runs here")
            return
        }
        let image = naturalImage(width: 150, height: 110, channels: channels)
        let crop = PixelRect(x: 17, y: 23, width: 101, height: 64)
        for (tw, th) in [(45, 29), (160, 90), (101, 33)] {
            let results = ResampleKernels.allCases.map { kernels in
                let resizer = StreamingResizer(sourceWidth: 150, sourceHeight: 110, crop: crop, targetWidth: tw,
                                               targetHeight: th, channels: channels, kernels: kernels)
                image.withUnsafeRows { rows in
                    for y in 0..<rows.height where !resizer.isComplete { resizer.push(rows[y]) }
                }
                return resizer.finish().finished()
            }
            try expectSameBytes(results[0], results[1], "crop → \(tw)×\(th)")
        }
    }

    @Test func aMachineWithoutAVX2UsesSSE2() {
        #expect(ResampleKernels.choose(cpuHasAVX2: false, request: nil) == .sse2)
        #expect(ResampleKernels.choose(cpuHasAVX2: false, request: "avx2") == .sse2)
        #expect(ResampleKernels.choose(cpuHasAVX2: false, request: "sse2") == .sse2)
        #expect(ResampleKernels.choose(cpuHasAVX2: true, request: nil) == .avx2)
        #expect(ResampleKernels.choose(cpuHasAVX2: true, request: "sse2") == .sse2)
        #expect(ResampleKernels.choose(cpuHasAVX2: true, request: "") == .avx2)
        // This process decided the same way from its own CPU and environment.
        let request = ProcessInfo.processInfo.environment["PHOTOFINISH_SIMD"]
        #expect(ResampleKernels.current == ResampleKernels.choose(cpuHasAVX2: ResampleKernels.cpuHasAVX2, request: request))
        #expect(ResampleKernels.available == (ResampleKernels.cpuHasAVX2 ? [.sse2, .avx2] : [.sse2]))
    }

    /// The SSE2 build alone still matches the double-precision Lanczos (it is what a machine
    /// without AVX2 runs; the other tests check the default build).
    @Test(arguments: [(3, 120, 90, 61, 47), (4, 120, 90, 59, 44), (3, 40, 30, 97, 70)])
    func sse2MatchesTheReference(channels: Int, w: Int, h: Int, tw: Int, th: Int) {
        let image = naturalImage(width: w, height: h, channels: channels)
        let out = resized(image, width: tw, height: th, kernels: .sse2)
        let reference = referenceResize(image, width: tw, height: th)
        var worst = 0.0
        for y in 0..<th {
            for x in 0..<tw {
                for c in 0..<channels {
                    worst = max(worst, abs(Double(out.pixel(x, y)[c]) - min(max(reference[y][x][c], 0), 255)))
                }
            }
        }
        #expect(worst < 0.6, "largest difference \(worst)")
    }

    private func expectSameBytes(_ a: Image, _ b: Image, _ what: String) throws {
        try #require(a.width == b.width && a.height == b.height && a.channels == b.channels, "\(what): sizes differ")
        var differing = 0, first: (Int, Int)?
        a.withUnsafeRows { ra in
            b.withUnsafeRows { rb in
                for y in 0..<ra.height where memcmp(ra[y], rb[y], ra.rowBytes) != 0 {
                    differing += 1
                    if first == nil {
                        let x = (0..<ra.rowBytes).first { ra[y][$0] != rb[y][$0] }! / ra.channels
                        first = (x, y)
                    }
                }
            }
        }
        #expect(differing == 0, "\(what): \(differing) rows differ, first at \(first.map { "(\($0.0), \($0.1))" } ?? "")")
    }
}
