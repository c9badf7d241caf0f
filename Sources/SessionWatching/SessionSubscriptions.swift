import Locking
import Synchronization
import TopChromeCore

/// Subscribers by session, in shards with a lock each so changes to
/// different sessions do not wait for one another. A store collects each
/// change's subscribers while holding the session, and delivers after
/// releasing it through a `ChangeOutbox`, which keeps each session's changes in order.
public final class SessionSubscriptions: Sendable {
    public struct Limits: Sendable, Hashable {
        public var total: Int
        public var perSession: Int

        public init(total: Int, perSession: Int) {
            self.total = total
            self.perSession = perSession
        }
    }

    public let limits: Limits
    private let shards: [Shard]
    private let total = Atomic<Int>(0)

    public init(limits: Limits = Limits(total: 10_000, perSession: 64), shardCount: Int = 64) {
        precondition(shardCount > 0 && shardCount & (shardCount - 1) == 0, "shardCount must be a power of two")
        self.limits = limits
        self.shards = (0..<shardCount).map { _ in Shard() }
    }

    /// Subscriptions held now.
    public var count: Int {
        total.load(ordering: .relaxed)
    }

    /// Changes looked up among the subscriptions. None while nobody
    /// subscribes: that is the usual case under load, and then publishing
    /// costs one atomic read.
    public var lookups: Int {
        shards.reduce(0) { sum, shard in sum + shard.withLock { $0.lookups } }
    }

    /// Registers `subscriber` for `id` (once, however often asked). A store
    /// calls this while holding the session, then reads its state: no change
    /// can fall between.
    public func add(_ subscriber: any SessionSubscriber, for id: SessionID) throws(SubscriptionRefusal) {
        guard total.add(1, ordering: .relaxed).newValue <= limits.total else {
            total.subtract(1, ordering: .relaxed)
            throw .tooManySubscribers(limit: limits.total)
        }
        let added = shard(for: id).withLock { contents -> Bool? in
            let key = ObjectIdentifier(subscriber)
            if contents.subscribers[id]?[key] != nil { return nil }
            guard contents.subscribers[id, default: [:]].count < limits.perSession else { return false }
            contents.subscribers[id, default: [:]][key] = subscriber
            return true
        }
        if added != true { total.subtract(1, ordering: .relaxed) }
        if added == false { throw .tooManyForSession(limit: limits.perSession) }
    }

    public func remove(_ subscriber: any SessionSubscriber, from id: SessionID) {
        let removed = shard(for: id).withLock { contents -> Bool in
            guard contents.subscribers[id]?.removeValue(forKey: ObjectIdentifier(subscriber)) != nil else { return false }
            if contents.subscribers[id]?.isEmpty == true { contents.subscribers[id] = nil }
            return true
        }
        if removed { total.subtract(1, ordering: .relaxed) }
    }

    /// Whether anyone subscribes to `id` now.
    public func isWatched(_ id: SessionID) -> Bool {
        shard(for: id).withLock { $0.subscribers[id] != nil }
    }

    /// Who is to hear of `event`: fixed while the store holds the session,
    /// so a subscriber added later never hears of an earlier change; told
    /// by ``deliver(_:)`` once the store's lock is released, so no watcher
    /// runs under it. Nil when nobody watches the session; while nobody
    /// subscribes at all (the usual case under load) this costs one atomic read.
    @inline(__always)
    public func collect(_ event: SessionEvent, isResynchronization: Bool = false) -> ChangeDelivery? {
        guard count > 0 else { return nil }
        return recipients(of: event, isResynchronization: isResynchronization)
    }

    /// Who is to hear that the session's changes go unheard for now (see
    /// ``SessionSubscriber/sessionUnheard(_:)``), as ``collect(_:isResynchronization:)``.
    public func collectUnheard(_ id: SessionID) -> ChangeDelivery? {
        guard count > 0, let subscribers = shard(for: id).withLock({ $0.subscribers[id].map { Array($0.values) } })
        else { return nil }
        return ChangeDelivery(.unheard(id), to: subscribers)
    }

    private func recipients(of event: SessionEvent, isResynchronization: Bool) -> ChangeDelivery? {
        switch event {
        case let .changed(session):
            let subscribers = shard(for: session.id).withLock { contents in
                contents.lookups += 1
                return contents.subscribers[session.id].map { Array($0.values) }
            }
            guard let subscribers else { return nil }
            return ChangeDelivery(.changed(SessionChange(session, isResynchronization: isResynchronization)), to: subscribers)
        case let .removed(id):
            // The subscriptions end now, with the session; their watchers hear of it on delivery.
            let gone = shard(for: id).withLock { contents in
                contents.lookups += 1
                return contents.subscribers.removeValue(forKey: id).map { Array($0.values) } ?? []
            }
            guard !gone.isEmpty else { return nil }
            total.subtract(gone.count, ordering: .relaxed)
            return ChangeDelivery(.removed(id), to: gone)
        }
    }

    /// Tells the subscribers collected of their change, and drops those
    /// that answer they are done; whether any did. Never under a store's lock.
    @discardableResult
    public func deliver(_ delivery: ChangeDelivery) -> Bool {
        var dropped = false
        switch delivery.kind {
        case let .changed(change):
            for subscriber in delivery.subscribers where !subscriber.sessionChanged(change) {
                remove(subscriber, from: change.session.id)
                dropped = true
            }
        case let .removed(id):
            for subscriber in delivery.subscribers { subscriber.sessionRemoved(id) }
        case let .unheard(id):
            for subscriber in delivery.subscribers where !subscriber.sessionUnheard(id) {
                remove(subscriber, from: id)
                dropped = true
            }
        }
        return dropped
    }

    /// Delivers what a ``ChangeOutbox``'s baton holder takes from it batch
    /// by batch (`nextBatch`, under the owner's lock) until it is empty.
    public func deliver(batchesFrom nextBatch: () -> [ChangeDelivery]?) {
        while let batch = nextBatch() {
            for delivery in batch { deliver(delivery) }
        }
    }

    /// Every subscriber now, e.g. for a periodic heartbeat.
    public func all() -> [any SessionSubscriber] {
        shards.flatMap { shard in shard.withLock { $0.subscribers.values.flatMap(\.values) } }
    }

    /// Ends every subscription and returns the subscribers: the service is stopping.
    public func removeAll() -> [any SessionSubscriber] {
        shards.flatMap { shard in
            let subscribers = shard.withLock { contents in
                defer { contents.subscribers = [:] }
                return contents.subscribers.values.flatMap(\.values)
            }
            total.subtract(subscribers.count, ordering: .relaxed)
            return subscribers
        }
    }

    private func shard(for id: SessionID) -> Shard {
        shards[Int(truncatingIfNeeded: id.low) & (shards.count - 1)]
    }

    private struct Contents {
        var subscribers: [SessionID: [ObjectIdentifier: any SessionSubscriber]] = [:]
        var lookups = 0
    }

    /// One shard's subscribers, touched only under its lock.
    private final class Shard: @unchecked Sendable {
        private let lock = PthreadLock()
        private var contents = Contents()

        func withLock<Result>(_ body: (inout Contents) -> Result) -> Result {
            lock.withLock { body(&contents) }
        }
    }
}
