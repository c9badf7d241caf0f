import Locking

/// A client for a single Redis or a Redis Cluster, found from seed nodes.
///
/// The first seed that answers `INFO cluster` says which: with
/// `cluster_enabled:1` commands go to the primary serving their key's slot
/// (map from `CLUSTER SLOTS`, refreshed on `MOVED`, on failures and every
/// `slotMapRefreshInterval`, never to an older view);
/// otherwise everything goes to that seed. Until the map is known, and for
/// commands without a key, commands go to that seed (the first one until
/// one answers) and follow its redirections. `TRYAGAIN`, `CLUSTERDOWN` and
/// `LOADING` are waited out within the command's deadline, then come back
/// as `RedisError`s (`LOADING` as a value); other error replies as values.
/// A read whose connection drops under it is sent once more.
///
/// Or, with `init(sentinels:masterName:configuration:)`, a primary that Redis
/// Sentinel names (see `SentinelResolver`): asked for at start, followed on
/// `+switch-master`, and asked for again on `READONLY` (the primary was
/// demoted; the command goes again to the new one within its deadline) and
/// on a lost connection.
public final class RedisClient: @unchecked Sendable {
    public enum Topology: Sendable, Equatable {
        case unknown, single, cluster
    }

    let seeds: [RedisNode]
    let configuration: RedisConfiguration
    /// For the connections of commands with a follow-up and a node's lanes
    /// after the first: they tell nobody of outages and reconnections,
    /// which the first lane to the same node already reports.
    private let followUpConfiguration: RedisConfiguration
    /// Set when the primary is found through Sentinel; `seeds` are then the sentinels.
    let sentinel: SentinelResolver?
    let lock = PthreadLock()
    /// The nodes' clocks, for deadlines passed into Redis (RedisClock.swift).
    let clocks = NodeClocks()
    /// `ASK`s seen per slot, for callers that must know a command ran on an importing node (RedisMigrations.swift).
    let askedSlots = AskedSlots()

    // Guarded by `lock`.
    /// Each node's `connectionsPerNode` connections, its lanes (see
    /// `connectionLocked(to:slot:forFollowUps:)`); the first reports the node's outages.
    var connections: [RedisNode: [RedisConnection]] = [:]
    /// A second connection per node, for commands with a follow-up (a change
    /// and its `WAIT`): `WAIT` holds the connection it runs on until enough
    /// replicas answer or it times out, which on the shared connection would
    /// hold up every read of the node, for the whole timeout while a replica
    /// is down.
    var followUpConnections: [RedisNode: RedisConnection] = [:]
    var currentTopology = Topology.unknown
    /// The seed that answered discovery.
    var home: RedisNode
    var slots: SlotMap?
    var discovering = false
    var refreshing = false
    /// Whether the slot map's timer runs (RedisClient+Topology.swift).
    var refreshesPeriodically = false
    /// Run when the refresh in flight ends.
    var afterRefresh: [@Sendable () -> Void] = []
    /// Told when Sentinel names another primary (a subscriber moving its
    /// channels); removed by their owners' `close()`.
    var primaryWatchers: [ObjectIdentifier: @Sendable () -> Void] = [:]
    /// A node to ask first in one more refresh, after the one in flight.
    var askNext: RedisNode?
    var closed = false
    /// Rounds of discovery in which no seed answered, since one last did.
    var failedDiscoveries = 0
    /// Nodes that left the slot map while lost (a failover): told when the
    /// cluster reports them back as replicas (RedisClient+Topology.swift).
    var departedWhileAway: Set<RedisNode> = []

    public convenience init(seeds: [RedisNode], configuration: RedisConfiguration = RedisConfiguration()) {
        self.init(seeds: seeds, sentinel: nil, configuration: configuration)
    }

    /// A client of the primary that the sentinels name for `masterName`;
    /// commands get `.unavailable` until one has named it.
    public convenience init(sentinels: [RedisNode], masterName: String, configuration: RedisConfiguration = RedisConfiguration()) {
        let resolver = SentinelResolver(sentinels: sentinels, masterName: masterName, asking: .sentinels(of: configuration))
        self.init(seeds: sentinels, sentinel: resolver, configuration: configuration)
        resolver.listen { [self] primary in adopt(primary) }
    }

    private init(seeds: [RedisNode], sentinel: SentinelResolver?, configuration: RedisConfiguration) {
        precondition(!seeds.isEmpty, "a Redis client needs at least one seed node")
        self.seeds = seeds
        self.sentinel = sentinel
        self.configuration = configuration
        var quiet = configuration
        quiet.connected = { _ in }
        quiet.connectionEvents = { _ in }
        quiet.metrics.reconnected = { _ in }
        quiet.metrics.disconnected = { _ in }
        followUpConfiguration = quiet
        home = seeds[0]
        discover()
    }

