import CFaces
import CFacesReference
import Foundation
import Pixels
import Testing
@testable import Finishing

/// CFaces searches with dlib's model compiled in (Sources/CFaces/model.c, written by
/// scripts/face-model) through its own loop over dlib's search code; dlib's own detector
/// (CFacesReference: decoded from dlib's header, run by dlib's evaluate_detectors) is the
/// oracle both are checked against.
@Suite struct FaceModelTests {
    @Test("model.c is what the installed dlib's frontal face detector gives (else: scripts/face-model)")
    func modelIsInstalledDlibs() throws {
        var buffer: UnsafeMutablePointer<CChar>?
        var length = 0
        let stream = try #require(open_memstream(&buffer, &length))
        var message = [CChar](repeating: 0, count: 256)
        let status = pf_reference_write_model(stream, &message, message.count)
        fclose(stream)
        defer { free(buffer) }
        #expect(status == 0, "\(String(cString: message))")
        let written = buffer.map { String(cString: $0) } ?? ""
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/CFaces/model.c")
        let compiled = try String(contentsOf: file, encoding: .utf8)
        #expect(written == compiled, "Sources/CFaces/model.c is not the installed dlib's model: run scripts/face-model")
    }

    /// The faces dlib finds in `grey`, and CFaces', each as [x, y, w, h] and confidence, sorted.
    static func both(_ search: (grey: [UInt8], width: Int, height: Int), detector: OpaquePointer)
        -> (ours: [String], dlib: [String]) {
        var ours = [pf_face](repeating: pf_face(), count: 64)
        var theirs = [pf_reference_face](repeating: pf_reference_face(), count: 64)
        var message = [CChar](repeating: 0, count: 256)
        let (n, m) = search.grey.withUnsafeBufferPointer { pixels in
            (pf_faces_find(detector, pixels.baseAddress, Int32(search.width), Int32(search.height), search.width,
                           &ours, 64, &message, message.count),
             pf_reference_find(pixels.baseAddress, Int32(search.width), Int32(search.height), search.width, 0,
                               &theirs, 64, &message, message.count))
        }
        // dlib's boxes are not clipped to the image; CFaces' are.
        func clipped(_ x: Int32, _ y: Int32, _ w: Int32, _ h: Int32, _ c: Double) -> String {
            let x0 = max(0, x), y0 = max(0, y)
            let x1 = min(Int32(search.width), x + w), y1 = min(Int32(search.height), y + h)
            return "[\(x0), \(y0), \(x1 - x0), \(y1 - y0)] \(c)"
        }
        return (ours.prefix(Int(max(0, n))).map { clipped($0.x, $0.y, $0.width, $0.height, $0.confidence) }.sorted(),
                theirs.prefix(Int(max(0, m))).map { clipped($0.x, $0.y, $0.width, $0.height, $0.confidence) }.sorted())
    }

