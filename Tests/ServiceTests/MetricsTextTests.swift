import Foundation
import Testing
@testable import Service

/// The metrics endpoint's routes and the Prometheus text's escaping.
struct MetricsTextTests {
    @Test func requestsAreRouted() {
        #expect(MetricsRequest.route(method: "GET", path: "/metrics") == .metrics)
        #expect(MetricsRequest.route(method: "HEAD", path: "/metrics/") == .metrics)
        #expect(MetricsRequest.route(method: "GET", path: "/") == .notFound)
        #expect(MetricsRequest.route(method: "POST", path: "/metrics") == .methodNotAllowed)
    }

    @Test func labelValuesAreEscapedAndNumbersPlain() {
        var text = PrometheusText()
        text.family("x_total", .counter, "X.")
        text.sample("x_total", ["inbox": "a\"b\\c\nd"], 3)
        text.sample("x_total", ["inbox": "e"], 0.25)
        #expect(text.text == "# HELP x_total X.\n# TYPE x_total counter\nx_total{inbox=\"a\\\"b\\\\c\\nd\"} 3\nx_total{inbox=\"e\"} 0.25\n")
    }
}