    /// How long a command waits for its reply when its caller gives no deadline.
    public var commandTimeout: Duration { configuration.commandTimeout }

    public var topology: Topology {
        lock.withLock { currentTopology }
    }

    /// Whether the node(s) commands go to are connected: the seed for a single
    /// Redis, every primary of the map for a cluster.
    public var isConnected: Bool {
        lock.withLock {
            let nodes = slots?.nodes ?? [home]
            return currentTopology != .unknown && nodes.allSatisfy { connections[$0]?.allSatisfy(\.isConnected) == true }
        }
    }

    /// Whether the node that serves `key` is known to be away (its
    /// connection failed and has not served since): a request that would
    /// only wait for it (a subscription's first state) can be refused at
    /// once instead. Not while a replica's first connection is being made.
    public func isAway(forKey key: [UInt8]) -> Bool {
        lock.withLock {
            guard !closed else { return true }
            let slot = HashSlot.of(key)
            let node = slots?[slot] ?? home
            return connections[node].map { Self.lane(of: $0, forSlot: slot).isAway } == true
        }
    }

    /// Why commands cannot be served now, in an operator's words; nil when they can.
    public var unavailableReason: String? {
        lock.withLock {
            let nodes = slots.map { Array($0.nodes) } ?? [home]
            if currentTopology == .unknown, let sentinel {
                return "no sentinel of \(seeds.map(\.description).joined(separator: ", ")) named the primary of \(sentinel.masterName)"
            }
            if currentTopology == .unknown {
                let failure = connections[home]?.first?.lastFailureReason
                return "no answer from \(seeds.map(\.description).joined(separator: ", "))" + (failure.map { ": \($0)" } ?? "")
            }
            for node in nodes {
                guard let lanes = connections[node] else { return "\(node) is not connected" }
                if let away = lanes.first(where: { !$0.isConnected }) {
                    return "\(node) is not connected" + (away.lastFailureReason.map { ": \($0)" } ?? "")
                }
            }
            return nil
        }
    }

    /// Sends a command to the node serving `key` (by default the command's
    /// first key: see `routingKey(of:)`).
    /// - Parameter idempotent: running it twice does what running it once
    ///   does (a read): if its connection drops while it is out, it is sent
    ///   once more, when the node (or the one serving its slot now) can be
    ///   reached again within the deadline, as the clients people trust do.
    ///   Others answer `.connectionLost`: they may have run.
    public func send(_ arguments: [[UInt8]], key: [UInt8]? = nil, deadline: ContinuousClock.Instant? = nil,
                     idempotent: Bool = false, completion: @escaping RedisCompletion) {
        send(RESPRequest(arguments), key: key ?? Self.routingKey(of: arguments), deadline: deadline, idempotent: idempotent,
             completion: completion)
    }

    /// Sends a command already encoded (see `RESPRequestBuilder`) to the
    /// node serving `key`; without a key, to the seed that answered discovery.
    public func send(_ request: RESPRequest, key: [UInt8]?, deadline: ContinuousClock.Instant? = nil,
                     idempotent: Bool = false, completion: @escaping RedisCompletion) {
        send(request, slot: key.map { HashSlot.of($0) }, deadline: deadline, idempotent: idempotent, completion: completion)
    }

    /// The same, routed by a slot its caller already computed (`HashSlot.of`
    /// its key): a caller that routes, times and checks one key several
    /// times per call computes its CRC once.
    public func send(_ request: RESPRequest, slot: Int?, deadline: ContinuousClock.Instant? = nil,
                     idempotent: Bool = false, completion: @escaping RedisCompletion) {
        let command = Command(
            request: request,
            slot: slot,
            deadline: deadline ?? .now + configuration.commandTimeout,
            reply: .plain(completion),
            idempotent: idempotent)
        dispatch(command, to: nil, asking: false, redirects: 0)
    }

    /// Sends a command and, if `followUp` makes one of its reply, a second
    /// command on the very connection (socket) that answered the first, or
    /// none (`.unavailable`) if that connection dropped meanwhile: `WAIT`
    /// counts the replicas that acknowledged the writes of the connection
    /// it runs on, so it is only meaningful right behind the write on the
    /// same socket. The follow-up is appended from the connection's I/O
    /// thread while it hands out the first reply, before that thread can
    /// drop or replace the socket; routing it by key instead could send it
    /// to another node when the slot map changes in between, or to a fresh
    /// socket that never wrote, whose `WAIT` confirms at once. Such commands
    /// have a connection of their own to each node, so a `WAIT` never holds
    /// up the commands without a follow-up.
    public func send(_ arguments: [[UInt8]], key: [UInt8]? = nil, deadline: ContinuousClock.Instant? = nil,
                     followedBy followUp: @escaping @Sendable (RESPValue) -> FollowUp?,
                     completion: @escaping FollowUpCompletion) {
        send(RESPRequest(arguments), key: key ?? Self.routingKey(of: arguments), deadline: deadline,
             followedBy: followUp, completion: completion)
    }

