#if canImport(Glibc)
import Glibc
#endif
import BuildInfo
import Locking
import MicroHTTPD
import RuleStatistics
import Synchronization
import TopChromeCore

/// Request counts and durations by method, route template and status — never
/// by session id, which would be an unbounded label and a leaked secret.
/// One fixed table of striped atomic counters: recording a request takes no
/// lock, allocates nothing, and two threads do not contend for a cache line.
public final class ServiceMetrics: Sendable {
    static let methods = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "OTHER"]
    static let statuses = [200, 201, 204, 304, 400, 401, 403, 404, 405, 412, 413, 415, 431, 500, 503, 429]
    /// Upper bounds in seconds: from a tenth of a millisecond (a plain
    /// request) to a minute (the longest long-poll).
    static let buckets: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                    0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    /// `buckets` in nanoseconds, compared as integers on every request.
    private static let bucketNanoseconds = buckets.map { Int(($0 * 1e9).rounded()) }

    /// Request counts first, then per route its histogram: a count per bucket
    /// (the last is +Inf) and the sum of durations in nanoseconds.
    private let counters: StripedCounters

    private static let routeCount = Route.Template.allCases.count
    private static let requestCells = routeCount * methods.count * (statuses.count + 1)
    private static let histogramCells = buckets.count + 2

    public init() {
        counters = StripedCounters(count: Self.requestCells + Self.routeCount * Self.histogramCells)
    }

    /// The request counter for a route, method and status (indexes; the
    /// status index one past `statuses` is "other").
    private static func cell(route: Int, method: Int, status: Int) -> Int {
        (route * methods.count + method) * (statuses.count + 1) + status
    }

    /// A route's histogram bucket (`buckets.count` is +Inf).
    private static func bucketCell(route: Int, bucket: Int) -> Int {
        requestCells + route * histogramCells + bucket
    }

    private static func sumCell(route: Int) -> Int {
        requestCells + route * histogramCells + buckets.count + 1
    }

    public func record(_ exchange: HTTPExchange, template: Route.Template) {
        let route = template.rawValue
        counters.add(1, at: Self.cell(route: route, method: Self.methodIndex(exchange.method),
                                      status: Self.statusIndex(exchange.status)))
        guard !exchange.isStream else { return }  // a stream's length says nothing of the server's speed
        let nanoseconds = Self.nanoseconds(exchange.duration)
        var bucket = 0
        for bound in Self.bucketNanoseconds {
            guard nanoseconds > bound else { break }
            bucket += 1
        }
        counters.add(1, at: Self.bucketCell(route: route, bucket: bucket))
        counters.add(nanoseconds, at: Self.sumCell(route: route))
    }

    /// A request's duration fits in 64 bits of attoseconds (up to 9 s),
    /// where dividing is one instruction; `components` divides 128 bits.
    private static func nanoseconds(_ duration: Duration) -> Int {
        if let short = Int64(exactly: duration.attoseconds) { return Int(short / 1_000_000_000) }
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    }

    private static func methodIndex(_ method: String) -> Int {
        switch method {
        case "GET": 0
        case "HEAD": 1
        case "POST": 2
        case "PUT": 3
        case "DELETE": 4
        case "OPTIONS": 5  // CORS preflights
        default: 6
        }
    }

    private static func statusIndex(_ status: Int) -> Int {
        switch status {
        case 200: 0
        case 201: 1
        case 204: 2
        case 304: 3
        case 400: 4
        case 401: 5
        case 403: 6
        case 404: 7
        case 405: 8
        case 412: 9
        case 413: 10
        case 415: 11
        case 431: 12
        case 500: 13
        case 503: 14
        case 429: 15
        default: statuses.count
        }
    }

    /// The Prometheus text exposition (format 0.0.4).
    /// - Parameter sessions: nil when the store is shared with other
    ///   replicas: counting it would cost a scan of Redis.
    /// - Parameter storeUp: whether the session store can serve now; an
    ///   alert on it tells "Redis is away" from "this replica is slow".
    func render(sessions: Int?, storeUp: Bool, watchers: Int, statistics: ChromeStatistics) -> String {
        var text = MetricsText()
        text.family("topchrome_http_requests_total", .counter, help: "HTTP requests answered, by method, route template and status.")
        for (routeIndex, route) in Route.Template.allCases.enumerated() {
            for (methodIndex, method) in Self.methods.enumerated() {
                for statusIndex in 0...Self.statuses.count {
                    let count = counters.value(at: Self.cell(route: routeIndex, method: methodIndex, status: statusIndex))
                    guard count > 0 else { continue }
                    let status = statusIndex < Self.statuses.count ? String(Self.statuses[statusIndex]) : "other"
                    text.sample("topchrome_http_requests_total", ["method": "\(method)", "route": "\(route.name)", "status": status], count)
                }
            }
        }
        text.family("topchrome_http_request_duration_seconds", .histogram,
               help: "Time from a request's arrival to its response (long-polls include their wait; streams are not counted).")
        for (routeIndex, route) in Route.Template.allCases.enumerated() {
            let counts = (0...Self.buckets.count).map { counters.value(at: Self.bucketCell(route: routeIndex, bucket: $0)) }
            let total = counts.reduce(0, +)
            guard total > 0 else { continue }
            var cumulative = 0
            for (index, bound) in Self.buckets.enumerated() {
                cumulative += counts[index]
                text.sample("topchrome_http_request_duration_seconds_bucket", ["route": "\(route.name)", "le": "\(bound)"], cumulative)
            }
            text.sample("topchrome_http_request_duration_seconds_bucket", ["route": "\(route.name)", "le": "+Inf"], total)
            let sum = Double(counters.value(at: Self.sumCell(route: routeIndex))) / 1e9
            text.sample("topchrome_http_request_duration_seconds_sum", ["route": "\(route.name)"], sum)
            text.sample("topchrome_http_request_duration_seconds_count", ["route": "\(route.name)"], total)
        }
        if let sessions {
            text.family("topchrome_sessions", .gauge, help: "Sessions held now.")
            text.sample("topchrome_sessions", sessions)
        }
        text.family("topchrome_store_up", .gauge, help: "1 when the session store can serve requests, else 0.")
        text.sample("topchrome_store_up", storeUp ? 1 : 0)
        text.family("topchrome_watchers", .gauge, help: "Event streams and long-polls open now.")
        text.sample("topchrome_watchers", watchers)
        text.family("topchrome_reveal_flips_total", .counter, help: "Changes of isRevealed, either way (memory store only; 0 with Redis).")
        text.sample("topchrome_reveal_flips_total", statistics.revealFlips)
        text.family("topchrome_scroll_reports_total", .counter,
               help: "Scroll reports by outcome: applied, or ignored as horizontal or stale.")
        text.sample("topchrome_scroll_reports_total", ["outcome": "applied"], statistics.reportsApplied)
        text.sample("topchrome_scroll_reports_total", ["outcome": "horizontal"], statistics.reportsIgnoredHorizontal)
        text.sample("topchrome_scroll_reports_total", ["outcome": "stale"], statistics.reportsIgnoredStale)
        text.family("topchrome_build_info", .gauge, help: "Always 1; the labels say which build runs.")
        text.sample("topchrome_build_info", ["version": SessionAPI.version, "commit": BuildInfo.commitText], 1)
        return text.text + ProcessMetrics.render()
    }
}
