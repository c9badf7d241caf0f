/// A `RedisClient` on the primary that Redis Sentinel names.
extension RedisClient {
    /// Ends a round of asking the sentinels: the primary they named, or a
    /// backoff before asking again (none named one); then runs what waited
    /// for the round (a subscriber about to subscribe again).
    func resolved(_ primary: RedisNode?) {
        if let primary { adopt(primary) }
        let (retryAfter, waiting): (Duration?, [@Sendable () -> Void]) = lock.withLock {
            discovering = false
            defer { afterRefresh = [] }
            guard primary == nil, !closed else { return (nil, afterRefresh) }
            defer { failedDiscoveries += 1 }
            return (configuration.reconnectBackoff.delay(attempt: failedDiscoveries), afterRefresh)
        }
        if let retryAfter { after(retryAfter) { self.discover() } }
        for then in waiting { then() }
    }

    /// Sends commands to `primary` from now on. Connections to the one before
    /// are closed (commands in flight there fail as a lost connection would):
    /// a demoted primary answers `READONLY`, and one cut off by a partition
    /// would take writes that its new replica's sync will discard.
    func adopt(_ primary: RedisNode) {
        let (old, watchers, switched): ([RedisConnection], [@Sendable () -> Void], RedisNode?) = lock.withLock {
            guard !closed, currentTopology == .unknown || home != primary else { return ([], [], nil) }
            let wasKnown = currentTopology != .unknown
            let previous = home
            home = primary
            currentTopology = .single
            failedDiscoveries = 0
            let old = (connections.removeValue(forKey: previous) ?? []) + [followUpConnections.removeValue(forKey: previous)].compactMap { $0 }
            // Connected now, so that readiness says so before a command comes.
            _ = connectionLocked(to: primary)
            return (old, wasKnown ? Array(primaryWatchers.values) : [], wasKnown ? previous : nil)
        }
        for connection in old { connection.close() }
        if let switched { configuration.topologyChanged(.primarySwitched(from: switched, to: primary)) }
        for watcher in watchers { watcher() }
    }

    /// Whether the primary is found through Sentinel.
    var followsSentinel: Bool { sentinel != nil }

    /// `moved` runs whenever Sentinel names another primary, until `unwatchPrimary(owner)`.
    func watchPrimary(_ owner: ObjectIdentifier, _ moved: @escaping @Sendable () -> Void) {
        lock.withLock { primaryWatchers[owner] = moved }
    }

    func unwatchPrimary(_ owner: ObjectIdentifier) {
        lock.withLock { primaryWatchers[owner] = nil }
    }
}
