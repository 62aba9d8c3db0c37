// Micro-benchmark for StreamingResizer: reads a binary PPM (P6), resizes it by pushing
// rows as a decoder would, prints the best wall time of several runs, writes the result.
// Usage: resample-bench IN.ppm OUT.ppm WIDTH HEIGHT [RUNS] [rgba|rgb|preview] [orient]
//        resample-bench --zoneplate WIDTH HEIGHT OUT.ppm   (writes a zone plate)
// The kernels are the process's (PHOTOFINISH_SIMD=sse2 for SSE2 on an AVX2 machine).
import Foundation

func readPPM(_ path: String) -> Image {
    let data = FileManager.default.contents(atPath: path)!
    // Header: "P6" w h maxval, whitespace separated, then one whitespace byte.
    var fields: [String] = []
    var i = 0
    var current = ""
    while fields.count < 4 {
        let c = data[i]
        if c == 0x23 { while data[i] != 0x0A { i += 1 } }  // comment
        else if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 {
            if !current.isEmpty { fields.append(current); current = "" }
        } else { current.append(Character(UnicodeScalar(c))) }
        i += 1
    }
    let w = Int(fields[1])!, h = Int(fields[2])!
    return Image(width: w, height: h, channels: 3) { rows in
        data.withUnsafeBytes { raw in
            rows.base.update(from: raw.baseAddress!.assumingMemoryBound(to: UInt8.self) + i, count: w * h * 3)
        }
    }
}

func writePPM(_ image: Image, _ path: String) {
    var data = Data("P6\n\(image.width) \(image.height)\n255\n".utf8)
    image.withUnsafeRows { rows in
        if rows.channels == 3 {
            data.append(rows.base, count: rows.byteCount)
        } else {
            for y in 0..<rows.height { for x in 0..<rows.width { data.append(rows[y] + x * 4, count: 3) } }
        }
    }
    // Not FileManager.createFile: it writes a temporary file and renames it over the path, which
    // for /dev/null (the runs that only time) replaces the device with a regular file.
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    precondition(fd >= 0, "cannot open \(path)")
    data.withUnsafeBytes { raw in
        var done = 0
        while done < raw.count {
            let n = write(fd, raw.baseAddress! + done, raw.count - done)
            precondition(n > 0, "cannot write \(path)")
            done += n
        }
    }
    close(fd)
}

let args = CommandLine.arguments
if args[1] == "--zoneplate" {
    // Rings whose frequency rises from 0 at the centre to the Nyquist limit at the middle of
    // each side (past it in the corners), one phase per channel (as the zone-plate test).
    let w = Int(args[2])!, h = Int(args[3])!
    let plate = Image(width: w, height: h, channels: 3) { rows in
        for y in 0..<h {
            for x in 0..<w {
                let dx = Double(x) - Double(w) / 2, dy = Double(y) - Double(h) / 2
                let phase = Double.pi * (dx * dx + dy * dy) / Double(w)
                rows[y][x * 3] = UInt8((127.5 + 127.5 * cos(phase)).rounded())
                rows[y][x * 3 + 1] = UInt8((127.5 - 127.5 * cos(phase)).rounded())
                rows[y][x * 3 + 2] = UInt8((127.5 + 127.5 * sin(phase)).rounded())
            }
        }
    }
    writePPM(plate, args[4])
    exit(0)
}
let source = readPPM(args[1])
let width = Int(args[3])!, height = Int(args[4])!
let runs = args.count > 5 ? Int(args[5])! : 5
var input = source
if args.count > 6 && args[6] == "rgba" {
    input = source.withUnsafeRows { source in
        Image(width: source.width, height: source.height, channels: 4) { rows in
            for y in 0..<source.height {
                for x in 0..<source.width {
                    for c in 0..<3 { rows[y][x * 4 + c] = source[y][x * 3 + c] }
                    rows[y][x * 4 + 3] = 255
                }
            }
        }
    }
}
/// CPU time of this thread, so other processes on the machine do not inflate the figure.
func threadCPUms() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return Double(t.tv_sec) * 1e3 + Double(t.tv_nsec) / 1e6
}
var best = Double.infinity
var bestCPU = Double.infinity
var result: Image? = nil
for _ in 0..<runs {
    let start = DispatchTime.now().uptimeNanoseconds
    let startCPU = threadCPUms()
    let resizer = StreamingResizer(sourceWidth: input.width, sourceHeight: input.height,
                                   crop: PixelRect(x: 0, y: 0, width: input.width, height: input.height),
                                   targetWidth: width, targetHeight: height, channels: input.channels,
                                   shrinkFirst: args.count > 6 && args[6] == "preview")
    input.withUnsafeRows { rows in for y in 0..<rows.height { resizer.push(rows[y]) } }
    let out = resizer.finish().finished()
    let ms = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
    best = min(best, ms)
    bestCPU = min(bestCPU, threadCPUms() - startCPU)
    result = out
}
print("\(ResampleKernels.current) \(input.width)x\(input.height)x\(input.channels) -> \(width)x\(height)\(args.count > 6 && args[6] == "preview" ? " (boxes first)" : ""): best of \(runs): \(String(format: "%.1f", best)) ms wall, \(String(format: "%.1f", bestCPU)) ms CPU")
writePPM(result!, args[2])

// Orientation of the source (rotations walk the source by columns: tiled).
if args.count > 7 && args[7] == "orient" {
    for exif in [3, 6, 8] {
        var bestOrient = Double.infinity
        for _ in 0..<runs {
            let start = threadCPUms()
            let upright = Orientation.apply(input, exif: exif)
            bestOrient = min(bestOrient, threadCPUms() - start)
            precondition(upright.width * upright.height == input.width * input.height)
        }
        print("orient \(exif) of \(input.width)x\(input.height)x\(input.channels): best of \(runs): \(String(format: "%.1f", bestOrient)) ms CPU")
    }
}
