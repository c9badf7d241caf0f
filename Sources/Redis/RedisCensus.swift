/// How many connections are up to each node and how many commands wait for
/// a reply on them, read when `/metrics` is asked (not counted per call):
/// what go-redis's pool stats and Lettuce's command latency give.
public struct RedisCensus: Sendable, Equatable {
    /// Connections up (setup answered), by node: commands' lanes, their
    /// follow-up connections and a subscriber's.
    public var connections: [RedisNode: Int] = [:]
    /// Commands sent and not yet answered.
    public var commandsInFlight = 0

    public init() {}

    mutating func count(_ connection: RedisConnection) {
        let up = connection.isConnected
        connections[connection.node, default: 0] += up ? 1 : 0
        commandsInFlight += connection.commandsInFlight
    }
}

extension RedisClient {
    /// The census of this client's command connections.
    public func census() -> RedisCensus {
        let all = lock.withLock { connections.values.flatMap { $0 } + Array(followUpConnections.values) }
        var census = RedisCensus()
        for connection in all { census.count(connection) }
        return census
    }
}

extension RedisSubscriber {
    /// Adds this subscriber's connections to `census`.
    public func count(into census: inout RedisCensus) {
        for connection in subscribedConnections { census.count(connection) }
    }
}