    /// The same, for a command already encoded.
    public func send(_ request: RESPRequest, key: [UInt8]?, deadline: ContinuousClock.Instant? = nil,
                     followedBy followUp: @escaping @Sendable (RESPValue) -> FollowUp?,
                     completion: @escaping FollowUpCompletion) {
        send(request, slot: key.map { HashSlot.of($0) }, deadline: deadline, followedBy: followUp, completion: completion)
    }

    /// The same, routed by a slot already computed.
    public func send(_ request: RESPRequest, slot: Int?, deadline: ContinuousClock.Instant? = nil,
                     followedBy followUp: @escaping @Sendable (RESPValue) -> FollowUp?,
                     completion: @escaping FollowUpCompletion) {
        let command = Command(
            request: request,
            slot: slot,
            deadline: deadline ?? .now + configuration.commandTimeout,
            reply: .followedUp(followUp, completion))
        dispatch(command, to: nil, asking: false, redirects: 0)
    }

    public func send(_ arguments: [String], deadline: ContinuousClock.Instant? = nil, idempotent: Bool = false,
                     completion: @escaping RedisCompletion) {
        send(arguments.map { Array($0.utf8) }, deadline: deadline, idempotent: idempotent, completion: completion)
    }

    public func send(_ arguments: [String], deadline: ContinuousClock.Instant? = nil) async throws(RedisError) -> RESPValue {
        try await withCheckedContinuation { continuation in
            send(arguments, deadline: deadline) { continuation.resume(returning: $0) }
        }.get()
    }

    /// Closes every connection; commands in flight fail with `.connectionLost`.
    public func close() {
        let open = lock.withLock {
            closed = true
            defer {
                connections = [:]
                followUpConnections = [:]
            }
            return connections.values.flatMap { $0 } + Array(followUpConnections.values)
        }
        sentinel?.close()
        for connection in open { connection.close() }
    }

    /// The key that picks a command's slot: the first key of `FCALL`/`EVAL`
    /// (after the number of keys), none for commands without keys, else the
    /// first argument.
    public static func routingKey(of arguments: [[UInt8]]) -> [UInt8]? {
        guard arguments.count > 1 else { return nil }
        switch String(decoding: arguments[0], as: UTF8.self).uppercased() {
        case "FCALL", "FCALL_RO", "EVAL", "EVAL_RO", "EVALSHA", "EVALSHA_RO":
            guard arguments.count > 3, let keys = Int(String(decoding: arguments[2], as: UTF8.self)), keys > 0 else { return nil }
            return arguments[3]
        case "AUTH", "CLIENT", "CLUSTER", "COMMAND", "CONFIG", "DBSIZE", "ECHO", "FLUSHALL", "FLUSHDB",
             "FUNCTION", "HELLO", "INFO", "PING", "PUBLISH", "ROLE", "SCRIPT", "TIME", "WAIT":
            return nil
        default:
            return arguments[1]
        }
    }

    // MARK: Routing

    func dispatch(_ command: Command, to target: RedisNode?, asking: Bool, redirects: Int) {
        let (connection, mustDiscover): (RedisConnection?, Bool) = lock.withLock {
            guard !closed else { return (nil, false) }
            let mustDiscover = currentTopology == .unknown && !discovering
            // Until a sentinel names the primary, `home` is a sentinel.
            if sentinel != nil && currentTopology == .unknown { return (nil, mustDiscover) }
            let node = target ?? command.slot.flatMap { slots?[$0] } ?? home
            return (connectionLocked(to: node, slot: command.slot, forFollowUps: command.hasFollowUp), mustDiscover)
        }
        if mustDiscover { discover() }
        guard let connection else {
            command.finish(.failure(.unavailable))
            return
        }
        connection.send(command.request, asking: asking, deadline: command.deadline) { result in
            self.handle(result, of: command, from: connection, redirects: redirects)
        }
    }

