internal import CCurl
import Foundation

/// One HTTP POST with libcurl. The easy handle, its header list and error buffer are owned
/// here and freed once.
final class HTTPPost {
    /// What came back: a status code (any, 2xx or not), or why there was none.
    enum Answer: Equatable {
        case status(Int, body: String)
        case failed(String)
    }

    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// Posts `body` to `url` with `headers` (`Content-Type: application/json` unless given),
    /// within `timeout`. Redirects are not followed; only http and https are spoken.
    static func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration,
                     userAgent: String) -> Answer {
        guard globalInit, let curl = curl_easy_init() else { return .failed("libcurl could not be initialised") }
        defer { curl_easy_cleanup(curl) }
        var list: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(list) }
        var all = headers
        if !all.contains(where: { $0.0.lowercased() == "content-type" }) { all.append(("Content-Type", "application/json")) }
        all.append(("Expect", ""))  // no "100-continue" round trip for a small body
        for (name, value) in all { list = curl_slist_append(list, "\(name): \(value)") }
        var errorText = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let response = ResponseBody()
        let context = Unmanaged.passUnretained(response).toOpaque()
        let milliseconds = Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let code: CURLcode = body.withUnsafeBufferPointer { bytes in
            errorText.withUnsafeMutableBufferPointer { errors in
                var setup = [
                    pf_curl_setopt_string(curl, CURLOPT_URL, url),
                    pf_curl_setopt_long(curl, CURLOPT_POST, 1),
                    pf_curl_setopt_pointer(curl, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress)),
                    pf_curl_setopt_long(curl, CURLOPT_POSTFIELDSIZE, bytes.count),
                    pf_curl_setopt_slist(curl, CURLOPT_HTTPHEADER, list),
                    pf_curl_setopt_string(curl, CURLOPT_USERAGENT, userAgent),
                    pf_curl_setopt_long(curl, CURLOPT_TIMEOUT_MS, milliseconds),
                    pf_curl_setopt_long(curl, CURLOPT_CONNECTTIMEOUT_MS, min(milliseconds, 10_000)),
                    // Threads: no SIGALRM for DNS timeouts.
                    pf_curl_setopt_long(curl, CURLOPT_NOSIGNAL, 1),
                    pf_curl_setopt_string(curl, CURLOPT_PROTOCOLS_STR, "http,https"),
                    pf_curl_setopt_pointer(curl, CURLOPT_ERRORBUFFER, errors.baseAddress),
                    pf_curl_setopt_write(curl, { data, size, count, context in
                        guard let data, let context else { return 0 }
                        Unmanaged<ResponseBody>.fromOpaque(context).takeUnretainedValue()
                            .append(UnsafeRawBufferPointer(start: data, count: size * count))
                        return size * count
                    }, context),
                ]
                setup.removeAll { $0 == CURLE_OK }
                if let failure = setup.first { return failure }
                return curl_easy_perform(curl)
            }
        }
        withExtendedLifetime(response) {}
        guard code == CURLE_OK else {
            let detail = String(decoding: errorText.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .failed(detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)
        }
        var status = 0
        _ = pf_curl_response_code(curl, &status)
        return .status(status, body: response.text)
    }
}

/// The first 4 KiB of a response body, for the log.
private final class ResponseBody {
    private var bytes: [UInt8] = []

    func append(_ chunk: UnsafeRawBufferPointer) {
        let room = max(0, 4096 - bytes.count)
        bytes += chunk.prefix(room)
    }

    var text: String { String(decoding: bytes, as: UTF8.self) }
}
