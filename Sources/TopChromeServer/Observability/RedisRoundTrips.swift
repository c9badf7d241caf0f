import Locking
import Redis
import TopChromeAPI

/// Round trips to Redis by node and command kind, as go-redis and Lettuce
/// time them: one slow primary, or `WAIT` holding changes, shows apart from
/// the rest. Counted on the connections' I/O threads for every reply of the
/// scroll path: into striped counters (no lock, nothing allocated), at a
/// series the connection got once for its node.
final class RedisRoundTrips: @unchecked Sendable {
    /// Upper bounds of the histogram, in seconds: a healthy Redis on the
    /// same network answers well under a millisecond.
    static let buckets: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]
    private static let bucketNanoseconds = buckets.map { Int(($0 * 1e9).rounded()) }
    /// Nodes with a series of their own; later ones share `node="other"`,
    /// so that a cluster whose nodes change address cannot grow the page
    /// without bound.
    static let nodeLimit = 16
    private static let kinds = RedisCommandKind.allCases.count
    /// Per node and kind: the buckets, +Inf, then the sum in nanoseconds.
    private static let perSeries = buckets.count + 2

    private let counters = StripedCounters(count: (RedisRoundTrips.nodeLimit + 1) * kinds * perSeries)
    private let lock = PthreadLock()
    // Guarded by `lock`.
    private var nodes: [RedisNode] = []

    /// The series of `node`: asked once per connection.
    func series(for node: RedisNode) -> Int {
        lock.withLock {
            if let known = nodes.firstIndex(of: node) { return known }
            guard nodes.count < Self.nodeLimit else { return Self.nodeLimit }
            nodes.append(node)
            return nodes.count - 1
        }
    }

    func record(series: Int, _ kind: RedisCommandKind, _ duration: Duration) {
        let nanoseconds = Int(clamping: duration.attoseconds / 1_000_000_000)
        var bucket = 0
        while bucket < Self.bucketNanoseconds.count, nanoseconds > Self.bucketNanoseconds[bucket] { bucket += 1 }
        let base = (min(series, Self.nodeLimit) * Self.kinds + kind.rawValue) * Self.perSeries
        counters.add(1, at: base + bucket)
        counters.add(nanoseconds, at: base + Self.perSeries - 1)
    }

    /// The histogram's series that counted something.
    func render() -> String {
        let names = lock.withLock { nodes.map(\.description) }
        var text = MetricsText()
        text.family("topchrome_redis_round_trip_seconds", .histogram,
                    help: "Time from sending a command to Redis to reading its reply, by node and command.")
        for series in 0...Self.nodeLimit {
            let node = series < names.count ? names[series] : series == Self.nodeLimit ? "other" : nil
            guard let node else { continue }
            for kind in RedisCommandKind.allCases {
                let base = (series * Self.kinds + kind.rawValue) * Self.perSeries
                let counts = (0...Self.buckets.count).map { counters.value(at: base + $0) }
                let total = counts.reduce(0, +)
                guard total > 0 else { continue }
                let command = "\(kind.label)"
                var cumulative = 0
                for (index, bound) in Self.buckets.enumerated() {
                    cumulative += counts[index]
                    text.sample("topchrome_redis_round_trip_seconds_bucket", ["node": node, "command": command, "le": "\(bound)"], cumulative)
                }
                text.sample("topchrome_redis_round_trip_seconds_bucket", ["node": node, "command": command, "le": "+Inf"], total)
                text.sample("topchrome_redis_round_trip_seconds_sum", ["node": node, "command": command],
                            Double(counters.value(at: base + Self.perSeries - 1)) / 1e9)
                text.sample("topchrome_redis_round_trip_seconds_count", ["node": node, "command": command], total)
            }
        }
        return text.text
    }
}