    private func handle(_ result: Result<RESPValue, RedisError>, of command: Command, from connection: RedisConnection, redirects: Int) {
        let node = connection.node
        switch result {
        case .success(.error(let message)):
            if let redirect = ClusterRedirect(message) {
                configuration.metrics.redirected(redirect.asking)
                if redirect.asking { askedSlots.note(redirect) }
                guard redirects < configuration.maxRedirects else { return fail(command, .tooManyRedirects, node) }
                if !redirect.asking {
                    lock.withLock { slots?[redirect.slot] = redirect.node }
                    refreshSlots()
                }
                dispatch(command, to: redirect.node, asking: redirect.asking, redirects: redirects + 1)
            } else if message.hasPrefix("TRYAGAIN") {
                var again = command
                again.lastRefusal = .tryAgain(message)
                retry(again, node) { fail(command, .tryAgain(message), node) }
            } else if message.hasPrefix("CLUSTERDOWN") {
                refreshSlots()
                var again = command
                again.lastRefusal = .clusterDown(message)
                retry(again, node) { fail(command, .clusterDown(message), node) }
            } else if message.hasPrefix("LOADING") {
                retry(command, node) { command.finish(result) }
            } else if message.hasPrefix("READONLY"), sentinel != nil {
                // A demoted primary: it ran nothing, so the command may go again.
                discover()
                retry(command, node) { command.finish(result) }
            } else {
                command.finish(result)
            }
        case .failure(let error):
            if topology == .cluster { refreshSlots() } else if sentinel != nil { discover() }
            if error == .connectionLost, command.idempotent, !command.resentAfterLoss {
                var again = command
                again.resentAfterLoss = true
                retry(again, node) { command.finish(result) }
            } else if error == .unavailable, command.resentAfterLoss {
                // Not sent: its node is reconnecting (or its slot's primary
                // is being found again).
                retry(command, node) { command.finish(result) }
            } else if error == .timeout, command.idempotent, let refusal = command.lastRefusal {
                // A read that ran out of time while sent again: nothing to
                // have applied, and why it went again tells the caller more.
                // A change that times out may have been made, and says so.
                fail(command, refusal, node)
            } else {
                command.finish(result)
            }
        case .success(let reply):
            // On the connection's I/O thread, which is handing out this reply
            // (see `send(_:key:deadline:followedBy:completion:)`).
            if case let .followedUp(makeFollowUp, completion) = command.reply, let followUp = makeFollowUp(reply) {
                connection.send(RESPRequest(followUp.arguments), asking: false, deadline: followUp.deadline) { second in
                    completion(result, second)
                }
            } else {
                command.finish(result)
            }
        }
    }

    /// A node that cannot serve for a moment: a slot being migrated
    /// (`TRYAGAIN`), a cluster settling after a failover (`CLUSTERDOWN`), a
    /// server still loading its data (`LOADING`), a connection coming back
    /// under a read that was out when it dropped. The command goes again,
    /// routed anew, after a short backoff while its deadline allows, as
    /// the cluster clients people trust do; then `giveUp`.
    private func retry(_ command: Command, _ node: RedisNode, giveUp: () -> Void) {
        let delay = Self.passingTrouble.delay(attempt: command.retries)
        guard ContinuousClock.now + delay < command.deadline else { return giveUp() }
        var again = command
        again.retries += 1
        after(delay) { [again] in self.dispatch(again, to: nil, asking: false, redirects: 0) }
    }

    /// Short: what it waits out passes in milliseconds to a few seconds,
    /// and the command's deadline bounds the whole.
    private static let passingTrouble = Backoff(base: .milliseconds(10), cap: .milliseconds(250))

    private func fail(_ command: Command, _ error: RedisError, _ node: RedisNode) {
        configuration.metrics.failed(node, error)
        command.finish(.failure(error))
    }

    /// The connection a command for `slot` takes to `node` (one without a
    /// slot: the first), made on first use with the node's other lanes.
    func connectionLocked(to node: RedisNode, slot: Int? = nil, forFollowUps: Bool = false) -> RedisConnection {
        if forFollowUps {
            if let connection = followUpConnections[node] { return connection }
            let connection = RedisConnection(to: node, configuration: followUpConfiguration)
            followUpConnections[node] = connection
            return connection
        }
        if let lanes = connections[node] { return Self.lane(of: lanes, forSlot: slot) }
        // The other lanes tell nobody of outages, which the first one reports.
        let lanes = (0..<max(1, configuration.connectionsPerNode)).map { lane in
            RedisConnection(to: node, configuration: lane == 0 ? refreshingOnDrop : refreshingOnDrop(followUpConfiguration))
        }
        connections[node] = lanes
        return Self.lane(of: lanes, forSlot: slot)
    }

    static func lane(of lanes: [RedisConnection], forSlot slot: Int?) -> RedisConnection {
        lanes[(slot ?? 0) % lanes.count]
    }
}
