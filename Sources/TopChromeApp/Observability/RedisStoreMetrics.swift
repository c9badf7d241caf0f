import Locking
import Redis
import TopChromeAPI

/// `/metrics` families of the Redis store: how long Redis takes to answer,
/// what went wrong and how often, and how many channels this replica
/// listens to. An operator sees from them whether a slow API is Redis.
final class RedisStoreMetrics: MetricsFamilies, @unchecked Sendable {
    /// Upper bounds of the round-trip histogram, in seconds: a healthy
    /// Redis on the same network answers well under a millisecond.
    static let buckets: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]

    private static let errorKinds = ["timeout", "connection_lost", "unavailable", "try_again", "cluster_down", "too_many_redirects"]

    /// What the client's hooks count into. Apart from this object, which
    /// holds the store (for its channels): the store's client holds the
    /// hooks, and a hook holding this would make a cycle that never frees.
    private final class Counts: @unchecked Sendable {
        /// Counted on the connections' I/O threads, a few at a time: a lock is cheap enough.
        let lock = PthreadLock()
        // Guarded by `lock`.
        var buckets = [Int](repeating: 0, count: RedisStoreMetrics.buckets.count + 1)
        var roundTripNanoseconds = 0
        var errors = [Int](repeating: 0, count: RedisStoreMetrics.errorKinds.count)
        var reconnects = 0
        var redirects = 0

        func record(roundTrip: Duration) {
            let nanoseconds = Int(clamping: roundTrip.attoseconds / 1_000_000_000)
            let bucket = RedisStoreMetrics.buckets.firstIndex { Double(nanoseconds) / 1e9 <= $0 } ?? RedisStoreMetrics.buckets.count
            lock.withLock {
                buckets[bucket] += 1
                roundTripNanoseconds += nanoseconds
            }
        }
    }

    private let counts = Counts()
    /// Error replies by code; held apart from the store too (it holds a logger only).
    let errorReplies: RedisErrorReplies
    /// Failovers and switches by kind; held apart from the store too.
    let topology: RedisTopologyLog
    private let lock = PthreadLock()

    init(errorReplies: RedisErrorReplies, topology: RedisTopologyLog) {
        self.errorReplies = errorReplies
        self.topology = topology
    }

    /// Channels listened to now; set once the store exists, which needs these metrics first.
    private var channels: (@Sendable () -> Int)?
    /// Hash slots not served now; set with `channels`.
    private var unservedSlots: (@Sendable () -> Int)?

    func countChannels(with count: @escaping @Sendable () -> Int) {
        lock.withLock { channels = count }
    }

    /// A cluster missing a primary serves the rest: `/readyz` stays 200,
    /// and this gauge is where an operator sees the part that is not served.
    func countUnservedSlots(with count: @escaping @Sendable () -> Int) {
        lock.withLock { unservedSlots = count }
    }

    /// The client's hooks.
    var hooks: RedisMetrics {
        var hooks = RedisMetrics()
        let counts = counts
        hooks.roundTrip = { _, duration in counts.record(roundTrip: duration) }
        hooks.failed = { _, error in counts.lock.withLock { counts.errors[Self.index(of: error)] += 1 } }
        hooks.errorReply = { [errorReplies] node, message in errorReplies.record(node, message) }
        hooks.reconnected = { _ in counts.lock.withLock { counts.reconnects += 1 } }
        hooks.redirected = { _ in counts.lock.withLock { counts.redirects += 1 } }
        return hooks
    }

    private static func index(of error: RedisError) -> Int {
        switch error {
        case .timeout: 0
        case .connectionLost: 1
        case .unavailable: 2
        case .tryAgain: 3
        case .clusterDown: 4
        case .tooManyRedirects: 5
        }
    }

    func render() -> String {
        let (bucketCounts, roundTripNanoseconds, errors, reconnects, redirects) = counts.lock.withLock {
            (counts.buckets, counts.roundTripNanoseconds, counts.errors, counts.reconnects, counts.redirects)
        }
        let (channels, unservedSlots) = lock.withLock { (self.channels, self.unservedSlots) }
        var text = "# HELP topchrome_redis_round_trip_seconds Time from sending a command to Redis to reading its reply.\n"
        text += "# TYPE topchrome_redis_round_trip_seconds histogram\n"
        var cumulative = 0
        for (index, bound) in Self.buckets.enumerated() {
            cumulative += bucketCounts[index]
            text += "topchrome_redis_round_trip_seconds_bucket{le=\"\(bound)\"} \(cumulative)\n"
        }
        cumulative += bucketCounts[Self.buckets.count]
        text += "topchrome_redis_round_trip_seconds_bucket{le=\"+Inf\"} \(cumulative)\n"
        text += "topchrome_redis_round_trip_seconds_sum \(Double(roundTripNanoseconds) / 1e9)\n"
        text += "topchrome_redis_round_trip_seconds_count \(cumulative)\n"
        text += "# HELP topchrome_redis_errors_total Redis commands that failed: by kind when no reply came, by code (the error reply's first word) when Redis answered with an error.\n"
        text += "# TYPE topchrome_redis_errors_total counter\n"
        for (index, kind) in Self.errorKinds.enumerated() {
            text += "topchrome_redis_errors_total{kind=\"\(kind)\"} \(errors[index])\n"
        }
        for (code, count) in zip(RedisErrorReplies.codes, errorReplies.totals) {
            text += "topchrome_redis_errors_total{code=\"\(code)\"} \(count)\n"
        }
        text += "# HELP topchrome_redis_reconnects_total Connections to Redis that came back after being lost: to the same node, or, after a failover, to the node that took its slots.\n"
        text += "# TYPE topchrome_redis_reconnects_total counter\n"
        text += "topchrome_redis_reconnects_total \(reconnects)\n"
        text += "# HELP topchrome_redis_topology_changes_total Changes of which Redis node serves what: cluster slots moved to another primary, a new primary named by Sentinel, a lost primary back as a replica.\n"
        text += "# TYPE topchrome_redis_topology_changes_total counter\n"
        for (kind, count) in zip(RedisTopologyLog.kinds, topology.totals) {
            text += "topchrome_redis_topology_changes_total{kind=\"\(kind)\"} \(count)\n"
        }
        text += "# HELP topchrome_redis_redirects_total Commands a Redis Cluster redirected (MOVED or ASK).\n"
        text += "# TYPE topchrome_redis_redirects_total counter\n"
        text += "topchrome_redis_redirects_total \(redirects)\n"
        text += "# HELP topchrome_redis_subscriptions Session channels this replica listens to, one per watched session.\n"
        text += "# TYPE topchrome_redis_subscriptions gauge\n"
        text += "topchrome_redis_subscriptions \(channels?() ?? 0)\n"
        text += "# HELP topchrome_redis_slots_unserved Hash slots (of 16384) whose Redis primary is not connected: their sessions get 503.\n"
        text += "# TYPE topchrome_redis_slots_unserved gauge\n"
        text += "topchrome_redis_slots_unserved \(unservedSlots?() ?? 0)\n"
        return text
    }
}
