#if canImport(Glibc)
import Glibc
#endif
import MicroHTTPD
import RuleStatistics
import Testing
@testable import TopChromeAPI
@testable import TopChromeCore

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
        let text = metrics.render(sessions: 0, storeUp: true, watchers: 0, statistics: ChromeStatistics())
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
        let text = metrics.render(sessions: 0, storeUp: true, watchers: 0, statistics: ChromeStatistics())
        #expect(text.contains(#"topchrome_http_request_duration_seconds_bucket{route="/healthz",le="0.0005"} 0"#))
        #expect(text.contains(#"topchrome_http_request_duration_seconds_bucket{route="/healthz",le="0.001"} 1"#))
        #expect(text.contains(#"topchrome_http_request_duration_seconds_bucket{route="/healthz",le="0.05"} 2"#))
        #expect(text.contains(#"topchrome_http_request_duration_seconds_bucket{route="/healthz",le="60.0"} 2"#))
        #expect(text.contains(#"topchrome_http_request_duration_seconds_bucket{route="/healthz",le="+Inf"} 3"#))
        #expect(text.contains(#"topchrome_http_request_duration_seconds_sum{route="/healthz"} 120.041"#))
        #expect(text.contains(#"topchrome_http_request_duration_seconds_count{route="/healthz"} 3"#))
    }

    /// The value of an unlabelled series, and its family's TYPE line.
    func sample(_ name: String, in text: String) -> (type: String?, value: Double?) {
        let lines = text.split(separator: "\n")
        let type = lines.first { $0.hasPrefix("# TYPE \(name) ") }.map { String($0.split(separator: " ").last ?? "") }
        let value = lines.first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
        return (type, value)
    }

    /// The families every Prometheus client exports, under their standard
    /// names and types, with values this process can have.
    @Test func processFamiliesHaveTheirStandardNamesAndTypes() {
        let text = ServiceMetrics().render(sessions: nil, storeUp: true, watchers: 0, statistics: ChromeStatistics())
        let cpu = sample("process_cpu_seconds_total", in: text)
        #expect(cpu.type == "counter")
        #expect((cpu.value ?? 0) > 0, "a test process has used some CPU")
        let resident = sample("process_resident_memory_bytes", in: text)
        #expect(resident.type == "gauge")
        #expect((resident.value ?? 0) > 1_000_000)
        let descriptors = sample("process_open_fds", in: text)
        #expect(descriptors.type == "gauge")
        #expect((descriptors.value ?? 0) >= 3, "at least stdin, stdout and stderr")
        let start = sample("process_start_time_seconds", in: text)
        #expect(start.type == "gauge")
        // The process's start, not the metrics object's: before this test ran.
        let now = Double(time(nil))
        #expect((start.value ?? 0) > 1_700_000_000 && (start.value ?? .infinity) <= now + 1)
    }

    @Test func storeUpSaysWhetherTheStoreCanServe() {
        let metrics = ServiceMetrics()
        let up = metrics.render(sessions: nil, storeUp: true, watchers: 0, statistics: ChromeStatistics())
        let down = metrics.render(sessions: nil, storeUp: false, watchers: 0, statistics: ChromeStatistics())
        #expect(sample("topchrome_store_up", in: up).type == "gauge")
        #expect(sample("topchrome_store_up", in: up).value == 1)
        #expect(sample("topchrome_store_up", in: down).value == 0)
    }
}
