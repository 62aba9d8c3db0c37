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
}
