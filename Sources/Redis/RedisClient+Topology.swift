import Locking

/// How a `RedisClient` finds its nodes: discovery from the seeds, and a
/// cluster's slot map, refreshed on redirections, on failures and on a timer.
extension RedisClient {
    /// Where a command for `slot` goes now (a subscriber's `SSUBSCRIBE` too);
    /// nil once closed.
    func node(serving slot: Int) -> RedisNode? {
        lock.withLock { closed ? nil : slots?[slot] ?? home }
    }

    /// What serves the keyspace now, for the coverage (RedisCoverage.swift):
    /// the slot map (nil for a single Redis or before it is known), the seed
    /// commands go to without one, and the primaries connected now.
    func coverage() -> (topology: Topology, slots: SlotMap?, home: RedisNode, connected: Set<RedisNode>) {
        lock.withLock {
            (currentTopology, slots, home, Set(connections.filter { $0.value.allSatisfy(\.isConnected) }.keys))
        }
    }

    /// The nodes commands go to now: the map's primaries, or the seed.
    var servingNodes: Set<RedisNode> {
        lock.withLock { slots?.nodes ?? [home] }
    }

    /// A `MOVED` that came to someone else (a subscriber): the slot is served
    /// by `node` now, and the rest of the map is probably stale too.
    func moved(_ redirect: ClusterRedirect) {
        configuration.metrics.redirected(redirect.asking)
        guard !redirect.asking else { return }
        lock.withLock { slots?[redirect.slot] = redirect.node }
        refreshSlots()
    }

    /// Reloads a cluster's slot map, asking `node` first, then runs `then`
    /// (also when no node answered); for a subscriber that lost a
    /// subscription and must not subscribe again through a stale map. The
    /// node that dropped a subscription because it lost the slot knows who
    /// has it now; others may not have heard yet.
    /// With Sentinel, asks the sentinels for the primary again first.
    func refreshTopology(askingFirst node: RedisNode?, then: @escaping @Sendable () -> Void) {
        if sentinel != nil, lock.withLock({ closed ? false : { afterRefresh.append(then); return true }() }) {
            return discover()
        }
        let (wait, unknown) = lock.withLock {
            guard currentTopology == .cluster, !closed else { return (false, currentTopology == .unknown) }
            afterRefresh.append(then)
            if refreshing, let node { askNext = node }
            return (true, false)
        }
        if wait { return refreshSlots(askingFirst: node) }
        if unknown { discover() }
        then()
    }

    /// Asks the seeds, in turn, whether they are part of a cluster; or the
    /// sentinels for the primary.
    func discover() {
        let started = lock.withLock {
            guard !discovering, !closed else { return false }
            discovering = true
            return true
        }
        guard started else { return }
        if let sentinel {
            sentinel.resolve { primary in self.resolved(primary) }
        } else {
            discover(seeds[...])
        }
    }

    private func discover(_ candidates: ArraySlice<RedisNode>) {
        guard let seed = candidates.first, let connection = lock.withLock({ closed ? nil : connectionLocked(to: seed) }) else {
            // No seed answered: ask again after a backoff, so that the client
            // finds Redis once it comes even if nobody sends a command meanwhile.
            let delay: Duration? = lock.withLock {
                discovering = false
                guard !closed, candidates.isEmpty else { return nil }
                defer { failedDiscoveries += 1 }
                return configuration.reconnectBackoff.delay(attempt: failedDiscoveries)
            }
            if let delay { after(delay) { self.discover() } }
            return
        }
        connection.send(["INFO", "cluster"], deadline: nil) { result in
            guard case .success(.bulk(let text)) = result else { return self.discover(candidates.dropFirst()) }
            let cluster = String(decoding: text, as: UTF8.self).contains("cluster_enabled:1")
            self.lock.withLock {
                self.currentTopology = cluster ? .cluster : .single
                self.home = seed
                self.discovering = false
                self.failedDiscoveries = 0
            }
            if cluster {
                self.refreshSlots()
                self.startPeriodicRefresh()
            }
        }
    }

    /// A shared connection's configuration: one that drops, even with no
    /// command out on it, has a cluster's slot map reloaded (its node may be
    /// failing, and its slots going to a replica). The client is then held
    /// by its connections until `close()` ends them.
    var refreshingOnDrop: RedisConfiguration { refreshingOnDrop(configuration) }

    func refreshingOnDrop(_ configuration: RedisConfiguration) -> RedisConfiguration {
        var watched = configuration
        let reported = configuration.metrics.disconnected
        watched.metrics.disconnected = { node in
            reported(node)
            if self.topology == .cluster { self.refreshSlots() }
        }
        return watched
    }

    /// Reloads the slot map every `slotMapRefreshInterval` until `close()`:
    /// a slot moved or a failover with no command meeting it (no `MOVED`,
    /// no lost connection) is learnt all the same, before a command or a
    /// subscription goes to the old node. Started once, when discovery
    /// finds a cluster.
    private func startPeriodicRefresh() {
        let start = lock.withLock {
            defer { refreshesPeriodically = true }
            return !refreshesPeriodically
        }
        if start { scheduleRefresh() }
    }

