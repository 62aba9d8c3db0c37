import Foundation
import Testing
@testable import Service

/// The metrics endpoint's request line and the Prometheus text's escaping.
struct MetricsTextTests {
    @Test func requestsAreRead() {
        #expect(MetricsRequest.parse("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n") == .metrics(withBody: true))
        #expect(MetricsRequest.parse("HEAD /metrics?x=1 HTTP/1.0\n\n") == .metrics(withBody: false))
        #expect(MetricsRequest.parse("GET / HTTP/1.1\r\n\r\n") == .notFound)
        #expect(MetricsRequest.parse("POST /metrics HTTP/1.1\r\n\r\n") == .methodNotAllowed)
        #expect(MetricsRequest.parse("hello\r\n\r\n") == .bad)
    }

    @Test func labelValuesAreEscapedAndNumbersPlain() {
        var text = PrometheusText()
        text.family("x_total", .counter, "X.")
        text.sample("x_total", ["inbox": "a\"b\\c\nd"], 3)
        text.sample("x_total", ["inbox": "e"], 0.25)
        #expect(text.text == "# HELP x_total X.\n# TYPE x_total counter\nx_total{inbox=\"a\\\"b\\\\c\\nd\"} 3\nx_total{inbox=\"e\"} 0.25\n")
    }
}
