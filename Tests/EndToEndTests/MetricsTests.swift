import Foundation
import Testing

/// Metrics (SPEC §6): the metrics file and the HTTP endpoint on a socket systemd passes in
/// (played here by `systemd-socket-activate`) are Prometheus text with a known batch's counts.
struct MetricsTests {
    @Test func metricsFileAndSocketEndpointCountAKnownBatch() throws {
        let activate = "/usr/bin/systemd-socket-activate"
        guard FileManager.default.isExecutableFile(atPath: activate) else {
            print("skipped: \(activate) is missing (apt-get install systemd): the socket endpoint is not tested")
            return
        }
        let dir = try Harness.tempDir()
        let metricsFile = dir + "/metrics/photofinish.prom"
        try FileManager.default.createDirectory(atPath: dir + "/metrics", withIntermediateDirectories: true)
        let hot = try HotFolderFixture(extra: "metricsFile: \"\(metricsFile)\",")
        let port = try Self.freePort()
        let daemon = try DaemonProcess(["daemon", "--config", hot.config], notify: nil, runtime: hot.runtime,
                                       logPath: hot.dir + "/daemon.log",
                                       wrapper: [activate, "-l", "127.0.0.1:\(port)", "--fdname=metrics",
                                                 // It hands the program only TERM, PATH, USER, HOME and what -E
                                                 // names: the daemon's own runtime folder, for its status.
                                                 "-E", "RUNTIME_DIRECTORY=\(hot.runtime)"])
        // systemd-socket-activate starts the daemon at the first connection, as systemd would.
        let first = try #require(try Self.get(port: port, path: "/metrics"), "log:\n\(daemon.log)")
        #expect(first.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(first)")
        #expect(first.contains("Content-Type: text/plain; version=0.0.4"))
        let before = try PrometheusSamples(Self.body(first))
        #expect(before["photofinish_photos_total", ["inbox": "shop", "status": "ok"]] == 0)
        daemon.waitUntilReady()

        // A known batch: two photos that finish, one that cannot be read.
        let photos = [try HotFolderFixture.photo(1), try HotFolderFixture.photo(2)]
        let broken = Array(photos[0].prefix(200))
        try hot.drop(photos[0], as: "a.jpg")
        try hot.drop(photos[1], as: "b.jpg")
        try hot.drop(broken, as: "broken.jpg")
        #expect(Poll.until(.seconds(120)) { hot.reports().count == 1 }, "log:\n\(daemon.log)")
        let report = try #require(hot.reports().values.first)
        let items = try #require(report["items"] as? [[String: Any]])
        let outBytes = items.flatMap { ($0["outputs"] as? [[String: Any]]) ?? [] }.compactMap { $0["bytes"] as? Int }.reduce(0, +)
        let finished = try #require(report["finished"] as? String)

        // The file is rewritten after the batch; the endpoint answers from the same numbers.
        #expect(Poll.until(.seconds(20)) {
            (try? PrometheusSamples(String(contentsOfFile: metricsFile, encoding: .utf8)))?["photofinish_photos_total", ["inbox": "shop", "status": "ok"]] == 2
        }, "log:\n\(daemon.log)")
        let file = try PrometheusSamples(String(contentsOfFile: metricsFile, encoding: .utf8))
        let served = try PrometheusSamples(Self.body(try #require(try Self.get(port: port, path: "/metrics"))))
        for samples in [file, served] {
            let shop = ["inbox": "shop"]
            #expect(samples["photofinish_photos_total", ["inbox": "shop", "status": "ok"]] == 2)
            #expect(samples["photofinish_photos_total", ["inbox": "shop", "status": "failed"]] == 1)
            #expect(samples["photofinish_photos_total", ["inbox": "shop", "status": "interrupted"]] == 0)
            #expect(samples["photofinish_errors_total", ["inbox": "shop", "code": "corrupt-image"]] == 1)
            #expect(samples["photofinish_bytes_total", ["inbox": "shop", "direction": "in"]] == Double(photos[0].count + photos[1].count + broken.count))
            #expect(samples["photofinish_bytes_total", ["inbox": "shop", "direction": "out"]] == Double(outBytes))
            #expect(samples["photofinish_pending_files", shop] == 0)
            #expect(samples["photofinish_photos_in_flight", [:]] == 0)
            let last = try #require(samples["photofinish_last_batch_timestamp_seconds", shop])
            #expect(abs(last - (Self.unixTime(finished) ?? 0)) < 0.002)
            #expect(samples["photofinish_batch_duration_seconds_count", shop] == 1)
            #expect(samples["photofinish_batch_duration_seconds_bucket", ["inbox": "shop", "le": "+Inf"]] == 1)
            #expect(samples["photofinish_photo_duration_seconds_count", shop] == 3)
        }
        let missing = try #require(try Self.get(port: port, path: "/other"))
        #expect(missing.hasPrefix("HTTP/1.1 404"))
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)
    }

    static func body(_ response: String) -> String {
        response.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
    }

    /// "2026-11-29T15:04:05.123Z" as Unix time.
    static func unixTime(_ iso: String) -> Double? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: iso)?.timeIntervalSince1970
    }

    /// A port nothing listens on now.
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { throw POSIXError(.EADDRINUSE) }
        return UInt16(bigEndian: addr.sin_port)
    }

    /// One HTTP/1.1 GET; the whole response, or nil when nothing answered within 60 s.
    static func get(port: UInt16, path: String) throws -> String? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = port.bigEndian
        var connected = false
        for _ in 0..<500 where !connected {
            connected = withUnsafePointer(to: &addr) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            if !connected { usleep(20_000) }
        }
        guard connected else { return nil }
        var tv = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        _ = request.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            bytes += buffer[0..<n]
        }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }
}

