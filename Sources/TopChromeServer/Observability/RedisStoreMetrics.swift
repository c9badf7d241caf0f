import Locking
import Redis
import TopChromeAPI

/// `/metrics` families of the Redis store: how long Redis takes to answer,
/// what went wrong and how often, and how many channels this replica
/// listens to. An operator sees from them whether a slow API is Redis.
final class RedisStoreMetrics: MetricsFamilies, @unchecked Sendable {
    private static let errorKinds = ["timeout", "connection_lost", "unavailable", "try_again", "cluster_down", "too_many_redirects"]

    /// What the client's hooks count into. Apart from this object, which
    /// holds the store (for its channels): the store's client holds the
    /// hooks, and a hook holding this would make a cycle that never frees.
    private final class Counts: @unchecked Sendable {
        /// Counted on the connections' I/O threads, on failures only: a lock is cheap enough.
        let lock = PthreadLock()
        // Guarded by `lock`.
        var errors = [Int](repeating: 0, count: RedisStoreMetrics.errorKinds.count)
        var reconnects = 0
        var redirects = 0
    }

    private let counts = Counts()
    private let roundTrips = RedisRoundTrips()
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
    /// Connections per node and commands in flight; set with `channels`.
    private var census: (@Sendable () -> RedisCensus)?

    func countChannels(with count: @escaping @Sendable () -> Int) {
        lock.withLock { channels = count }
    }

    func takeCensus(with census: @escaping @Sendable () -> RedisCensus) {
        lock.withLock { self.census = census }
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
        let roundTrips = roundTrips
        hooks.series = { node in roundTrips.series(for: node) }
        hooks.roundTrip = { series, kind, duration in roundTrips.record(series: series, kind, duration) }
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
        let (errors, reconnects, redirects) = counts.lock.withLock { (counts.errors, counts.reconnects, counts.redirects) }
        let (channels, unservedSlots, census) = lock.withLock { (self.channels, self.unservedSlots, self.census) }
        var text = MetricsText()
        let now = census?() ?? RedisCensus()
        text.family("topchrome_redis_connections", .gauge,
                    help: "Connections to Redis that are up, by node: commands', changes' followed by WAIT, and watchers' channels.")
        for (node, count) in now.connections.sorted(by: { $0.key.description < $1.key.description }) {
            text.sample("topchrome_redis_connections", ["node": node.description], count)
        }
        text.family("topchrome_redis_commands_in_flight", .gauge, help: "Commands sent to Redis and not yet answered.")
        text.sample("topchrome_redis_commands_in_flight", now.commandsInFlight)
        text.family("topchrome_redis_errors_total", .counter,
                    help: "Redis commands that failed: by kind when no reply came, by code (the error reply's first word) when Redis answered with an error.")
        for (index, kind) in Self.errorKinds.enumerated() {
            text.sample("topchrome_redis_errors_total", ["kind": kind], errors[index])
        }
        for (code, count) in zip(RedisErrorReplies.codes, errorReplies.totals) {
            text.sample("topchrome_redis_errors_total", ["code": code], count)
        }
        text.family("topchrome_redis_reconnects_total", .counter,
                    help: "Connections to Redis that came back after being lost: to the same node, or, after a failover, to the node that took its slots.")
        text.sample("topchrome_redis_reconnects_total", reconnects)
        text.family("topchrome_redis_topology_changes_total", .counter,
                    help: "Changes of which Redis node serves what: cluster slots moved to another primary, a new primary named by Sentinel, a lost primary back as a replica.")
        for (kind, count) in zip(RedisTopologyLog.kinds, topology.totals) {
            text.sample("topchrome_redis_topology_changes_total", ["kind": kind], count)
        }
        text.family("topchrome_redis_redirects_total", .counter, help: "Commands a Redis Cluster redirected (MOVED or ASK).")
        text.sample("topchrome_redis_redirects_total", redirects)
        text.family("topchrome_redis_subscriptions", .gauge, help: "Session channels this replica listens to, one per watched session.")
        text.sample("topchrome_redis_subscriptions", channels?() ?? 0)
        text.family("topchrome_redis_slots_unserved", .gauge,
                    help: "Hash slots (of 16384) whose Redis primary is not connected: their sessions get 503.")
        text.sample("topchrome_redis_slots_unserved", unservedSlots?() ?? 0)
        return roundTrips.render() + text.text
    }
}
