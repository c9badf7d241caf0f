import MicroHTTPD
import Testing
@testable import TopChromeCore
@testable import TopChromeAPI

@Suite struct ServiceMetricsTests {
    func exchange(_ method: String, _ status: Int, milliseconds: Int64 = 1) -> HTTPExchange {
        HTTPExchange(method: method, path: "/", endpoint: nil, status: status, bodyBytes: 0,
                     duration: .milliseconds(milliseconds), isStream: false)
    }

    /// Every method and status the table names is counted under its own label.
    @Test func everyStatusAndMethodHasItsCell() {
        let metrics = ServiceMetrics()
        let methods = ServiceMetrics.methods.dropLast()  // "OTHER" is what any other method counts as
        for (methodIndex, method) in methods.enumerated() {
            for (statusIndex, status) in ServiceMetrics.statuses.enumerated() {
                for _ in 0...(methodIndex * 100 + statusIndex) { metrics.record(exchange(method, status), template: .inset) }
            }
        }
        metrics.record(exchange("PATCH", 299), template: .unmatched)
        let text = metrics.render(sessions: 0, watchers: 0, statistics: ChromeStatistics())
        for (methodIndex, method) in methods.enumerated() {
            for (statusIndex, status) in ServiceMetrics.statuses.enumerated() {
                let line = #"topchrome_http_requests_total{method="\#(method)",route="/v1/sessions/{id}/inset",status="\#(status)"} "#
                #expect(text.contains(line + "\(methodIndex * 100 + statusIndex + 1)\n"), "\(method) \(status)")
            }
        }
        #expect(text.contains(#"topchrome_http_requests_total{method="OTHER",route="unmatched",status="other"} 1"#))
    }

    @Test func durationsFallInTheirBuckets() {
        let metrics = ServiceMetrics()
        metrics.record(exchange("GET", 200, milliseconds: 1), template: .health)
        metrics.record(exchange("GET", 200, milliseconds: 40), template: .health)
        metrics.record(exchange("GET", 200, milliseconds: 120_000), template: .health)
        let text = metrics.render(sessions: 0, watchers: 0, statistics: ChromeStatistics())
        #expect(text.contains(#"topchrome_http_request_duration_seconds_bucket{route="/healthz",le="0.0005"} 0"#))
        #expect(text.contains(#"topchrome_http_request_duration_seconds_bucket{route="/healthz",le="0.001"} 1"#))
        #expect(text.contains(#"topchrome_http_request_duration_seconds_bucket{route="/healthz",le="0.05"} 2"#))
        #expect(text.contains(#"topchrome_http_request_duration_seconds_bucket{route="/healthz",le="60.0"} 2"#))
        #expect(text.contains(#"topchrome_http_request_duration_seconds_bucket{route="/healthz",le="+Inf"} 3"#))
        #expect(text.contains(#"topchrome_http_request_duration_seconds_sum{route="/healthz"} 120.041"#))
        #expect(text.contains(#"topchrome_http_request_duration_seconds_count{route="/healthz"} 3"#))
    }
}
