import Redis
import RedisSessionStore
import SessionWatching
import TopChromeAPI
import TopChromeCore

/// Sessions in Redis (`--store redis://…`): one client for the function
/// calls, pipelined per node, and one subscriber for the sessions'
/// channels on the same client, both finding their nodes from the
/// endpoints; the logs and `/metrics` of what Redis does.
public final class RedisBackend: Sendable {
    public let store: RedisSessionStore
    let endpoints: RedisEndpoints
    /// The client's configuration without the hooks, for the start's checks.
    private let client: RedisConfiguration
    private let configuration: ServiceConfiguration
    /// Redis's error replies by code, whose episodes a chore ends.
    private let errorReplies: RedisErrorReplies
    private let storeMetrics: RedisStoreMetrics
    let logger: Logger

    init(_ endpoints: RedisEndpoints, _ configuration: ServiceConfiguration, rules: ChromeRules, idleTimeout: Duration?,
         subscriptions: SessionSubscriptions, logger: Logger) {
        self.endpoints = endpoints
        self.configuration = configuration
        self.logger = logger
        client = configuration.redis.client
        errorReplies = RedisErrorReplies(logger: logger)
        let topology = RedisTopologyLog(logger: logger)
        storeMetrics = RedisStoreMetrics(errorReplies: errorReplies, topology: topology)
        var redis = client
        redis.metrics = storeMetrics.hooks
        redis.connectionEvents = RedisConnectionLog.lines(to: logger)
        redis.topologyChanged = { topology.record($0) }
        // The library is loaded where a call finds it missing (or once by
        // the operator, `topchrome redis-functions load`), not on connecting.
        let client = Self.client(for: endpoints, redis)
        let timeout = configuration.redis.commandTimeout
        let acknowledgement = configuration.redis.waitReplicas > 0
            ? ReplicaAcknowledgement(replicas: configuration.redis.waitReplicas, timeout: timeout) : nil
        let functions = ChromeFunctions(client: client, keyPrefix: configuration.redis.keyPrefix, rules: rules,
                                        idleTimeout: idleTimeout, replicaAcknowledgement: acknowledgement)
        let store = RedisSessionStore(functions: functions, subscriber: RedisSubscriber(client: client),
                                      subscriptions: subscriptions, timeout: timeout)
        self.store = store
        storeMetrics.countChannels { store.channelsHeld }
        storeMetrics.countUnservedSlots { store.unservedSlots }
        storeMetrics.takeCensus { store.census }
    }

    var metrics: [any MetricsFamilies] { [storeMetrics] }

    /// The client for a Redis store: on its seeds, or on the primary its sentinels name.
    static func client(for endpoints: RedisEndpoints, _ configuration: RedisConfiguration) -> RedisClient {
        switch endpoints.nodes {
        case let .sentinels(sentinels, masterName):
            RedisClient(sentinels: sentinels, masterName: masterName, configuration: configuration)
        case let .seeds(seeds):
            RedisClient(seeds: seeds, configuration: configuration)
        }
    }

    /// Checks the user's permissions (refusing to start without them) and
    /// the replicas' requirement, then starts the periodic work.
    func start(chores: Chores) throws(StartupError) {
        let nodes = nodesToAsk()
        try checkPermissions(of: nodes)
        checkReplicaRequirement(of: nodes)
        // Watched sessions are kept from expiring here, four times per
        // idle timeout; watchers of sessions Redis dropped all the same
        // learn of it, and channels that came back while Redis could not
        // be read are read again.
        let interval = min(store.functions.idleTimeout.map { $0 / 4 } ?? .seconds(5), .seconds(5))
        chores.every(interval) { [store] in store.keepWatchedSessionsAlive() }
        // A kind of error reply that stopped is told within seconds;
        // refusals that fail every change make the store not ready
        // until a check finds changes can succeed again.
        chores.every(.seconds(2)) { [errorReplies, store] in
            errorReplies.sweep()
            if errorReplies.takeRefusalSeen() || store.writesRefused != nil { store.checkWrites() }
        }
    }

    func stop() {
        store.close()
    }

    /// The nodes a start check asks about: the seeds given (each may be or
    /// become a primary), or the primary Sentinel names (none when no
    /// sentinel answers).
    private func nodesToAsk() -> [RedisNode] {
        switch endpoints.nodes {
        case let .seeds(seeds): seeds
        case let .sentinels(sentinels, masterName):
            RedisPrimaries.primary(named: masterName, sentinels: sentinels, for: client).primary.map { [$0] } ?? []
        }
    }

    /// Refuses to start as a Redis user that may not run a command the
    /// store sends, where Redis says so; a Redis away (the service starts
    /// anyway, answering 503 until it answers) or one that will not say is
    /// logged and let be.
    private func checkPermissions(of nodes: [RedisNode]) throws(StartupError) {
        var reason = "no Redis node answered"
        for node in nodes {
            switch RedisPermissionCheck.check(node, configuration) {
            case .allowed: return
            case let .missing(grants):
                throw .redisPermissions(RedisPermissionCheck.lacking(grants, user: configuration.redis.username, node: node))
            case let .unknown(why): reason = why
            }
        }
        logger.log(.info, "Redis permissions not checked", ["reason": .string(reason)])
    }

    /// Warns of each node that would acknowledge writes with no replica.
    private func checkReplicaRequirement(of nodes: [RedisNode]) {
        for node in nodes {
            switch ReplicaRequirementCheck.check(node, client) {
            case .required:
                continue
            case .notRequired:
                logger.log(.warn, "Redis accepts writes with no replica (min-replicas-to-write 0): a failover can drop acknowledged writes",
                           ["node": .string(node.description)])
            case let .unknown(reason):
                logger.log(.info, "Redis min-replicas-to-write could not be checked", ["node": .string(node.description), "reason": .string(reason)])
            }
        }
    }
}
