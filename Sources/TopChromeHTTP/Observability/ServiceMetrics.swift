import Foundation
import MicroHTTPD
import Synchronization
import TopChromeCore

/// Request counts and durations by method, route template and status — never
/// by session id, which would be an unbounded label and a leaked secret.
/// Fixed tables of atomic counters: recording a request takes no lock.
final class ServiceMetrics: Sendable {
    static let methods = ["GET", "HEAD", "POST", "PUT", "DELETE", "OTHER"]
    static let statuses = [200, 201, 204, 304, 400, 401, 404, 405, 412, 413, 415, 431, 500, 503]
    /// Upper bounds in seconds: from a tenth of a millisecond (a plain
    /// request) to a minute (the longest long-poll).
    static let buckets: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                    0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    private final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    private final class Histogram: Sendable {
        let buckets = (0...ServiceMetrics.buckets.count).map { _ in Counter() }  // the last is +Inf
        let sumNanoseconds = Counter()
    }

    let startedAt = Date()
    private let requests: [Counter]
    private let durations: [Histogram]

    init() {
        let cells = Route.Template.allCases.count * Self.methods.count * (Self.statuses.count + 1)
        requests = (0..<cells).map { _ in Counter() }
        durations = Route.Template.allCases.map { _ in Histogram() }
    }

    /// The request counter for a route, method and status (indexes; the
    /// status index one past `statuses` is "other").
    private static func cell(route: Int, method: Int, status: Int) -> Int {
        (route * methods.count + method) * (statuses.count + 1) + status
    }

    func record(_ exchange: HTTPExchange, template: Route.Template) {
        let method = Self.methods.firstIndex(of: exchange.method) ?? Self.methods.count - 1
        let status = Self.statuses.firstIndex(of: exchange.status) ?? Self.statuses.count
        let route = template.rawValue
        requests[Self.cell(route: route, method: method, status: status)].value.add(1, ordering: .relaxed)
        guard !exchange.isStream else { return }  // a stream's length says nothing of the server's speed
        let seconds = Double(exchange.duration.components.seconds) + Double(exchange.duration.components.attoseconds) / 1e18
        let histogram = durations[route]
        let bucket = Self.buckets.firstIndex { seconds <= $0 } ?? Self.buckets.count
        histogram.buckets[bucket].value.add(1, ordering: .relaxed)
        histogram.sumNanoseconds.value.add(Int(seconds * 1e9), ordering: .relaxed)
    }

    /// The Prometheus text exposition (format 0.0.4).
    func render(sessions: Int, watchers: Int, statistics: ChromeStatistics) -> String {
        var text = ""
        func family(_ name: String, _ type: String, _ help: String) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        family("topchrome_http_requests_total", "counter", "HTTP requests answered, by method, route template and status.")
        for (routeIndex, route) in Route.Template.allCases.enumerated() {
            for (methodIndex, method) in Self.methods.enumerated() {
                for statusIndex in 0...Self.statuses.count {
                    let count = requests[Self.cell(route: routeIndex, method: methodIndex, status: statusIndex)]
                        .value.load(ordering: .relaxed)
                    guard count > 0 else { continue }
                    let status = statusIndex < Self.statuses.count ? String(Self.statuses[statusIndex]) : "other"
                    text += "topchrome_http_requests_total{method=\"\(method)\",route=\"\(route.name)\",status=\"\(status)\"} \(count)\n"
                }
            }
        }
        family("topchrome_http_request_duration_seconds", "histogram",
               "Time from a request's arrival to its response (long-polls include their wait; streams are not counted).")
        for (routeIndex, route) in Route.Template.allCases.enumerated() {
            let histogram = durations[routeIndex]
            let counts = histogram.buckets.map { $0.value.load(ordering: .relaxed) }
            let total = counts.reduce(0, +)
            guard total > 0 else { continue }
            var cumulative = 0
            for (index, bound) in Self.buckets.enumerated() {
                cumulative += counts[index]
                text += "topchrome_http_request_duration_seconds_bucket{route=\"\(route.name)\",le=\"\(bound)\"} \(cumulative)\n"
            }
            text += "topchrome_http_request_duration_seconds_bucket{route=\"\(route.name)\",le=\"+Inf\"} \(total)\n"
            let sum = Double(histogram.sumNanoseconds.value.load(ordering: .relaxed)) / 1e9
            text += "topchrome_http_request_duration_seconds_sum{route=\"\(route.name)\"} \(sum)\n"
            text += "topchrome_http_request_duration_seconds_count{route=\"\(route.name)\"} \(total)\n"
        }
        family("topchrome_sessions", "gauge", "Sessions held now.")
        text += "topchrome_sessions \(sessions)\n"
        family("topchrome_watchers", "gauge", "Event streams and long-polls open now.")
        text += "topchrome_watchers \(watchers)\n"
        family("topchrome_reveal_flips_total", "counter", "Changes of isRevealed, either way.")
        text += "topchrome_reveal_flips_total \(statistics.revealFlips)\n"
        family("topchrome_scroll_reports_total", "counter",
               "Scroll reports by outcome: applied, or ignored as horizontal or stale.")
        text += "topchrome_scroll_reports_total{outcome=\"applied\"} \(statistics.reportsApplied)\n"
        text += "topchrome_scroll_reports_total{outcome=\"horizontal\"} \(statistics.reportsIgnoredHorizontal)\n"
        text += "topchrome_scroll_reports_total{outcome=\"stale\"} \(statistics.reportsIgnoredStale)\n"
        family("topchrome_build_info", "gauge", "Always 1; the labels say which build runs.")
        text += "topchrome_build_info{version=\"\(TopChromeService.version)\"} 1\n"
        family("process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch, in seconds.")
        text += "process_start_time_seconds \(startedAt.timeIntervalSince1970)\n"
        if let resident = Self.residentBytes() {
            family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.")
            text += "process_resident_memory_bytes \(resident)\n"
        }
        return text
    }

    private static func residentBytes() -> Int? {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