    private func scheduleRefresh() {
        after(configuration.slotMapRefreshInterval) {
            guard !self.lock.withLock({ self.closed }) else { return }
            self.refreshSlots()
            self.scheduleRefresh()
        }
    }

    /// Reloads the slot map from the first node that answers, the map's
    /// own nodes first; one refresh at a time.
    func refreshSlots(askingFirst first: RedisNode? = nil) {
        let candidates: [RedisNode]? = lock.withLock {
            guard !refreshing, !closed else { return nil }
            refreshing = true
            let known = (first.map { [$0] } ?? []) + (slots.map { Array($0.nodes) } ?? []) + seeds
            return known.enumerated().filter { index, node in known.firstIndex(of: node) == index }.map(\.element)
        }
        if let candidates { askForSlots(candidates[...]) }
    }

    /// Ends a refresh: starts the one asked for meanwhile, or runs what
    /// waited for this one.
    private func refreshEnded() {
        let (again, waiting): (RedisNode?, [@Sendable () -> Void]) = lock.withLock {
            refreshing = false
            if let node = askNext {
                askNext = nil
                return (node, [])
            }
            defer { afterRefresh = [] }
            return (nil, afterRefresh)
        }
        if let again { refreshSlots(askingFirst: again) }
        for then in waiting { then() }
    }

    private func askForSlots(_ candidates: ArraySlice<RedisNode>) {
        guard let node = candidates.first, let connection = lock.withLock({ closed ? nil : connectionLocked(to: node) }) else {
            return refreshEnded()
        }
        // `CLUSTER NODES` dates the map's claims and tells which replicas
        // are up (see SlotMap+Freshness.swift).
        let answer = ReplyPair { slots, nodes in
            guard let answer = SlotMap.refreshed(slots: slots, nodes: nodes, answeredBy: node) else {
                return self.askForSlots(candidates.dropFirst())
            }
            self.install(answer.map, reachableReplicas: answer.reachableReplicas)
        }
        connection.send(["CLUSTER", "SLOTS"], deadline: nil) { answer.first($0) }
        connection.send(["CLUSTER", "NODES"], deadline: nil) { answer.second($0) }
    }

    /// Takes a node's answer into the map, where it is not older than what
    /// the map holds (see SlotMap+Freshness.swift: one refresh after
    /// another, or one from a node that missed a failover, never puts an
    /// older view back), connects to every primary in it (so that each runs
    /// the setup commands, and readiness means all of them), and closes
    /// connections to nodes that left it. A map that arrives after `close()`
    /// is dropped: connections made then would never be closed.
    ///
    /// Tells the slots that moved, and a node lost before it left the map
    /// that `reachableReplicas` (the cluster's word) shows back as a
    /// replica. Slots that moved away from a lost node are a failover: the
    /// connection that serves them now counts as a reconnection.
    func install(_ answer: SlotMap, reachableReplicas: Set<RedisNode> = []) {
        let (gone, moves, rejoined, reconnectedAt): ([RedisConnection], [MovedSlots], Set<RedisNode>, [RedisNode]) = lock.withLock {
            guard !closed else { return ([], [], [], []) }
            let previous = slots
            let map = previous.map { $0.updated(with: answer) } ?? answer
            let moves = previous.map { $0.moves(to: map) } ?? []
            slots = map
            currentTopology = .cluster
            for node in map.nodes { _ = connectionLocked(to: node) }
            var reconnectedAt: [RedisNode] = []
            let takers = Set(moves.filter { move in move.from.map { connections[$0]?.first?.isAway ?? true } ?? false }.map(\.to))
            for node in takers where connections[node]?.first?.countsFirstConnectionAsReconnection() == true {
                reconnectedAt.append(node)
            }
            let keep = map.nodes.union(seeds)
            let gone = connections.filter { !keep.contains($0.key) }
            let goneFollowUps = followUpConnections.filter { !keep.contains($0.key) }
            for (node, lanes) in gone where lanes.first?.isAway == true && departedWhileAway.count < Self.departedLimit {
                departedWhileAway.insert(node)
            }
            let rejoined = departedWhileAway.intersection(reachableReplicas)
            departedWhileAway.subtract(rejoined.union(map.nodes))
            for node in gone.keys { connections[node] = nil }
            for node in goneFollowUps.keys { followUpConnections[node] = nil }
            return (gone.values.flatMap { $0 } + Array(goneFollowUps.values), moves, rejoined, reconnectedAt)
        }
        for connection in gone { connection.close() }
        if !moves.isEmpty { configuration.topologyChanged(.slotsMoved(moves)) }
        for node in rejoined.sorted(by: { $0.description < $1.description }) { configuration.topologyChanged(.rejoinedAsReplica(node)) }
        for node in reconnectedAt { configuration.metrics.reconnected(node) }
        refreshEnded()
    }

    /// How many departed nodes are watched for: a cluster's own nodes, with
    /// room to spare; addresses that never come back must not pile up.
    private static let departedLimit = 64
}
