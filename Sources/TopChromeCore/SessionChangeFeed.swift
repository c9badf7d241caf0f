import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One change of a session as subscribers receive it, made once however
/// many subscribe: one change may fan out to thousands of watchers.
public final class SessionChange: @unchecked Sendable {
    public let session: Session
    /// The state read again after a feed lost its source for a while, not
    /// one change: it may even be older than one already delivered, since a
    /// failover can lose the last acknowledged changes. Deliver it if its
    /// entity tag differs from the one delivered last, not only if its
    /// version is greater.
    public let isResynchronization: Bool
    private var rendered: [UInt8]?

    public init(_ session: Session, isResynchronization: Bool = false) {
        self.session = session
        self.isResynchronization = isResynchronization
    }

    /// What `render` makes of the change, made by the first subscriber that
    /// asks and reused by the others. Subscribers are told of a change one
    /// at a time, so no two threads ask at once.
    public func rendering(_ render: (Session) -> [UInt8]) -> [UInt8] {
        if let rendered { return rendered }
        let bytes = render(session)
        rendered = bytes
        return bytes
    }
}

/// Someone told of one session's changes: every change after the state
/// ``SessionChangeFeed/requestSubscribe(_:to:)`` answered, in order, then its removal.
public protocol SessionSubscriber: AnyObject, Sendable {
    /// The session changed. Returns whether to stay subscribed. Called in
    /// order, one change at a time, after the store released the session:
    /// a slow subscriber holds up only the delivery of later changes.
    func sessionChanged(_ change: SessionChange) -> Bool
    /// The session is gone (deleted or expired); the subscription ends with it.
    func sessionRemoved(_ id: SessionID)
    /// The feed stopped hearing the session's changes (a remote feed lost
    /// its source): until a resynchronized change comes, the state last
    /// delivered may be stale. Returns whether to stay subscribed.
    func sessionUnheard(_ id: SessionID) -> Bool
}

extension SessionSubscriber {
    /// Most subscribers wait for the resynchronized change.
    public func sessionUnheard(_ id: SessionID) -> Bool { true }
}

/// Why a feed refused a subscription; a client can retry later.
public enum SubscriptionRefusal: Error, Hashable {
    case tooManySubscribers(limit: Int)
    case tooManyForSession(limit: Int)
}

/// A store's changes, per session, for those who watch them. The store
/// publishes and subscribers listen; the store never knows who they are.
/// The memory store publishes in-process; a networked store publishes what
/// reaches it from elsewhere (pub/sub) through the same subscriptions.
///
/// A feed that loses its source (a dropped connection, a moved shard) gets
/// it back, reads each watched session again and publishes it as a
/// ``SessionChange/isResynchronization`` change: changes published
/// meanwhile may be lost, the state after it is what the store holds.
public protocol SessionChangeFeed: Sendable {
    /// Who is subscribed to which session.
    var subscriptions: SessionSubscriptions { get }

    /// Subscribes to `id`; the answer is the session as it is once the feed
    /// listens to it (at once in this process, later for a networked feed),
    /// and every change after that state reaches `subscriber`, none missed
    /// (possibly even before the answer comes, on another thread). Nil, or
    /// an error, and there is no subscription. A refusal (too many
    /// subscribers) comes at once.
    func requestSubscribe(_ subscriber: any SessionSubscriber, to id: SessionID)
        throws(SubscriptionRefusal) -> StoreAnswer<Session?>

    /// Ends a subscription; nothing if there is none.
    func unsubscribe(_ subscriber: any SessionSubscriber, from id: SessionID)
}

/// Subscribers by session, in shards with a lock each so changes to
/// different sessions do not wait for one another. A store collects each
/// change's subscribers while holding the session, and delivers after
/// releasing it through a ``ChangeOutbox``, which keeps each session's changes in order.
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

    /// Tells the session's subscribers of `event` now. For a feed that
    /// publishes each session's changes from one thread at a time and holds
    /// no lock meanwhile; a store collects under its lock instead (``collect(_:)``).
    public func publish(_ event: SessionEvent) {
        if let delivery = collect(event) { deliver(delivery) }
    }

    /// Tells the session's subscribers of its state as read again after the
    /// feed lost its source (see ``SessionChange/isResynchronization``).
    public func publishResynchronized(_ event: SessionEvent) {
        if let delivery = collect(event, isResynchronization: true) { deliver(delivery) }
    }

    /// Tells the session's subscribers that its changes go unheard for now
    /// (see ``SessionSubscriber/sessionUnheard(_:)``).
    public func publishUnheard(_ id: SessionID) {
        if let delivery = collectUnheard(id) { deliver(delivery) }
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

    /// ``collect(_:isResynchronization:)`` for ``publishUnheard(_:)``.
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
    /// that answer they are done. Never under a store's lock.
    public func deliver(_ delivery: ChangeDelivery) {
        switch delivery.kind {
        case let .changed(change):
            for subscriber in delivery.subscribers where !subscriber.sessionChanged(change) {
                remove(subscriber, from: change.session.id)
            }
        case let .removed(id):
            for subscriber in delivery.subscribers { subscriber.sessionRemoved(id) }
        case let .unheard(id):
            for subscriber in delivery.subscribers where !subscriber.sessionUnheard(id) {
                remove(subscriber, from: id)
            }
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

    /// A pthread mutex, not `Mutex`: the thread sanitizer reports false
    /// races on `Mutex` with this toolchain.
    private final class Shard: @unchecked Sendable {
        private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        private var contents = Contents()

        init() {
            mutex.initialize(to: pthread_mutex_t())
            precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        }

        deinit {
            pthread_mutex_destroy(mutex)
            mutex.deallocate()
        }

        func withLock<Result>(_ body: (inout Contents) -> Result) -> Result {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return body(&contents)
        }
    }
}
