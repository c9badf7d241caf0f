import Redis
import RedisSessionStore
import SessionWatching
import TopChromeCore

/// How a Redis store is put together from the service's configuration:
/// one client for the function calls, pipelined per node, and one for the
/// sessions' channels, both finding their nodes from the same seeds (or
/// the same sentinels).
struct RedisStoreSetup {
    let configuration: ServiceConfiguration
    let metrics: RedisMetrics
    /// Where connections that start or stop serving are told of (the log).
    let connectionEvents: @Sendable (RedisConnectionEvent) -> Void
    /// Where failovers are told of (the log, and their counts).
    let topologyChanged: @Sendable (RedisTopologyChange) -> Void

    func store(rules: ChromeRules, idleTimeout: Duration?, subscriptions: SessionSubscriptions) -> RedisSessionStore {
        var redis = configuration.redisClient
        redis.metrics = metrics
        redis.connectionEvents = connectionEvents
        redis.topologyChanged = topologyChanged
        // The library is loaded where a call finds it missing (or once by
        // the operator, `topchrome redis-functions load`), not on connecting.
        let client = Self.client(for: configuration.store, redis)
        let acknowledgement = configuration.redisWaitReplicas > 0
            ? ReplicaAcknowledgement(replicas: configuration.redisWaitReplicas, timeout: redis.commandTimeout) : nil
        let functions = ChromeFunctions(client: client, keyPrefix: configuration.redisKeyPrefix, rules: rules,
                                        idleTimeout: idleTimeout, replicaAcknowledgement: acknowledgement)
        let subscriber = RedisSubscriber(client: client)
        return RedisSessionStore(functions: functions, subscriber: subscriber, subscriptions: subscriptions,
                                 timeout: redis.commandTimeout)
    }

    /// The client for a Redis store: on its seeds, or on the primary its sentinels name.
    static func client(for storage: SessionStorage, _ configuration: RedisConfiguration) -> RedisClient {
        switch storage {
        case let .redisSentinel(sentinels, masterName):
            RedisClient(sentinels: sentinels, masterName: masterName, configuration: configuration)
        case let .redis(seeds):
            RedisClient(seeds: seeds, configuration: configuration)
        case .memory:
            preconditionFailure("a Redis client for the memory store")
        }
    }
}

extension TopChromeService {
    /// The nodes a start check asks about the Redis store: the seeds given
    /// (each may be or become a primary), or the primary Sentinel names
    /// (none when no sentinel answers); nil for the memory store.
    func redisNodesToAsk() -> [RedisNode]? {
        switch configuration.store {
        case .memory: nil
        case let .redis(seeds): seeds
        case let .redisSentinel(sentinels, masterName):
            FunctionLibraryLoad.primary(named: masterName, sentinels: sentinels, for: configuration.redisClient).primary.map { [$0] } ?? []
        }
    }
}