    @Test("CFaces finds what dlib's own detector finds, box for box and to the last bit of confidence, on the real photos, with dlib's SSE2 filtering and with its own AVX2 one")
    func sameFacesAsDlib() throws {
        var message = [CChar](repeating: 0, count: 256)
        let sse2 = try #require(pf_faces_new_simd(0, &message, message.count))
        defer { pf_faces_free(sse2) }
        let avx2 = pf_faces_cpu_has_avx2() != 0 ? pf_faces_new_simd(1, &message, message.count) : nil
        defer { pf_faces_free(avx2) }
        if avx2 == nil { print("skipped: this CPU has no AVX2: only the SSE2 filtering is checked against dlib") }
        var faces = 0
        for name in ["group-table.jpg", "obama.jpg", "obama2.jpg", "obama3.jpg", "biden.jpg", "astronaut.png",
                     "messi5.jpg", "chelsea.png", "coffee.png", "rocket.jpg"] {
            guard let bytes = FaceCropTests.photo(name) else { continue }
            let search = FaceDetector.searchImage(try decodeRGB(bytes))
            let found = Self.both(search, detector: sse2)
            #expect(found.ours == found.dlib, "\(name): CFaces (SSE2) \(found.ours), dlib \(found.dlib)")
            if let avx2 {
                let wide = Self.both(search, detector: avx2)
                #expect(wide.ours == found.dlib, "\(name): CFaces (AVX2) \(wide.ours), dlib \(found.dlib)")
            }
            faces += found.dlib.count
        }
        if faces > 0 { #expect(faces >= 11, "dlib found \(faces) faces in the test photos") }
    }

    @Test("the detector filters with AVX2 when the CPU has it, with SSE2 under PHOTOFINISH_SIMD=sse2")
    func choosesItsFiltering() throws {
        var message = [CChar](repeating: 0, count: 256)
        let chosen = try #require(pf_faces_new(&message, message.count))
        defer { pf_faces_free(chosen) }
        let forced = ProcessInfo.processInfo.environment["PHOTOFINISH_SIMD"] == "sse2"
        #expect(pf_faces_avx2(chosen) == (pf_faces_cpu_has_avx2() != 0 && !forced ? 1 : 0))
        if pf_faces_cpu_has_avx2() == 0 {
            #expect(pf_faces_new_simd(1, &message, message.count) == nil)
            #expect(String(cString: message).contains("AVX2"))
        }
    }

    /// The fHOG planes of pyramid level `level` of `grey` as CFaces computes them (AVX2, or
    /// dlib's code through CFaces) and as dlib's own pyramid_down<3> and extract_fhog_features
    /// do, as bit patterns.
    static func features(_ grey: [UInt8], width: Int, height: Int, level: Int32, avx2: Bool)
        -> (ours: [UInt32], dlib: [UInt32], rows: Int32, columns: Int32) {
        var message = [CChar](repeating: 0, count: 256)
        var rows: Int32 = 0, columns: Int32 = 0, theirRows: Int32 = 0, theirColumns: Int32 = 0
        return grey.withUnsafeBufferPointer { pixels in
            let count = pf_faces_features(avx2 ? 1 : 0, pixels.baseAddress, Int32(width), Int32(height), width, level, nil, 0,
                                          &rows, &columns, &message, message.count)
            var ours = [Float](repeating: .nan, count: Int(max(0, count)))
            var theirs = ours
            _ = pf_faces_features(avx2 ? 1 : 0, pixels.baseAddress, Int32(width), Int32(height), width, level, &ours,
                                  ours.count, &rows, &columns, &message, message.count)
            let theirCount = pf_reference_features(pixels.baseAddress, Int32(width), Int32(height), width, level, &theirs,
                                                   theirs.count, &theirRows, &theirColumns, &message, message.count)
            if theirCount != count || theirRows != rows || theirColumns != columns { return ([1], [], rows, columns) }
            return (ours.map(\.bitPattern), theirs.map(\.bitPattern), rows, columns)
        }
    }

    @Test("CFaces' AVX2 pyramid and fHOG give dlib's features to the bit: real photos at several sizes and widths (8-pixel steps and the columns left over), levels 0-3, noise, a flat image, images too small for a cell")
    func sameFeaturesAsDlib() throws {
        guard pf_faces_cpu_has_avx2() != 0 else {
            print("skipped: this CPU has no AVX2: the AVX2 fHOG cannot run")
            return
        }
        var images: [(name: String, grey: [UInt8], width: Int, height: Int)] = []
        for name in ["group-table.jpg", "obama2.jpg", "messi5.jpg", "chelsea.png"] {
            guard let bytes = FaceCropTests.photo(name) else { continue }
            let search = FaceDetector.searchImage(try decodeRGB(bytes))
            images.append((name, search.grey, search.width, search.height))
            // The same photo narrower by 1 to 9 pixels: every count of columns after the last 8.
            for cut in [1, 3, 7, 9] where search.width > cut + 16 {
                let width = search.width - cut
                var grey = [UInt8](repeating: 0, count: width * search.height)
                for y in 0..<search.height {
                    for x in 0..<width { grey[y * width + x] = search.grey[y * search.width + x] }
                }
                images.append(("\(name) -\(cut) columns", grey, width, search.height))
            }
        }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        // Noise of two sizes: 208 x 121 leaves dlib's pyramid a partial block at the right and
        // at the bottom ((side - 2) % 3 == 2), 203 x 117 none.
        for (width, height) in [(203, 117), (208, 121)] {
            let noise = (0..<(width * height)).map { _ -> UInt8 in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return UInt8(truncatingIfNeeded: state >> 56)
            }
            images.append(("noise \(width) x \(height)", noise, width, height))
        }
        images.append(("flat", [UInt8](repeating: 128, count: 96 * 80), 96, 80))
        images.append(("one cell", [UInt8](repeating: 9, count: 8 * 8), 8, 8))
        images.append(("a pixel", [200], 1, 1))
        var planes = 0
        for image in images {
            for level: Int32 in 0...3 {
                for avx2 in [true, false] {
                    let found = Self.features(image.grey, width: image.width, height: image.height, level: level,
                                              avx2: avx2)
                    // Compared here, not in #expect (which would print both arrays).
                    let same = found.ours == found.dlib
                    let differ = same ? 0 : zip(found.ours, found.dlib).filter { $0 != $1 }.count
                    #expect(same,
                            "\(image.name), level \(level) (\(avx2 ? "AVX2" : "dlib's code")): \(differ) of \(found.dlib.count) floats differ, \(found.ours.count) computed")
                    if avx2 { planes += found.dlib.count }
                }
            }
        }
        #expect(planes > 100_000, "only \(planes) floats compared")
    }
}