/// Prometheus text (exposition format 0.0.4), parsed strictly: every sample belongs to a family
/// declared by `# TYPE` before it (a histogram's as `_bucket`, `_sum`, `_count`), names and
/// labels are well formed, values are numbers.
struct PrometheusSamples {
    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    private var values: [String: Double] = [:]

    init(_ text: String) throws {
        var types: [String: String] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) where !line.isEmpty {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(String(parts[3])) else {
                    throw Invalid(description: "bad TYPE line: \(line)")
                }
                types[String(parts[2])] = String(parts[3])
                continue
            }
            if line.hasPrefix("#") { continue }
            guard let match = line.wholeMatch(of: #/([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)/#) else {
                throw Invalid(description: "not a sample: \(line)")
            }
            let metric = String(match.1)
            let family = types[metric] != nil ? metric
                : ["_bucket", "_sum", "_count"].compactMap { suffix in metric.hasSuffix(suffix) ? String(metric.dropLast(suffix.count)) : nil }
                    .first { types[$0] == "histogram" }
            guard let family, types[family] != nil else { throw Invalid(description: "no TYPE before \(metric)") }
            var labels: [String: String] = [:]
            if let block = match.2 {
                let inner = block.dropFirst().dropLast()
                for pair in inner.matches(of: #/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/#) {
                    labels[String(pair.1)] = String(pair.2)
                }
                guard !inner.isEmpty, inner.matches(of: #/="/#).count == labels.count else {
                    throw Invalid(description: "bad labels: \(line)")
                }
            }
            guard let value = match.3 == "+Inf" ? Double.infinity : Double(match.3) else {
                throw Invalid(description: "bad value: \(line)")
            }
            values[Self.key(metric, labels)] = value
        }
    }

    subscript(_ metric: String, _ labels: [String: String]) -> Double? {
        values[Self.key(metric, labels)]
    }

    private static func key(_ metric: String, _ labels: [String: String]) -> String {
        metric + "{" + labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") + "}"
    }
}
